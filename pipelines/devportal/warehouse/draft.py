"""Writing the warehouse: a `Draft` (a copy) published over it with one rename, so readers may
hold the file open read-only at any time; and the shared lock a writer holds on the published
file while it holds the warehouse lock (a program opening it for writing is refused)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import threading
from pathlib import Path

from devportal.base.errors import ConfigError, DevportalError, HeldByAnotherProgram, first_line
from devportal.warehouse import filelock
from devportal.warehouse.connection import check_file, damage_in, open_duckdb, quote_ident
from devportal.warehouse.filelock import writer_of
from devportal.warehouse.paths import RAW_SCHEMA, damaged_error, pipelines_dir, shown, unwritable

# the shared lock each writer holds on the published warehouse file while it holds the
# warehouse lock (`_guard`): warehouse path -> open file descriptor
_guards: dict[Path, int] = {}
_guards_lock = threading.Lock()


def _process(pid: int) -> str:
    """`pid N (program)` for a message, as far as this system tells."""
    if pid <= 0:
        return "another process"
    try:
        program = Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
    except OSError:
        return f"pid {pid}"
    return f"pid {pid}, {program}"


def written_elsewhere(path: Path, pid: int | None) -> HeldByAnotherProgram:
    """Another program has the warehouse file open for writing (devportal's own writers
    never do: they write a draft, under the warehouse lock)."""
    return HeldByAnotherProgram(
        f"warehouse {shown(path)} is open for writing in {_process(pid or 0)}, not a devportal "
        "run; devportal writes a copy of it and a copy of a file being written is not "
        "consistent: close that program's connection (readers may stay: open it with "
        "read_only=True); every run fails until then (exit 4)"
    )


def _guard(warehouse: Path, fd: int | None = None) -> None:
    """Hold a shared lock on the published warehouse file (FD, or a new descriptor) until the
    warehouse lock is let go. DuckDB's readers are welcome beside it; a program opening the file
    for writing is refused by DuckDB itself, instead of writing into a file devportal is about
    to replace. WarehouseBusy when a program writes it now (a new warehouse: nothing to hold)."""
    if fd is None:
        try:
            fd = os.open(warehouse, os.O_RDONLY)
        except FileNotFoundError:
            return
        except OSError as err:
            raise ConfigError(
                f"cannot read warehouse {shown(warehouse)}: {err.strerror or err}; check the "
                "file's permissions"
            ) from err
        try:
            filelock.lock_shared(fd)
        except OSError as err:
            os.close(fd)
            raise written_elsewhere(warehouse, writer_of(warehouse)) from err
    with _guards_lock:
        old = _guards.pop(warehouse, None)
        _guards[warehouse] = fd
    if old is not None:
        os.close(old)


def release_guard(warehouse: Path) -> None:
    with _guards_lock:
        fd = _guards.pop(warehouse, None)
    if fd is not None:
        os.close(fd)


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _identity(path: Path) -> list[int] | None:
    """What tells one state of a file from another: device, inode, size, modification time."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _fsync(path: Path, *, folder: bool = False) -> None:
    if folder and not hasattr(os, "O_DIRECTORY"):
        return  # Windows cannot open a folder to sync it: the rename is as durable as it goes
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if folder else 0))
    try:
        os.fsync(fd)
    except OSError as err:
        if not folder or err.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise  # some file systems cannot sync a folder: the rename is as durable as they go
    finally:
        os.close(fd)


def _write_synced(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_tree(folder: Path) -> None:
    """Remove FOLDER: renamed away first (one step), so a removal cut short never leaves a
    folder that looks like a complete draft."""
    if not folder.exists():
        return
    trash = folder.with_name(f"{folder.name}.removing.{os.getpid()}")
    try:
        os.rename(folder, trash)
    except OSError:
        trash = folder
    shutil.rmtree(trash, ignore_errors=True)


# what a copy needs beyond its bytes: the folder's entries and the few small files beside it
ROOM_MARGIN = 64 << 10


def room_needed(warehouse: Path) -> int:
    """The bytes a writer's copy of WAREHOUSE takes (the file and a write-ahead log a killed
    writer left beside it), with `ROOM_MARGIN`; 0 while there is no warehouse yet."""
    sizes = [p.stat().st_size for p in (warehouse, _wal(warehouse)) if p.exists()]
    return sum(sizes) + ROOM_MARGIN if sizes else 0


def check_room(warehouse: str | Path) -> None:
    """Refuse, before a writer starts, when the disk under the folder beside WAREHOUSE has no
    room for its copy (every DuckDB writer changes a copy and publishes it with one rename):
    one line with the room needed, the room free and where. The load or build itself needs
    more; a disk that fills while it runs is the one line of `unwritable`."""
    path = Path(warehouse).resolve()
    needed = room_needed(path)
    if not needed:
        return
    folder = next((p for p in (pipelines_dir(path), path.parent) if p.exists()), path.parent)
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # the copy itself says what is wrong with the folder
    if free < needed:
        raise DevportalError(
            f"not enough free disk space for the copy of warehouse {shown(path)} that every "
            f"writer changes: it needs {_mb(needed)}, {_mb(free)} are free on the device of "
            f"{shown(folder)}; free disk space there (or move the warehouse to a larger disk) "
            "and run again: nothing was written"
        )


def _mb(size: int) -> str:
    return f"{size / 10**6:,.1f} MB"


class Draft:
    """The copy of the DuckDB warehouse a writer changes, published over it with one rename.

    devportal never opens the warehouse file for writing, so readers (a notebook, DBeaver,
    Metabase, `devportal report`) may hold it open read-only at any time. A writer (a sync's
    load, the models' build, a manifest load), inside `warehouse_lock`, copies the warehouse to
    `<dlt folder>/next/<the same file name>` (DuckDB names the catalog after the file, and the
    same folder keeps the rename on one file system), writes the copy, checkpoints it (no
    write-ahead log left), syncs it to disk and renames it over the warehouse
    (`os.replace`). A connection already open keeps the file it opened, a new one gets the new
    file, and a process killed at any point leaves the warehouse as it was or as published.

    On disk, in `folder` (first written as `next.partial`, renamed when the copy is whole, so a
    `next` folder always holds a complete copy):
      <name>    the copy (with `<name>.wal` while DuckDB writes it)
      BASE      the warehouse's identity when copied (`_identity`; null: there was none)
      LOADING   the id of the load package being loaded into the copy (see `recover`)
    """

    def __init__(self, warehouse: str | Path) -> None:
        self.warehouse = Path(warehouse).resolve()
        self.folder = pipelines_dir(self.warehouse) / "next"
        self.path = self.folder / self.warehouse.name

    @property
    def partial(self) -> Path:
        return self.folder.with_name(self.folder.name + ".partial")

    def exists(self) -> bool:
        return (self.folder / "BASE").is_file()

    def ensure(self) -> None:
        """Make the copy unless this writer has it already."""
        if not self.exists():
            self.create()

    def create(self, *, copy: bool = True) -> None:
        """Copy the warehouse (and a write-ahead log a killed writer left beside it) into a new
        draft; an empty draft when not COPY (what replaces a damaged file). WarehouseBusy when
        a program has the warehouse open for writing; one line when the copy does not fit or
        cannot be written (the warehouse is untouched)."""
        _remove_tree(self.partial)
        _remove_tree(self.folder)
        _guard(self.warehouse)
        check_room(self.warehouse)
        into = self.partial / self.path.name
        try:
            self.partial.mkdir(parents=True)
            base = _identity(self.warehouse)
            if base is not None and copy:
                check_file(self.warehouse)  # a copy of a file cut short would hide the damage
                for source, target in ((self.warehouse, into), (_wal(self.warehouse), _wal(into))):
                    if source.exists():
                        shutil.copyfile(source, target)
                        _fsync(target)
            _write_synced(self.partial / "BASE", json.dumps(base))
            _fsync(self.partial, folder=True)
            os.rename(self.partial, self.folder)
            _fsync(self.folder.parent, folder=True)
        except OSError as err:
            _remove_tree(self.partial)
            raise unwritable(self.folder.parent, err) from err

    def mark_loading(self, load_id: str) -> None:
        try:
            _write_synced(self.folder / "LOADING", load_id)
        except OSError as err:
            raise unwritable(self.folder, err) from err

    def loading(self) -> str | None:
        """The load id of the package being loaded into this copy, if any."""
        try:
            return (self.folder / "LOADING").read_text(encoding="utf-8").strip() or None
        except OSError:
            return None

    def is_stale(self) -> bool:
        """Whether the warehouse changed since it was copied (another program replaced or
        wrote it, against the lock): publishing the copy would undo that."""
        try:
            base = json.loads((self.folder / "BASE").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return True
        return bool(base != _identity(self.warehouse))

    def holds_load(self, load_id: str) -> bool:
        """Whether the copy has LOAD_ID committed (dlt's `_dlt_loads` row): its load finished."""
        if not self.path.exists():
            return False
        con = open_duckdb(self.path, read_only=True)
        try:
            found = con.execute(
                "select count(*) from information_schema.tables "
                "where table_schema = ? and table_name = '_dlt_loads'",
                [RAW_SCHEMA],
            ).fetchone()
            if not found or not found[0]:
                return False
            rows = con.execute(
                f"select count(*) from {quote_ident(RAW_SCHEMA)}._dlt_loads where load_id = ?",
                [load_id],
            ).fetchone()
            return bool(rows and rows[0])
        finally:
            con.close()

    def publish(self) -> None:
        """Checkpoint the copy, sync it to disk and rename it over the warehouse. Every
        connection to the copy must be closed. The shared lock moves to the published file."""
        if not self.path.exists():  # a copy of no warehouse that nothing was written into
            self.discard()
            return
        if self.is_stale():
            self.discard()
            raise DevportalError(
                f"warehouse {shown(self.warehouse)} was replaced or written by another program "
                "while devportal wrote its copy; nothing was published, the warehouse keeps that "
                "program's version: run again"
            )
        if _wal(self.path).exists():
            # deferred: loads DuckDB, kept out of startup
            import duckdb  # loaded already: open_duckdb imported it

            con = open_duckdb(self.path)
            try:
                con.execute("checkpoint")
            except duckdb.Error as err:
                if damage_in(err) is not None:  # the copy of a damaged file: the file is
                    self.discard()
                    cause = first_line(err).replace(str(self.path), shown(self.warehouse))
                    raise damaged_error(shown(self.warehouse), cause) from err
                raise DevportalError(
                    f"cannot checkpoint the copy of warehouse {shown(self.warehouse)} "
                    f"({first_line(err)}); nothing was published: free disk space and run again"
                ) from err
            finally:
                con.close()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            if _wal(self.path).exists():
                raise DevportalError(
                    f"cannot publish {shown(self.path)}: it keeps a write-ahead log after a "
                    "checkpoint; nothing was published: run again"
                )
            try:
                filelock.lock_shared(fd)
            except OSError as err:
                raise DevportalError(
                    f"cannot publish {shown(self.path)}: it is still open for writing; nothing "
                    "was published: run again"
                ) from err
            os.fsync(fd)
            # a log a killed writer left beside the old file: the copy has its transactions
            _wal(self.warehouse).unlink(missing_ok=True)
            os.replace(self.path, self.warehouse)
            _fsync(self.warehouse.parent, folder=True)
        except OSError as err:
            os.close(fd)
            raise unwritable(self.warehouse.parent, err) from err
        except BaseException:
            os.close(fd)
            raise
        _guard(self.warehouse, fd)
        _remove_tree(self.folder)

    def discard(self) -> None:
        """Remove the copy: the warehouse stays as it is."""
        _remove_tree(self.partial)
        _remove_tree(self.folder)

    def close(self) -> None:
        """When the warehouse lock is let go: remove a copy nothing was published from, unless
        a package is half loaded into it (the next writer finishes it, see `recover`)."""
        _remove_tree(self.partial)
        if self.folder.exists() and (self.loading() is None or not self.exists()):
            self.discard()

    def recover(self) -> str | None:
        """Recover what a writer killed earlier left, before this one writes. A partial copy,
        one already published (its file renamed away), a plain copy (a run killed before it
        loaded, a models build) or a copy of a warehouse that changed since is removed: the
        warehouse is as it was, or as published. A copy with a package being loaded into it is
        kept: its load id is returned, for the caller, who knows dlt's packages, to resume the
        load into it (pending), publish it (`holds_load`: it finished) or discard it."""
        _remove_tree(self.partial)
        if not self.folder.exists():
            return None
        loading = self.loading()
        if (
            loading is None
            or not self.exists()
            or (not self.path.exists() and _identity(self.warehouse) is not None)
        ):
            self.discard()
            return None
        return loading
