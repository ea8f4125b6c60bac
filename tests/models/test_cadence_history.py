"""History without sync-cadence artefacts: the daily series count a subscription from its first
paid day as the syncs revealed it, not from the sync that first saw it, on DuckDB and
PostgreSQL (docs/analytics.md, "Starts between syncs").

The story (tests/models/cadence_story.py): syncs S1 05-04, S2 05-11, S3 05-18 a week apart, S4
06-15. N1, N2, N3 started 05-06, 05-08, 05-09 (seen by S2), N4 05-13 and L's win-back 05-14
(seen by S3), each at 12:00; every subscription adds 10.00 to MRR. A second test syncs one
random sandbox world daily and, at an irregular cadence, another copy of it: the same daily
series.
"""

from __future__ import annotations

import shutil
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devportal import models
from devportal.warehouse.target import Target
from tests.helpers import OnEngine, sync_from
from tests.models.cadence_story import cadence_story_on, plain
from tests.models.revenue_story import environment

PRICES = {
    "ANALYTICS__CURRENCY": "EUR",
    "ANALYTICS__PRICE_MONTHLY": "4.99",
    "ANALYTICS__PRICE_YEARLY": "49.99",
}


@pytest.fixture(scope="module", params=["duckdb", "postgres"])
def story(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> OnEngine:
    return cadence_story_on(request, request.param, tmp_path_factory)


def rows(on: OnEngine, sql: str) -> list[tuple[Any, ...]]:
    return plain(on.query(sql))


def test_mrr_daily_rises_on_the_days_the_subscriptions_started(story: OnEngine) -> None:
    """(day, mrr, estimated_mrr, subscribers) from the first day to 05-18: MRR rises on 05-06
    (N1, as L lapses: flat), 05-08, 05-09, 05-13 and 05-14, not in steps on 05-10 and 05-17 (the
    days S2 and S3 close); the part no sync had seen yet is `estimated_mrr`, 0 from the day a
    sync closes on."""
    got = rows(
        story,
        "select day, mrr, estimated_mrr, subscribers from analytics.mrr_daily "
        "where day <= '2026-05-18' order by day",
    )
    steps = {  # day: (usable, estimated)
        date(2026, 5, 4): (4, 0),  # the first sync's base: A L V B
        date(2026, 5, 6): (4, 1),  # L lapsed, N1 started (S2 sees it)
        date(2026, 5, 8): (5, 2),  # N2
        date(2026, 5, 9): (6, 3),  # N3
        date(2026, 5, 10): (6, 0),  # S2 (05-11 00:00) closes the day: seen
        date(2026, 5, 13): (7, 1),  # N4 (S3 sees it)
        date(2026, 5, 14): (8, 2),  # L won back
        date(2026, 5, 17): (8, 0),  # S3 closes the day
    }
    expected, now = [], (0, 0)
    day = date(2026, 5, 4)
    while day <= date(2026, 5, 18):
        now = steps.get(day, now)
        expected.append((day, 10.0 * now[0], 10.0 * now[1], now[0]))
        day += timedelta(days=1)
    assert got == expected
    assert rows(
        story,
        "select day, usable, estimated_usable from analytics.daily_subscribers "
        "where day <= '2026-05-18' order by day",
    ) == [(day, subscribers, int(estimated / 10)) for day, _, estimated, subscribers in got]
    # the sync days are not where MRR moves: 05-10 and 05-17 equal the day before
    by_day = {day: mrr for day, mrr, *_ in got}
    assert by_day[date(2026, 5, 10)] == by_day[date(2026, 5, 9)]
    assert by_day[date(2026, 5, 17)] == by_day[date(2026, 5, 16)]


def test_each_start_within_its_bounds_and_how_it_was_estimated(story: OnEngine) -> None:
    """N1, N2: first expiry minus their month (known from their renewals at S4); N3 (yearly)
    and N4, one expiry each: the documented estimate (minus a month unless that is after the
    sync that saw it, then minus a year); all within (previous sync, sync that saw it]; the
    first sync's subscriptions start at the first sync."""
    s1, s2, s3 = (f"2026-05-{n} 00:00:00" for n in ("04", "11", "18"))
    d = "2026-05-{} 12:00:00".format
    assert rows(
        story,
        "select subscription_id, spell_start, start_kind, start_basis, earliest_start, "
        "latest_start, estimated_until from analytics.subscription_spells "
        "where version_number = 1 order by subscription_id",
    ) == plain(
        [
            (1, _t(s1), None, None, None, None, None),
            (2, _t(s1), None, None, None, None, None),
            (3, _t(s1), None, None, None, None, None),
            (4, _t(s1), None, None, None, None, None),
            (5, _t(d("06")), "new", "period", _t(s1) + TICK, _t(s2), _t(s2)),
            (6, _t(d("08")), "new", "period", _t(s1) + TICK, _t(s2), _t(s2)),
            (7, _t(d("09")), "new", "estimate", _t(s1) + TICK, _t(s2), _t(s2)),
            (8, _t(d("13")), "new", "estimate", _t(s2) + TICK, _t(s3), _t(s3)),
        ]
    )
    # the movements follow: May's new MRR is N1..N4, on their days
    assert rows(
        story,
        "select subscription_id, day from analytics.mrr_changes "
        "where movement = 'new' and not is_base order by day",
    ) == [
        (5, date(2026, 5, 6)),
        (6, date(2026, 5, 8)),
        (7, date(2026, 5, 9)),
        (8, date(2026, 5, 13)),
    ]


TICK = timedelta(microseconds=1)  # a start is after the sync before it: not listed then


def _t(text: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(text)


def _daily_series(warehouse: Path) -> dict[date, tuple[Any, ...]]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return {
            row[0]: tuple(row[1:])
            for row in con.execute(
                "select s.day, s.usable, m.subscribers, round(m.mrr, 6) "
                "from analytics.daily_subscribers as s "
                "join analytics.mrr_daily as m using (day) order by s.day"
            ).fetchall()
        }
    finally:
        con.close()


@pytest.mark.soak  # 28 s: the long cross-check; the week-apart story stays in make test
def test_a_random_world_gives_the_same_daily_series_at_any_cadence(tmp_path: Path) -> None:
    """One seeded sandbox world (random new subscriptions, monthly and yearly, cancellations,
    saves, renewals, expiries) over 24 days, synced every day and, from a second copy of the
    same world, on days 3, 10 and 24 only (gaps of 3, 7 and 14 days): from the first sync's day
    to the last, every day's usable subscriptions and MRR are the same, and the sparse
    warehouse marks what it estimated (the split by status is as each sync observed it: a
    cancellation counts from the sync that saw it, so it differs). The old counting (from the sync that first saw a
    subscription) differed by every subscription started in a gap."""
    from devportal.sandbox import Sandbox

    def synced(name: str, sync_days: set[int]) -> Path:
        warehouse = tmp_path / f"{name}.duckdb"
        with Sandbox(subscriptions=1500, users=300, seed=32, start="2026-03-01 00:00:00") as sb:
            sync_from(sb, warehouse)
            for day in range(1, 25):
                sb.advance(days=1)
                if day in sync_days:
                    sync_from(sb, warehouse)
        with environment(PRICES):
            models.build(Target.of(warehouse, None), check=True)
        return warehouse

    daily = synced("daily", set(range(1, 25)))
    sparse = synced("sparse", {3, 10, 24})
    want, got = _daily_series(daily), _daily_series(sparse)
    assert len(want) == 24 and got == want
    con = duckdb.connect(str(sparse), read_only=True)
    try:
        [(estimated_days,)] = con.execute(
            "select count(*) from analytics.daily_subscribers where estimated_usable > 0"
        ).fetchall()
        [(new_between,)] = con.execute(
            "select count(*) from analytics.subscription_spells where start_kind = 'new' "
            "and spell_start < seen_at"
        ).fetchall()
    finally:
        con.close()
    assert estimated_days >= 15 and new_between > 50
    shutil.rmtree(tmp_path, ignore_errors=True)
