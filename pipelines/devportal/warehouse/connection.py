"""Opening the warehouse with DuckDB: devportal's one way to connect (extensions never
autoloaded, memory capped), DuckDB's refusals as one line each (`open_error`: busy, damaged,
another DuckDB version, ...), and quoting names and literals."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devportal.base.errors import (
    DevportalError,
    HeldByAnotherProgram,
    WarehouseBusy,
    causes,
    first_line,
)
from devportal.warehouse.paths import (
    HEADERS_SIZE,
    damaged_error,
    file_blocks,
    not_duckdb_error,
    require_warehouse,
    shown,
)

# Connections devportal opens never fetch or load extensions behind the user's back: a SQLite
# file at the warehouse path would otherwise make DuckDB try to download `sqlite_scanner`.
NO_EXTENSION_AUTOLOAD = {"autoload_known_extensions": False, "autoinstall_known_extensions": False}
# Session settings of every connection devportal opens, its own and dlt's (`local_config`):
# DuckDB's Python client draws a progress bar on stdout for any statement over 2 s, terminal or
# not, which would land inside a report's JSON and a scheduled sync's one line. Both switches:
# setting `progress_bar_time` turns the first back on, never the second.
SESSION_SETTINGS = {"enable_progress_bar": False, "enable_progress_bar_print": False}
# devportal's own connections (models, report, manifest history): DuckDB's buffers are capped
# (it spills to `<warehouse>.tmp` beyond), so a models build stays flat in memory however large
# the history; DuckDB's default is 80% of the machine's RAM.
OWN_MEMORY_LIMIT_MB = 64
OWN_CONNECTION: dict[str, Any] = {
    **NO_EXTENSION_AUTOLOAD,
    "memory_limit": f"{OWN_MEMORY_LIMIT_MB}MB",
}


def quote_ident(name: str) -> str:
    """A SQL identifier in double quotes (quotes doubled): any table, schema or catalog name."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(text: str) -> str:
    """`text` as a SQL string literal in single quotes (quotes doubled): any value or path."""
    return "'" + text.replace("'", "''") + "'"


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
    where = shown(path)
    # Classify on the message without the path, which could hold any word ("sqlite", "lock").
    text = first.replace(str(path), "<path>").lower()
    # DuckDB quotes the file it opened: a writer's draft is the user's warehouse to them
    first = first.replace(str(path), where)
    if _LOCK_CONFLICT.search(text):
        holder = _LOCK_HOLDER.search(first)
        who = f"pid {holder['pid']}, {holder['program']}" if holder else "another process"
        if holder is not None and not _is_devportal(int(holder["pid"])):
            # devportal's writers never open the warehouse file itself for writing
            return HeldByAnotherProgram(
                f"warehouse {where} is open for writing in {who}, not a devportal run: close "
                "that program's connection (readers may stay: open it with read_only=True); "
                "every run fails until then (exit 4)"
            )
        return WarehouseBusy(
            f"warehouse {where} is busy: {who} has it open for writing; "
            "wait for it to finish or stop it"
        )
    if "not a valid duckdb database" in text or "sqlite" in text:
        # "sqlite": DuckDB recognised an SQLite file and wanted its extension to open it
        return not_duckdb_error(path, "DuckDB cannot read it as a database")
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
        return damaged_error(where, first)
    if "permission denied" in text:
        return DevportalError(
            f"cannot open warehouse {where}: permission denied; check the permissions of the "
            "file and its folder"
        )
    return DevportalError(f"cannot open warehouse {where}: {first}")


def open_duckdb(path: Path, *, read_only: bool = False) -> Any:
    """duckdb.connect for the warehouse file PATH, extensions never autoloaded; errors as one
    line. The one place devportal's own code (models, report, manifest history) connects to
    DuckDB; dlt's loads go through `devportal.load.pipeline` with the same settings."""
    # deferred: loads DuckDB, kept out of startup
    import duckdb  # here, not at import: `devportal --help` stays fast

    check_file(path)
    try:
        con = duckdb.connect(str(path), read_only=read_only, config=dict(OWN_CONNECTION))
    except duckdb.Error as err:
        raise open_error(path, err) from err
    for key, value in SESSION_SETTINGS.items():  # not accepted by connect's config
        try:
            con.execute(f"set {key} = {value}")
        except duckdb.InvalidInputException:
            # in a Jupyter kernel (a notebook) DuckDB refuses any change to its progress bar
            # without ipywidgets installed; the bar is off there already (it would be a widget)
            continue
    return con


def check_file(path: Path) -> None:
    """WarehouseDamaged when the DuckDB file PATH is cut short: fewer bytes than its header
    counts, ending inside a block (a full disk during a copy, a broken backup). DuckDB itself
    notices only when a query reads a missing block, which a command may not do before it acts
    on what it read (a sync would judge the API against what the cut file still shows). DuckDB
    writes whole blocks only; a file that ends on a block's edge short of its header's count is
    one whose free blocks at the end DuckDB cut off itself, left to DuckDB (a query that reads a
    missing block is named damaged all the same, `damage_in`). Reads 12 KiB: no connection."""
    found = file_blocks(path)
    if found is None:
        return
    size, blocks, block_size = found
    counted = HEADERS_SIZE + blocks * block_size
    if size < counted and (size - HEADERS_SIZE) % block_size:
        raise damaged_error(
            shown(path), f"cut short: {size:,} bytes of the {counted:,} its header counts"
        )


@contextmanager
def connect(warehouse: str | Path, *, read_only: bool = False) -> Iterator[Any]:
    """A DuckDB connection to the existing warehouse file; one-line errors when it is missing,
    not a DuckDB database, busy (a lock conflict) or damaged."""
    path = require_warehouse(warehouse)
    con = open_duckdb(path, read_only=read_only)
    try:
        yield con
    except Exception as err:
        # DuckDB reads a file's blocks when a query needs them: damage beyond what opening
        # read shows here, in whatever command was reading (status, report, the models)
        damage = damage_in(err)
        if damage is None:
            raise
        cause = first_line(damage).replace(str(path), shown(path))
        raise damaged_error(shown(path), cause) from err
    finally:
        con.close()


# DuckDB's errors of a query that met a damaged file (not of the query itself: a malformed
# JSON value is "unexpected end" too, and is no damage)
_DAMAGE_AT_QUERY = re.compile(
    r"could not read enough bytes|corrupt|checksum|invalid block|read past the end",
    re.IGNORECASE,
)


def _is_devportal(pid: int) -> bool:
    """Whether process PID runs devportal (its command line names it); True when this system
    cannot tell, which keeps the harmless exit 3."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True
    return any(b"devportal" in part for part in argv)


def damage_in(err: BaseException) -> BaseException | None:
    """The DuckDB error among ERR and its causes that says the file is damaged, or None."""
    import duckdb  # deferred: loads DuckDB, kept out of startup

    for cause in causes(err):
        if isinstance(cause, duckdb.Error) and _DAMAGE_AT_QUERY.search(first_line(cause)):
            return cause
    return None


def catalog_of(con: Any) -> str:
    """The catalog DuckDB named after the warehouse file (what every name is qualified with)."""
    row = con.execute("select current_database()").fetchone()
    return str(row[0])
