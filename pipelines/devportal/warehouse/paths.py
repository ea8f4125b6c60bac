"""The warehouse file's name rules and folder, and one classification of what is wrong with a
path (`locate_warehouse`: a folder, a path under a regular file, a name whose catalog would
clash, a path DuckDB cannot open, a file that is not a DuckDB database) or with the disk under it
(`unwritable`: full, read-only, no permission). Writers get `ConfigError` (exit 2) for a path
they cannot use, readers `DevportalError` (exit 1)."""

from __future__ import annotations

import errno
import os
import shutil
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from devportal.base.errors import ConfigError, DevportalError, first_line

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

# A DuckDB file starts with an 8-byte checksum, then this magic (every storage version).
DUCKDB_MAGIC = b"DUCK"
SQLITE_MAGIC = b"SQLite format 3\x00"

# The warehouse's schemas: dlt's dataset (raw tables, `pipeline.DATASET`) and the SQL models'.
RAW_SCHEMA = "devportal"
ANALYTICS_SCHEMA = "analytics"
# Not `devportal.duckdb`: DuckDB names the catalog after the file, and a catalog called like the
# dataset (`devportal`) or the models' schema (`analytics`) makes `devportal.subscriptions`
# ambiguous for DuckDB's binder, in dlt's own SQL and in every user's query.
DEFAULT_WAREHOUSE = "warehouse/warehouse.duckdb"
DEMO_WAREHOUSE = "warehouse/demo.duckdb"  # what `devportal demo` writes by default
RESERVED_STEMS = (RAW_SCHEMA, ANALYTICS_SCHEMA, "main", "system", "temp")
# What DuckDB cannot have in a database's path, on any system (tested with DuckDB 2.0): it reads
# `\` as a folder separator, so `/data/back\slash/w.duckdb` opens `/data/back/slash/w.duckdb`
# (symlinks, `file:` and `/proc/self/fd` paths are resolved first and end the same), and `?` as
# the start of connection options, so the write-ahead log of `/data/q?x/w.duckdb` goes to
# `/data/q.wal?x/w.duckdb`. No DuckDB client can use such a path, devportal's included.
DUCKDB_UNUSABLE = {"\\": "a backslash", "?": "a question mark"}


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


# DuckDB's file: a 4 KiB main header, two 4 KiB database headers (the newer one is current),
# then blocks of BLOCK_ALLOC_SIZE bytes. A database header is an 8-byte checksum then
# iteration, meta block, free list, block count, block size, vector size (little-endian u64),
# the same in every storage version DuckDB 1.x and 2.x write.
HEADERS_SIZE = 3 * 4096
_DATABASE_HEADER = struct.Struct("<8xQQQQQQ")


def file_blocks(path: Path) -> tuple[int, int, int] | None:
    """What DuckDB file PATH holds: (its size, the blocks its header counts, their size), or
    None when its headers do not read as DuckDB's (`connection.check_file`)."""
    try:
        with path.open("rb") as f:
            head = f.read(HEADERS_SIZE)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return None
    if head[8:12] != DUCKDB_MAGIC or len(head) < HEADERS_SIZE:
        return None
    current = max(_DATABASE_HEADER.unpack_from(head, offset) for offset in (4096, 8192))
    _iteration, _meta, _free, blocks, block_size, vector_size = current
    plausible = (
        0 < block_size <= 1 << 30
        and block_size & (block_size - 1) == 0
        and 0 < vector_size <= 1 << 20
        and blocks < 1 << 40
    )
    return (size, blocks, block_size) if plausible else None


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


def shown(path: str | Path) -> str:
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
        f"warehouse {shown(path)} cannot exist: {shown(blocker)} is a file, not a folder; "
        "pass --warehouse a path in a folder"
    )


class WarehouseDamaged(DevportalError):
    """A warehouse file that is damaged: only a good copy can help (`damaged_error`)."""


def damaged_error(where: str, cause: str) -> DevportalError:
    """The one line for a warehouse file that is damaged (cut short by a full disk or a broken
    copy, emptied, overwritten): which file, that it is damaged, and what can help. Rebuilding
    the models or syncing again cannot: the history is in the file."""
    return WarehouseDamaged(
        f"warehouse {where} is damaged ({cause}); restore it from a backup, or copy a good "
        f"one in with `devportal migrate --from-warehouse OTHER.duckdb --warehouse {where} "
        '--replace` (or --from-destination postgres); docs/operations.md, "A damaged '
        'warehouse"'
    )


def held_a_warehouse(path: str | Path) -> bool:
    """Whether a sync has written a warehouse at PATH: dlt's folder beside it holds a
    pipeline's state (so a file there that is no database is a damaged warehouse)."""
    return any(pipelines_dir(path).glob("*/state.json"))


def not_duckdb_error(path: str | Path, what: str) -> DevportalError:
    if held_a_warehouse(path):
        return damaged_error(shown(path), f"it is no longer a DuckDB database: {what}")
    return ConfigError(
        f"{shown(path)} is not a DuckDB database ({what}); pass --warehouse the .duckdb file "
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
            f"cannot use warehouse path {shown(warehouse)}: {reason}; "
            "pass --warehouse the path of a .duckdb file"
        ) from err
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
            f"warehouse {shown(path)} is {kind}; pass --warehouse the path of a .duckdb file"
        )
    try:
        with path.open("rb") as f:
            header = f.read(16)
    except OSError as err:
        raise ConfigError(
            f"cannot read warehouse {shown(path)}: {err.strerror or err}; "
            "check the file's permissions"
        ) from err
    what = not_duckdb(header) if header or not writer or held_a_warehouse(path) else None
    if what is not None:
        raise not_duckdb_error(path, what)
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
                f"DuckDB cannot open a warehouse at {shown(path)}: its path holds {name} "
                f"({char}), which DuckDB reads as "
                + ("a folder separator" if char == "\\" else "the start of connection options")
                + f" (it would open another file); pass --warehouse a path without {char}"
            )


def require_warehouse(warehouse: str | Path) -> Path:
    """For readers: the path of the existing warehouse file; "run a sync first" when missing."""
    path = locate_warehouse(warehouse)
    if path is None:
        raise DevportalError(
            f"no warehouse at {shown(warehouse)}: run `devportal sync` (or `devportal demo`) first"
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
            f"cannot create the warehouse folder {shown(path.parent)}: {err.strerror or err}; "
            "choose a writable --warehouse path"
        ) from err


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
    where = shown(folder)
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


def spool_root(pipeline: Pipeline) -> Path:
    """Where the runs of PIPELINE (a dlt pipeline) spool their reads, each in a folder of its
    own: `spool/` in the pipeline's working folder beside the warehouse."""
    return Path(pipeline.working_dir) / "spool"
