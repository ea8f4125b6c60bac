"""The warehouse lock: writers (sync, models, manifest load) hold `warehouse_lock` while they
run, so two processes never write one warehouse at once (a conflict is `WarehouseBusy`, exit 3);
the OS's locks come from `devportal.warehouse.filelock`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devportal.base.errors import LockOutlivedItsHolder, WarehouseBusy
from devportal.warehouse import filelock
from devportal.warehouse.draft import Draft, release_guard
from devportal.warehouse.filelock import writer_of
from devportal.warehouse.paths import make_parent, unwritable


@contextmanager
def warehouse_lock(warehouse: str | Path) -> Iterator[None]:
    """Exclusive advisory lock on `<warehouse>.lock`; the OS drops it if the process dies.

    Every writer of the DuckDB warehouse works on its `Draft` inside this lock. When the lock is
    let go, a draft nothing was published from is removed (one half loaded is kept for the next
    run to finish, see `Draft.recover`) and the shared lock `Draft.create` took on the warehouse
    file is released."""
    path = Path(warehouse).resolve()
    make_parent(path)
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise unwritable(path.parent, err) from err
    try:
        if not filelock.try_exclusive(fd):
            holder = filelock.read_holder(fd) or "another process"
            if not _alive(holder):
                raise LockOutlivedItsHolder(
                    f"warehouse {path} is locked, but the devportal run that locked it (pid "
                    f"{holder}) has ended: a process it started still holds {lock_path}; find "
                    f"it with `fuser -v {lock_path}` (or `lsof {lock_path}`) and stop it, then "
                    "run again"
                )
            raise WarehouseBusy(
                f"warehouse {path} is busy: a sync (pid {holder}) is running; "
                "wait for it to finish or stop it"
            )
        try:
            try:
                filelock.write_holder(fd)
            except OSError as err:
                raise unwritable(path.parent, err) from err
            try:
                yield
            finally:
                try:
                    Draft(path).close()
                finally:
                    release_guard(path)
        finally:
            filelock.release(fd)
    finally:
        os.close(fd)


def _alive(holder: str) -> bool:
    """Whether the process HOLDER (the pid the lock's taker wrote) still runs; True when that
    cannot be told (no pid written, another host's, no permission to ask)."""
    if not holder.isdigit() or sys.platform == "win32":  # os.kill there would end it
        return True
    try:
        os.kill(int(holder), 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists under another user, or the platform cannot say
        return True
    return True


def looks_busy(warehouse: str | Path) -> bool:
    """Whether a sync would find WAREHOUSE busy now: another sync holds `<warehouse>.lock`, or
    another process has the DuckDB file open for writing (readers do not count: a sync writes a
    copy). A probe that holds nothing; `devportal sync` reads the API early only when it says no
    (the sync itself then says why it cannot run, with the holder)."""
    path = Path(warehouse).resolve()
    try:
        fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR)
    except OSError:
        pass  # not there (yet): nothing holds it
    else:
        try:
            if filelock.held_elsewhere(fd):
                return True
        finally:
            os.close(fd)  # releases the probe's lock
    return writer_of(path) is not None
