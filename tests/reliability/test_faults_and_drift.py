"""Fault storms and a list that moves while it is paged: the warehouse ends equal to the truth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devportal.base.errors import ApiError, IntegrityError
from tests.helpers import FAST_RETRY, TWO_CURRENT, current_rows, query, sync_from, truth_rows


def run(sb: Any, warehouse: Path, **kwargs: Any) -> Any:
    return sync_from(sb, warehouse, **{**FAST_RETRY, **kwargs})


def history(warehouse: Path) -> list[tuple[Any, ...]]:
    return query(
        warehouse,
        "SELECT id, status, expires_at, _dlt_valid_from, _dlt_valid_to "
        "FROM devportal.subscriptions ORDER BY ALL",
    )


@pytest.mark.parametrize("rate", [0.1, 0.3])
def test_fault_storm_converges_to_truth(sandbox_factory: Any, warehouse: Path, rate: float) -> None:
    sb = sandbox_factory(subscriptions=3000, users=200, seed=31)
    run(sb, warehouse)
    sb.advance(days=12)
    sb.set_faults(rate=rate, seed=7, retry_after=0)
    result = run(sb, warehouse, max_attempts=12)
    sb.set_faults(None)
    assert result.record.retries > 0
    assert current_rows(warehouse) == truth_rows(sb)
    # the history equals that of a clean run on the same two states: no duplicates, no gaps
    assert query(warehouse, TWO_CURRENT) == []


def test_faults_on_every_request_fail_within_budget_and_keep_what_was_loaded(
    sandbox_factory: Any, warehouse: Path
) -> None:
    sb = sandbox_factory(subscriptions=500, users=50, seed=32)
    run(sb, warehouse)
    before = history(warehouse)
    sb.advance(days=5)
    sb.set_faults(rate=1.0, seed=3, retry_after=0)
    with pytest.raises(ApiError, match="still failing after 3 attempts"):
        run(sb, warehouse, max_attempts=3)
    sb.set_faults(None)
    assert history(warehouse) == before
    # and the next healthy run converges
    run(sb, warehouse)
    assert current_rows(warehouse) == truth_rows(sb)


def test_list_moving_while_paging_is_noticed_and_reread(
    sandbox_factory: Any, warehouse: Path
) -> None:
    sb = sandbox_factory(subscriptions=2000, users=50, seed=33)
    moved = {"n": 0}

    first = min(row["id"] for row in sb.truth())  # on page 1, read before the drift

    def drift(world: Any, endpoint: str, page: int) -> None:
        # during the first read only: a row already read removed between page requests (a
        # list that only grows is read once: tests/hostile/test_busy_list.py)
        if endpoint.endswith("/subscriptions") and page == 4 and moved["n"] < 1:
            moved["n"] += 1
            world.remove_subscription(first)

    sb.set_page_hook(drift)
    result = run(sb, warehouse, resources=["subscriptions"])
    sb.set_page_hook(None)
    assert moved["n"] == 1
    sweeps = query(warehouse, "SELECT sweeps FROM devportal.sync_runs")[0][0]
    assert '"attempts": 2' in sweeps or '"attempts":2' in sweeps
    assert result.record.rows_read["subscriptions"] == len(sb.truth())
    assert current_rows(warehouse) == truth_rows(sb)


def test_list_that_never_holds_still_fails_clearly_and_loads_nothing(
    sandbox_factory: Any, warehouse: Path
) -> None:
    sb = sandbox_factory(subscriptions=1200, users=20, seed=34)
    run(sb, warehouse, resources=["subscriptions"])
    before = history(warehouse)

    def drift(world: Any, endpoint: str, page: int) -> None:
        # every read: a row already read removed (a list that only grows is read once:
        # tests/hostile/test_busy_list.py)
        if endpoint.endswith("/subscriptions") and page == 3:
            world.remove_subscription(min(row["id"] for row in world.truth()))

    sb.set_page_hook(drift)
    with pytest.raises(IntegrityError, match=r"kept changing while it was read|rows were removed"):
        run(sb, warehouse, resources=["subscriptions"])
    sb.set_page_hook(None)
    assert history(warehouse) == before
    run(sb, warehouse, resources=["subscriptions"])
    assert current_rows(warehouse) == truth_rows(sb)
