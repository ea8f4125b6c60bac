"""The dlt pipeline bound to one warehouse: its destination and its working folder.

Every writer opens it through `open_pipeline` inside `transaction.writing` (which holds the
lock) and loads through `packages.load_whole`. On DuckDB the pipeline writes the warehouse's
`Draft` (`begin_writing`; a copy published with one rename when a package has loaded), so the
warehouse file itself is never opened for writing and readers may keep it open. Which
destination and which pipeline name: `target.Target`; the warehouse file (name rules, folder,
lock, the draft): `devportal.warehouse`; dlt's DuckDB destination with the exact copy job:
`warehouse.destination`.
"""

from __future__ import annotations

import logging
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devportal.warehouse import (
    NO_EXTENSION_AUTOLOAD,
    RAW_SCHEMA,
    SESSION_SETTINGS,
    Draft,
    check_warehouse_path,
    make_parent,
    pipelines_dir,
)
from devportal.warehouse.target import Target

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

log = logging.getLogger("devportal.pipeline")

DATASET = RAW_SCHEMA  # dlt's dataset is the warehouse's raw schema


def open_pipeline(target: Target, progress: Any = None) -> Pipeline:
    """The dlt pipeline of TARGET writing dataset `devportal`.

    The DuckDB warehouse file: the pipeline writes its `Draft` (see `begin_writing`,
    `load_whole`), never the warehouse file. Any other dlt destination (name or object) is taken
    as configured in `.dlt/config.toml` / secrets, the warehouse path then only places the dlt
    working folder. Each destination has a pipeline (state, pending packages) of its own
    (`Target.pipeline_name`): syncing DuckDB and PostgreSQL from one folder never mixes them.
    """
    # deferred: loads dlt, kept out of startup
    import dlt  # here, not at import: the CLI's other commands need no dlt

    path = check_warehouse_path(target.warehouse, duckdb=target.is_file)
    make_parent(path)
    _percent_safe_job_files()
    dest = _duckdb(target, Draft(path).path) if target.is_file else _destination(dlt, target)
    kwargs: dict[str, Any] = {}
    if progress is not None:
        kwargs["progress"] = progress
    folder = pipelines_dir(path)
    log.info("dlt's own CLI reaches this pipeline with: %s", dlt_command(target))
    return dlt.pipeline(
        pipeline_name=target.pipeline_name,
        pipelines_dir=str(folder),
        destination=dest,
        dataset_name=DATASET,
        **kwargs,
    )


def dlt_command(target: Target, command: str = "info") -> str:
    """The `dlt pipeline` command line that reaches TARGET's pipeline (`info`, `trace`, ...).

    The pipeline lives beside its warehouse (`<dir>/.<file stem>.dlt/`), not in dlt's default
    folder (`~/.dlt/pipelines`): each warehouse has its own state and packages, so two
    warehouses synced from one folder never share them. dlt's CLI is told with one flag."""
    folder = pipelines_dir(target.warehouse)  # resolved: where the pipeline's folder is
    return (
        f"dlt pipeline --pipelines-dir {shlex.quote(str(folder))} {target.pipeline_name} {command}"
    )


def _destination(dlt: Any, target: Target) -> Any:
    """A destination other than the warehouse file, as the target names it. PostgreSQL by name
    gets the credentials every command reads (`config.postgres_login`: dlt's own, with the
    password optional for a server that trusts the connection or libpq's ~/.pgpass)."""
    if target.is_postgres and isinstance(target.destination, str):
        # deferred: loads dlt, kept out of startup
        from devportal.settings.config import postgres_login

        return dlt.destinations.postgres(credentials=postgres_login())
    return target.destination


def _percent_safe_job_files() -> None:
    """dlt 1.31 names a package's job files with `template % file_id`, the template being the
    file's whole path: a warehouse folder with `%` in its name (`sales 100%`, `my%20data`)
    failed every extract with a format error. Its two storages get the folder part escaped
    (`%%`); nothing else changes. Idempotent."""
    # deferred: loads dlt, kept out of startup
    from dlt.common.storages.load_storage import LoadItemStorage
    from dlt.extract.storage import ExtractorItemStorage  # deferred: loads dlt, kept out of startup

    for storage in (ExtractorItemStorage, LoadItemStorage):
        original = storage._get_data_item_path_template
        if getattr(original, "_percent_safe", False):
            continue

        def template(
            self: Any, load_id: str, schema_name: str, table_name: str, _original: Any = original
        ) -> str:
            folder, name = os.path.split(_original(self, load_id, schema_name, table_name))
            return os.path.join(folder.replace("%", "%%"), name)

        template._percent_safe = True  # type: ignore[attr-defined]
        storage._get_data_item_path_template = template  # type: ignore[method-assign,assignment]


def _duckdb(target: Target, path: Path) -> Any:
    """DuckDB at `path` (the warehouse's draft), its load connection tuned for a flat memory
    profile.

    One thread and a buffer cap keep the SCD2 merge (an anti-join over every current version)
    from growing with the table; DuckDB spills past the cap instead. Insertion order means
    nothing to a merge and costs memory. Measured in benchmarks/results: at 1M subscriptions
    the peak went from 381 MB to 339 MB, and the load got faster on 2 cores. The jobs of a
    package load one at a time (`LOAD_WORKERS`), so the cap is never shared.
    """
    # deferred: loads dlt, kept out of startup
    from devportal.warehouse.destination import warehouse_duckdb

    cfg = target.settings.load()  # the command's (only these when it read no other)
    settings = {
        **NO_EXTENSION_AUTOLOAD,
        "preserve_insertion_order": False,
        "threads": cfg.duckdb_threads,
        "memory_limit": cfg.duckdb_memory_limit,
    }
    local = dict(SESSION_SETTINGS)  # per session: DuckDB refuses it as a global setting
    return warehouse_duckdb(
        {"database": str(path), "global_config": settings, "local_config": local}
    )


# dlt runs up to 20 load jobs at once on one DuckDB database, and what DuckDB cannot spill is
# per statement: each JSON-lines read holds a 32 MiB buffer. Four at once overflow the
# 128 MB load cap (`failed to allocate data of size 32.0 MiB (102.0 MiB/122.0 MiB used)`, then
# dlt retries the job), which a busy machine made likely by stretching the jobs over each other.
# One job at a time holds one such buffer; the merges spill. With one DuckDB thread the jobs
# shared a single core anyway.
LOAD_WORKERS = 1


def begin_writing(target: Target) -> None:
    """Before a writer reads or writes the destination through its pipeline: on DuckDB, the
    draft it writes (the warehouse copied, unless a package is already loading into it). For
    other destinations nothing."""
    if target.rollback == "draft":
        Draft(target.warehouse).ensure()


def publish(target: Target) -> None:
    """For a caller that runs the pipeline itself (`pipeline.run`) between `begin_writing` and
    this: on DuckDB, publish the draft it wrote. For other destinations nothing."""
    if target.rollback == "draft":
        Draft(target.warehouse).publish()
