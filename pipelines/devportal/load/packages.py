"""Load packages, whole or not at all: loading one (`load_whole`), recovering what a killed run
left (`finish_pending`, `discard_unfinished`), and the packages set aside with their files
(`set_aside`, listed and discarded by `devportal packages`).

On DuckDB a package loads into the warehouse's draft (`warehouse.Draft`), published with one
rename once every job has loaded; on PostgreSQL a snapshot of the dataset's tables
(`SchemaBackup`) is taken first and put back if the load fails. Where dlt has no public call
for what is needed, the pipeline's load and normalize storages are used (each such use says so).
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from devportal.base.errors import DevportalError, causes, first_line
from devportal.base.errors import PackageSetAside as PackageSetAside
from devportal.load.pipeline import LOAD_WORKERS, open_pipeline, pipelines_dir
from devportal.load.rollback import DraftRollback, SchemaBackup
from devportal.warehouse import Draft, fit
from devportal.warehouse.target import Target

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

log = logging.getLogger("devportal.packages")

VERSION_TABLE = "_dlt_version"  # dlt's stored schemas, one row per version


def set_aside_dir(warehouse: str | Path) -> Path:
    return pipelines_dir(warehouse) / "set_aside"


def set_aside_packages(warehouse: str | Path) -> list[Path]:
    """The folders of the packages set aside for WAREHOUSE, by load id."""
    folder = set_aside_dir(warehouse)
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def set_aside_reason(package: Path) -> str:
    """Why PACKAGE (a folder of `set_aside_packages`) was set aside."""
    note = package / "SET_ASIDE.txt"
    return note.read_text(encoding="utf-8").strip() if note.exists() else "(no reason recorded)"


def _aborted_packages(warehouse: str | Path, load_id: str | None = None) -> list[Path]:
    """Packages dlt archived as aborted (`load/loaded/<id>`, of any pipeline of WAREHOUSE):
    those set aside, or being set aside when a process was killed."""
    folders = pipelines_dir(warehouse).glob(f"*/load/loaded/{load_id or '*'}")
    return [
        folder
        for folder in folders
        if (folder / "package_completed.json").is_file()
        and (folder / "package_completed.json").read_text(encoding="utf-8").strip() == "aborted"
    ]


def discard_set_aside(warehouse: str | Path, package: Path) -> None:
    """Delete a set-aside PACKAGE and every other file of it under dlt's folder (dlt's archived
    copy of an aborted package: its failed jobs)."""
    for folder in (package, *_aborted_packages(warehouse, package.name)):
        shutil.rmtree(folder)


def set_aside(pipeline: Pipeline, warehouse: str | Path, load_id: str, reason: str) -> Path:
    """Move a package that cannot load out of dlt's way, keeping its files for inspection.

    The package is aborted through dlt (which rewinds the local pipeline state to before the
    package, so a window cursor does not skip the data that never loaded, and archives it as
    aborted), then its folder is moved (renamed: no disk space needed, a full disk being one
    reason a load fails) to `<dlt folder>/set_aside/<load_id>/` with the reason. The next sync
    proceeds without it; `devportal packages discard` deletes it.
    """
    # dlt has no public call that moves a package's files: its load storage (private) does
    storage = pipeline._get_load_storage()
    # dlt raises the abort it just did as the original failure: it is expected here
    with contextlib.suppress(Exception):
        pipeline.abort_packages()
    target = set_aside_dir(warehouse) / load_id
    normalized = Path(
        storage.normalized_packages.storage.make_full_path(
            storage.normalized_packages.get_package_path(load_id)
        )
    )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for source in (*_aborted_packages(warehouse, load_id), normalized):
            if source.is_dir():
                if target.exists():
                    shutil.rmtree(target)
                os.rename(source, target)
                break
        target.mkdir(exist_ok=True)
        (target / "SET_ASIDE.txt").write_text(reason + "\n", encoding="utf-8")
    except OSError as err:  # the package stays where dlt keeps it; the reason may be missing
        log.warning("could not record why package %s was set aside: %s", load_id, err)
    return target


def _collect_aborted(warehouse: str | Path) -> list[str]:
    """Packages a killed process had aborted but not yet moved aside: moved now."""
    moved = []
    for folder in _aborted_packages(warehouse):
        target = set_aside_dir(warehouse) / folder.name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(folder, target)
            (target / "SET_ASIDE.txt").write_text(
                "its load was aborted (set aside by an interrupted or an older run)\n",
                encoding="utf-8",
            )
            moved.append(folder.name)
    return moved


def _failure(err: BaseException, target: Target) -> str:
    """Why a load failed, in one line, with the fix where one is known."""
    text = first_line(err)
    oom = "out of memory" in text.lower()
    full = "no space left" in text.lower() or any(
        isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT) for e in causes(err)
    )
    if oom:
        limit = target.settings.load().duckdb_memory_limit
        text += f" (raise duckdb_memory_limit in [sources.devportal], now {limit})"
    elif full:
        text += " (free disk space in the warehouse's folder)"
    return text


def _set_aside_error(
    load_id: str, err: BaseException, where: Path, restored: bool, target: Target
) -> Exception:
    state = (
        "the warehouse is as it was before the run"
        if restored
        else "tables already loaded by it may hold part of the run"
    )
    return PackageSetAside(
        f"loading run {load_id} failed: {_failure(err, target)}; {state}. Its data is kept in "
        f"{where}; `devportal packages discard {load_id}` deletes it",
        load_id,
    )


def load_whole(pipeline: Pipeline, target: Target, *, publish: bool = True) -> Callable[[], None]:
    """Load the pending package whole or not at all.

    dlt commits each table's job on its own, so a job failing halfway (a value the warehouse
    refuses, a full disk) would leave the other tables of the run committed and the package
    pending for ever. On DuckDB the package loads into the warehouse's draft, published when
    every job has loaded and removed if one fails: the warehouse is untouched until the one
    rename. PUBLISH False leaves the loaded package unpublished (what it loaded can then be read
    from the draft) and returns what publishes it, which the caller runs whatever happens next
    (`transaction.writing` does); True publishes at once (the returned callable then does
    nothing). On PostgreSQL a snapshot of the dataset's tables is taken first and put back if
    the load fails. Either survives a killed process: the next run resumes the load into the same draft
    (or snapshot) or recovers it. A package that fails is set aside, with the command that
    discards it. Other destinations load without a snapshot (the message says so on failure).
    """
    from dlt.pipeline.exceptions import PipelineStepFailed  # deferred: dlt is heavy

    load_ids = pipeline.list_normalized_load_packages()
    if not load_ids:
        return _published
    load_id = load_ids[0]
    warehouse = target.warehouse
    if target.rollback == "draft":
        _refuse_unfit(pipeline, target, load_id)
        rollback = DraftRollback.take(warehouse, load_id, pipeline)
        try:
            with _said_once():
                pipeline.load(workers=LOAD_WORKERS)
            _drop_loaded_files(pipeline, load_id)
            _drop_superseded_schemas(pipeline)
        except PipelineStepFailed as err:  # dlt wraps every failure of the load step in it
            # the draft first, freeing its disk space (a full disk is one way a load fails);
            # killed before the package is set aside, the next run sets it aside (its jobs
            # have started and no draft holds them: `finish_pending`). Any other error (a
            # bug, a setting dlt refuses before loading) leaves draft and package as a killed
            # run would, for the next run to recover.
            rollback.restore()
            where = set_aside(pipeline, warehouse, load_id, _failure(err, target))
            raise _set_aside_error(load_id, err, where, restored=True, target=target) from err
        except BaseException:
            rollback.let_go()
            raise
        return _then(rollback.publish, publish)
    backup = SchemaBackup.take(pipeline, load_id) if target.rollback == "schema" else None
    try:
        with _said_once():
            pipeline.load()
    except PipelineStepFailed as err:  # dlt wraps every failure of the load step in it
        restored = backup.restore() if backup is not None else False
        where = set_aside(pipeline, warehouse, load_id, _failure(err, target))
        raise _set_aside_error(load_id, err, where, restored, target=target) from err

    def finish() -> None:
        if backup is not None:
            backup.drop()
        _drop_superseded_schemas(pipeline)

    return _then(finish, publish)


def _published() -> None:
    """What publishes a load that is published already: nothing."""


def _then(finish: Callable[[], None], now: bool) -> Callable[[], None]:
    """FINISH run now (NOW) and nothing left to run, or FINISH to run once, later."""
    if now:
        finish()
        return _published
    done: list[bool] = []

    def once() -> None:
        if not done:
            done.append(True)
            finish()

    return once


def _package_tables(pipeline: Pipeline, load_id: str, cap: int) -> dict[str, tuple[int, int]]:
    """{table: (columns, rows)} of the package's tables wide enough to exceed CAP (`fit`):
    columns from the package's schema, rows counted in its job files (only for those)."""
    # deferred: loads dlt, kept out of startup
    from dlt.common.storages.load_storage import ParsedLoadJobFileName

    # dlt has no public call listing a package's job files: its load storage (private) does
    storage = pipeline._get_load_storage().normalized_packages
    schema = storage.load_schema(load_id)
    tables: dict[str, tuple[int, int]] = {}
    for job in storage.list_new_jobs(load_id):
        parsed = ParsedLoadJobFileName.parse(os.path.basename(job))
        name = parsed.table_name
        columns = len(schema.get_table_columns(name)) if name in schema.tables else 0
        if not fit.may_not_fit(columns, cap):
            continue
        path = storage.storage.make_full_path(job)
        if parsed.file_format == "parquet":
            import pyarrow.parquet as pq  # deferred: loads pyarrow, kept out of startup

            rows = pq.ParquetFile(path).metadata.num_rows
        else:
            with open(path, "rb") as raw:
                gzipped = raw.read(2) == b"\x1f\x8b"
            rows = 0
            with gzip.open(path, "rb") if gzipped else open(path, "rb") as lines:
                for block in iter(lambda: lines.read(1 << 20), b""):
                    rows += block.count(b"\n")
        before = tables.get(name, (columns, 0))[1]
        tables[name] = (columns, before + rows)
    return tables


def _refuse_unfit(pipeline: Pipeline, target: Target, load_id: str) -> None:
    """Refuse, before anything loads, a package a table of which is too wide for DuckDB's
    memory cap (`warehouse.fit`): set aside, with the setting and a value that fits."""
    limit = target.settings.load().duckdb_memory_limit
    cap = fit.cap_bytes(limit)
    if cap is None:
        return
    refused = fit.unfit(_package_tables(pipeline, load_id, cap), cap)
    if refused is None:
        return
    reason = (
        f"table {refused.table} has {refused.columns:,} columns and {refused.rows:,} rows, about "
        f"{-(-refused.need // 10**6):,} MB to load in DuckDB, more than duckdb_memory_limit "
        f'({limit}) allows: set duckdb_memory_limit = "{refused.setting()}" in '
        "[sources.devportal] and sync again"
    )
    where = set_aside(pipeline, target.warehouse, load_id, reason)
    raise PackageSetAside(
        f"run {load_id} was not loaded: {reason}. The warehouse is as it was; the next sync "
        f"reads the rows again. Its data is kept in {where}; `devportal packages discard "
        f"{load_id}` deletes it",
        load_id,
    )


def _drop_loaded_files(pipeline: Pipeline, load_id: str) -> None:
    """The package has loaded whole: the draft's list of loaded files goes (`loader`). If
    that fails the draft stays, whole, and the next writer publishes it (`finish_pending`)."""
    # deferred: loads dlt, kept out of startup
    from dlt.common.destination.exceptions import DestinationException

    # deferred: loads dlt, kept out of startup
    from devportal.warehouse.destination import drop_loaded_files

    try:
        with pipeline.sql_client() as client:
            drop_loaded_files(client)
    except DestinationException as err:  # dlt's wrappers of DuckDB's errors, connecting included
        raise DevportalError(
            f"run {load_id} loaded, but its copy of the warehouse could not be finished "
            f"({first_line(err)}); the next sync, `devportal models` or manifest load publishes "
            "it"
        ) from err


def _drop_superseded_schemas(pipeline: Pipeline) -> None:
    """Keep only the newest stored schema of each name in dlt's version table, of the dataset
    and of its staging dataset.

    The SCD2 hints devportal sets per run (its clock as the boundary, the scope of what it
    closes) make every run's schema a new version, and dlt stores each one whole (about 11 KB,
    twice: the staging dataset has its own table), so the warehouse grew by that with every
    run, one that changed nothing included. dlt reads only the newest (`get_stored_schema`, a
    pipeline restored from the destination) or the one it is about to store (by hash). This is
    housekeeping: when it fails, a warning, and the next run drops them."""
    # deferred: loads dlt, kept out of startup
    from dlt.common.destination.exceptions import DestinationException

    # deferred: loads dlt, kept out of startup
    from dlt.destinations.exceptions import DatabaseUndefinedRelation

    try:
        with pipeline.sql_client() as client:
            for dataset in (client.dataset_name, client.staging_dataset_name):
                with client.with_alternative_dataset_name(dataset):
                    table = client.make_qualified_table_name(VERSION_TABLE)
                    try:
                        client.execute_sql(
                            f"DELETE FROM {table} AS old WHERE old.inserted_at < (SELECT "
                            f"max(newest.inserted_at) FROM {table} AS newest "
                            "WHERE newest.schema_name = old.schema_name)"
                        )
                    except DatabaseUndefinedRelation:  # no staging dataset (nothing merged yet)
                        continue
    except DestinationException as err:  # dlt's wrappers of the engine's errors
        log.warning("could not drop dlt's superseded stored schemas: %s", first_line(err))


def _unfinished_package(record: logging.LogRecord) -> bool:
    return "was not fully loaded" not in str(record.msg)


@contextlib.contextmanager
def _said_once() -> Iterator[None]:
    """While a package loads, dlt's warning that it "was not fully loaded" is left out: the
    load then fails, and `PackageSetAside` says so in its one line, with the cause."""
    dlt_log = logging.getLogger("dlt")
    dlt_log.addFilter(_unfinished_package)
    try:
        yield
    finally:
        dlt_log.removeFilter(_unfinished_package)


@dataclass
class Recovered:
    resumed: list[str] = field(default_factory=list)  # packages of a killed run, recovered
    ids: list[str] = field(default_factory=list)  # of those, the ones set aside


def finish_pending(pipeline: Pipeline, target: Target) -> Recovered:
    """Recover what a killed run left, before a writer reads or writes anything new.

    On DuckDB the draft a killed writer left is recovered first (`Draft.recover`): removed, or,
    when a package was loading into it, kept to resume that load (the package is still
    pending), published (its load had finished) or removed (it was set aside). A pending
    package whose jobs had started without such a draft cannot be loaded whole any more: it is
    set aside. A normalized package is complete and carries its own schema (with its SCD2
    boundary): load it, all or nothing (see `load_whole`); one that cannot load is set aside
    and the writer goes on. An extracted package never reached the warehouse; normalizing it
    now would use the pipeline's current schema, whose boundary hint belongs to another run,
    so it is discarded with what a failed extract or normalize left (`discard_unfinished`: dlt
    restores the local state it had started from) and its data is simply read again.
    """
    recovered = Recovered()
    warehouse = target.warehouse
    normalized = list(pipeline.list_normalized_load_packages())
    if target.rollback == "draft":
        draft = Draft(warehouse)
        loading = draft.recover()
        if loading is not None and loading not in normalized:
            if not draft.is_stale() and draft.holds_load(loading):
                _drop_loaded_files(pipeline, loading)
                draft.publish()  # killed after its load finished, before the rename
            else:
                draft.discard()
            loading = None
        elif loading is not None and draft.is_stale():
            draft.discard()
            loading = None
        elif loading is not None and draft.holds_load(loading):
            # killed after the load committed (dlt's `_dlt_loads` row), before dlt archived the
            # package: loading it again would record it twice
            _drop_loaded_files(pipeline, loading)
            draft.publish()
            # no public call marks a package loaded without loading it: dlt's load storage
            pipeline._get_load_storage().complete_load_package(loading, False)
            recovered.resumed.append(loading)
            loading = None
        for load_id in list(pipeline.list_normalized_load_packages()):
            if load_id != loading and _started(pipeline, load_id):
                reason = (
                    "an interrupted run had loaded part of it into a copy of the warehouse that "
                    "no longer matches; it cannot be loaded whole"
                )
                where = set_aside(pipeline, warehouse, load_id, reason)
                log.warning("set aside package %s (%s) in %s", load_id, reason, where)
                recovered.resumed.append(load_id)
                recovered.ids.append(load_id)
        normalized = list(pipeline.list_normalized_load_packages())
    recovered.ids.extend(_collect_aborted(warehouse))
    if normalized:
        log.warning("finishing %d load package(s) left by an interrupted run", len(normalized))
        recovered.resumed.extend(normalized)
        try:
            load_whole(pipeline, target)
        except PackageSetAside as aside:
            log.warning("%s; this run goes on", aside)
            recovered.ids.append(aside.load_id)
    extracted = discard_unfinished(pipeline)
    if extracted:
        log.warning(
            "discarded %d unloaded package(s) of an interrupted run; their data is read again",
            len(extracted),
        )
        recovered.resumed.extend(extracted)
    return recovered


def discard_unfinished(pipeline: Pipeline) -> list[str]:
    """Discard what a run that failed or was killed before its package was normalized left;
    the ids of the extracted packages discarded.

    An extracted package is aborted through dlt, which puts the local pipeline state and schemas
    back to where the package started (a refused or killed run changes neither the window
    cursor nor the schema). dlt leaves two kinds of folders behind it: the package an extract
    was writing when it failed (`normalize/<random>/`, never committed; dlt's own next extract
    writes a folder of its own, so these only pile up) and the package a normalize was writing
    (`load/new/<load_id>`). Under the writer's lock no other extract or normalize runs, so
    every such folder is left over and goes.
    """
    extracted = list(pipeline.list_extracted_load_packages())
    if extracted:
        pipeline.abort_packages()
    # the folders a failed extract or normalize left have no public API (dlt's storages)
    normalize = pipeline._get_normalize_storage()
    root = Path(normalize.storage.storage_path)
    if root.is_dir():
        for folder in root.iterdir():
            if folder.is_dir() and folder.name != normalize.EXTRACTED_FOLDER:
                shutil.rmtree(folder)
    new_packages = pipeline._get_load_storage().new_packages
    if Path(new_packages.storage.storage_path).is_dir():  # none before a first normalize
        for load_id in new_packages.list_packages():
            new_packages.delete_package(load_id)
    return extracted


def _started(pipeline: Pipeline, load_id: str) -> bool:
    """Whether any job of the pending package LOAD_ID has started loading."""
    jobs = pipeline.get_load_package_info(load_id).jobs  # dlt's public package info
    return any(jobs.get(state) for state in ("started_jobs", "completed_jobs", "failed_jobs"))


def recover_for_writer(warehouse: str | Path) -> None:
    """For a DuckDB writer outside a sync (the models' build): recover a draft a killed writer
    left. One with a package half loaded into it needs dlt: the package's load is finished
    (or set aside) first, as the next sync would."""
    if Draft(warehouse).recover() is not None:
        target = Target.of(warehouse)
        finish_pending(open_pipeline(target), target)
