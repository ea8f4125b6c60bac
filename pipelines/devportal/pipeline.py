"""The dlt pipeline bound to one warehouse: its destination, its working folder and its lock.

Every writer (sync, manifest load) goes through `open_pipeline` and holds `warehouse_lock` while
it runs, so two processes never write one warehouse at once and each warehouse keeps its own dlt
state next to it (tests and demos may use many warehouses side by side).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dlt

from devportal.errors import WarehouseBusy

PIPELINE_NAME = "devportal"
DATASET = "devportal"
DEFAULT_WAREHOUSE = "warehouse/devportal.duckdb"


def pipelines_dir(warehouse: str | Path) -> Path:
    """dlt's working folder for this warehouse: `<dir>/.<file stem>.dlt/`."""
    path = Path(warehouse).resolve()
    return path.parent / f".{path.stem}.dlt"


def open_pipeline(warehouse: str | Path, destination: Any = None, progress: Any = None) -> Any:
    """The `devportal` dlt pipeline writing dataset `devportal`.

    `destination` None means DuckDB at `warehouse`; any other dlt destination (name or object)
    is taken as configured in `.dlt/config.toml` / secrets, `warehouse` then only places the
    dlt working folder.
    """
    path = Path(warehouse).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    dest = destination if destination is not None else dlt.destinations.duckdb(str(path))
    kwargs: dict[str, Any] = {}
    if progress is not None:
        kwargs["progress"] = progress
    return dlt.pipeline(
        pipeline_name=PIPELINE_NAME,
        pipelines_dir=str(pipelines_dir(path)),
        destination=dest,
        dataset_name=DATASET,
        **kwargs,
    )


@contextmanager
def warehouse_lock(warehouse: str | Path) -> Iterator[None]:
    """Exclusive advisory lock on `<warehouse>.lock`; the OS drops it if the process dies."""
    path = Path(warehouse).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            raise WarehouseBusy(
                f"warehouse {path} is busy: a sync (pid {holder}) is running; "
                "wait for it to finish or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)
