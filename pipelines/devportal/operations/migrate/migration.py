"""One migration: lock both ends, read the source as it is, stage the copy on the target, check
it table by table, publish it whole (see the package's docstring for why each step)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from dlt.common.schema import Schema

from devportal.base.errors import ConfigError, DevportalError, IntegrityError, first_line
from devportal.load.pipeline import open_pipeline
from devportal.operations.migrate.bookkeeping import (
    STATE_TABLE,
    VERSION_TABLE,
    Readdress,
    stored_schemas,
    versions_batch,
)
from devportal.operations.migrate.fingerprint import Fingerprint
from devportal.operations.migrate.sides import Column, DuckDbEnd, End, PostgresEnd
from devportal.operations.migrate.stage import COMPANIONS, Stage, stage_for
from devportal.warehouse import (
    DEFAULT_WAREHOUSE,
    RAW_SCHEMA,
    Draft,
    connect,
    moved,
    require_warehouse,
    warehouse_lock,
)
from devportal.warehouse.engines import postgres_connection
from devportal.warehouse.target import ENGINES, Target, home_setting
from devportal.warehouse.writer_lock import postgres_lock

log = logging.getLogger("devportal.migrate")

# the snapshot a sync takes on PostgreSQL before a load (`load.rollback.SchemaBackup`): while it
# exists, a load was cut short and the dataset may hold part of it
SNAPSHOT_SCHEMA = COMPANIONS[1]
# what `_dlt_version`'s line says was changed on the way (`bookkeeping.versions_batch`)
VERSIONS_NOTE = "file formats left to the target"


@dataclass
class TableCopy:
    """One table copied: its rows counted on each end and its content fingerprinted as written
    (`sent`: the source's rows, with the state rows re-addressed) and as read back from the
    target's copy (`got`)."""

    name: str
    source_rows: int
    target_rows: int
    sent: Fingerprint
    got: Fingerprint
    note: str = ""

    @property
    def same(self) -> bool:
        counts = {self.source_rows, self.target_rows, self.sent.rows, self.got.rows}
        return len(counts) == 1 and self.sent == self.got


@dataclass
class Migration:
    """What `migrate` did: every table copied and checked."""

    source: Target
    target: Target
    tables: list[TableCopy] = field(default_factory=list)
    replaced: dict[str, int] = field(default_factory=dict)  # what the target held before
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(t.target_rows for t in self.tables)

    def table_lines(self) -> list[str]:
        """One line per table: its rows on each end and the content fingerprint they share."""
        width = max([len("table"), *(len(t.name) for t in self.tables)])
        lines = [f"  {'table':<{width}}  {'source rows':>11}  {'target rows':>11}  content"]
        for t in self.tables:
            check = f"{t.got.digest} same on both" if t.same else "DIFFERS"
            note = f" ({t.note})" if t.note else ""
            lines.append(
                f"  {t.name:<{width}}  {t.source_rows:>11,}  {t.target_rows:>11,}  {check}{note}"
            )
        return lines

    def summary(self) -> str:
        replaced = (
            f"; replaced what the target held ({sum(self.replaced.values()):,} rows)"
            if self.replaced
            else ""
        )
        return (
            f"migrate ok in {self.seconds:.1f}s: {describe(self.source)} -> "
            f"{describe(self.target)}, {len(self.tables)} tables, {self.rows:,} rows, each "
            "table the same on both ends (row count, and a fingerprint over every column of "
            f"every row){replaced}"
        )

    def home_line(self, home: str | None) -> str:
        """The migration's last line: the setting that makes the target the warehouse of every
        command (HOME: the destination configured now, None for the DuckDB file), and the sync
        that continues the history there."""
        target = self.target
        default_file = Path(target.warehouse).resolve() == Path(DEFAULT_WAREHOUSE).resolve()
        if not target.is_file:
            if home == target.name:
                return (
                    f"{describe(target)} is the configured warehouse ({home_setting(home)}): "
                    "`devportal sync` and every other command continue there"
                )
            left = (
                f"; the DuckDB file {self.source.warehouse} is marked as moved"
                if self.source.is_file
                else ""
            )
            return (
                f"to make {describe(target)} the warehouse of every command, set "
                f"{home_setting(target.name)}{left}; until then `devportal sync --destination "
                f"{target.name}` continues the history"
            )
        nxt = "devportal sync" + ("" if default_file else f" --warehouse {target.warehouse}")
        if home is None:
            return f"`{nxt}` continues the history"
        return (
            f"`{nxt}` continues the history; the configured warehouse is {home} "
            f"({home_setting(home)}): set it to duckdb (or remove it) to make the DuckDB file "
            "the warehouse of every command"
        )


def describe(target: Target) -> str:
    if target.is_file:
        return f"DuckDB warehouse {target.warehouse}"
    return f"PostgreSQL dataset {RAW_SCHEMA}"


def migrate(source: Target, target: Target, *, replace: bool = False) -> Migration:
    """Copy the dataset `devportal` of SOURCE to TARGET (each the DuckDB warehouse file or
    PostgreSQL), every table and row, dlt's schemas and state included, checked table by table
    before it is published. A TARGET that holds data is refused unless REPLACE. Raises
    DevportalError with one line when refused or when the copy does not check out (the target
    is then as it was)."""
    _check_ends(source, target)
    if source.is_file:
        require_warehouse(source.warehouse)  # before its lock file is made beside it
    started = time.monotonic()
    with _locks(source, target), _reading(source) as src:
        where = describe(source)
        tables = src.tables(RAW_SCHEMA)
        if not tables:
            raise DevportalError(
                f"{where} holds no tables in dataset {RAW_SCHEMA}: nothing to migrate"
            )
        schemas = stored_schemas(src, RAW_SCHEMA, where)
        _refuse_unknown(tables, schemas, where)
        _refuse_unfinished(source, src)
        pipeline = open_pipeline(target)
        destination = pipeline.destination
        readdress = Readdress(
            source.pipeline_name,
            target.pipeline_name,
            destination.destination_type,
            destination.configured_name,
        )
        stage = stage_for(target, pipeline, replace)
        stage.open()
        migration = Migration(source, target, replaced=stage.replaced)
        try:
            made = stage.create(schemas, tables)
            _refuse_other_columns(tables, made, where, describe(target))
            refused = (*src.errors, *stage.end.errors, pa.ArrowException)
            for name, columns in tables.items():
                made_columns = _in_order(made[name], columns)
                try:
                    copied = _copy(src, stage, name, columns, made_columns, readdress)
                except refused as err:
                    raise DevportalError(
                        f"cannot copy table {name} to {describe(target)}: {first_line(err)}; "
                        "nothing was published, the target is as it was"
                    ) from err
                migration.tables.append(copied)
            stage.end.commit()
            _refuse_differences(migration.tables)
            stage.publish()
        except BaseException:
            stage.discard()
            raise
        stage.after_publish()
        _mark(source, target)
    migration.seconds = time.monotonic() - started
    return migration


def _mark(source: Target, target: Target) -> None:
    """After a publish: the DuckDB file the warehouse left is marked moved (`devportal.warehouse.moved`),
    so that a command reading it says so rather than show its figures as current; a DuckDB
    file published into is current again."""
    if target.is_file:
        moved.clear(target.warehouse)
    elif source.is_file:
        try:
            moved.mark_moved(source.warehouse, target, describe(target))
        except OSError as err:  # the migration is done: say so, do not fail
            log.warning(
                "could not mark %s as moved (%s): commands reading it will not say so",
                source.warehouse,
                err.strerror or err,
            )


def _check_ends(source: Target, target: Target) -> None:
    for end, option in ((source, "--from-destination"), (target, "--destination")):
        if end.engine not in ENGINES:
            raise ConfigError(
                f"migrate copies between DuckDB and PostgreSQL, not {end.name}: pass {option} "
                "postgres, or leave it out for the DuckDB file"
            )
    same_file = source.is_file and target.is_file
    if same_file and Path(source.warehouse).resolve() == Path(target.warehouse).resolve():
        raise ConfigError(
            f"the source and the target are the same warehouse {target.warehouse}: pass "
            "--warehouse a new file (or --destination postgres)"
        )
    if source.is_postgres and target.is_postgres:
        raise ConfigError(
            "the source and the target are the same PostgreSQL database (both from "
            "DESTINATION__POSTGRES__CREDENTIALS): migrate to a DuckDB file with --warehouse PATH"
        )


@contextmanager
def _locks(source: Target, target: Target) -> Iterator[None]:
    """The locks a sync of either end holds (`writer_lock.writer_lock`): the lock file beside the
    target's --warehouse and the source's DuckDB file, and PostgreSQL's advisory lock, for
    the whole migration: no sync, models build or other migration runs in the middle."""
    with ExitStack() as stack:
        files = [Path(target.warehouse).resolve()]
        if source.is_file and Path(source.warehouse).resolve() not in files:
            files.append(Path(source.warehouse).resolve())
        for path in files:
            stack.enter_context(warehouse_lock(path))
        if source.is_postgres or target.is_postgres:
            stack.enter_context(postgres_lock())
        yield


@contextmanager
def _reading(source: Target) -> Iterator[End]:
    """A read-only connection to the source; on PostgreSQL one snapshot of every table."""
    if source.is_file:
        with connect(source.warehouse, read_only=True) as con:
            yield DuckDbEnd(con)
        return
    con = postgres_connection(application_name="devportal migrate (reading)")
    try:
        con.set_session(isolation_level="REPEATABLE READ", readonly=True)
        yield PostgresEnd(con)
    finally:
        con.close()


def _refuse_unknown(tables: dict[str, list[Column]], schemas: list[Schema], where: str) -> None:
    known = {name for schema in schemas for name in schema.tables}
    unknown = sorted(set(tables) - known)
    if unknown:
        raise DevportalError(
            f"{where}: table(s) {', '.join(unknown)} in dataset {RAW_SCHEMA} are in none of "
            "dlt's stored schemas, so their types cannot be carried over; move them out of the "
            "dataset (or drop them) and migrate again; nothing was copied"
        )


def _refuse_unfinished(source: Target, src: End) -> None:
    """A load an interrupted sync left half done is not in the source yet: copying now would
    lose that run. The next sync finishes it first."""
    if source.is_postgres:
        if SNAPSHOT_SCHEMA in src.schemas():
            raise DevportalError(
                "PostgreSQL holds the snapshot of a load an interrupted sync left unfinished "
                f"(schema {SNAPSHOT_SCHEMA}): run `devportal sync --destination postgres` once "
                "(it recovers that load first), then migrate"
            )
        return
    loading = Draft(source.warehouse).loading()
    pending = list(open_pipeline(source).list_normalized_load_packages())
    if loading or pending:
        raise DevportalError(
            f"warehouse {source.warehouse} has a load an interrupted sync left unfinished "
            f"(package {loading or pending[0]}): run `devportal sync --warehouse "
            f"{source.warehouse}` once (it finishes that load first), then migrate"
        )


def _refuse_other_columns(
    tables: dict[str, list[Column]], made: dict[str, list[Column]], where: str, there: str
) -> None:
    """The tables dlt made on the target must have the source's columns, each holding the
    same kind of value; otherwise the dataset and its dlt schema disagree."""
    for name, columns in tables.items():
        theirs = {c.name: c.kind for c in made.get(name, ())}
        ours = {c.name: c.kind for c in columns}
        if theirs != ours:
            differ = sorted(
                f"{c}: {ours.get(c, 'none')} vs {theirs.get(c, 'none')}"
                for c in set(ours) | set(theirs)
                if ours.get(c) != theirs.get(c)
            )
            raise DevportalError(
                f"table {name} of {where} and the table dlt's stored schema makes of it on "
                f"{there} differ ({'; '.join(differ[:3])}): the dataset does not match its dlt "
                "schema; nothing was copied"
            )


def _in_order(made: list[Column], columns: list[Column]) -> list[Column]:
    by_name = {c.name: c for c in made}
    return [by_name[c.name] for c in columns]


def _copy(
    src: End,
    stage: Stage,
    name: str,
    columns: list[Column],
    made: list[Column],
    readdress: Readdress,
) -> TableCopy:
    """Copy one table batch by batch, fingerprinting what is written, then read the copy back
    through the target's engine and fingerprint that."""
    json_columns = [c.name for c in columns if c.kind == "json"]
    sent = Fingerprint()
    for batch in src.batches(RAW_SCHEMA, name, columns):
        if name == STATE_TABLE:
            batch = readdress.batch(batch)
        elif name == VERSION_TABLE:  # less the source's choice of file formats
            batch = versions_batch(batch)
        sent.add(batch, json_columns)
        stage.end.append(stage.dataset, name, batch)
    got = Fingerprint()
    for batch in stage.end.batches(stage.dataset, name, made):
        got.add(batch, json_columns)
    return TableCopy(
        name,
        source_rows=src.count(RAW_SCHEMA, name),
        target_rows=stage.end.count(stage.dataset, name),
        sent=sent,
        got=got,
        note=readdress.note
        if name == STATE_TABLE
        else VERSIONS_NOTE
        if name == VERSION_TABLE
        else "",
    )


def _refuse_differences(tables: list[TableCopy]) -> None:
    bad = [t for t in tables if not t.same]
    if bad:
        said = ", ".join(
            f"{t.name} ({t.source_rows:,} rows, {t.target_rows:,} copied, fingerprint "
            f"{t.sent.digest} vs {t.got.digest})"
            for t in bad
        )
        raise IntegrityError(
            f"the copy does not match its source: {said}; nothing was published, the target "
            "is as it was (rerun with --debug and report it)"
        )
