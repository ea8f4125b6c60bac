"""The warehouse file: its name rules, its folder, its lock, writing it, opening it with DuckDB.

Writers (sync, models, manifest load) hold `warehouse_lock` while they run, so two processes
never write one warehouse at once; dlt keeps its state for a warehouse in
`pipelines_dir(warehouse)`, next to it (tests and demos may use many warehouses side by side).
A writer never opens the warehouse file for writing: it writes a `Draft` (a copy) and publishes
it with one rename, so readers may hold the file open read-only at any time. `devportal.pipeline`
binds the dlt pipeline to the warehouse; this module knows nothing of dlt. The OS's locks
come from `devportal.filelock` (fcntl; msvcrt on Windows, see docs/platforms.md).

Every problem with the file is one line with the cause and the fix, classified in one place:
the path (`locate_warehouse`: a folder, a path under a regular file, a name whose catalog would
clash, a path DuckDB cannot open, a file that is not a DuckDB database), DuckDB's refusal to
open it (`open_error`: busy, damaged, another DuckDB version, ...) and the disk refusing a write
(`unwritable`: full, read-only, no permission). Writers get `ConfigError` (exit 2) for a path
they cannot use, readers `DevportalError` (exit 1); a lock conflict, or a program holding the
file open for writing, is `WarehouseBusy` (exit 3).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devportal import filelock
from devportal.errors import ConfigError, DevportalError, WarehouseBusy, first_line
from devportal.filelock import writer_of  # re-exported: the probe lives with the locks

# A DuckDB file starts with an 8-byte checksum, then this magic (every storage version).
DUCKDB_MAGIC = b"DUCK"
SQLITE_MAGIC = b"SQLite format 3\x00"
# Connections devportal opens never fetch or load extensions behind the user's back: a SQLite
# file at the warehouse path would otherwise make DuckDB try to download `sqlite_scanner`.
NO_EXTENSION_AUTOLOAD = {"autoload_known_extensions": False, "autoinstall_known_extensions": False}
# devportal's own connections (models, report, manifest history): DuckDB's buffers are capped
# (it spills to `<warehouse>.tmp` beyond), so a models build stays flat in memory however large
# the history; DuckDB's default is 80% of the machine's RAM.
OWN_MEMORY_LIMIT_MB = 64
OWN_CONNECTION: dict[str, Any] = {
    **NO_EXTENSION_AUTOLOAD,
    "memory_limit": f"{OWN_MEMORY_LIMIT_MB}MB",
}

# The warehouse's schemas: dlt's dataset (raw tables, `pipeline.DATASET`) and the SQL models'.
RAW_SCHEMA = "devportal"
ANALYTICS_SCHEMA = "analytics"
# Not `devportal.duckdb`: DuckDB names the catalog after the file, and a catalog called like the
# dataset (`devportal`) or the models' schema (`analytics`) makes `devportal.subscriptions`
# ambiguous for DuckDB's binder, in dlt's own SQL and in every user's query.
DEFAULT_WAREHOUSE = "warehouse/warehouse.duckdb"
RESERVED_STEMS = (RAW_SCHEMA, ANALYTICS_SCHEMA, "main", "system", "temp")
# What DuckDB cannot have in a database's path, on any system (tested with DuckDB 2.0): it reads
# `\` as a folder separator, so `/data/back\slash/w.duckdb` opens `/data/back/slash/w.duckdb`
# (symlinks, `file:` and `/proc/self/fd` paths are resolved first and end the same), and `?` as
# the start of connection options, so the write-ahead log of `/data/q?x/w.duckdb` goes to
# `/data/q.wal?x/w.duckdb`. No DuckDB client can use such a path, devportal's included.
DUCKDB_UNUSABLE = {"\\": "a backslash", "?": "a question mark"}


def quote_ident(name: str) -> str:
    """A SQL identifier in double quotes (quotes doubled): any table, schema or catalog name."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(text: str) -> str:
    """`text` as a SQL string literal in single quotes (quotes doubled): any value or path."""
    return "'" + text.replace("'", "''") + "'"


def not_duckdb(header: bytes) -> str | None:
    """What a file with these first bytes is when it is not a DuckDB database, else None."""
    if header[8:12] == DUCKDB_MAGIC:
        return None
    if not header:
        return "an empty file"
    if header.startswith(SQLITE_MAGIC):
        return "an SQLite database"
    if b"\x00" not in header:
        try:
            header.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return "a text file"
    return "not DuckDB's file format"


def pipelines_dir(warehouse: str | Path) -> Path:
    """dlt's working folder for this warehouse: `<dir>/.<file stem>.dlt/`."""
    path = Path(warehouse).resolve()
    return path.parent / f".{path.stem}.dlt"


def delete_warehouse(warehouse: str | Path) -> None:
    """Remove the warehouse file, its write-ahead log and dlt's working folder: a fresh start."""
    path = Path(warehouse)
    for extra in (path, path.with_name(path.name + ".wal")):
        extra.unlink(missing_ok=True)
    shutil.rmtree(pipelines_dir(path), ignore_errors=True)


# -- the path: one classification for readers and writers -------------------------------------


def _shown(path: str | Path) -> str:
    """PATH for a one-line message: as typed, quoted when it holds a newline or control; the
    warehouse's own path for its draft (`Draft.path`), which is what the user knows."""
    candidate = Path(path)
    folder = candidate.parent
    if folder.name == "next" and folder.parent.name == f".{candidate.stem}.dlt":
        path = folder.parent.parent / candidate.name
    text = str(path)
    return text if text.isprintable() else repr(text)


def _under_a_file(path: str | Path, blocker: Path) -> ConfigError:
    return ConfigError(
        f"warehouse {_shown(path)} cannot exist: {_shown(blocker)} is a file, not a folder; "
        "pass --warehouse a path in a folder"
    )


def _not_duckdb(path: str | Path, what: str) -> ConfigError:
    return ConfigError(
        f"{_shown(path)} is not a DuckDB database ({what}); pass --warehouse the .duckdb file "
        "`devportal sync` writes, or move this file away and run `devportal sync` to create "
        "a warehouse there"
    )


def locate_warehouse(
    warehouse: str | Path, *, writer: bool = False, check_name: bool = True, duckdb: bool = True
) -> Path | None:
    """The resolved path of the DuckDB file WAREHOUSE, or None when nothing is there yet.

    Raises a one-line ConfigError (exit 2) when the path cannot be a warehouse: a name whose
    catalog would clash with a schema (CHECK_NAME; readers that qualify every name with the
    catalog may pass False), a path DuckDB cannot open (`DUCKDB_UNUSABLE`; DUCKDB False when
    the path only places dlt's folder and the lock, for another destination), a folder or
    other non-file, a path under a regular file, an unusable name (too long, a symlink loop),
    an unreadable file, or a file that is not a DuckDB database, sniffed from its header
    before DuckDB sees it, so no extension is ever asked to open it. A WRITER takes an empty
    file as a new warehouse; a reader does not.
    """
    try:
        path = Path(warehouse).resolve()
        if duckdb:
            _refuse_unusable(path)
        reserved = check_name and path.stem.lower() in RESERVED_STEMS
        exists = path.exists()
        blocker = None if exists else next((p for p in path.parents if p.exists()), None)
        is_dir = exists and path.is_dir()
    except (OSError, RuntimeError, ValueError) as err:  # name too long, symlink loop, NUL
        reason = getattr(err, "strerror", None) or first_line(err)
        raise ConfigError(
            f"cannot use warehouse path {_shown(warehouse)}: {reason}; "
            "pass --warehouse the path of a .duckdb file"
        ) from None
    if reserved:
        raise ConfigError(
            f"warehouse file {path.name!r} would make DuckDB's catalog {path.stem!r} clash with the "
            f"schema of the same name; choose another file name (default {DEFAULT_WAREHOUSE})"
        )
    if not exists:
        if blocker is not None and not blocker.is_dir():
            raise _under_a_file(warehouse, blocker)
        return None
    if not path.is_file():
        kind = "a directory" if is_dir else "not a regular file"
        raise ConfigError(
            f"warehouse {_shown(path)} is {kind}; pass --warehouse the path of a .duckdb file"
        )
    try:
        with path.open("rb") as f:
            header = f.read(16)
    except OSError as err:
        raise ConfigError(
            f"cannot read warehouse {_shown(path)}: {err.strerror or err}; "
            "check the file's permissions"
        ) from None
    what = not_duckdb(header) if header or not writer else None
    if what is not None:
        raise _not_duckdb(path, what)
    return path


def check_warehouse_path(warehouse: str | Path, *, duckdb: bool = True) -> Path:
    """For writers: the resolved warehouse path, which may not exist yet (it is then created);
    one-line ConfigError when it cannot be a warehouse (see `locate_warehouse`)."""
    path = locate_warehouse(warehouse, writer=True, duckdb=duckdb)
    return path if path is not None else Path(warehouse).resolve()


def _refuse_unusable(path: Path) -> None:
    """A one-line ConfigError when DuckDB cannot open a database at PATH (`DUCKDB_UNUSABLE`)."""
    for char, name in DUCKDB_UNUSABLE.items():
        if char in str(path):
            raise ConfigError(
                f"DuckDB cannot open a warehouse at {_shown(path)}: its path holds {name} "
                f"({char}), which DuckDB reads as "
                + ("a folder separator" if char == "\\" else "the start of connection options")
                + f" (it would open another file); pass --warehouse a path without {char}"
            )


def require_warehouse(warehouse: str | Path) -> Path:
    """For readers: the path of the existing warehouse file; "run a sync first" when missing."""
    path = locate_warehouse(warehouse)
    if path is None:
        raise DevportalError(
            f"no warehouse at {_shown(warehouse)}: run `devportal sync` (or `devportal demo`) first"
        )
    return path


def _refuse_file_parents(path: Path) -> None:
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise _under_a_file(path, blocker)


def make_parent(path: Path) -> None:
    """Create the warehouse's folder; a one-line error when the OS refuses."""
    _refuse_file_parents(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"cannot create the warehouse folder {_shown(path.parent)}: {err.strerror or err}; "
            "choose a writable --warehouse path"
        ) from None


@contextmanager
def warehouse_lock(warehouse: str | Path) -> Iterator[None]:
    """Exclusive advisory lock on `<warehouse>.lock`; the OS drops it if the process dies.

    Every writer of the DuckDB warehouse works on its `Draft` inside this lock. When the lock is
    let go, a draft nothing was published from is removed (one half loaded is kept for the next
    run to finish, see `Draft.settle`) and the shared lock `Draft.create` took on the warehouse
    file is released."""
    path = Path(warehouse).resolve()
    make_parent(path)
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise unwritable(path.parent, err) from None
    try:
        if not filelock.try_exclusive(fd):
            holder = filelock.read_holder(fd) or "another process"
            raise WarehouseBusy(
                f"warehouse {path} is busy: a sync (pid {holder}) is running; "
                "wait for it to finish or stop it"
            ) from None
        try:
            try:
                filelock.write_holder(fd)
            except OSError as err:
                raise unwritable(path.parent, err) from None
            try:
                yield
            finally:
                try:
                    Draft(path).close()
                finally:
                    _release_guard(path)
        finally:
            filelock.release(fd)
    finally:
        os.close(fd)


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


# what an OSError from writing files says about the disk under them (`disk_error`)
DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


def disk_error(err: BaseException, warehouse: str | Path) -> DevportalError | None:
    """ERR as a one-line error naming the warehouse's folder, when it is the disk under it
    refusing a write (full, read-only, no permission); None for anything else."""
    if not isinstance(err, OSError) or err.errno not in DISK_ERRNOS:
        return None
    return unwritable(Path(warehouse).resolve().parent, err)


def unwritable(folder: Path, err: OSError) -> DevportalError:
    """OSError ERR writing in FOLDER (the warehouse's, or dlt's beside it) as one line: a full
    disk, a read-only file system, no permission."""
    where = _shown(folder)
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return DevportalError(
            f"no space left on the device of {where} ({err.strerror}); free disk space there "
            "and run again: the warehouse is as it was"
        )
    if err.errno == errno.EROFS:
        return ConfigError(
            f"{where} is on a read-only file system; devportal writes the warehouse, its lock "
            "and its working folder there: pass --warehouse a path on a writable file system "
            "(or remount it read-write)"
        )
    if err.errno in (errno.EACCES, errno.EPERM):
        return ConfigError(
            f"cannot write in {where}: permission denied; make that folder writable for this "
            "user or pass --warehouse a path in a writable folder"
        )
    return DevportalError(
        f"cannot write in {where}: {err.strerror or first_line(err)}; check that folder and "
        "run again: the warehouse is as it was"
    )


# -- opening it with DuckDB: one helper, one classification of DuckDB's refusals ----------------

_LOCK_CONFLICT = re.compile(r"could not set lock on file|conflicting lock", re.IGNORECASE)
_LOCK_HOLDER = re.compile(
    r"conflicting lock is held in (?P<program>.+?) \(pid (?P<pid>\d+)\)", re.IGNORECASE
)
_DAMAGED = re.compile(
    r"corrupt|checksum|could not read enough bytes|replaying wal|invalid block|"
    r"serializ|unexpected end",
    re.IGNORECASE,
)
_OTHER_VERSION = re.compile(r"version number|storage version|newer version", re.IGNORECASE)


def open_error(path: Path, err: BaseException) -> DevportalError:
    """DuckDB's refusal to open PATH as one line with the cause and the fix.

    Only a lock conflict says "busy" (WarehouseBusy, exit 3); a file DuckDB cannot read as a
    database, a damaged one and one from another DuckDB version each say so.
    """
    first = first_line(err)
    where = _shown(path)
    # Classify on the message without the path, which could hold any word ("sqlite", "lock").
    text = first.replace(str(path), "<path>").lower()
    if _LOCK_CONFLICT.search(text):
        holder = _LOCK_HOLDER.search(first)
        who = f"pid {holder['pid']}, {holder['program']}" if holder else "another process"
        return WarehouseBusy(
            f"warehouse {where} is busy: {who} has it open for writing; "
            "wait for it to finish or stop it"
        )
    if "not a valid duckdb database" in text or "sqlite" in text:
        # "sqlite": DuckDB recognised an SQLite file and wanted its extension to open it
        return _not_duckdb(path, "DuckDB cannot read it as a database")
    if "extension" in text:
        return DevportalError(
            f"cannot open warehouse {where}: it needs a DuckDB extension, and devportal loads "
            f"none ({first}); pass --warehouse a warehouse written by `devportal sync`"
        )
    if "same database file with a different configuration" in text:
        return DevportalError(
            f"warehouse {where} is already open in this process with other settings; "
            "close that connection first"
        )
    if _OTHER_VERSION.search(text):
        return DevportalError(
            f"cannot open warehouse {where}: it was written by another DuckDB version "
            f"({first}); open it with that version or rebuild it with `devportal sync`"
        )
    if _DAMAGED.search(text):
        return DevportalError(
            f"warehouse {where} is damaged ({first}); restore it from a backup, or move it "
            "away and run `devportal sync` to rebuild it"
        )
    if "permission denied" in text:
        return DevportalError(
            f"cannot open warehouse {where}: permission denied; check the permissions of the "
            "file and its folder"
        )
    return DevportalError(f"cannot open warehouse {where}: {first}")


def open_duckdb(path: Path, *, read_only: bool = False) -> Any:
    """duckdb.connect for the warehouse file PATH, extensions never autoloaded; errors as one
    line. The one place devportal's own code (models, report, manifest history) connects to
    DuckDB; dlt's loads go through `devportal.pipeline` with the same settings."""
    import duckdb  # here, not at import: `devportal --help` stays fast

    try:
        return duckdb.connect(str(path), read_only=read_only, config=dict(OWN_CONNECTION))
    except duckdb.Error as err:
        raise open_error(path, err) from None


@contextmanager
def connect(warehouse: str | Path, *, read_only: bool = False) -> Iterator[Any]:
    """A DuckDB connection to the existing warehouse file; one-line errors when it is missing,
    not a DuckDB database, busy (a lock conflict) or damaged."""
    con = open_duckdb(require_warehouse(warehouse), read_only=read_only)
    try:
        yield con
    finally:
        con.close()


def catalog_of(con: Any) -> str:
    """The catalog DuckDB named after the warehouse file (what every name is qualified with)."""
    row = con.execute("select current_database()").fetchone()
    return str(row[0])


# -- writing it: a copy, published with one rename ----------------------------------------------

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


def written_elsewhere(path: Path, pid: int | None) -> WarehouseBusy:
    return WarehouseBusy(
        f"warehouse {_shown(path)} is open for writing in {_process(pid or 0)}; devportal "
        "writes a copy of it and a copy of a file being written is not consistent: close that "
        "connection (readers may stay: open it with read_only=True) and run again"
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
                f"cannot read warehouse {_shown(warehouse)}: {err.strerror or err}; check the "
                "file's permissions"
            ) from None
        try:
            filelock.lock_shared(fd)
        except OSError:
            os.close(fd)
            raise written_elsewhere(warehouse, writer_of(warehouse)) from None
    with _guards_lock:
        old = _guards.pop(warehouse, None)
        _guards[warehouse] = fd
    if old is not None:
        os.close(old)


def _release_guard(warehouse: Path) -> None:
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
      LOADING   the id of the load package being loaded into the copy (see `settle`)
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

    def create(self) -> None:
        """Copy the warehouse (and a write-ahead log a killed writer left beside it) into a new
        draft. WarehouseBusy when a program has the warehouse open for writing; one line when
        the copy does not fit or cannot be written (the warehouse is untouched)."""
        _remove_tree(self.partial)
        _remove_tree(self.folder)
        _guard(self.warehouse)
        copy = self.partial / self.path.name
        try:
            self.partial.mkdir(parents=True)
            base = _identity(self.warehouse)
            if base is not None:
                for source, target in ((self.warehouse, copy), (_wal(self.warehouse), _wal(copy))):
                    if source.exists():
                        shutil.copyfile(source, target)
                        _fsync(target)
            _write_synced(self.partial / "BASE", json.dumps(base))
            _fsync(self.partial, folder=True)
            os.rename(self.partial, self.folder)
            _fsync(self.folder.parent, folder=True)
        except OSError as err:
            _remove_tree(self.partial)
            raise unwritable(self.folder.parent, err) from None

    def mark_loading(self, load_id: str) -> None:
        try:
            _write_synced(self.folder / "LOADING", load_id)
        except OSError as err:
            raise unwritable(self.folder, err) from None

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
                f"warehouse {_shown(self.warehouse)} was replaced or written by another program "
                "while devportal wrote its copy; nothing was published, the warehouse keeps that "
                "program's version: run again"
            )
        if _wal(self.path).exists():
            con = open_duckdb(self.path)
            try:
                con.execute("checkpoint")
            except Exception as err:  # duckdb.Error, imported where DuckDB is opened
                raise DevportalError(
                    f"cannot checkpoint the copy of warehouse {_shown(self.warehouse)} "
                    f"({first_line(err)}); nothing was published: free disk space and run again"
                ) from None
            finally:
                con.close()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            if _wal(self.path).exists():
                raise DevportalError(
                    f"cannot publish {_shown(self.path)}: it keeps a write-ahead log after a "
                    "checkpoint; nothing was published: run again"
                )
            try:
                filelock.lock_shared(fd)
            except OSError:
                raise DevportalError(
                    f"cannot publish {_shown(self.path)}: it is still open for writing; nothing "
                    "was published: run again"
                ) from None
            os.fsync(fd)
            # a log a killed writer left beside the old file: the copy has its transactions
            _wal(self.warehouse).unlink(missing_ok=True)
            os.replace(self.path, self.warehouse)
            _fsync(self.warehouse.parent, folder=True)
        except OSError as err:
            os.close(fd)
            raise unwritable(self.warehouse.parent, err) from None
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
        a package is half loaded into it (the next writer finishes it, see `settle`)."""
        _remove_tree(self.partial)
        if self.folder.exists() and (self.loading() is None or not self.exists()):
            self.discard()

    def settle(self) -> str | None:
        """Settle what a writer killed earlier left, before this one writes. A partial copy,
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
