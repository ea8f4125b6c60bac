"""The models on worlds the sync really loaded: a random one passes --check and matches the
sandbox, a bad value fails --check by name, and the CLI speaks in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devportal.cli import main
from tests.helpers import query, sync_from

run = sync_from


MART_SNAPSHOT = {
    "subscriptions_current": "select * from analytics.subscriptions_current order by id",
    "subscription_events": (
        "select * from analytics.subscription_events order by subscription_id, event_type, event_at"
    ),
    "monthly_churn": "select * from analytics.monthly_churn order by month",
    "daily_subscribers": "select * from analytics.daily_subscribers order by day",
    "users": "select * from analytics.users order by user_id",
}


def test_random_world_passes_check_and_matches_the_sandbox(
    sandbox_factory: Any, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sb = sandbox_factory(subscriptions=3000, users=300, seed=11, test_share=0.05)
    run(sb, warehouse)
    sb.advance(days=20)
    run(sb, warehouse, include_test=True)  # test rows too: models stay live-only
    sb.advance(days=25)
    result = run(sb, warehouse, build_models=True)  # the models' build after a sync

    summary = result.extra["models"]
    assert "subscriptions_current" in summary["built"]
    assert set(summary["skipped"]) == set()  # no manifest yet: its models build empty

    assert main(["models", "--warehouse", str(warehouse), "--check", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "data tests passed" in out and "skipped" not in out  # the manifest models too

    # the current state equals the sandbox's, and the usable counts equal its own counts
    truth = {r["id"]: (r["status"], r["expires_at"]) for r in sb.truth(is_test=False)}
    current = query(
        warehouse,
        "select id, status, strftime(expires_at, '%Y-%m-%d %H:%M:%S') "
        "from analytics.subscriptions_current where not is_test and not is_removed",
    )
    assert {r[0]: (r[1], r[2]) for r in current} == truth
    counts = sb.world.counts()
    assert query(
        warehouse,
        "select active, canceled_usable from analytics.daily_subscribers order by day desc limit 1",
    ) == [(counts["active"], counts["canceled_usable"])]
    assert query(warehouse, "select as_of from analytics.as_of") == [(sb.now,)]

    # rebuilding later gives the same numbers
    before = {name: query(warehouse, sql) for name, sql in MART_SNAPSHOT.items()}
    assert main(["models", "--warehouse", str(warehouse)]) == 0
    assert {name: query(warehouse, sql) for name, sql in MART_SNAPSHOT.items()} == before


def test_an_unknown_status_passes_check_kept_as_sent_and_treated_as_other(
    sandbox_factory: Any, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sb = sandbox_factory(subscriptions=0, users=0, start="2026-05-01 00:00:00")
    first = sb.world.add_subscription(501, "active", "2026-05-20 00:00:00")
    sb.world.add_subscription(502, "canceled", "2026-05-10 00:00:00")
    sb.world.set_raw(first, status="paused")
    run(sb, warehouse)

    # no models yet: the report says what to run
    assert main(["report", "--warehouse", str(warehouse)]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "devportal: error: the warehouse has no analytics.as_of: run `devportal models` "
        "(or a sync) to build the models first"
    ]

    # a status the spec does not show is no data error (issue 21): kept as sent, treated as
    # 'other' (tests/models/test_statuses.py has the figures)
    assert main(["models", "--warehouse", str(warehouse), "--check"]) == 0
    assert "data tests passed" in capsys.readouterr().out
    # users come from subscriptions alone (no settings list, accounts 404)
    assert query(
        warehouse,
        "select user_id, account_status, in_settings_list, subscriptions, usable_subscriptions "
        "from analytics.users order by user_id",
    ) == [(501, "missing", False, 1, 1), (502, "missing", False, 1, 1)]
    assert query(
        warehouse, "select status_sent, status, is_usable from analytics.subscriptions_current"
    ) == [("paused", "other", True), ("canceled", "canceled", True)]


def test_report_on_a_missing_warehouse_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "none.duckdb"
    assert main(["report", "--warehouse", str(target), "--format", "json"]) == 1
    assert capsys.readouterr().err == (
        f"devportal: error: no warehouse at {target}: run `devportal sync` "
        "(or `devportal demo`) first\n"
    )
