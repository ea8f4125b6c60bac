"""The simulated clock: transitions after `advance`, determinism, the HTTP control endpoints."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import requests

from devportal.sandbox import Sandbox
from devportal.sandbox.clock import Rates
from devportal.sandbox.testing import SUBSCRIPTIONS, api_session, fetch_all, sandbox_fixture


def by_id(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {r["id"]: r for r in rows}


def served(session: requests.Session, sb: Sandbox, **params: Any) -> list[dict[str, Any]]:
    return fetch_all(session, sb.base_url + SUBSCRIPTIONS, params or None)


def test_advance_cancels_renews_adds_and_expires(
    fresh: Sandbox, fresh_api: requests.Session
) -> None:
    before = by_id(fresh.truth() + fresh.truth(is_test=True))
    start = fresh.now
    changes = fresh.advance(days=30)
    assert fresh.now == start + timedelta(days=30)
    assert set(changes) == {"canceled", "renewed", "new", "expired", "reactivated"}
    assert changes["canceled"] > 0 and changes["renewed"] > 0 and changes["new"] > 0
    assert changes["expired"] > 0

    after = by_id(fresh.truth() + fresh.truth(is_test=True))
    now = fresh.now.strftime("%Y-%m-%d %H:%M:%S")
    newly_canceled = [
        i for i in before if before[i]["status"] == "active" and after[i]["status"] == "canceled"
    ]
    renewed = [i for i in before if after[i]["expires_at"] > before[i]["expires_at"]]
    new_ids = sorted(set(after) - set(before))
    passed = [
        i
        for i in before
        if after[i]["status"] == "canceled"
        and before[i]["expires_at"] > start.strftime("%Y-%m-%d %H:%M:%S")
        and after[i]["expires_at"] <= now
    ]
    assert newly_canceled and renewed and passed
    assert len(new_ids) == changes["new"]
    assert min(new_ids) > max(before)  # new subscriptions get higher ids
    assert all(after[i]["status"] == "active" for i in new_ids)
    # every active subscription is paid up past the new clock
    assert all(r["expires_at"] > now for r in after.values() if r["status"] == "active")
    # the API pages show exactly the new truth
    assert served(fresh_api, fresh) == [
        {k: v for k, v in r.items() if k != "is_test"} for r in fresh.truth()
    ]
    assert served(fresh_api, fresh, is_test="true") == [
        {k: v for k, v in r.items() if k != "is_test"} for r in fresh.truth(is_test=True)
    ]


def test_same_seed_same_world_and_same_history() -> None:
    a = Sandbox(subscriptions=600, users=80, seed=21)
    b = Sandbox(subscriptions=600, users=80, seed=21)
    c = Sandbox(subscriptions=600, users=80, seed=22)
    assert a.truth() == b.truth() and a.truth_users() == b.truth_users()
    assert a.truth() != c.truth()
    assert a.advance(days=10, hours=5) == b.advance(days=10, hours=5)
    assert a.truth() == b.truth() and a.truth(is_test=True) == b.truth(is_test=True)


def test_same_seed_same_pages_over_http() -> None:
    with (
        sandbox_fixture(subscriptions=500, users=50, seed=3) as a,
        sandbox_fixture(subscriptions=500, users=50, seed=3) as b,
    ):
        for sb in (a, b):
            sb.advance(days=3)
        pages = []
        for sb in (a, b):
            with api_session(sb) as s:
                body = s.get(sb.base_url + SUBSCRIPTIONS, params={"page": 2}).json()
                pages.append((body["data"], body["total"]))
        assert pages[0] == pages[1]


def test_advance_by_hours_moves_the_clock_exactly(scripted: Sandbox) -> None:
    start = scripted.now
    assert scripted.advance(hours=5) == dict.fromkeys(
        ("canceled", "renewed", "new", "expired", "reactivated"), 0
    )
    assert scripted.now == start + timedelta(hours=5)


def test_scripted_world_only_renews_and_expires(scripted: Sandbox) -> None:
    w = scripted.world
    assert w.rates == Rates.static()
    monthly = w.add_subscription(
        10, created_at="2026-10-10 08:00:00", expires_at="2026-11-10 08:00:00"
    )
    yearly = w.add_subscription(
        11, created_at="2026-01-05", expires_at="2026-11-20 00:00:00", period_months=12
    )
    leaving = w.add_subscription(12, status="canceled", expires_at="2026-11-15 00:00:00")
    staying = w.add_subscription(13, status="canceled", expires_at="2027-03-01 00:00:00")
    changes = scripted.advance(days=35)  # to 2026-12-06
    assert changes == {"canceled": 0, "renewed": 2, "new": 0, "expired": 1, "reactivated": 0}
    rows = by_id(scripted.truth())
    assert rows[monthly]["expires_at"] == "2026-12-10 08:00:00"  # += one month
    assert rows[yearly]["expires_at"] == "2027-11-20 00:00:00"  # += one year
    assert rows[leaving] == {
        "id": leaving,
        "service_id": 12,
        "status": "canceled",
        "expires_at": "2026-11-15 00:00:00",
        "is_test": False,
    }
    assert rows[staying]["status"] == "canceled"
    assert sorted(rows) == [monthly, yearly, leaving, staying]


def test_custom_rates_on_a_scripted_world() -> None:
    sb = Sandbox(subscriptions=0, users=0, rates=Rates(cancel_per_month=1.0, new_per_day=0.0))
    ids = [sb.world.add_subscription(i, expires_at="2026-12-01") for i in range(1, 6)]
    changes = sb.advance(days=1)
    assert changes["canceled"] == 5
    assert {r["status"] for r in sb.truth()} == {"canceled"}
    assert [r["id"] for r in sb.truth()] == ids


def test_http_control_endpoints(fresh: Sandbox, fresh_api: requests.Session) -> None:
    base = fresh.base_url
    state = fresh_api.get(base + "/__sandbox/state").json()
    assert state["now"] == "2026-11-01 00:00:00"
    assert state["counts"]["live"] == len(fresh.truth())
    assert state["counts"]["test"] == len(fresh.truth(is_test=True))

    moved = fresh_api.post(base + "/__sandbox/advance", params={"days": 2}).json()
    assert moved["now"] == "2026-11-03 00:00:00"
    assert moved["changes"]["renewed"] > 0
    moved = fresh_api.post(base + "/__sandbox/advance", json={"hours": 12}).json()
    assert moved["now"] == "2026-11-03 12:00:00"
    assert fresh.now == datetime(2026, 11, 3, 12)

    bad = fresh_api.post(base + "/__sandbox/advance", json={"days": -1})
    assert bad.status_code == 422
    assert fresh_api.get(base + "/__sandbox/advance").status_code == 405
    assert fresh_api.get(base + "/__sandbox/nothing").status_code == 404
    unauth = requests.post(base + "/__sandbox/advance", params={"days": 1})
    assert unauth.status_code == 401
    assert fresh.now == datetime(2026, 11, 3, 12)

    assert fresh_api.post(base + "/__sandbox/latency", json={"ms": 5}).json() == {"latency_ms": 5.0}
    assert fresh.latency_ms == 5.0
    assert fresh_api.get(base + "/__sandbox/state").json()["latency_ms"] == 5.0


def test_advance_on_a_bigger_world_keeps_the_books() -> None:
    sb = Sandbox(subscriptions=20_000, users=2_000, seed=5)
    changes = sb.advance(days=1)
    assert changes["renewed"] > 100 and changes["new"] > 10
    assert len(sb.truth()) + len(sb.truth(is_test=True)) == 20_000 + changes["new"]
