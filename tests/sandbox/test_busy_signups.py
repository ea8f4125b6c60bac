"""The sandbox's steady signups (`Sandbox(signups_per_s=R)`, `POST /__sandbox/signups`), and a
full sweep of a list that grows while it is read (issue 33): at the spec's page sizes (200
subscriptions, 20 settings entries a page) and 50 ms of latency a request, the sweep succeeds in
one read, records the total at its start and what was added, and the warehouse (a real DuckDB
file) holds the list as it was when its last page was read."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import requests
from tests.helpers import FAST_RETRY, current_rows, sync_from

from devportal.base.api import SUBSCRIPTIONS_PATH
from devportal.sandbox import Sandbox
from devportal.sandbox.signups import Signups
from devportal.sandbox.testing import api_session
from devportal.sandbox.world import World


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_signups_arrive_at_a_steady_rate_of_reading_time_at_the_end_of_the_list() -> None:
    world = World(subscriptions=0, users=5, seed=3)
    clock = Clock()
    signups = Signups(world, 10, seed=1, clock=clock)
    assert signups.arrive() == 0  # the first page starts the clock
    clock.now += 0.25
    assert signups.arrive() == 2  # 2.5 due: the half carried over
    clock.now += 0.25
    assert signups.arrive() == 3
    clock.now += 30  # idle between syncs: nothing piles up
    assert signups.arrive() == 0
    assert signups.added == 5
    rows = world.truth()
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)  # appended: id order
    assert {r["status"] for r in rows} == {"active"}
    assert {r["service_id"] for r in rows} <= set(world.user_ids())
    with pytest.raises(ValueError):
        Signups(world, 0)


def page(session: requests.Session, sb: Sandbox, number: int, **params: str) -> dict[str, Any]:
    query: dict[str, str] = {**params, "page": str(number)}
    answer = session.get(sb.base_url + SUBSCRIPTIONS_PATH, params=query)
    answer.raise_for_status()
    body: dict[str, Any] = answer.json()
    return body


def test_a_busy_sandbox_grows_while_its_live_list_is_read() -> None:
    with Sandbox(subscriptions=450, users=50, seed=5, signups_per_s=100).start() as sb:
        session = api_session(sb)
        first = page(session, sb, 1)
        time.sleep(0.2)
        test = page(session, sb, 1, is_test="true")["total"]
        third = page(session, sb, 3)
        assert third["total"] >= first["total"] + 10
        assert sb.signups_added == third["total"] - first["total"]
        assert len(sb.truth(is_test=True)) == test  # the test list does not grow
        ids = [r["id"] for r in sb.truth()]
        assert ids == sorted(ids)  # the new rows are at the end of the list
        state = session.get(sb.base_url + "/__sandbox/state").json()
        assert state["signups_per_s"] == 100 and state["signups_added"] == sb.signups_added
        answer = session.post(sb.base_url + "/__sandbox/signups", json={"per_second": 0})
        assert answer.json() == {"signups_per_s": 0.0, "signups_added": 0}
        before = page(session, sb, 1)["total"]
        time.sleep(0.1)
        assert page(session, sb, 2)["total"] == before
        answer = session.post(sb.base_url + "/__sandbox/signups", json={"per_second": 7.5})
        assert answer.json()["signups_per_s"] == 7.5
        assert (
            session.post(sb.base_url + "/__sandbox/signups", json={"per_second": -1}).status_code
            == 422
        )
        session.close()


def live_sweep(result: Any) -> dict[str, Any]:
    (sweep,) = [
        s
        for s in result.record.sweeps
        if s["endpoint"] == SUBSCRIPTIONS_PATH and not s["params"].get("is_test")
    ]
    return sweep


@pytest.mark.parametrize("per_second", [20, 80])
def test_a_full_sweep_of_a_list_growing_while_it_is_read_succeeds_at_50_ms(
    tmp_path: Path, per_second: float
) -> None:
    """2,000 subscriptions (10 pages of 200), 200 users (10 settings pages of 20), 50 ms a
    request, R signups a second while the subscription list is read: every resource synced, the
    subscription list in one read."""
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    with Sandbox(subscriptions=2000, users=200, seed=9, latency_ms=50).start() as sb:
        at_start = len(sb.truth())
        sb.set_signups(per_second)
        result = sync_from(sb, warehouse, **FAST_RETRY)
        sweep = live_sweep(result)
        assert sweep["attempts"] == 1 and sweep["verified"] and sweep["complete"]
        assert sweep["reread_because"] == []
        assert sweep["total_at_start"] >= at_start
        assert sweep["added"] == sweep["total"] - sweep["total_at_start"] > 0
        assert sweep["rows"] == sweep["unique_ids"] == sweep["total"]
        said = f"the subscription list grew by {sweep['added']} while read"
        assert said in result.summary(), result.summary()
        # the list as it was when its last page was read: the first `total` rows of it
        truth = [{**r, "is_test": False} for r in sb.truth()]
        keys = ("id", "service_id", "status", "expires_at", "is_test")
        expected = [{k: r[k] for k in keys} for r in truth[: sweep["total"]]]
        assert current_rows(warehouse, is_test=False) == expected
        assert len(truth) >= sweep["total"]

        # a second sweep, the list still growing: one read again, nothing closed
        result = sync_from(sb, warehouse, **FAST_RETRY)
        sweep = live_sweep(result)
        assert sweep["attempts"] == 1 and sweep["added"] > 0
        assert sweep["closing"]["closes"] == 0
        truth = [{**r, "is_test": False} for r in sb.truth()]
        expected = [{k: r[k] for k in keys} for r in truth[: sweep["total"]]]
        assert current_rows(warehouse, is_test=False) == expected
