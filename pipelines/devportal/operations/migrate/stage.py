"""The target's side of a migration: a staging copy of the dataset, made, filled and checked
while the target itself is untouched, then published whole.

- PostgreSQL: the copy is the schema `devportal_migrating` of the target database; publishing
  drops what the target held (with `--replace`) and renames the copy to `devportal` in one
  transaction. A migration killed before that leaves `devportal` as it was, and its leftover
  copy is dropped by the next migration.
- DuckDB: the copy is the warehouse's `Draft` (the file a sync writes and renames over the
  warehouse); publishing is that rename. A draft a killed migration left is removed by the
  next writer, as a sync's.

The tables are made by dlt from the source's stored schemas (`get_destination_clients` and the
job client's `update_stored_schema`, the DDL a sync's load runs), so each column has the type
dlt gives it on this engine. After publishing, the target's dlt pipeline (its local state and
schemas, in the dlt folder beside `--warehouse`) is rebuilt from what was published with dlt's
own `sync_destination`: the next sync there starts from the migrated state and schema.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from devportal.base.errors import DevportalError, first_line
from devportal.operations.migrate.bookkeeping import VERSION_TABLE
from devportal.operations.migrate.sides import Column, DuckDbEnd, End, PostgresEnd
from devportal.warehouse import (
    RAW_SCHEMA,
    Draft,
    WarehouseDamaged,
    connect,
    locate_warehouse,
    open_duckdb,
    quote_ident,
)
from devportal.warehouse.engines import postgres_connection
from devportal.warehouse.target import Target

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

log = logging.getLogger("devportal.migrate")

# where the PostgreSQL copy is staged before it is renamed to the dataset
STAGING_SCHEMA = f"{RAW_SCHEMA}_migrating"
# the schemas that go with the dataset and go when it is replaced: dlt's staging dataset for
# merges (recreated by the next merge) and the snapshot a sync takes before a load on
# PostgreSQL (`load.rollback.SchemaBackup`), which belongs to the data it was taken of
COMPANIONS = (f"{RAW_SCHEMA}_staging", f"{RAW_SCHEMA}_snapshot")
# how many of the tables holding data a refusal names
NAMED = 3


class TargetHoldsData(DevportalError):
    """The target already holds data and `replace` was not given."""


class Stage:
    """One target: `open` (refuse or clear), `create` the tables, fill them through `end`,
    `publish` or `discard`."""

    dataset = RAW_SCHEMA  # where the copy is written on `end`
    end: End

    def __init__(self, target: Target, pipeline: Pipeline, replace: bool) -> None:
        self.target = target
        self.pipeline = pipeline  # the target's dlt pipeline (its destination, its local state)
        self.replace = replace
        self.replaced: dict[str, int] = {}  # the tables the target held, with their rows

    def open(self) -> None:
        raise NotImplementedError

    def create(self, schemas: Iterable[Any], tables: Iterable[str]) -> dict[str, list[Column]]:
        """Make TABLES (each from the first of SCHEMAS that holds it) in the copy with dlt's
        DDL; the tables made, with their columns. Only the source's versions of dlt's stored
        schemas stay in `_dlt_version` (dlt records the one it made the tables of)."""
        # deferred: loads dlt, kept out of startup
        from dlt.dataset.utils import get_destination_clients

        wanted = set(tables)
        for schema in schemas:
            mine = [t for t in schema.tables if t in wanted]
            if not mine:
                continue
            client, _ = get_destination_clients(
                schema,
                destination=self.pipeline.destination,
                destination_dataset_name=self.dataset,
            )
            with client:
                client.initialize_storage()
                client.update_stored_schema(only_tables=mine)
        self._connect()
        made = self.end.tables(self.dataset)
        for extra in set(made) - wanted:  # a dlt table the source never had
            self.end.execute(f"drop table {self.end.qualify(self.dataset, extra)}")
            made.pop(extra)
        if VERSION_TABLE in made:
            self.end.execute(f"delete from {self.end.qualify(self.dataset, VERSION_TABLE)}")
        return made

    def _connect(self) -> None:
        raise NotImplementedError

    def publish(self) -> None:
        raise NotImplementedError

    def after_publish(self) -> None:
        """What follows a publish that cannot undo it."""

    def discard(self) -> None:
        raise NotImplementedError

    def _refuse_held(self, end: End, where: str, fix: str) -> None:
        """Note what the target's dataset holds; refuse it unless `replace`."""
        held = {}
        for table in sorted(end.tables(RAW_SCHEMA)):
            rows = end.count(RAW_SCHEMA, table)
            if rows:
                held[table] = rows
        if held and not self.replace:
            # the API's tables first, the fullest first: what a person recognises
            telling = sorted(held.items(), key=lambda item: (item[0].startswith("_"), -item[1]))
            named = ", ".join(f"{t} {n:,} rows" for t, n in telling[:NAMED])
            more = f" and {len(held) - NAMED} more tables" if len(held) > NAMED else ""
            raise TargetHoldsData(
                f"{where} already holds data ({named}{more}); nothing was copied: pass "
                f"--replace to replace its dataset {RAW_SCHEMA} (and the models built on it), "
                f"or {fix}"
            )
        self.replaced = held

    def restore_pipeline(self) -> None:
        """Rebuild the target's local dlt pipeline from what the target now holds: its working
        folder (state, schemas, and packages pending for the data that was replaced) is
        dropped and dlt restores state and schemas from the dataset (`sync_destination`)."""
        pending = list(self.pipeline.list_normalized_load_packages())
        if pending:
            log.warning(
                "discarded %d load package(s) an interrupted sync had left for the data the "
                "migration replaced (%s)",
                len(pending),
                ", ".join(pending),
            )
        pipeline = self.pipeline.drop()
        pipeline.sync_destination()


class PostgresStage(Stage):
    dataset = STAGING_SCHEMA
    end: PostgresEnd

    def open(self) -> None:
        con = postgres_connection(application_name="devportal migrate")
        self.end = PostgresEnd(con)
        try:
            self._refuse_held(
                self.end,
                f"PostgreSQL (dataset {RAW_SCHEMA})",
                "point DESTINATION__POSTGRES__CREDENTIALS at an empty database",
            )
            # a copy a killed migration left: under the writer's lock nobody else uses it
            self.end.execute(f"drop schema if exists {quote_ident(STAGING_SCHEMA)} cascade")
            self.end.commit()
        except BaseException:
            self.end.close()
            raise

    def _connect(self) -> None:
        pass  # the connection `open` made

    def publish(self) -> None:
        end = self.end
        for schema in (RAW_SCHEMA, *COMPANIONS):
            end.execute(f"drop schema if exists {quote_ident(schema)} cascade")
        end.execute(
            f"alter schema {quote_ident(STAGING_SCHEMA)} rename to {quote_ident(RAW_SCHEMA)}"
        )
        end.commit()  # the one transaction: the target is as it was, or the copy
        end.close()

    def after_publish(self) -> None:
        try:
            self.restore_pipeline()
        except Exception as err:  # the data is published and checked: say so, do not fail
            log.warning(
                "PostgreSQL holds the migrated dataset, but dlt's local state for it could not "
                "be rebuilt (%s); the next sync starts dlt's state afresh and still continues "
                "the history",
                first_line(err),
            )

    def discard(self) -> None:
        try:
            self.end.con.rollback()
            self.end.execute(f"drop schema if exists {quote_ident(STAGING_SCHEMA)} cascade")
            self.end.commit()
        except Exception as err:  # a cleanup must not hide why the migration stopped
            log.warning(
                "could not drop the unfinished copy (schema %s): %s; the next migrate drops it",
                STAGING_SCHEMA,
                first_line(err),
            )
        finally:
            self.end.close()


class DuckDbStage(Stage):
    end: DuckDbEnd

    def open(self) -> None:
        warehouse = self.target.warehouse
        damaged = False
        try:
            if locate_warehouse(warehouse, writer=True) is not None:
                with connect(warehouse, read_only=True) as con:
                    self._refuse_held(
                        DuckDbEnd(con), f"warehouse {warehouse}", "choose a new --warehouse path"
                    )
        except WarehouseDamaged:
            if not self.replace:
                raise
            damaged = True  # what the damaged file held goes: a new file replaces it
        self.draft = Draft(warehouse)
        self.draft.create(copy=not damaged)
        if self.draft.path.exists():  # a copy of the warehouse: what it held goes
            con = open_duckdb(self.draft.path)
            try:
                for schema in (RAW_SCHEMA, *COMPANIONS):
                    con.execute(f"drop schema if exists {quote_ident(schema)} cascade")
            finally:
                con.close()

    def _connect(self) -> None:
        # after dlt's DDL: one process cannot open the file twice with different settings
        self.end = DuckDbEnd(open_duckdb(self.draft.path))

    def publish(self) -> None:
        self.end.close()
        self.restore_pipeline()  # from the draft, the pipeline's destination until published
        self.draft.publish()

    def discard(self) -> None:
        end = getattr(self, "end", None)
        if end is not None:
            end.close()
        if hasattr(self, "draft"):
            self.draft.discard()


def stage_for(target: Target, pipeline: Pipeline, replace: bool) -> Stage:
    return (
        DuckDbStage(target, pipeline, replace)
        if target.is_file
        else PostgresStage(target, pipeline, replace)
    )
