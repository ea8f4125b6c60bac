"""Helpers shared by tests: sync from a sandbox, read a warehouse, compare it with the truth."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

# spec 2.2: the pagination wrapper, in the order the API serves it
WRAPPER_FIELDS = [
    "current_page",
    "data",
    "first_page_url",
    "from",
    "last_page",
    "last_page_url",
    "next_page_url",
    "path",
    "per_page",
    "prev_page_url",
    "to",
    "total",
]

# Retries without the production pauses (0.2 s doubling to 10 s): sleeps of milliseconds, so a
# test that meets faults, 5xx answers or broken bodies spends its time on requests, not waiting.
# Keywords of `sync`, `sync_from` and `DevportalConfig`, or of `token_env` for the CLI.
FAST_RETRY: dict[str, float] = {"backoff_initial_s": 0.001, "backoff_max_s": 0.01}


def sync_from(sb: Any, warehouse: Path, **kwargs: Any) -> Any:
    """`devportal.sync.sync` from sandbox SB into WAREHOUSE, its token and URL; the models are
    not built unless `build_models=True`. Other keywords go to `sync` (settings, destination)."""
    from devportal.sync import sync

    kwargs.setdefault("build_models", False)
    return sync(warehouse, base_url=sb.base_url, access_token=sb.token, **kwargs)


def query(warehouse: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def current_rows(warehouse: Path, is_test: bool | None = None) -> list[dict[str, Any]]:
    """Current subscription versions as the API shape (expires_at formatted like the API)."""
    where = "" if is_test is None else f" AND is_test = {str(is_test).lower()}"
    rows = query(
        warehouse,
        "SELECT id, service_id, status, strftime(expires_at, '%Y-%m-%d %H:%M:%S'), is_test "
        f"FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL{where} ORDER BY id",
    )
    return [
        {"id": r[0], "service_id": r[1], "status": r[2], "expires_at": r[3], "is_test": r[4]}
        for r in rows
    ]


def truth_rows(sb: Any, include_test: bool = False) -> list[dict[str, Any]]:
    rows = list(sb.truth(is_test=False))
    if include_test:
        rows += list(sb.truth(is_test=True))
    keys = ("id", "service_id", "status", "expires_at", "is_test")
    return sorted(({k: r[k] for k in keys} for r in rows), key=lambda r: r["id"])


@dataclass
class CliResult:
    """What the `devportal` fixture (tests/conftest.py) returns: exit code and output."""

    code: int
    out: str
    err: str


def subscription(i: int, **changes: Any) -> dict[str, Any]:
    """A Subscription object as the API sends it: id I, its user 1000 + I, active; CHANGES on
    top."""
    row = {"id": i, "service_id": 1000 + i, "status": "active", "expires_at": "2027-01-01 10:00:00"}
    row.update(changes)
    return row


def warehouse_of(args: list[str]) -> Path:
    """The `--warehouse` of a `devportal` argv."""
    return Path(args[args.index("--warehouse") + 1])


def rows_if_loaded(warehouse: Path, sql: str) -> list[tuple[Any, ...]]:
    """SQL's rows, or [] when the warehouse or its `devportal.subscriptions` table was never
    created (a run refused before it loaded anything)."""
    if not warehouse.exists():
        return []
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        found = con.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'devportal' AND table_name = 'subscriptions'"
        ).fetchone()
        if not found or not found[0]:
            return []
        return con.execute(sql).fetchall()
    finally:
        con.close()


class FakeClock:
    """Stands in for the `time` module of a module under test (monkeypatched): `monotonic()` is
    `now`, which only the test moves; `sleep` stays real."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleep = time.sleep

    def monotonic(self) -> float:
        return self.now


_HOLD_FOR_WRITING = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])  # read-write: a program writing the warehouse
print("open", flush=True)
sys.stdin.read()  # open until the test closes its stdin (or kills it): no time limit to outrun
"""


@contextmanager
def held_open_for_writing(warehouse: Path) -> Iterator[subprocess.Popen[str]]:
    """Another program holding WAREHOUSE open read-write (DuckDB's lock is per process) until
    the block ends; yields once it has the file open."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_FOR_WRITING, str(warehouse)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=60)
