"""How a load that fails leaves the warehouse as it was (`target.rollback`): on DuckDB the
package loads into the warehouse's draft, which is removed (`DraftRollback`); on PostgreSQL a
snapshot of the dataset's tables is taken first and put back (`SchemaBackup`)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devportal.warehouse import Draft, quote_ident

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline


class DraftRollback:
    """On DuckDB: the warehouse's draft, marked as loading one package, and the one connection
    its load's clients share (`warehouse_duckdb.one_connection`: the jobs, what follows them
    and what the caller reads back), closed before the draft is published or put back. The
    warehouse is not touched until the draft is published, so putting it back is removing the
    draft; a draft left by a killed process is recovered by the next writer (`finish_pending`)."""

    def __init__(self, draft: Draft, held: ExitStack) -> None:
        self.draft, self.held = draft, held

    @classmethod
    def take(cls, warehouse: str | Path, load_id: str, pipeline: Pipeline) -> DraftRollback:
        draft = Draft(warehouse)
        draft.ensure()
        draft.mark_loading(load_id)
        return cls(draft, _one_connection(pipeline))

    def let_go(self) -> None:
        """Close the shared connection (again: nothing)."""
        self.held.close()

    def restore(self) -> bool:
        """Leave the warehouse as it was (it is: the draft is removed); True."""
        self.let_go()
        self.draft.discard()
        return True

    def publish(self) -> None:
        self.let_go()
        self.draft.publish()


def _one_connection(pipeline: Pipeline) -> ExitStack:
    """One connection to the draft for every client of PIPELINE's destination until the stack
    is closed (`warehouse_duckdb.one_connection`); nothing held for another destination."""
    # deferred: loads dlt, kept out of startup
    from devportal.warehouse.destination import warehouse_duckdb

    destination = pipeline.destination
    if not isinstance(destination, warehouse_duckdb):
        return ExitStack()
    return destination.one_connection(pipeline.sql_client())


class SchemaBackup:
    """On PostgreSQL: a copy of every table of the dataset, in the schema `<dataset>_snapshot`,
    taken before a package loads, to put back on failure (the server's counterpart of the file
    copy `DraftRollback`; PostgreSQL copies a million rows in about a second).

    The schema is written in one transaction, its marker table naming the load id last: a
    snapshot that exists is complete, and one left by a killed process is reused for the same
    package, like the file snapshot.
    """

    MARKER = "_devportal_snapshot"

    def __init__(self, pipeline: Pipeline, schema: str) -> None:
        self.pipeline = pipeline
        self.schema = schema

    @classmethod
    def take(cls, pipeline: Pipeline, load_id: str) -> SchemaBackup:
        with pipeline.sql_client() as client:
            dataset = client.dataset_name
            snapshot = cls(pipeline, f"{dataset}_snapshot")
            if snapshot._marker(client) != load_id:
                with client.begin_transaction():
                    client.execute_sql(
                        f"drop schema if exists {quote_ident(snapshot.schema)} cascade"
                    )
                    client.execute_sql(f"create schema {quote_ident(snapshot.schema)}")
                    for table in _tables(client, dataset):
                        client.execute_sql(
                            f"create table {snapshot._name(table)} as table "
                            f"{quote_ident(dataset)}.{quote_ident(table)}"
                        )
                    client.execute_sql(
                        f"create table {snapshot._name(cls.MARKER)} as select %s as load_id",
                        load_id,
                    )
        return snapshot

    def _name(self, table: str) -> str:
        return f"{quote_ident(self.schema)}.{quote_ident(table)}"

    def _marker(self, client: Any) -> str | None:
        # deferred: loads dlt, kept out of startup
        from dlt.destinations.exceptions import DatabaseUndefinedRelation

        try:
            rows = client.execute_sql(f"select load_id from {self._name(self.MARKER)}")
        except DatabaseUndefinedRelation:  # no snapshot schema; any other error is no answer
            return None
        return str(rows[0][0]) if rows else None

    def restore(self) -> bool:
        """Put every table back as it was (and drop those the failed load created)."""
        with self.pipeline.sql_client() as client:
            dataset = client.dataset_name
            saved = set(_tables(client, self.schema)) - {self.MARKER}
            with client.begin_transaction():
                for table in _tables(client, dataset):
                    target = f"{quote_ident(dataset)}.{quote_ident(table)}"
                    if table not in saved:
                        client.execute_sql(f"drop table {target} cascade")
                        continue
                    columns = ", ".join(
                        quote_ident(c) for c in _columns(client, self.schema, table)
                    )
                    client.execute_sql(f"truncate table {target}")
                    client.execute_sql(
                        f"insert into {target} ({columns}) select {columns} from {self._name(table)}"
                    )
                client.execute_sql(f"drop schema {quote_ident(self.schema)} cascade")
        return True

    def drop(self) -> None:
        with self.pipeline.sql_client() as client:
            client.execute_sql(f"drop schema if exists {quote_ident(self.schema)} cascade")


def _tables(client: Any, schema: str) -> list[str]:
    rows = client.execute_sql(
        "select table_name from information_schema.tables "
        "where table_schema = %s and table_type = 'BASE TABLE' order by table_name",
        schema,
    )
    return [str(r[0]) for r in rows or ()]


def _columns(client: Any, schema: str, table: str) -> list[str]:
    rows = client.execute_sql(
        "select column_name from information_schema.columns "
        "where table_schema = %s and table_name = %s order by ordinal_position",
        schema,
        table,
    )
    return [str(r[0]) for r in rows or ()]
