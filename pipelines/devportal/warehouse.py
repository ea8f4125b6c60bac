"""The warehouse file: its name rules, its folder, its lock, and opening it with DuckDB.

Writers (sync, manifest load) hold `warehouse_lock` while they run, so two processes never
write one warehouse at once; dlt keeps its state for a warehouse in `pipelines_dir(warehouse)`,
next to it (tests and demos may use many warehouses side by side). `devportal.pipeline` binds
the dlt pipeline to the warehouse; this module knows nothing of dlt.

Every problem with the file is one line with the cause and the fix, classified in one place:
the path (`locate_warehouse`: a folder, a path under a regular file, a name whose catalog would
clash, a file that is not a DuckDB database) and DuckDB's refusal to open it (`open_error`: busy,
damaged, another DuckDB version, ...). Writers get `ConfigError` (exit 2) for a path they
cannot use, readers `DevportalError` (exit 1); a lock conflict is `WarehouseBusy` (exit 3).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devportal.errors import ConfigError, DevportalError, WarehouseBusy, first_line

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
    """PATH for a one-line message: as typed, quoted when it holds a newline or control."""
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
    warehouse: str | Path, *, writer: bool = False, check_name: bool = True
) -> Path | None:
    """The resolved path of the DuckDB file WAREHOUSE, or None when nothing is there yet.

    Raises a one-line ConfigError (exit 2) when the path cannot be a warehouse: a name whose
    catalog would clash with a schema (CHECK_NAME; readers that qualify every name with the
    catalog may pass False), a folder or other non-file, a path under a regular file, an
    unusable name (too long, a symlink loop), an unreadable file, or a file that is not a
    DuckDB database, sniffed from its header before DuckDB sees it, so no extension is ever
    asked to open it. A WRITER takes an empty file as a new warehouse; a reader does not.
    """
    try:
        path = Path(warehouse).resolve()
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


def check_warehouse_path(warehouse: str | Path) -> Path:
    """For writers: the resolved warehouse path, which may not exist yet (it is then created);
    one-line ConfigError when it cannot be a warehouse (see `locate_warehouse`)."""
    path = locate_warehouse(warehouse, writer=True)
    return path if path is not None else Path(warehouse).resolve()


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
    """Exclusive advisory lock on `<warehouse>.lock`; the OS drops it if the process dies."""
    path = Path(warehouse).resolve()
    make_parent(path)
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


def looks_busy(warehouse: str | Path) -> bool:
    """Whether a sync would find WAREHOUSE busy now: another sync holds `<warehouse>.lock`, or
    another process has the DuckDB file open (DuckDB's own fcntl lock). A probe that holds
    nothing; `devportal sync` reads the API early only when it says no (the sync itself then
    says why it cannot run, with the holder)."""
    path = Path(warehouse).resolve()
    probes = ((path.with_name(path.name + ".lock"), fcntl.flock), (path, fcntl.lockf))
    for target, lock in probes:
        try:
            fd = os.open(target, os.O_RDWR)
        except OSError:
            continue  # not there (yet): nothing holds it
        try:
            lock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # releases the probe's lock
    return False


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
