"""The DuckDB destination devportal loads through: dlt's own, with a copy job that reads exactly.

dlt 1.31's DuckDB copy job has two faults that wrote wrong data or wedged a load:

- it pastes the load file's path into SQL unescaped, so a warehouse whose folder name holds an
  apostrophe fails every load (`Parser Error: unterminated string literal`);
- it reads JSON lines with DuckDB's auto-detection, so a JSON column becomes a STRUCT unified over
  every row (each key any row had is added to all others as null; two keys differing only in
  case fail the load with `Duplicate name ... in struct`), and text that looks like a date is
  read as a date and written back reformatted.

Ours quotes the path as a SQL literal and reads JSON lines with the table's own column types
(`columns=` from the dlt schema, no auto-detection), so a JSON value loads as the text it was and
text stays text. A file that does not fit DuckDB's memory cap fails at once (dlt would retry it
as a passing fault, but the jobs load one at a time, so a retry meets the same cap).

Each file loads once: dlt records a job as done only after the warehouse committed it, so a
process killed in between would load the file again when the package is resumed (an append
table such as `sync_runs` doubled). Ours writes the file's name to a list of loaded files
(`_devportal_load.files`) in the same transaction as its rows and skips a file the list
holds. The list lives in the warehouse's draft only: `drop_loaded_files` removes it before the draft
is published (`pipeline.load_whole`). Everything else is dlt's: the factory, the client, the
merge and SCD2 jobs.
"""

from __future__ import annotations

import os
from typing import Any

from dlt.common.storages.load_storage import ParsedLoadJobFileName
from dlt.destinations.exceptions import DatabaseTerminalException, DatabaseTransientException
from dlt.destinations.impl.duckdb.duck import DuckDbClient, DuckDbCopyJob
from dlt.destinations.impl.duckdb.factory import duckdb as DuckDbFactory

from devportal.warehouse.connection import quote_ident, sql_literal


class ExactCopyJob(DuckDbCopyJob):
    """Loads one parquet or JSON-lines file into its table with the table's declared types."""

    def run(self) -> None:
        client: DuckDbClient = self._job_client
        self._sql_client = client.sql_client
        target = self._sql_client.make_qualified_table_name(self.load_table_name)
        path = sql_literal(self._file_path)
        file_format = ParsedLoadJobFileName.parse(self._file_path).file_format
        if file_format == "parquet":
            source = f"read_parquet({path}, union_by_name=true)"
        elif file_format in ("jsonl", "typed-jsonl"):
            table = self._load_table
            columns = ", ".join(
                f"{sql_literal(name)}: {sql_literal(client.type_mapper.to_destination_type(column, table))}"
                for name, column in table["columns"].items()
                if column.get("data_type")
            )
            source = f"read_json({path}, format='newline_delimited', columns={{{columns}}})"
        else:
            raise ValueError(f"cannot load {file_format} files into DuckDB: {self._file_path}")
        files = _loaded_files(self._sql_client, create=True)
        name = os.path.basename(self._file_path)
        try:
            with self._sql_client.begin_transaction():
                if self._sql_client.execute_sql(
                    f"SELECT 1 FROM {files} WHERE file_name = %s", name
                ):
                    return  # loaded by a process killed before dlt could record it
                self._sql_client.execute_sql(f"INSERT INTO {target} BY NAME SELECT * FROM {source}")
                self._sql_client.execute_sql(f"INSERT INTO {files} VALUES (%s)", name)
        except DatabaseTransientException as err:
            if "out of memory" not in str(err).lower():
                raise
            raise DatabaseTerminalException(err) from err


LEDGER_SCHEMA = "_devportal_load"


def _loaded_files(sql_client: Any, *, create: bool = False) -> str:
    """The table of the files loaded into this database (created with CREATE)."""
    catalog = sql_client.catalog_name()
    schema = f"{catalog}.{quote_ident(LEDGER_SCHEMA)}" if catalog else quote_ident(LEDGER_SCHEMA)
    if create:
        sql_client.execute_sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        sql_client.execute_sql(f"CREATE TABLE IF NOT EXISTS {schema}.files (file_name VARCHAR)")
    return f"{schema}.files"


def drop_loaded_files(sql_client: Any) -> None:
    """Remove the list once its package has loaded whole (it must not be published)."""
    schema = _loaded_files(sql_client).rsplit(".", 1)[0]
    sql_client.execute_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


class _WarehouseClient(DuckDbClient):
    def create_load_job(
        self, table: Any, file_path: str, load_id: str, restore: bool = False
    ) -> Any:
        job = super().create_load_job(table, file_path, load_id, restore)
        if isinstance(job, DuckDbCopyJob):
            return ExactCopyJob(file_path)
        return job


class warehouse_duckdb(DuckDbFactory):
    """dlt's `duckdb` destination with `ExactCopyJob` for file loads."""

    @property
    def client_class(self) -> type[DuckDbClient]:
        return _WarehouseClient
