"""The runner: builds the models into the schema `analytics` (with the seeds, within a memory
cap on DuckDB) and, with `check`, runs their data tests, on DuckDB (the warehouse file, through
a draft copy published when built) or PostgreSQL (the database of dlt's `postgres`
destination).

Every model is materialised as a TABLE, not a view: its numbers are frozen at build time
together with `analytics.as_of`, so the report, the notebook and any SQL client agree until the
next build; readers get plain fast tables; and a DuckDB view keeps its SQL text and re-binds it
on every read, so a view over `devportal.<table>` breaks under another catalog name. A build is
whole or nothing: a failing model leaves the previous build in place. One transaction holds it
on either engine: on PostgreSQL it drops and creates each table (its DDL is transactional) and
reads one REPEATABLE READ snapshot; on DuckDB it is written into the draft, published only when
every model is built (the previous build's tables are dropped and the draft checkpointed just
before, so the new tables reuse their blocks and the file does not grow:
`_free_previous_build`). One commit writes the build: a commit per model made DuckDB write and
checkpoint the copy model by model (0.15 s more of a 1.4 s build at 100k subscriptions, for the
same bytes); the tables of a transaction not yet committed are DuckDB's to spill (a large one is
written to the draft as it is made), and a build that still runs out of the memory cap is rolled
back whole and built again without it (`_Memory`). A model reading a raw table that does not
exist and is not declared optional is skipped with a note, and so is everything built on it
(`analytics.app_releases` stays absent until a manifest is recorded).

Each model's time is an info line (`devportal models --verbose`, on either engine) and the
summary's `timings`. On PostgreSQL, three things keep the build near DuckDB's time on stock
server settings, none of them the server's: every table a later model reads is analyzed as soon
as it is built (`_analyze`, with `STATISTICS_TARGET`: the planner's row counts and column
sketches, which a table made a moment ago lacks); the build's connection runs without JIT
compilation (`set jit = off`, this session only: where the server has JIT, as Debian's
PostgreSQL 15 does, it compiled a query whose estimate looked big for 0.1-0.5 s to save less:
12 s instead of 4 for a 20k history); and
sqlglot's translations are kept beside the warehouse (`portability.Translations`), so a build
translates only the files that changed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, TypeVar

from devportal.base.errors import DevportalError, first_line
from devportal.base.progress import Progress
from devportal.load.packages import recover_for_writer
from devportal.models.checks import DataTestsFailed, run_tests
from devportal.models.engine_sql import EngineSql, for_engine, render
from devportal.models.portability import Translations
from devportal.models.project import SCHEMA, SOURCE_DIALECT, Model, load_models
from devportal.models.seeds import Seed, seeds_from_settings
from devportal.warehouse import (
    RAW_SCHEMA,
    Draft,
    engines,
    pipelines_dir,
    quote_ident,
    require_warehouse,
)
from devportal.warehouse.target import Target, Where
from devportal.warehouse.writer_lock import writer_lock

log = logging.getLogger("devportal.models")

_T = TypeVar("_T")


def _schema_name(engine: engines.Engine) -> str:
    parts = (engine.catalog, SCHEMA) if engine.catalog else (SCHEMA,)
    return ".".join(quote_ident(p) for p in parts)


def _skip_reason(model: Model, raw_tables: set[str], skipped: Mapping[str, str]) -> str | None:
    for dependency in sorted(model.depends_on):
        if dependency in skipped:
            return f"needs {SCHEMA}.{dependency}, which was skipped"
    for source in sorted(model.sources - model.optional.keys()):
        if source not in raw_tables:
            return f"needs {RAW_SCHEMA}.{source}, which nothing has been loaded into yet"
    return None


def _drop(engine: engines.Engine, name: str, existing: Mapping[str, str]) -> None:
    """Remove what an earlier build left as `analytics.<name>` (a table, or a view of an older
    build)."""
    kind = "view" if existing.get(name) == "view" else "table"
    engine.execute(f"drop {kind} if exists {engine.qualify(SCHEMA, name)}")


def _build_model(
    engine: engines.Engine,
    model: Model,
    code: EngineSql,
    raw_tables: set[str],
    existing: Mapping[str, str],
) -> None:
    """Materialise MODEL as `analytics.<name>`, standing in for its missing optional tables."""
    stubs = {table: sql for table, sql in code.stubs.items() if table not in raw_tables}
    sql = render(code.sql, engine.catalog, stubs)
    try:
        _drop(engine, model.name, existing)
        engine.execute(f"create table {engine.qualify(SCHEMA, model.name)} as\n{sql}\n")
    except engine.errors as err:
        raise DevportalError(
            f"model {SCHEMA}.{model.name} ({code.where}) failed: {first_line(err)}"
        ) from err


def _write_seed(engine: engines.Engine, seed: Seed, existing: Mapping[str, str]) -> None:
    table = engine.qualify(SCHEMA, seed.name)
    columns = ", ".join(f"{quote_ident(name)} {kind}" for name, kind in seed.columns)
    marks = ", ".join("?" for _ in seed.columns)
    try:
        _drop(engine, seed.name, existing)
        engine.execute(f"create table {table} ({columns})")
        for row in seed.rows:  # a few rows; parameters keep any text exact on both engines
            engine.execute(f"insert into {table} values ({marks})", row)
    except engine.errors as err:
        raise DevportalError(f"seed {SCHEMA}.{seed.name} failed: {first_line(err)}") from err


class _Memory:
    """DuckDB's memory cap during one build (`_memory_cap`: lean, where DuckDB's default is 80%
    of the machine's RAM; more for a long history). A build that runs out of it (DuckDB spills
    most work to disk, not all) is rolled back whole and run again under DuckDB's own limit,
    which then holds for the rest of the run: an info line (`--verbose`), as nothing is wrong
    and nothing is asked of the user, so a scheduled run stays one line. PostgreSQL has no cap
    here."""

    def __init__(self, engine: engines.Engine) -> None:
        self.engine = engine
        self.capped = False
        if engine.dialect == SOURCE_DIALECT:
            engine.execute(f"set memory_limit = '{_memory_cap(engine)}MB'")
            self.capped = True

    def run(self, work: Callable[[], _T]) -> _T:
        """WORK (the build in its transaction, or the data tests), once more without the cap when
        it runs out of it."""
        try:
            return work()
        except DevportalError as err:
            if not self.capped or "Out of Memory" not in str(err):
                raise
            log.info("models: DuckDB ran out of its memory cap (%s); going on without it", err)
        self.engine.execute("reset memory_limit")
        self.capped = False
        return work()


def _build_all(
    engine: engines.Engine,
    models: Sequence[Model],
    code: Mapping[str, EngineSql],
    seeds: Sequence[Seed] = (),
    progress: Progress | None = None,
    memory: _Memory | None = None,
    timings: dict[str, float] | None = None,
    analyze_all: bool = False,
) -> tuple[list[str], dict[str, str]]:
    """Write SEEDS and build MODELS in one transaction (module docstring), within MEMORY on
    DuckDB (built again without the cap when it runs out of it): the names built (in order) and
    skipped (with why); PROGRESS hears of each model done, TIMINGS gets each model's seconds
    (a `--verbose` line each). On PostgreSQL every table a later model reads is analyzed once
    built (with ANALYZE_ALL, every table: the data tests read them all)."""
    progress = progress or Progress()
    memory = memory or _Memory(engine)
    timings = {} if timings is None else timings
    built: list[str] = []
    skipped: dict[str, str] = {}
    on_postgres = engine.dialect != SOURCE_DIALECT
    read_later = {dependency for model in models for dependency in model.depends_on}

    if not on_postgres:
        _free_previous_build(engine, [seed.name for seed in seeds] + [m.name for m in models])

    def everything() -> None:
        built.clear()
        skipped.clear()
        timings.clear()
        with engine.transaction():
            if on_postgres:
                # every model reads the same snapshot, as in a DuckDB transaction, even while
                # a load commits table by table; must be the transaction's first statement
                engine.execute("set transaction isolation level repeatable read")
                # the statistics ANALYZE gathers: row counts and a sketch of each column are
                # what the planner lacks on a table made a moment ago (`_analyze`)
                engine.execute(f"set local default_statistics_target = {STATISTICS_TARGET}")
            raw_tables = set(engine.relations(RAW_SCHEMA))
            existing = engine.relations(SCHEMA)
            engine.execute(f"create schema if not exists {_schema_name(engine)}")
            for seed in seeds:
                _write_seed(engine, seed, existing)
            for done, model in enumerate(models, start=1):
                progress.items("models", done - 1, len(models), "done")
                reason = _skip_reason(model, raw_tables, skipped)
                if reason is None:
                    started = time.perf_counter()
                    _build_model(engine, model, code[model.name], raw_tables, existing)
                    if on_postgres and (analyze_all or model.name in read_later):
                        _analyze(engine, model.name)
                    timings[model.name] = time.perf_counter() - started
                    log.info("built %s.%s in %.3fs", SCHEMA, model.name, timings[model.name])
                    built.append(model.name)
                else:
                    skipped[model.name] = reason
                    _drop(engine, model.name, existing)
                    log.info("skipped %s.%s: %s", SCHEMA, model.name, reason)
            progress.items("models", len(models), len(models), "done")

    memory.run(everything)
    return built, skipped


def _free_previous_build(engine: engines.Engine, names: Sequence[str]) -> None:
    """DuckDB: drop the tables the build replaces (NAMES: its seeds and models) and checkpoint
    the draft, before the build's transaction, so the blocks they held are free for the new
    tables. Dropped inside the build's transaction, they stay in use until it commits, the new
    tables take new blocks at the file's end, and the published warehouse grows by a whole
    build's tables every other run (at 1M subscriptions the file went 338 -> 426 -> 338 MB
    between hourly runs that changed nothing). The draft is published only when the build
    is whole, so readers still see the previous build or the new one, never this step."""
    existing = engine.relations(SCHEMA)
    stale = [name for name in dict.fromkeys(names) if name in existing]
    if not stale:
        return
    try:
        with engine.transaction():
            for name in stale:
                _drop(engine, name, existing)
        engine.execute("checkpoint")
    except engine.errors as err:
        raise DevportalError(
            f"cannot drop the previous build of {SCHEMA}: {first_line(err)}"
        ) from err


def _analyze(engine: engines.Engine, name: str) -> None:
    """Gather PostgreSQL's statistics of `analytics.<name>`, built a moment ago in this
    transaction: autovacuum has not seen it yet, so without them the planner guesses its rows
    from its size and each filter's share from a default, and a model reading it joins row by row
    where a hash join takes a moment (`subscription_events` on a migrated 20k history: 1.7 s
    instead of 0.1 s)."""
    try:
        engine.execute(f"analyze {engine.qualify(SCHEMA, name)}")
    except engine.errors as err:
        raise DevportalError(f"model {SCHEMA}.{name}: ANALYZE failed: {first_line(err)}") from err


def _build_within_memory(
    engine: engines.Engine,
    models: Sequence[Model],
    code: Mapping[str, EngineSql],
    check: bool,
    seeds: Sequence[Seed] = (),
    progress: Progress | None = None,
    translations: Translations | None = None,
    timings: dict[str, float] | None = None,
) -> tuple[list[str], dict[str, str], int]:
    """Build (and with CHECK, test) within DuckDB's memory cap (`_Memory`); PostgreSQL is
    built once."""
    memory = _Memory(engine)
    if engine.dialect != SOURCE_DIALECT:
        # no JIT compilation for this connection's queries (module docstring)
        engine.execute("set jit = off")
        engine.execute("commit")
    built, skipped = _build_all(engine, models, code, seeds, progress, memory, timings, check)
    written = {seed.name for seed in seeds}
    tests = (
        memory.run(lambda: run_tests(engine, models, set(built) | written, translations))
        if check
        else 0
    )
    return built, skipped, tests


# PostgreSQL's statistics target for the tables of a build (`_analyze`; the server's default is
# 100): a sample of 3,000 rows is plenty for the row counts and rough shares the planner needs
# here, and ANALYZE of every table then takes 0.1 s at 100k subscriptions instead of 0.7 s
STATISTICS_TARGET = 10

# The models' DuckDB memory: at least MEMORY_FLOOR_MB, and CAP_MB_PER_VERSION per subscription
# version beyond 500k. 1M versions build within 256 MB (5 s), where 64 MB runs out; 100k (20k
# users) build within 64 MB too, yet spill enough there to cost 10% more time than in 128 MB,
# at 15 MB more peak RSS (185 MB, as much as the one transaction of the build before took in 64)
MEMORY_FLOOR_MB = 128
CAP_MB_PER_VERSION = 256 / 1_000_000


def _memory_cap(engine: engines.Engine) -> int:
    """The memory cap (MB) for this history (above): `MEMORY_FLOOR_MB` up to 500k versions,
    then growing with them."""
    versions = 0
    if "subscriptions" in engine.relations(RAW_SCHEMA):
        [(versions,)] = engine.execute(
            f"select count(*) from {engine.qualify(RAW_SCHEMA, 'subscriptions')}"
        )
    return max(MEMORY_FLOOR_MB, int(versions * CAP_MB_PER_VERSION))


def _draft(warehouse: str | Path) -> Draft:
    """The copy of the DuckDB warehouse the models are built into, published when built (see
    `warehouse.Draft`: the warehouse file is never opened for writing, readers may hold it). A
    run a killed sync left half loaded is finished first, as the next sync would."""
    recover_for_writer(warehouse)
    draft = Draft(warehouse)
    draft.create()
    return draft


def build_after_load(target: Target, progress: Progress | None = None) -> dict[str, Any] | None:
    """The models after a load: built on the engine the load wrote to (`Target.engine`: DuckDB
    or PostgreSQL); None for any other destination, including a dlt destination object (where
    it writes is its own business)."""
    return build(target, progress=progress) if target.engine is not None else None


def build(
    target: Where,
    check: bool = False,
    *,
    sql_dir: Path | None = None,
    lock: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Build every model into `analytics` (one transaction); with CHECK, run the data tests.

    TARGET (a `Target`, or the DuckDB warehouse file's path): the DuckDB file, or the database
    of dlt's `postgres` destination (credentials as dlt resolves them; its warehouse path then
    only places the lock file); anything else is a ConfigError. The seeds are written from the
    settings as they are now (`[analytics] status_map`: a bad one is a ConfigError before anything runs).
    Returns a summary: `built` (model names, in build order), `seeds` (the seeds written),
    `skipped` (name -> reason), `tests` (how many data tests ran and passed), `seconds`,
    `destination` (the engine). Raises DevportalError naming the failing model (or
    the file sqlglot cannot translate, before anything runs), or every failing data test. LOCK
    takes the warehouse lock, so a sync cannot write while the models read; pass False when the
    caller already holds it. PROGRESS (`devportal.base.progress`) hears of each model built.
    """
    started = time.monotonic()
    target = Target.of(target)
    warehouse, engine_name = target.warehouse, target.require_engine()
    models = load_models(sql_dir)
    translations = Translations(
        None
        if engine_name == SOURCE_DIALECT
        else pipelines_dir(warehouse) / f"translations-{engine_name}.json"
    )
    code = {model.name: for_engine(model, engine_name, translations) for model in models}
    timings: dict[str, float] = {}
    read = {name for model in models for name in model.seeds}
    seeds = [seed for seed in seeds_from_settings(target.settings) if seed.name in read]
    if engine_name == SOURCE_DIALECT:
        require_warehouse(warehouse)  # before the lock, which would create the folder
    locked = writer_lock(target) if lock else nullcontext()
    with locked:
        draft = _draft(warehouse) if engine_name == SOURCE_DIALECT else None
        try:
            with engines.connect(draft.path if draft else target) as engine:
                built, skipped, tests_run = _build_within_memory(
                    engine, models, code, check, seeds, progress, translations, timings
                )
        except DataTestsFailed:
            if draft is not None:
                draft.publish()  # the build committed; its data tests failed
            raise
        finally:
            translations.save()
        if draft is not None:
            draft.publish()
    seconds = time.monotonic() - started
    log.info(
        "built %d models on %s in %.2fs, skipped %d", len(built), engine_name, seconds, len(skipped)
    )
    return {
        "built": built,
        "seeds": [seed.name for seed in seeds],
        "skipped": skipped,
        "tests": tests_run,
        "seconds": seconds,
        "destination": engine_name,
        "timings": timings,
    }


def summary_line(summary: Mapping[str, Any], *, reasons: bool = True) -> str:
    """One line for people about a `build`: what was built (and where, when not on DuckDB), what
    was skipped (with REASONS, why; else how many: a model skipped because nothing was loaded
    into its table yet, such as `stg_app_manifests` before any manifest, is skipped on every
    build, and a scheduler's log need not say why each time), tests run."""
    engine = summary.get("destination", SOURCE_DIALECT)
    where = "" if engine == SOURCE_DIALECT else f" on {engine}"
    line = f"models ok: {len(summary['built'])} built{where} in {summary['seconds']:.1f}s"
    if summary["skipped"] and reasons:
        notes = ", ".join(f"{name} ({why})" for name, why in summary["skipped"].items())
        line += f"; skipped {notes}"
    elif summary["skipped"]:
        line += f"; {len(summary['skipped'])} skipped (--verbose says why)"
    if summary["tests"]:
        line += f"; {summary['tests']} data tests passed"
    return line
