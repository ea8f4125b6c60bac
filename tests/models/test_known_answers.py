"""Known answers: a scripted history through the real sync, then exact rows in every model.

The story (conftest.build_story), live subscriptions, sandbox clock, all at 00:00:00:

    sync 1 (T1) 2026-01-15, sync 2 (T2) 2026-02-10, sync 3 (T3) 2026-03-05 = as_of

    id svc  at T1                      then
     1 101  active,  exp 02-01         renews by itself: 03-01 (seen T2), 04-01 (seen T3)
     2 101  active,  exp 01-20         renews 02-20 (seen T2), 03-20 (seen T3)
     3 102  canceled, exp 2025-12-10   expired before the first sync (backfill churn)
     4 102  canceled, exp 01-25        expires 01-25
     5 103  active,  exp 02-05         canceled 01-20 (seen T2); expires 02-05
     6 103  active,  exp 03-01         canceled 01-20 (seen T2), reactivated 02-15, renews
                                       03-01 -> 04-01 (both seen T3)
     7 104  active,  exp 03-10 yearly  untouched: expires in 5 days, renews
     8 104  active,  exp 03-08         canceled 02-15 (seen T3): churns in 3 days
     9 105  canceled, exp 02-20        reactivated 01-20 (seen T2), renews 03-20 (seen T3)
    10 106  active,  exp 01-31         renews 02-28 (seen T2); removed 02-15 (gone at T3)
    11 105  added 01-20, exp 02-25     first seen T2, renews 03-25 (seen T3)
    12 106  added 02-15 canceled, exp 03-03: first seen T3, already expired

Users: 101 Alice (twitch+youtube, settings {theme}), 102 Bob (no settings record), 103 Carol
(primary youtube, empty settings), 201 Dave (settings, no subscription); 104-106 have no
account (404). Two manifest releases are recorded after the syncs: tests/manifest/fixtures/complete (1.4.0)
and a 1.5.0 that drops the `mixer` platform and two pages (an error: recorded all the same).
"""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime, time, timedelta
from pathlib import Path

import pytest

from devportal.reporting import charts, report
from devportal.reporting.report.figures import _MONEY_KEYS
from tests.helpers import query as rows
from tests.models.conftest import T1, T2, T3

d = datetime.fromisoformat


def test_as_of_is_the_latest_successful_sync(story_warehouse: Path) -> None:
    assert rows(
        story_warehouse, "select as_of, first_sync_at, successful_syncs from analytics.as_of"
    ) == [(T3, T1, 3)]


def test_subscriptions_current(story_warehouse: Path) -> None:
    got = rows(
        story_warehouse,
        "select id, service_id, status, expires_at, is_test, first_seen_at, canceled_at, "
        "is_usable, days_left, is_removed, removed_at, version_count "
        "from analytics.subscriptions_current order by id",
    )
    f = False
    t = True
    assert got == [
        (1, 101, "active", d("2026-04-01"), f, T1, None, t, 27, f, None, 3),
        (2, 101, "active", d("2026-03-20"), f, T1, None, t, 15, f, None, 3),
        (3, 102, "canceled", d("2025-12-10"), f, T1, T1, f, 0, f, None, 1),
        (4, 102, "canceled", d("2026-01-25"), f, T1, T1, f, 0, f, None, 1),
        (5, 103, "canceled", d("2026-02-05"), f, T1, T2, f, 0, f, None, 2),
        (6, 103, "active", d("2026-04-01"), f, T1, None, t, 27, f, None, 3),
        (7, 104, "active", d("2026-03-10"), f, T1, None, t, 5, f, None, 1),
        (8, 104, "canceled", d("2026-03-08"), f, T1, T3, t, 3, f, None, 2),
        (9, 105, "active", d("2026-03-20"), f, T1, None, t, 15, f, None, 3),
        (10, 106, "active", d("2026-02-28"), f, T1, None, f, 0, t, T3, 2),
        (11, 105, "active", d("2026-03-25"), f, T2, None, t, 20, f, None, 2),
        (12, 106, "canceled", d("2026-03-03"), f, T3, T3, f, 0, f, None, 1),
    ]


def test_subscription_events(story_warehouse: Path) -> None:
    got = rows(
        story_warehouse,
        "select event_type, subscription_id, event_at, is_initial_load "
        "from analytics.subscription_events order by event_type, subscription_id, event_at",
    )
    # a subscription first seen after the first sync is new at its estimated first paid instant
    # (docs/analytics.md "Starts between syncs"), as daily_subscribers and mrr_changes count it,
    # not at the sync that saw it (`seen_at`): 11 (first seen T2, expiry 02-25, renewed to 03-25:
    # monthly) at 02-25 minus a month = 01-25, within (T1, T2]; 12 (first seen T3, expiry 03-03,
    # period unknown) at 03-03 minus a month = 02-03, before T2: moved to the bound, just after T2
    new = [("new", i, T1, True) for i in range(1, 11)]
    new += [("new", 11, d("2026-01-25"), False), ("new", 12, T2 + timedelta(microseconds=1), False)]
    assert got == sorted(
        [
            ("canceled", 5, T2, False),
            ("canceled", 6, T2, False),
            ("canceled", 8, T3, False),
            ("expired", 3, d("2025-12-10"), True),
            ("expired", 4, d("2026-01-25"), False),
            ("expired", 5, d("2026-02-05"), False),
            ("expired", 12, d("2026-03-03"), False),
            *new,
            ("reactivated", 6, T3, False),
            ("reactivated", 9, T2, False),
            ("renewed", 1, T2, False),
            ("renewed", 1, T3, False),
            ("renewed", 2, T2, False),
            ("renewed", 2, T3, False),
            ("renewed", 6, T3, False),
            ("renewed", 9, T3, False),
            ("renewed", 10, T2, False),
            ("renewed", 11, T3, False),
        ]
    )


def test_renewal_events_carry_both_expiries(story_warehouse: Path) -> None:
    assert rows(
        story_warehouse,
        "select previous_expires_at, expires_at from analytics.subscription_events "
        "where subscription_id = 10 and event_type = 'renewed'",
    ) == [(d("2026-01-31"), d("2026-02-28"))]


def test_monthly_churn(story_warehouse: Path) -> None:
    """New subscriptions count in the month of their estimated start (11 on 01-25: January; 12
    just after T2: February), and from that start in the bases, as daily_subscribers counts
    them: 02-01's base is 1 2 5 6 7 8 9 10 and 11 (started 01-25, seen only at T2) = 9; 03-01's
    is 1 2 6 (its save seen at T3 extends its canceled version to 04-01) 7 8 9 11 and 12
    (usable from just after T2 to 03-03) = 8; 5 (02-05), 10 (02-28) out. No lapse was won back:
    6's and 9's comebacks were saves (before the expiry)."""
    got = rows(
        story_warehouse,
        "select month, churned, cancellations, new, won_back, subscribers_at_start, churn_rate, "
        "is_estimate, is_complete from analytics.monthly_churn order by month",
    )
    assert got == [
        # before the first sync: base = the first sync's list with expires_at after the start
        (date(2025, 12, 1), 1, None, None, None, 10, pytest.approx(1 / 10), True, True),
        # the first sync's month: base still estimated; events observed from Jan 15 on, 11 new
        (date(2026, 1, 1), 1, 0, 1, 0, 9, pytest.approx(1 / 9), True, True),
        (date(2026, 2, 1), 1, 2, 1, 0, 9, pytest.approx(1 / 9), False, True),
        (date(2026, 3, 1), 1, 1, 0, 0, 8, pytest.approx(1 / 8), False, False),
    ]


def test_expiring_soon(story_warehouse: Path) -> None:
    got = rows(
        story_warehouse,
        "select id, service_id, status, expires_at, days_left, will_churn "
        "from analytics.expiring_soon order by expires_at, id",
    )
    assert got == [
        (8, 104, "canceled", d("2026-03-08"), 3, True),
        (7, 104, "active", d("2026-03-10"), 5, False),
        (2, 101, "active", d("2026-03-20"), 15, False),
        (9, 105, "active", d("2026-03-20"), 15, False),
        (11, 105, "active", d("2026-03-25"), 20, False),
        (1, 101, "active", d("2026-04-01"), 27, False),
        (6, 103, "active", d("2026-04-01"), 27, False),
    ]


def test_daily_subscribers(story_warehouse: Path) -> None:
    got = rows(
        story_warehouse,
        "select day, snapshot_at, usable, active, canceled_usable "
        "from analytics.daily_subscribers order by day",
    )
    # (first day, last day, usable, active, canceled-but-usable), each day measured at its end
    # A subscription first seen at a later sync counts from its start as the syncs revealed it
    # (docs/analytics.md "Starts between syncs"): 11 (first seen T2, expiry 02-25, then renewed
    # to 03-25: a month) from 02-25 minus a month = 01-25, within (T1, T2]; 12 (first seen T3,
    # expiry 03-03, period never seen) from 03-03 minus a month = 02-03, before T2: moved to the
    # bound, just after T2. Statuses change at the sync that saw them, as before.
    segments = [
        ("2026-01-15", "2026-01-23", 9, 7, 2),  # 4 and 9 canceled in grace
        ("2026-01-24", "2026-02-03", 9, 8, 1),  # 4 expired 01-25 00:00; 11 started 01-25
        ("2026-02-04", "2026-02-09", 8, 7, 1),  # 5 expired 02-05 00:00
        ("2026-02-10", "2026-02-26", 9, 7, 2),  # T2: 6 canceled, 9 active again; 12 from T2
        ("2026-02-27", "2026-03-01", 8, 6, 2),  # 10 (gone at T3) ran out 02-28
        ("2026-03-02", "2026-03-03", 7, 6, 1),  # 12 (canceled) ran out 03-03
        ("2026-03-04", "2026-03-04", 7, 6, 1),  # at as_of: 8 canceled, 6 active again
    ]
    expected = []
    for first, last, usable, active, canceled in segments:
        day = date.fromisoformat(first)
        while day <= date.fromisoformat(last):
            snapshot = min(datetime.combine(day + timedelta(days=1), time()), T3)
            expected.append((day, snapshot, usable, active, canceled))
            day += timedelta(days=1)
    assert len(expected) == 49
    assert got == expected


def test_users(story_warehouse: Path) -> None:
    got = rows(
        story_warehouse,
        "select user_id, display_name, primary_platform, platforms, account_status, "
        "twitch_name, in_settings_list, has_settings, settings_count, subscriptions, "
        "usable_subscriptions from analytics.users order by user_id",
    )
    assert got == [
        (101, "Alice", "twitch", "twitch,youtube", "found", "alice", True, True, 1, 2, 2),
        (102, "Bob", "twitch", "twitch", "found", None, False, False, 0, 2, 0),
        (103, "Carol TV", "youtube", "twitch,youtube", "found", "carol", True, False, 0, 2, 1),
        (104, None, None, None, "missing", None, False, False, 0, 2, 2),
        (105, None, None, None, "missing", None, False, False, 0, 2, 2),
        (106, None, None, None, "missing", None, False, False, 0, 2, 0),
        (201, "Dave", "twitch", "twitch", "found", "dave", True, True, 2, 0, 0),
    ]


def test_app_releases(story_warehouse: Path) -> None:
    got = rows(
        story_warehouse,
        "select release_number, app_name, version, platforms, platform_count, platforms_added, "
        "platforms_removed, source_count, page_count, error_count, is_valid "
        "from analytics.app_releases order by release_number",
    )
    assert got == [
        (
            1,
            "Stream Widgets",
            "1.4.0",
            "twitch,youtube,facebook,mixer",
            4,
            None,
            None,
            2,
            3,
            0,
            True,
        ),
        # the validator refused removing a live platform; the release is recorded with its error
        (2, "Stream Widgets", "1.5.0", "twitch,youtube,facebook", 3, "", "mixer", 2, 1, 1, False),
    ]


BASIS = "Based on the full subscription list read and verified at 2026-03-05 00:00:00"

EXPECTED_FIGURES = {
    "as_of": "2026-03-05 00:00:00",
    # what the figures rest on: three verified sweeps, the last at T3, nothing since
    "data_basis": BASIS,
    "not_measurable_yet": {},  # three syncs: every figure is measured
    "has_verified_sweep": True,
    "last_verified_sweep_at": "2026-03-05 00:00:00",
    "window_syncs_since_verified_sweep": 0,
    "unverified_sweeps_since_verified_sweep": 0,
    "subscriptions_read": 12,  # ids 1 to 12, removed 10 included
    # listed now: 11 (10 removed) = 7 usable + 4 whose expiry passed; none without an expiry
    "subscriptions_listed": 11,
    "listed_expired": 4,
    "usable_subscribers": 7,
    "usable_active": 6,
    "usable_canceled": 1,
    "last_full_month": "2026-02",
    # February: 5 churned of 9 at its start (11, started 01-25, included: test_monthly_churn)
    "last_full_month_churned": 1,
    "last_full_month_subscribers_at_start": 9,
    "last_full_month_churn_rate": 1 / 9,
    "last_full_month_is_estimate": False,
    "expiring_7d": 2,
    "expiring_7d_renewing": 1,
    "expiring_7d_churning": 1,
    "expiring_30d": 7,
    "expiring_30d_renewing": 6,
    "expiring_30d_churning": 1,
    # the last 30 days, (02-03, 03-05]: 49 days watched since the first sync, so all 30
    "window_days": 30,
    # new at their estimated starts: 12 (just after T2) in the window, 11 (01-25) before it
    "new_30d": 1,
    "canceled_30d": 3,  # 5 and 6 (T2), 8 (T3)
    "churned_30d": 2,  # 5 (02-05) and 12 (03-03)
    # due in February: 2 and 9 (02-20), 11 (02-25), 1 and 6 (03-01 00:00:00: the paid use ends
    # with February; 1's 02-01 is January's) renewed, 5 (02-05) churned, 10 (02-28, then no
    # longer listed) undecided: 5 of the 6 decided renewed
    "last_full_month_came_due": 7,
    "last_full_month_renewed": 5,
    "last_full_month_renewal_rate": 5 / 6,
    # followed (first seen after the first sync): 12 churned on day 0 (first seen expired), 11
    # still active 23 days after T2: the curve is at 1/2 on day 0
    "median_lifetime_days": 0,
    # February's bases: youtube (Carol, 103) 5 and 6, 5 churned; twitch 1 and 2, unknown
    # (no account) 7 to 10 did not churn
    # youtube's 1 of 2 is below the minimum base (20 at the month's start): no platform named
    # (test_report_retention.py has a world with one)
    "top_churn_platform": None,
    "top_churn_platform_churn_rate": None,
    # no prices set in the story: every money figure null, and the line saying how to set them
    **dict.fromkeys(_MONEY_KEYS),
    "forecast_30d_mrr_scope": None,
    "prices_hint": charts.PRICES_HINT,
}


def test_report_json_has_the_exact_figures(
    story_warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report.print_report(story_warehouse, fmt="json")
    assert json.loads(capsys.readouterr().out) == EXPECTED_FIGURES


def test_report_csv_and_markdown_and_table(
    story_warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report.print_report(story_warehouse, fmt="csv")
    parsed = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["metric"]: r["value"] for r in parsed} == {
        k: "" if v in (None, {}) else str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in EXPECTED_FIGURES.items()
    }

    report.print_report(story_warehouse, fmt="markdown")
    markdown = capsys.readouterr().out
    assert "| churn rate | 11.1% |" in markdown
    assert "| **Last full month: 2026-02** | |" in markdown
    assert f"> {BASIS}" in markdown.splitlines()

    report.print_report(story_warehouse, fmt="table")
    table = capsys.readouterr().out.splitlines()
    assert (
        table[0] == "Subscriptions as of 2026-03-05 00:00:00 (latest successful sync, server clock)"
    )
    assert table[1] == BASIS
    assert [line.split()[-1] for line in table if line.strip().startswith("churn rate")] == [
        "11.1%"
    ]


def test_report_html_is_one_self_contained_page(story_warehouse: Path, tmp_path: Path) -> None:
    page = tmp_path / "out" / "report.html"
    report.print_report(story_warehouse, fmt="table", html=page)
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>")
    assert text.count('src="data:image/png;base64,') == 6  # the six charts, inline
    # nothing to fetch: no external scripts, styles or images
    assert "http://" not in text and "https://" not in text
    assert "<script" not in text
    assert "Subscriptions as of 2026-03-05 00:00:00" in text
