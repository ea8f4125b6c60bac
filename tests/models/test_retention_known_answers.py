"""Known answers for renewals, retention, lifetimes and platforms: a scripted history through the
real sync (tests/models/retention_story.py), then every row of every model of issue 13, by hand.

Four syncs, sandbox clock, all at 00:00:00: S1 2026-01-10 (the first sync), S2 02-05, S3 03-20
(a gap of 43 days), S4 04-12 = as_of. The sandbox renews an active subscription when its expiry
is reached (by its period) and lets a canceled one expire.

Users: 301 Ann (twitch), 302 Ben (primary youtube, also twitch), 303 has no account (404:
platform 'unknown').

    id  svc  story                                           versions (sync: status expires)
     1 A 301 monthly, renews 01-25, 02-25, 03-25             S1 a 01-25, S2 a 02-25, S3 a 03-25,
                                                             S4 a 04-25
     2 B 302 yearly, renews 02-15 -> 2027-02-15              S1 a 02-15, S3 a 2027-02-15
     3 C 303 yearly, expires 2026-11-01                      S1 a 11-01
     4 D 301 canceled, expired 2025-12-20 (before S1)        S1 c 2025-12-20
     5 E 302 renews 01-20, canceled 01-25, expires 02-20     S1 a 01-20, S2 c 02-20
     6 F 302 canceled at S1, reactivated 01-20 (a save,      S1 c 02-10, S2 a 02-10, S3 a 04-10,
           seen at S2 before 02-10), renews 02-10, 03-10,    S4 a 05-10
           04-10
     7 G 303 canceled 01-15, expired 02-01, back 02-20 with  S1 a 02-01, S2 c 02-01, S3 a 03-22,
           a new period to 03-22 (a win-back), renews 03-22  S4 a 04-22
     8 H 301 added 01-20, renews 02-20, 03-20; canceled      S2 a 02-20, S3 a 04-20, S4 c 04-20
           03-25 (usable until 04-20)
     9 M 302 added 01-25, canceled 02-10, expires 02-25      S2 a 02-25, S3 c 02-25
    10 N 301 added 01-28, renews 02-28, removed 03-01        S2 a 02-28 (closed at S3: removed)
    11 I 302 added 02-10, canceled 02-15, expires 03-10      S3 c 03-10 (first seen expired)
    12 J 301 added 02-25, canceled 03-21, expires 03-25      S3 a 03-25, S4 c 03-25
    13 K 303 added 03-03, canceled 03-25, expires 04-03      S3 a 04-03, S4 c 04-03
    14 L 302 added 03-25                                     S4 a 04-25

Backfill (first seen at S1): 1-7. Expired events (churn, one per lapse: docs/analytics.md
"Win-backs"): D 2025-12-20, G 02-01 (a lapse, won back later: churned at its expiry, won back at
its comeback, as mrr_movements counts it), E 02-20, M 02-25, I 03-10, J 03-25, K 04-03.
`reactivated` events: F at S2 (previous expiry 02-10: a save), G (won back) at its comeback.

Starts (docs/analytics.md "Starts between syncs"): a subscription first seen after S1 started at
its first expiry minus its period (a month while unknown), within (the sync before, the sync
that saw it]: H 02-20 - 1 month = 01-20 (monthly), M 01-25, N 01-28 (in (S1, S2]); I 02-10, J
02-25, K 03-03 (in (S2, S3]); L 03-25 (in (S3, S4]): the days the story added them. G's comeback:
its new expiry 03-22 minus a month = 02-22, within (S2, S3] and after its lapse (02-01).

"Usable at t": within one of its subscription_spells (from its start as above; a version until
it was replaced or its use ran out, usable_until: its expiry or the next version's, if later;
not during G's lapse, [02-01, 02-22)). Month starts (= ends of the previous month), live
subscriptions:
    01-01, 12-01: before S1, estimated from S1's list: expiry after the start:
                  12-01: A B C D E F G = 7; 01-01: A B C E F G = 6 (D 12-20)
    02-01: A (02-25) B C E (02-20) F (02-10) H (from 01-20) M (01-25) N (01-28) = 8; G lapsed
           at 02-01 exactly (not usable then)
    03-01: A B C F G (back from 02-22) H I (02-10 to 03-10) J (02-25 to 03-25) = 8; E 02-20,
           M 02-25, N 02-28 out
    04-01: A B C F G H K (03-03 to 04-03) L (from 03-25) = 8; I, J 03-25 out, N no longer
           listed
    as_of: A B C F G H (canceled, to 04-20) L = 7
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

import pytest

from devportal import models
from devportal.models.project import SQL_DIR
from devportal.warehouse import engines
from devportal.warehouse.target import Target
from tests.helpers import OnEngine, one_row
from tests.helpers import query as rows
from tests.models.retention_story import S1, S2, S3, S4, build_retention_story
from tests.models.test_postgres_models import model_rows
from tests.models.test_runner import raw_warehouse, write_models

NEW_MODELS = {
    "billing_periods",
    "monthly_renewals",
    "cohort_retention",
    "subscription_lifetimes",
    "survival_curve",
    "reactivations",
    "churn_by_platform",
}


@pytest.fixture(scope="module")
def retention_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    warehouse = tmp_path_factory.mktemp("retention") / "retention.duckdb"
    info = build_retention_story(warehouse)
    assert info["clock"] == [S1, S2, S3, S4]
    # `models --check`: every model built, the data tests (the new ones among them) passed
    assert set(info["summary"]["built"]) >= NEW_MODELS
    # no manifest recorded: the manifest models build empty (their stand-ins), none is skipped
    assert set(info["summary"]["skipped"]) == set()
    assert info["summary"]["tests"] > 150
    yield warehouse


d = datetime.fromisoformat
# the story's months by their first day: December (before S1), then January to April (as_of's)
dec, jan, feb, mar, apr = date(2025, 12, 1), *(date(2026, m, 1) for m in (1, 2, 3, 4))
t, f = True, False  # short, for the tables of expected rows


def test_the_story_reaches_the_expected_as_of(retention_warehouse: Path) -> None:
    assert rows(
        retention_warehouse, "select as_of, first_sync_at, successful_syncs from analytics.as_of"
    ) == [(S4, S1, 4)]


def test_billing_periods(retention_warehouse: Path) -> None:
    """Steps between the distinct expiries, ascending; the most recent fitting step decides.

    A 01-25, 02-25, 03-25, 04-25: 31, 28, 31 days -> monthly (31). B 2026-02-15 -> 2027-02-15:
    365 -> yearly. E 01-20 -> 02-20: 31. F 02-10 -> 04-10 (59: two months, S3 came 43 days after
    S2 and missed the 03-10 expiry) -> 05-10 (30): the latest, 30, decides. G 02-01 -> 03-22
    (49 days: no window, the win-back's new period) -> 04-22 (31): monthly by the latest. H
    02-20 -> 04-20: 59 days, its only step: two months, monthly. Everything else has one expiry
    (C is yearly, but no renewal was seen): unknown.
    """
    got = rows(
        retention_warehouse,
        "select subscription_id, period, observed_steps, step_days, step_months "
        "from analytics.billing_periods order by subscription_id",
    )
    unknown = [(i, "unknown", 0, None, None) for i in (3, 4, 9, 10, 11, 12, 13, 14)]
    assert got == sorted(
        [
            (1, "monthly", 3, 31, 1),
            (2, "yearly", 1, 365, 12),
            (5, "monthly", 1, 31, 1),
            (6, "monthly", 2, 30, 1),
            (7, "monthly", 2, 31, 1),
            (8, "monthly", 1, 59, 2),
            *unknown,
        ]
    )


def test_monthly_churn_by_period(retention_warehouse: Path) -> None:
    """Churn: D (Dec, unknown), G (its lapse at 02-01 00:00:00: January's, monthly; won back in
    February: `won_back`), E (Feb, monthly), M (Feb, unknown), I and J (Mar, unknown), K (Apr,
    unknown). Cancellations seen: E, G at S2; M at S3; H, J, K at S4. New, in the month of their
    start (module docstring): H M N January, I J February, K L March, none in April. Bases: see
    the module docstring."""
    got = rows(
        retention_warehouse,
        "select month, churned, churned_monthly, churned_yearly, churned_unknown, cancellations, "
        "new, won_back, subscribers_at_start, churn_rate, is_estimate, is_complete "
        "from analytics.monthly_churn order by month",
    )
    assert got == [
        (dec, 1, 0, 0, 1, None, None, None, 7, 1 / 7, True, True),
        (jan, 1, 1, 0, 0, 0, 3, 0, 6, 1 / 6, True, True),
        (feb, 2, 1, 0, 1, 2, 2, 1, 8, 2 / 8, False, True),
        (mar, 2, 0, 0, 2, 1, 2, 0, 8, 2 / 8, False, True),
        (apr, 1, 0, 0, 1, 3, 0, 0, 8, 1 / 8, False, False),
    ]


def test_monthly_renewals(retention_warehouse: Path) -> None:
    """Due dates (every recorded expiry) by month, up to April (as_of's month):

    Dec: D 12-20 churned (u).
    Jan: A 01-25, E 01-20 renewed (m); G 02-01 00:00:00 (its paid use ends with January:
         sql/intermediate/month_spine.sql) churned (m): it lapsed there (its `expired` event);
         its comeback on 02-22 is a win-back, not a renewal of this due date.
    Feb: A 02-25, F 02-10, H 02-20 renewed (m); E 02-20 churned (m); B 02-15 renewed (y); M
         02-25 churned (u); N 02-28 undecided (u: removed before a renewal was seen).
    Mar: A 03-25, G 03-22 renewed (m); I 03-10, J 03-25 churned (u).
    Apr: F 04-10 renewed (m); A 04-25, G 04-22, H 04-20 (canceled, usable until then) undecided
         (m, after as_of); K 04-03 churned (u); L 04-25 undecided (u).
    Later expiries (B 2027, C 11-01, F 05-10) fall after April: not yet due. December and
    January started before S1 (`is_estimate`): renewals before the history began are unseen,
    so no renewal rate there.
    """
    got = rows(
        retention_warehouse,
        "select month, period, came_due, renewed, churned, undecided, renewal_rate, is_estimate, "
        "is_complete from analytics.monthly_renewals order by month, period",
    )
    assert got == [
        (dec, "all", 1, 0, 1, 0, None, t, t),
        (dec, "monthly", 0, 0, 0, 0, None, t, t),
        (dec, "unknown", 1, 0, 1, 0, None, t, t),
        (dec, "yearly", 0, 0, 0, 0, None, t, t),
        (jan, "all", 3, 2, 1, 0, None, t, t),
        (jan, "monthly", 3, 2, 1, 0, None, t, t),
        (jan, "unknown", 0, 0, 0, 0, None, t, t),
        (jan, "yearly", 0, 0, 0, 0, None, t, t),
        (feb, "all", 7, 4, 2, 1, 4 / 6, f, t),
        (feb, "monthly", 4, 3, 1, 0, 3 / 4, f, t),
        (feb, "unknown", 2, 0, 1, 1, 0.0, f, t),
        (feb, "yearly", 1, 1, 0, 0, 1.0, f, t),
        (mar, "all", 4, 2, 2, 0, 2 / 4, f, t),
        (mar, "monthly", 2, 2, 0, 0, 1.0, f, t),
        (mar, "unknown", 2, 0, 2, 0, 0.0, f, t),
        (mar, "yearly", 0, 0, 0, 0, None, f, t),
        (apr, "all", 6, 1, 1, 4, 1 / 2, f, f),
        (apr, "monthly", 4, 1, 0, 3, 1.0, f, f),
        (apr, "unknown", 2, 0, 1, 1, 0.0, f, f),
        (apr, "yearly", 0, 0, 0, 0, None, f, f),
    ]


def test_cohort_retention(retention_warehouse: Path) -> None:
    """Cohorts, by the month each subscription started (module docstring; its `new` event's
    month): backfill (1-7, S1's month January), 2026-01 (H M N, started 01-20, 01-25, 01-28,
    first seen S2), 2026-02 (I J, 02-10, 02-25, first seen S3), 2026-03 (K L, 03-03, 03-25);
    none in April. Measured at each month's end (the next month's start, see the module
    docstring), or at as_of for April:

    backfill: end Jan A B C E F (G lapsed 02-01 exactly, D long gone) 5; end Feb A B C F G
      (E expired 02-20; G back from 02-22) 5; end Mar A B C F G 5; as_of A B C F G 5.
    2026-01: end Jan H M N 3 (all three started in January); end Feb H (M 02-25, N 02-28 ran
      out) 1; end Mar H 1; as_of H (canceled, to 04-20) 1.
    2026-02: end Feb I (to 03-10) J (to 03-25) 2; end Mar none 0; as_of 0.
    2026-03: end Mar K (to 04-03) L 2; as_of L (K expired 04-03) 1.
    Each month end sums to the next month's base: 5 + 3 = 8, 5 + 1 + 2 = 8, 5 + 1 + 0 + 2 = 8.
    """
    got = rows(
        retention_warehouse,
        "select cohort, cohort_month, is_backfill, month_offset, month, measured_at, "
        "cohort_size, usable, retention, is_complete "
        "from analytics.cohort_retention order by cohort_month, is_backfill desc, month_offset",
    )
    feb_end, mar_end, apr_end = d("2026-03-01"), d("2026-04-01"), S4
    assert got == [
        ("backfill", jan, t, 0, jan, d("2026-02-01"), 7, 5, 5 / 7, t),
        ("backfill", jan, t, 1, feb, feb_end, 7, 5, 5 / 7, t),
        ("backfill", jan, t, 2, mar, mar_end, 7, 5, 5 / 7, t),
        ("backfill", jan, t, 3, apr, apr_end, 7, 5, 5 / 7, f),
        ("2026-01", jan, f, 0, jan, d("2026-02-01"), 3, 3, 1.0, t),
        ("2026-01", jan, f, 1, feb, feb_end, 3, 1, 1 / 3, t),
        ("2026-01", jan, f, 2, mar, mar_end, 3, 1, 1 / 3, t),
        ("2026-01", jan, f, 3, apr, apr_end, 3, 1, 1 / 3, f),
        ("2026-02", feb, f, 0, feb, feb_end, 2, 2, 1.0, t),
        ("2026-02", feb, f, 1, mar, mar_end, 2, 0, 0.0, t),
        ("2026-02", feb, f, 2, apr, apr_end, 2, 0, 0.0, f),
        ("2026-03", mar, f, 0, mar, mar_end, 2, 2, 1.0, t),
        ("2026-03", mar, f, 1, apr, apr_end, 2, 1, 1 / 2, f),
    ]


def test_subscription_lifetimes(retention_warehouse: Path) -> None:
    """Lifetimes run from first seen to the first expiry (churned), or to as_of (censored), or
    for N, no longer listed, to the sweep that missed it (S3). Backfill (1-7): no lifetime; G's
    lapse at 02-01 is its churn (the same churn as monthly_churn's), its win-back does not undo
    it. H 02-05 ->
    04-12 = 66 days; M 02-05 -> 02-25 = 20; N 02-05 -> 03-20 = 43; I first seen 03-20 already
    expired 03-10: 0; J 03-20 -> 03-25 = 5; K 03-20 -> 04-03 = 14; L first seen at as_of: 0.
    """
    got = rows(
        retention_warehouse,
        "select subscription_id, service_id, first_seen_at, is_backfill, churned_at, is_churned, "
        "is_censored, is_removed, observed_until, lifetime_days "
        "from analytics.subscription_lifetimes order by subscription_id",
    )
    assert got == [
        (1, 301, S1, t, None, f, t, f, S4, None),
        (2, 302, S1, t, None, f, t, f, S4, None),
        (3, 303, S1, t, None, f, t, f, S4, None),
        (4, 301, S1, t, d("2025-12-20"), t, f, f, d("2025-12-20"), None),
        (5, 302, S1, t, d("2026-02-20"), t, f, f, d("2026-02-20"), None),
        (6, 302, S1, t, None, f, t, f, S4, None),
        (7, 303, S1, t, d("2026-02-01"), t, f, f, d("2026-02-01"), None),
        (8, 301, S2, f, None, f, t, f, S4, 66),
        (9, 302, S2, f, d("2026-02-25"), t, f, f, d("2026-02-25"), 20),
        (10, 301, S2, f, None, f, t, t, S3, 43),
        (11, 302, S3, f, d("2026-03-10"), t, f, f, d("2026-03-10"), 0),
        (12, 301, S3, f, d("2026-03-25"), t, f, f, d("2026-03-25"), 5),
        (13, 303, S3, f, d("2026-04-03"), t, f, f, d("2026-04-03"), 14),
        (14, 302, S4, f, None, f, t, f, S4, 0),
    ]


def test_survival_curve(retention_warehouse: Path) -> None:
    """Kaplan-Meier over the seven subscriptions first seen after S1 (backfill left out):
    day 0: 7 at risk, I churned, L censored: S = 6/7 = 0.857143
    day 5: 5 at risk, J churned: S = 6/7 * 4/5 = 24/35 = 0.685714
    day 14: 4 at risk, K churned: S = 24/35 * 3/4 = 18/35 = 0.514286
    day 20: 3 at risk, M churned: S = 18/35 * 2/3 = 12/35 = 0.342857 (the median: first <= 0.5)
    day 43: 2 at risk, N censored; day 66: 1 at risk, H censored: S unchanged.
    """
    got = rows(
        retention_warehouse,
        "select day, at_risk, churned, censored, survival "
        "from analytics.survival_curve order by day",
    )
    assert got == [
        (0, 7, 1, 1, 0.857143),
        (5, 5, 1, 0, 0.685714),
        (14, 4, 1, 0, 0.514286),
        (20, 3, 1, 0, 0.342857),
        (43, 2, 0, 1, 0.342857),
        (66, 1, 0, 1, 0.342857),
    ]


def test_reactivations(retention_warehouse: Path) -> None:
    """F: seen active at S2 (02-05) before its canceled version's expiry 02-10: saved. G: seen
    active at S3 (03-20), after its expiry 02-01 (S2 saw it expired): won back, in the month it
    came back (docs/analytics.md "Win-backs"): its new expiry 03-22 minus its period (a month,
    from the renewal S4 saw) = 02-22, within (S2, S3] (it came back 02-20). Months from S1's to
    as_of's."""
    got = rows(
        retention_warehouse,
        "select month, reactivated, saved, won_back, is_complete "
        "from analytics.reactivations order by month",
    )
    assert got == [
        (jan, 0, 0, 0, True),
        (feb, 2, 1, 1, True),
        (mar, 0, 0, 0, True),
        (apr, 0, 0, 0, False),
    ]


def test_churn_by_platform(retention_warehouse: Path) -> None:
    """twitch: 301's A D H N J; youtube: 302's B E F M I L; unknown: 303's C G K (no account).
    Bases of the module docstring split by platform; churn D twitch (Dec), G unknown (Jan, its
    lapse), E M youtube (Feb), I youtube and J twitch (Mar), K unknown (Apr)."""
    got = rows(
        retention_warehouse,
        "select month, platform, subscribers_at_start, churned, churn_rate, is_estimate, "
        "is_complete from analytics.churn_by_platform order by month, platform",
    )
    assert got == [
        (dec, "twitch", 2, 1, 1 / 2, t, t),  # A D
        (dec, "unknown", 2, 0, 0.0, t, t),  # C G
        (dec, "youtube", 3, 0, 0.0, t, t),  # B E F
        (jan, "twitch", 1, 0, 0.0, t, t),  # A
        (jan, "unknown", 2, 1, 1 / 2, t, t),  # C G
        (jan, "youtube", 3, 0, 0.0, t, t),  # B E F
        (feb, "twitch", 3, 0, 0.0, f, t),  # A H N
        (feb, "unknown", 1, 0, 0.0, f, t),  # C
        (feb, "youtube", 4, 2, 2 / 4, f, t),  # B E F M
        (mar, "twitch", 3, 1, 1 / 3, f, t),  # A H J
        (mar, "unknown", 2, 0, 0.0, f, t),  # C G
        (mar, "youtube", 3, 1, 1 / 3, f, t),  # B F I
        (apr, "twitch", 2, 0, 0.0, f, f),  # A H
        (apr, "unknown", 3, 1, 1 / 3, f, f),  # C G K
        (apr, "youtube", 3, 0, 0.0, f, f),  # B F L
    ]


def test_report_figures(retention_warehouse: Path) -> None:
    """The whole row. Usable at as_of: A B C F G L active, H canceled. Expiring by 05-12: H
    04-20 (churning), G 04-22, A 04-25, L 04-25, F 05-10; none within 7 days. Last 30 days
    (03-13, 04-12]: new L (started 03-25; I J K started 02-10, 02-25, 03-03, before the window);
    canceled M (S3), H J K (S4); churned J 03-25, K 04-03. March, the last full month: I and J
    churned of 8 at its start; 4 came due, 2 renewed; twitch and youtube both churned 1 of 3,
    the tie goes to the first by name."""
    names = [
        "as_of",
        "usable_subscribers",
        "usable_active",
        "usable_canceled",
        "last_full_month",
        "last_full_month_churned",
        "last_full_month_subscribers_at_start",
        "last_full_month_churn_rate",
        "last_full_month_is_estimate",
        "expiring_7d",
        "expiring_7d_renewing",
        "expiring_7d_churning",
        "expiring_30d",
        "expiring_30d_renewing",
        "expiring_30d_churning",
        "new_30d",
        "canceled_30d",
        "churned_30d",
        "last_full_month_came_due",
        "last_full_month_renewed",
        "last_full_month_renewal_rate",
        "median_lifetime_days",
        "top_churn_platform",
        "top_churn_platform_churn_rate",
    ]
    assert one_row(retention_warehouse, "analytics.report_figures", names) == {
        "as_of": S4,
        "usable_subscribers": 7,
        "usable_active": 6,
        "usable_canceled": 1,
        "last_full_month": mar,
        "last_full_month_churned": 2,
        "last_full_month_subscribers_at_start": 8,
        "last_full_month_churn_rate": 2 / 8,
        "last_full_month_is_estimate": False,
        "expiring_7d": 0,
        "expiring_7d_renewing": 0,
        "expiring_7d_churning": 0,
        "expiring_30d": 5,
        "expiring_30d_renewing": 4,
        "expiring_30d_churning": 1,
        "new_30d": 1,
        "canceled_30d": 4,
        "churned_30d": 2,
        "last_full_month_came_due": 4,
        "last_full_month_renewed": 2,
        "last_full_month_renewal_rate": 0.5,
        "median_lifetime_days": 20,
        # twitch's 1 of 3 is below the minimum base (20 at the month's start): none named
        "top_churn_platform": None,
        "top_churn_platform_churn_rate": None,
    }


def test_the_retention_story_on_postgres_gives_the_same_rows(
    retention_warehouse: Path, postgres: str, tmp_path: Path
) -> None:
    """The same story synced into PostgreSQL: every model's rows equal DuckDB's (the Kaplan-Meier
    product, the rates and the date arithmetic included), and --check passes there too."""
    info = build_retention_story(tmp_path / "pg.duckdb", destination="postgres")
    assert info["clock"] == [S1, S2, S3, S4]
    duck = model_rows(retention_warehouse, None)
    pg = model_rows(tmp_path / "pg.duckdb", "postgres")
    assert sorted(pg) == sorted(duck)
    assert set(duck) >= NEW_MODELS
    for table in duck:
        assert pg[table] == duck[table], table
    assert info["summary"]["tests"] > 150


# survival_curve.sql as shipped, over a stand-in subscription_lifetimes with hand-picked rows
STAND_IN_LIFETIMES = """-- subscription_lifetimes: a stand-in for the survival curve's edge cases.
--
-- Grain: one row per subscription.

select
    subscription_id,
    is_backfill,
    lifetime_days,
    is_churned,
    not is_churned as is_censored
from (
    values
        (1, false, 3, true),
        (2, false, 3, false),
        (3, false, 7, true),
        (4, false, 7, true),
        (5, true, null, false)
) as lifetimes(subscription_id, is_backfill, lifetime_days, is_churned)
"""


def test_survival_reaches_zero_when_everyone_at_risk_churns(
    engine: OnEngine, tmp_path: Path
) -> None:
    """Day 3: one churns and one is censored of 4: S = 3/4. Day 7: both left churn: S = 0 (no
    ln(0), which PostgreSQL refuses). The backfilled one is not followed."""
    curve = (SQL_DIR / "marts" / "survival_curve.sql").read_text(encoding="utf-8")
    sql_dir = write_models(
        tmp_path,
        {
            "intermediate/subscription_lifetimes.sql": STAND_IN_LIFETIMES,
            "marts/survival_curve.sql": curve,
        },
    )
    warehouse = raw_warehouse(tmp_path / "wh" / "w.duckdb")
    summary = models.build(Target.of(warehouse, engine.destination), check=True, sql_dir=sql_dir)
    assert summary["built"] == ["subscription_lifetimes", "survival_curve"]
    assert summary["tests"] > 5  # the curve's own and its reconciliations with the lifetimes
    with engines.connect(Target.of(warehouse, engine.destination), read_only=True) as conn:
        _, got = conn.columns(
            "select day, at_risk, churned, censored, survival "
            f"from {conn.qualify('analytics', 'survival_curve')} order by day"
        )
    assert [tuple(row) for row in got] == [(0, 4, 0, 0, 1.0), (3, 4, 1, 1, 0.75), (7, 2, 2, 0, 0.0)]
