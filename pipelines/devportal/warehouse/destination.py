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

One connection serves a whole load: `warehouse_duckdb.one_connection` opens the draft once for
the load's jobs, the list of loaded files and the queries the sync makes of what it loaded, and
closes it before the draft is published. dlt would open and close the file for each of them (at
100k subscriptions about 0.1 s of a sync spent opening). After each job what it wrote is
checkpointed and evicted from DuckDB's buffers, as a close did (`_let_go`): the held connection
keeps no loaded table in memory, so the load peaks no higher than with a connection per job.

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
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
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
    """dlt's `duckdb` destination with `ExactCopyJob` for file loads, and one connection for
    every client while `one_connection` holds it."""

    _shared: Any = None  # the connection pool every client uses while one is held

    @property
    def client_class(self) -> type[DuckDbClient]:
        return _WarehouseClient

    def configuration(self, initial_config: Any, accept_partial: bool = False) -> Any:
        config = super().configuration(initial_config, accept_partial)
        if self._shared is not None and config.credentials is not None:
            config.credentials.conn_pool = self._shared
        return config

    def one_connection(self, sql_client: Any) -> ExitStack:
        """`_holding(SQL_CLIENT)` from now until the stack returned is closed (once)."""
        held = ExitStack()
        held.enter_context(self._holding(sql_client))
        return held

    @contextmanager
    def _holding(self, sql_client: Any) -> Iterator[None]:
        """While inside, every client of this destination borrows the connection SQL_CLIENT (a
        client of this destination, not yet open) opens: dlt's pool hands out cursors of it,
        and it closes (DuckDB checkpoints) when the last one is returned, SQL_CLIENT's own at
        the end. Nested, the outer one holds. Each time a borrower gives its cursor back, what
        it wrote is checkpointed and let go of (`_let_go`), as closing the file did."""
        if self._shared is not None:
            yield
            return
        pool = self._shared = sql_client.credentials.conn_pool
        give_back = pool.return_conn

        def returned(borrowed: Any) -> Any:
            result = give_back(borrowed)
            if pool._conn_borrows == 1 and pool._conn is not None:  # only the holder's left
                _let_go(pool._conn)
            return result

        pool.return_conn = returned
        try:
            sql_client.open_connection()
            try:
                yield
            finally:
                sql_client.close_connection()
        finally:
            pool.return_conn = give_back
            self._shared = None


def _let_go(con: Any) -> None:
    """Checkpoint what CON's last job wrote and drop it from DuckDB's buffers: written to the
    file, its blocks can be read again when needed, and a connection held for a whole load
    would otherwise keep every table it loaded in memory (15 MB more peak at 100k
    subscriptions). Lowering the memory limit for a moment is DuckDB's way to evict them."""
    import duckdb  # deferred: loads DuckDB, kept out of startup (dlt has it loaded by now)

    try:
        con.execute("checkpoint")
        [(limit,)] = con.execute("select current_setting('memory_limit')").fetchall()
        con.execute(f"set memory_limit = '{EVICT_TO}'")
        con.execute(f"set memory_limit = '{limit}'")
    except duckdb.Error:
        return  # the job's own error (or the close that follows) says what is wrong


# what the buffers are cut to for a moment after each job (`_let_go`)
EVICT_TO = "4MB"
