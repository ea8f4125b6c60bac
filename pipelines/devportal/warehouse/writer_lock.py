"""The lock every writer holds for its whole run: one writer per warehouse, whatever the host.

A DuckDB warehouse is a file on one machine: the lock file beside it (`warehouse.warehouse_lock`)
is enough. A PostgreSQL database is shared by every host that points at it (two cron hosts, a
laptop and a server), and a lock file on one of them stops nothing on the other: two runs would
snapshot, merge and restore the same tables at once. So a PostgreSQL writer also holds a
session-level advisory lock in that database (`pg_try_advisory_lock`) on a connection of its
own, for the whole run, snapshot and restore included; the server drops it when that connection
ends, so a killed process never leaves it behind. The second run exits 3 with one line naming
the holder, as on DuckDB.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from devportal.base.errors import WarehouseBusy
from devportal.warehouse.engines import postgres_connection
from devportal.warehouse.lock import warehouse_lock
from devportal.warehouse.paths import RAW_SCHEMA
from devportal.warehouse.target import Target

# what a holder's lock connection calls itself in pg_stat_activity (read back to name it)
APPLICATION_PREFIX = "devportal writer"


def advisory_key(dataset: str = RAW_SCHEMA) -> int:
    """The advisory lock's key for DATASET: a stable signed 64-bit number (advisory locks are
    per database, so the dataset name is what tells two devportal datasets apart)."""
    digest = hashlib.blake2b(f"devportal:{dataset}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextmanager
def writer_lock(target: Target) -> Iterator[None]:
    """Hold the run's locks: the warehouse lock file, and on PostgreSQL the database's advisory
    lock too. WarehouseBusy (exit 3) when another writer holds either."""
    with warehouse_lock(target.warehouse):
        if target.is_postgres:
            with postgres_lock():
                yield
        else:
            yield


@contextmanager
def postgres_lock(dataset: str = RAW_SCHEMA) -> Iterator[None]:
    """The advisory lock of DATASET in the database of dlt's `postgres` destination, held on a
    connection of its own until the block ends."""
    me = f"{APPLICATION_PREFIX} pid {os.getpid()} on {socket.gethostname()}"[:63]
    con = postgres_connection(application_name=me)
    try:
        con.autocommit = True  # a session lock: no transaction left open for the whole run
        key = advisory_key(dataset)
        with con.cursor() as cursor:
            cursor.execute("select pg_try_advisory_lock(%s)", (key,))
            row = cursor.fetchone()
            if not (row and row[0]):
                raise WarehouseBusy(
                    f"PostgreSQL dataset {dataset} is busy: {_holder(cursor, key)} is writing "
                    "it; wait for it to finish or stop it"
                )
        try:
            yield
        finally:
            with con.cursor() as cursor:
                cursor.execute("select pg_advisory_unlock(%s)", (key,))
    finally:
        con.close()


def _holder(cursor: Any, key: int) -> str:
    """Who holds the lock, as its connection named itself ("another devportal run" if hidden)."""
    # a bigint key is stored as two 32-bit halves: classid (high), objid (low)
    high, low = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    cursor.execute(
        "select a.application_name from pg_locks l join pg_stat_activity a on a.pid = l.pid "
        "where l.locktype = 'advisory' and l.granted and l.database = "
        "(select oid from pg_database where datname = current_database()) "
        "and l.classid::bigint = %s and l.objid::bigint = %s and l.objsubid = 1",
        (high, low),
    )
    row = cursor.fetchone()
    name = str(row[0]) if row and row[0] else ""
    if name.startswith(APPLICATION_PREFIX):
        return "a devportal run (" + name[len(APPLICATION_PREFIX) :].strip() + ")"
    return "another devportal run"
