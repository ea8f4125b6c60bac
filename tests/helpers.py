"""Helpers shared by tests: sync from a sandbox, read a warehouse, compare it with the truth."""

from __future__ import annotations

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
