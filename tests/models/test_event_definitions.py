"""One definition per event: a subscription that lapsed and came back is one win-back in every
mart, at one time (docs/analytics.md, "Win-backs"), on DuckDB and PostgreSQL.

The story (tests/models/cadence_story.py): L canceled, lapsed at its expiry 05-06 12:00 (the
sync S2 saw it expired), won back 05-14 12:00 (seen by S3 05-18) with a new month to 06-14;
V canceled, saved before its expiry and renewed at it, seen active by S3 only after the old
expiry: a save, however late the sync saw it. Every subscription adds 10.00 to MRR.
"""

from __future__ import annotations

import shutil
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devportal.models.checks import reconciliations
from tests.helpers import OnEngine
from tests.models.cadence_story import S2, S3, cadence_story_on, plain

d = datetime.fromisoformat
TICK = timedelta(microseconds=1)  # a start is after the sync before it: not listed then
COMEBACK = d("2026-05-14 12:00:00")
LAPSE = d("2026-05-06 12:00:00")
L, V = 2, 3


@pytest.fixture(scope="module", params=["duckdb", "postgres"])
def story(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> OnEngine:
    return cadence_story_on(request, request.param, tmp_path_factory)


def rows(on: OnEngine, sql: str) -> list[tuple[Any, ...]]:
    return plain(on.query(sql))


def test_the_win_back_is_one_event_at_its_comeback(story: OnEngine) -> None:
    """subscription_spells starts it at its new expiry minus its month, within (S2, S3]; the
    event carries that time (the sync that saw it apart), V's is a save at S3."""
    assert rows(
        story,
        "select subscription_id, version_number, spell_start, start_kind, start_basis, "
        "earliest_start, latest_start from analytics.subscription_spells "
        "where start_kind = 'win_back'",
    ) == [(L, 3, COMEBACK, "win_back", "period", S2 + TICK, S3)]
    assert rows(
        story,
        "select subscription_id, event_at, seen_at, is_win_back, event_month "
        "from analytics.subscription_events where event_type = 'reactivated' "
        "order by subscription_id",
    ) == [(L, COMEBACK, S3, True, d("2026-05-01")), (V, S3, S3, False, d("2026-05-01"))]


def test_every_mart_counts_the_win_back_alike(story: OnEngine) -> None:
    """reactivations: one won back (L) and one saved (V) in May; mrr_changes: L churned at its
    lapse and reactivated at its comeback, V moves nothing; mrr_movements: May's reactivated
    MRR is L's 10.00; the report's figure reads it."""
    assert rows(
        story, "select month, reactivated, saved, won_back from analytics.reactivations"
    ) == [(date(2026, 5, 1), 2, 1, 1), (date(2026, 6, 1), 0, 0, 0)]
    assert rows(
        story,
        "select subscription_id, changed_at, day, movement, amount_before, amount_after "
        "from analytics.mrr_changes where subscription_id in (2, 3) "
        "and movement <> 'price_change' order by changed_at",
    ) == [
        (L, d("2026-05-04"), date(2026, 5, 4), "new", 0.0, 10.0),  # the first sync's base
        (V, d("2026-05-04"), date(2026, 5, 4), "new", 0.0, 10.0),
        (L, LAPSE, date(2026, 5, 6), "churned", 10.0, 0.0),
        (L, COMEBACK, date(2026, 5, 14), "reactivated", 0.0, 10.0),
    ]
    assert rows(
        story,
        "select month, mrr_start, new_mrr, churned_mrr, reactivated_mrr, net_change, mrr_end "
        "from analytics.mrr_movements order by month",
    ) == [
        (date(2026, 5, 1), 40.0, 40.0, 10.0, 10.0, 40.0, 80.0),
        (date(2026, 6, 1), 80.0, 0.0, 10.0, 0.0, -10.0, 70.0),
    ]
    assert rows(
        story,
        "select last_full_month, last_full_month_mrr_reactivated from analytics.report_figures",
    ) == [(date(2026, 5, 1), 10.0)]
    # the lapse is a gap in the daily series: L not usable 05-06 12:00 .. 05-14 12:00
    assert rows(
        story,
        "select day, usable from analytics.daily_subscribers "
        "where day between '2026-05-05' and '2026-05-14' order by day",
    ) == [
        (date(2026, 5, 5), 4),  # A L V B
        (date(2026, 5, 6), 4),  # L lapsed, N1 started
        (date(2026, 5, 7), 4),
        (date(2026, 5, 8), 5),  # N2
        (date(2026, 5, 9), 6),  # N3
        (date(2026, 5, 10), 6),
        (date(2026, 5, 11), 6),
        (date(2026, 5, 12), 6),
        (date(2026, 5, 13), 7),  # N4
        (date(2026, 5, 14), 8),  # L back
    ]


def test_the_reconciliations_fail_when_two_marts_disagree(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """The win-back reconciliations pass on the story and fail, naming the month or the
    subscription, when reactivations or mrr_changes count a win-back another way (the old
    reactivations: judged by when the sync saw it; a win-back that moves no MRR). On DuckDB
    (the build ran them on PostgreSQL too: check=True)."""
    story = cadence_story_on(request, "duckdb", tmp_path_factory)
    names = {
        "reactivations_won_back_match_win_back_events",
        "win_back_events_match_mrr_changes",
        "mrr_movements_reactivated_match_win_backs",
        "subscription_spells_start_within_their_bounds",
        "daily_subscribers_estimated_usable_within_usable",
    }
    tests = {t.name: t.sql for t in reconciliations() if t.name in names}
    assert set(tests) == names
    copy = tmp_path / "copy.duckdb"
    shutil.copy(story.warehouse, copy)
    con = duckdb.connect(str(copy))
    try:
        for name, sql in tests.items():
            assert con.execute(sql).fetchall() == [], name
        # reactivations as before: V, seen after its expiry, "won back"
        con.execute(
            "update analytics.reactivations set won_back = 2, saved = 0 "
            "where month = date '2026-05-01'"
        )
        assert con.execute(tests["reactivations_won_back_match_win_back_events"]).fetchall()
        assert con.execute(tests["mrr_movements_reactivated_match_win_backs"]).fetchall()
        # a win-back that moves no MRR (the lapse covered over)
        con.execute(
            "update analytics.mrr_changes set movement = 'price_change' "
            "where movement = 'reactivated'"
        )
        assert con.execute(tests["win_back_events_match_mrr_changes"]).fetchall() == [
            (L, COMEBACK, None)
        ]
        con.execute("update analytics.mrr_movements set reactivated_mrr = 0")
        con.execute("update analytics.reactivations set won_back = 1, saved = 1")
        assert con.execute(tests["mrr_movements_reactivated_match_win_backs"]).fetchall()
    finally:
        con.close()


def test_the_lapse_is_one_churn_in_every_mart(story: OnEngine) -> None:
    """A lapse is churned at its expiry and won back at its comeback, in every mart that counts
    one (docs/analytics.md "Win-backs"), as mrr_movements counts its MRR.

    L lapsed at 05-06 12:00 and came back 05-14 12:00: May's churn (its `expired` event, its due
    date 05-06 12:00 churned, not renewed) and May's win-back. V's late save is no churn and its
    due date 05-16 renewed. N4 (canceled, expires 06-13 12:00) is June's churn. May's base is
    the first sync's list with an expiry after 05-01 (A L V B = 4, an estimate: May began
    before S1); June's (06-01 00:00:00) A (renewed, seen at S4) L (back) V B N1 N2 N3 N4 = 8,
    daily_subscribers' 05-31. New, at their starts: N1 05-06, N2 05-08, N3 05-09, N4 05-13 (all
    12:00, all May's). Cancellations seen: L and V at S2 (N4 was first seen already canceled: no
    cancellation event). So the report reads "churned 1" beside churned MRR 10.00 (one
    subscription's) and "won back 1" beside reactivated MRR 10.00."""
    assert rows(
        story,
        "select subscription_id, event_at, seen_at, event_month from analytics.subscription_events "
        "where event_type = 'expired' order by event_at",
    ) == [(L, LAPSE, S2, d("2026-05-01")), (8, d("2026-06-13 12:00:00"), S3, d("2026-06-01"))]
    assert rows(
        story,
        "select month, churned, won_back, new, cancellations, subscribers_at_start, churn_rate "
        "from analytics.monthly_churn order by month",
    ) == [(date(2026, 5, 1), 1, 1, 4, 2, 4, 1 / 4), (date(2026, 6, 1), 1, 0, 0, 0, 8, 1 / 8)]
    assert rows(
        story,
        "select month, came_due, renewed, churned, undecided from analytics.monthly_renewals "
        "where period = 'all' order by month",
    ) == [
        # L 05-06 12:00 churned; V 05-16 (saved) and A 05-20 renewed
        (date(2026, 5, 1), 3, 2, 1, 0),
        # N1 06-06, N2 06-08, L 06-14 renewed; N4 06-13 12:00 churned; V 06-16, A 06-20 not due
        (date(2026, 6, 1), 6, 3, 1, 2),
    ]
    assert rows(
        story,
        "select month, sum(churned) from analytics.churn_by_platform group by month order by 1",
    ) == [(date(2026, 5, 1), 1), (date(2026, 6, 1), 1)]
    assert rows(
        story,
        "select churned_at, is_churned from analytics.subscription_lifetimes "
        f"where subscription_id = {L}",
    ) == [(LAPSE, True)]
    assert rows(
        story, "select usable from analytics.daily_subscribers where day = '2026-05-31'"
    ) == [(8,)]
    assert rows(
        story,
        "select last_full_month, last_full_month_churned, last_full_month_mrr_churned, "
        "last_full_month_mrr_reactivated from analytics.report_figures",
    ) == [(date(2026, 5, 1), 1, 10.0, 10.0)]


def test_the_churn_reconciliations_fail_when_two_marts_disagree(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """The churn and start reconciliations pass on the story and fail, naming the month or the
    subscription, when a mart counts a lapse, a start or a base another way: the old rule (a
    lapse later won back is no churn), a `new` dated at the sync that saw it, a base counted
    from that sync. On DuckDB (the build ran them on PostgreSQL too: check=True)."""
    story = cadence_story_on(request, "duckdb", tmp_path_factory)
    names = {
        "expired_events_match_mrr_changes",
        "new_events_match_mrr_changes",
        "month_start_subscribers_match_daily_subscribers",
        "monthly_churn_matches_subscription_events",
    }
    tests = {t.name: t.sql for t in reconciliations() if t.name in names}
    assert set(tests) == names
    copy = tmp_path / "copy.duckdb"
    shutil.copy(story.warehouse, copy)
    con = duckdb.connect(str(copy))
    try:
        for name, sql in tests.items():
            assert con.execute(sql).fetchall() == [], name
        # the old rule: L's lapse "undone" by its win-back, in the events and monthly_churn
        con.execute(
            f"delete from analytics.subscription_events "
            f"where subscription_id = {L} and event_type = 'expired'"
        )
        assert con.execute(tests["expired_events_match_mrr_changes"]).fetchall() == [
            (L, LAPSE, date(2026, 5, 1), "churned MRR, no expired event")
        ]
        assert con.execute(tests["monthly_churn_matches_subscription_events"]).fetchall()
        # N1 new at the sync that saw it (S2), not at its start
        con.execute(
            "update analytics.subscription_events set event_at = seen_at "
            "where subscription_id = 5 and event_type = 'new'"
        )
        assert sorted(
            con.execute(
                f"select subscription_id, problem from ({tests['new_events_match_mrr_changes']})"
            ).fetchall()
        ) == [(5, "new MRR, no new event"), (5, "new event, no new MRR")]
        # June's base without N4, as if counted from a sync that had not seen it yet
        con.execute(
            "delete from analytics.month_start_subscribers where subscription_id = 8 "
            "and timestamp '2026-06-01' between first_month_start and last_month_start"
        )
        assert con.execute(tests["month_start_subscribers_match_daily_subscribers"]).fetchall()
    finally:
        con.close()
