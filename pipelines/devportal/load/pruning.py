"""What a run leaves in dlt's folder beside the warehouse, pruned so it does not grow per run.

dlt keeps every package it loaded (`load/loaded/<load_id>/`, its job files included): an hourly
sync would fill the disk. Once a run has loaded, `prune_loaded` keeps only the newest loaded
package's record (its schema, state and job list, what `dlt pipeline ... load-package` shows)
and deletes its job files and every older loaded package. Packages dlt archived as aborted are
left where they are: they are being set aside (`packages.set_aside`, `devportal packages`), the
user's data awaiting a decision. `clear_spools` removes what runs spooled (`spool/run-*`).
dlt's trace is one file it overwrites each run (`trace.pickle`): nothing to prune.

dlt's own switch, `[load] delete_completed_jobs`, is not used: it deletes the job files of every
package dlt archives, aborted ones without a failed job included (a package whose jobs all
loaded into a draft that was then discarded), and it leaves each package's folder behind.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devportal.base.errors import first_line
from devportal.warehouse.paths import spool_root

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

log = logging.getLogger("devportal.pruning")


def prune_loaded(pipeline: Pipeline) -> list[str]:
    """After a successful run: the job files of the newest loaded package and every older loaded
    package go; the load ids deleted. Housekeeping: what cannot be deleted is a warning, never
    the run's failure (the next run tries again)."""
    # deferred: loads dlt, kept out of startup
    from dlt.common.storages.load_package import PackageStorage

    try:
        # dlt has no public call that deletes a loaded package: its load storage (private) does
        storage = pipeline._get_load_storage()
        if not storage.is_storage_ready():  # nothing normalized yet
            return []
        loaded = storage.loaded_packages
        completed = [
            load_id
            for load_id in storage.list_loaded_packages()
            if _completion(loaded, load_id, PackageStorage.PACKAGE_COMPLETED_FILE_NAME) == "loaded"
        ]
        if not completed:
            return []
        newest = max(completed, key=float)  # a load id is the time it was made
        jobs = loaded.get_job_state_folder_path(newest, PackageStorage.COMPLETED_JOBS_FOLDER)
        if loaded.storage.has_folder(jobs):  # dlt raises on a folder already removed
            loaded.remove_completed_jobs(newest)
        deleted = []
        for load_id in completed:
            if load_id != newest:
                storage.delete_loaded_package(load_id)
                deleted.append(load_id)
        return deleted
    except OSError as err:
        log.warning(
            "could not prune the loaded packages in %s: %s (the next run tries again)",
            pipeline.working_dir,
            first_line(err),
        )
        return []


def _completion(packages: Any, load_id: str, marker: str) -> str | None:
    """How dlt archived LOAD_ID: `loaded` or `aborted` (None: no marker, not dlt's)."""
    path = Path(packages.storage.make_full_path(packages.get_package_path(load_id))) / marker
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def clear_spools(pipeline: Pipeline) -> None:
    """Remove what runs spooled (each run its own folder under `spool/`; loose files of older
    versions). Only under the writer's lock: no other run of this pipeline is reading then."""
    root = spool_root(pipeline)
    try:
        stale = list(root.iterdir()) if root.is_dir() else []
        for path in stale:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
    except OSError as err:  # a cleanup: it must not hide the run's own outcome
        log.warning("could not remove the spooled reads in %s: %s", root, first_line(err))
