"""Known answers for the price book and the money models: a scripted history through the real
sync (tests/models/revenue_story.py), then every MRR figure, movement and forecast input by hand.

Four syncs, sandbox clock, all at 00:00:00: S1 2026-01-10 (the first sync), S2 02-05, S3 03-05,
S4 04-12 = as_of. The sandbox renews an active subscription when its expiry is reached (by its
period) and lets a canceled one expire.

Price book (a prices_file, revenue_share 0.5, EUR): monthly 5.00 from 2026-01-01 and 4.00 from
2026-03-01 (a price cut), yearly 54.00, unknown 4.40, all from 2026-01-01. Monthly-normalised
after the share (`mrr_amount`): monthly 2.5, then 2.0; yearly 54 / 12 x 0.5 = 2.25; unknown 2.2.

    id   user story                                        versions (sync: status expires)
     1 A 401  monthly, renews 01-25, 02-25, 03-25          S1 a 01-25, S2 a 02-25, S3 a 03-25,
                                                           S4 a 04-25
     2 B 402  yearly, renews 02-15 -> 2027-02-15           S1 a 02-15, S3 a 2027-02-15
     3 C 403  monthly (01-20 -> 02-20), switches to yearly S1 a 01-20, S2 a 02-20,
              at 02-20 (-> 2027-02-20), canceled 04-01     S3 a 2027-02-20, S4 c 2027-02-20
     4 D 404  monthly, renews 01-28; canceled 02-10,       S1 a 01-28, S2 a 02-28, S3 c 02-28,
              expires 02-28; won back 03-25 to 04-25       S4 a 04-25
     5 E 405  renews 01-15, canceled 01-20, expires 02-15  S1 a 01-15, S2 c 02-15
     6 I 409  monthly (02-08 -> 03-08), switches to yearly S1 a 02-08, S3 a 03-08,
              at 03-08 (-> 2027-03-08): after the cut      S4 a 2027-03-08
     7 F 401  added 02-10 (Ann's second), renews 03-10,    S3 a 03-10, S4 a 05-10
              04-10
     8 G 407  added 03-25, never renewed yet: unknown      S4 a 04-25

Paid periods (billing_segments): the steps between recorded expiries; a first segment takes the
period of the nearest later fitting step. C: 31 days monthly, then 365 yearly; I: 28 monthly,
then 365 yearly; D: 31, then 56 (two months: monthly); F: 61 (two months); G: one expiry only.

A subscription counts while usable (subscription_versions.usable_until, as daily_subscribers):
E until 02-15, D until 02-28 and again from S3 (its S3 version, seen canceled and expired, is
vouched for by S4's later expiry), F from S3, G from S4. A change shows on the day of the first
snapshot at or after it (a midnight closes the day before); a price valid from day D applies
from just after D's midnight.

MRR changes after the first day:
    02-15 (day 02-14) E churned           -2.5
    02-20 (day 02-19) C monthly -> yearly  2.5 -> 2.25: contraction 0.25
    02-28 (day 02-27) D churned           -2.5
    03-01 (day 03-01) the price cut: A and I (monthly then) 2.5 -> 2.0: price change -1.0
    03-05 (day 03-04) D reactivated +2.0, F new +2.0
    03-08 (day 03-07) I monthly -> yearly  2.0 -> 2.25: expansion 0.25
    04-12 (day 04-11) G new +2.2 (unknown)
First day: A B C D E I = 2.5 + 2.25 + 2.5 + 2.5 + 2.5 + 2.5 = 14.75, 6 subscriptions of 6 users.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devportal import models
from devportal.models.project import SQL_DIR
from devportal.warehouse import engines
from devportal.warehouse.target import Target
from tests.helpers import OnEngine, one_row
from tests.helpers import query as rows
from tests.models.revenue_story import S1, S2, S3, S4, build_revenue_story, environment
from tests.models.test_postgres_models import model_rows
from tests.models.test_runner import raw_warehouse, write_models

MONEY_MODELS = {
    "price_timeline",
    "billing_segments",
    "mrr_spells",
    "mrr_changes",
    "mrr_daily",
    "mrr_movements",
    "revenue_forecast",
    "lifetime_value",
}
d = datetime.fromisoformat


@pytest.fixture(scope="module")
def revenue_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    warehouse = tmp_path_factory.mktemp("revenue") / "revenue.duckdb"
    info = build_revenue_story(warehouse)
    assert info["clock"] == [S1, S2, S3, S4]
    assert set(info["summary"]["built"]) >= MONEY_MODELS | {"report_figures"}
    assert info["summary"]["seeds"] == ["status_map", "prices", "price_book"]
    assert info["summary"]["tests"] > 200  # the money models' own and their reconciliations
    yield warehouse


def test_the_price_book_is_written_from_the_prices_file(revenue_warehouse: Path) -> None:
    """The file's rows, each closed by the next of its period; amounts / months x 0.5."""
    assert rows(
        revenue_warehouse,
        "select period, amount, valid_from, valid_to, currency, mrr_amount "
        "from analytics.prices order by period, valid_from",
    ) == [
        ("monthly", 5.0, date(2026, 1, 1), date(2026, 3, 1), "EUR", Decimal("2.5")),
        ("monthly", 4.0, date(2026, 3, 1), None, "EUR", Decimal("2.0")),
        ("unknown", 4.4, date(2026, 1, 1), None, "EUR", Decimal("2.2")),
        ("yearly", 54.0, date(2026, 1, 1), None, "EUR", Decimal("2.25")),
    ]
    assert rows(revenue_warehouse, "select * from analytics.price_book") == [
        ("EUR", 0.5, True, "net")
    ]
    # no price before 2026-01-01; each cut applies just after its day's midnight
    tick = timedelta(microseconds=1)
    jan, mar = d("2026-01-01") + tick, d("2026-03-01") + tick
    assert rows(
        revenue_warehouse,
        "select period, starts_at, ends_at, mrr_amount from analytics.price_timeline "
        "order by period, starts_at nulls first",
    ) == [
        ("monthly", None, jan, None),
        ("monthly", jan, mar, Decimal("2.5")),
        ("monthly", mar, None, Decimal("2.0")),
        ("unknown", None, jan, None),
        ("unknown", jan, None, Decimal("2.2")),
        ("yearly", None, jan, None),
        ("yearly", jan, None, Decimal("2.25")),
    ]


def test_billing_segments(revenue_warehouse: Path) -> None:
    """One row per recorded expiry; see the module docstring for the periods."""
    got = rows(
        revenue_warehouse,
        "select subscription_id, segment_start, segment_end, step_days, period, is_last "
        "from analytics.billing_segments order by subscription_id, segment_end",
    )
    t, f, m, y = True, False, "monthly", "yearly"
    assert got == [
        (1, None, d("2026-01-25"), None, m, f),
        (1, d("2026-01-25"), d("2026-02-25"), 31, m, f),
        (1, d("2026-02-25"), d("2026-03-25"), 28, m, f),
        (1, d("2026-03-25"), d("2026-04-25"), 31, m, t),
        (2, None, d("2026-02-15"), None, y, f),
        (2, d("2026-02-15"), d("2027-02-15"), 365, y, t),
        (3, None, d("2026-01-20"), None, m, f),
        (3, d("2026-01-20"), d("2026-02-20"), 31, m, f),
        (3, d("2026-02-20"), d("2027-02-20"), 365, y, t),
        (4, None, d("2026-01-28"), None, m, f),
        (4, d("2026-01-28"), d("2026-02-28"), 31, m, f),
        (4, d("2026-02-28"), d("2026-04-25"), 56, m, t),
        (5, None, d("2026-01-15"), None, m, f),
        (5, d("2026-01-15"), d("2026-02-15"), 31, m, t),
        (6, None, d("2026-02-08"), None, m, f),
        (6, d("2026-02-08"), d("2026-03-08"), 28, m, f),
        (6, d("2026-03-08"), d("2027-03-08"), 365, y, t),
        (7, None, d("2026-03-10"), None, m, f),
        (7, d("2026-03-10"), d("2026-05-10"), 61, m, t),
        (8, None, d("2026-04-25"), None, "unknown", t),
    ]


def test_mrr_changes(revenue_warehouse: Path) -> None:
    """Every change after the first day that moves MRR (the rest are version and renewal
    boundaries at an unchanged amount: price_change 0)."""
    got = rows(
        revenue_warehouse,
        "select subscription_id, changed_at, day, movement, amount_before, amount_after "
        "from analytics.mrr_changes where not is_base "
        "and (amount_before <> amount_after or movement <> 'price_change') "
        "order by changed_at, subscription_id",
    )
    cut = d("2026-03-01") + timedelta(microseconds=1)
    dec = Decimal
    assert got == [
        (7, d("2026-02-10"), date(2026, 2, 9), "new", dec("0"), dec("2.5")),
        (5, d("2026-02-15"), date(2026, 2, 14), "churned", dec("2.5"), dec("0")),
        (3, d("2026-02-20"), date(2026, 2, 19), "contraction", dec("2.5"), dec("2.25")),
        (4, d("2026-02-28"), date(2026, 2, 27), "churned", dec("2.5"), dec("0")),
        (1, cut, date(2026, 3, 1), "price_change", dec("2.5"), dec("2.0")),
        (6, cut, date(2026, 3, 1), "price_change", dec("2.5"), dec("2.0")),
        (7, cut, date(2026, 3, 1), "price_change", dec("2.5"), dec("2.0")),
        (6, d("2026-03-08"), date(2026, 3, 7), "expansion", dec("2.0"), dec("2.25")),
        (4, d("2026-03-25"), date(2026, 3, 24), "reactivated", dec("0"), dec("2.0")),
        (8, d("2026-03-25"), date(2026, 3, 24), "new", dec("0"), dec("2.2")),
    ]
    # every other change after the first day moves nothing: renewals at an unchanged price
    # (segment ends: A 01-25 02-25 03-25, B 02-15, C 01-20, D 01-28, E 01-15, I 02-08, F 03-10)
    # and new versions (S2: A C D E; S3: A B C I; S4: A C I F; D's S4 version starts at its
    # win-back, a move): 9 + 12
    assert rows(
        revenue_warehouse,
        "select count(*), count(distinct movement) from analytics.mrr_changes "
        "where not is_base and amount_before = amount_after and movement = 'price_change'",
    ) == [(21, 1)]


def expected_daily() -> list[tuple[date, float, int, int]]:
    """(day, mrr, subscribers, paying users) for every day from S1's to as_of's (04-11: S4 at
    midnight closes it), from the changes of the module docstring."""
    steps = [  # from this day on
        (date(2026, 1, 10), 14.75, 6, 6),  # A B C D E I
        (date(2026, 2, 9), 17.25, 7, 6),  # F new 02-10 (user 401 again)
        (date(2026, 2, 14), 14.75, 6, 5),  # E gone
        (date(2026, 2, 19), 14.5, 6, 5),  # C yearly
        (date(2026, 2, 27), 12.0, 5, 4),  # D gone: A B C I F
        (date(2026, 3, 1), 10.5, 5, 4),  # A, I, F at 2.0
        (date(2026, 3, 7), 10.75, 5, 4),  # I yearly
        (date(2026, 3, 24), 14.95, 7, 6),  # D won back 03-25, G new 03-25
    ]
    days = []
    day = date(2026, 1, 10)
    while day <= date(2026, 4, 11):
        days.append(next(step for step in reversed(steps) if step[0] <= day)[1:])
        days[-1] = (day, *days[-1])
        day += timedelta(days=1)
    return days  # type: ignore[return-value]


def test_mrr_daily(revenue_warehouse: Path) -> None:
    got = rows(
        revenue_warehouse,
        "select day, mrr, subscribers, paying_users, arpu, currency "
        "from analytics.mrr_daily order by day",
    )
    expected = expected_daily()
    assert len(got) == len(expected) == 92
    assert [row[:4] for row in got] == expected
    assert [row[4] for row in got] == [mrr / users for _, mrr, _, users in expected]
    assert {row[5] for row in got} == {"EUR"}
    # the last snapshot is as_of itself
    assert rows(revenue_warehouse, "select max(snapshot_at) from analytics.mrr_daily") == [(S4,)]


def test_mrr_movements(revenue_warehouse: Path) -> None:
    """January: nothing after the first day (its start is the first day's MRR). February: F new
    2.5 (02-10), E and D churn (2.5 each), C's switch contracts 0.25. March: the price cut
    -1.5 (A, I, F), I's switch expands 0.25, D won back 2.0 and G new 2.2 (both 03-25).
    April (running): nothing."""
    got = rows(
        revenue_warehouse,
        "select month, mrr_start, new_mrr, expansion_mrr, contraction_mrr, churned_mrr, "
        "reactivated_mrr, price_change_mrr, net_change, mrr_end, is_complete, is_partial_start "
        "from analytics.mrr_movements order by month",
    )
    t, f = True, False
    assert got == [
        (date(2026, 1, 1), 14.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 14.75, t, t),
        (date(2026, 2, 1), 14.75, 2.5, 0.0, 0.25, 5.0, 0.0, 0.0, -2.75, 12.0, t, f),
        (date(2026, 3, 1), 12.0, 2.2, 0.25, 0.0, 0.0, 2.0, -1.5, 2.95, 14.95, t, f),
        (date(2026, 4, 1), 14.95, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 14.95, f, f),
    ]


def forecast_by_hand() -> list[tuple[Any, ...]]:
    """The forecast from its inputs, as the model's header defines it.

    Renewal rates (monthly_renewals, months after the first sync, decided due dates pooled):
    monthly: A 02-25, A 03-25, F 03-10 renewed, E 02-15 and D 02-28 churned (D lapsed there:
    its `expired` event, the same churn as its churned MRR on 02-28; its comeback on 03-25 is a
    win-back, not a renewal of that due date): 3 / 5; yearly: B 02-15, C 02-20, I 02-08 and
    03-08 renewed: 4 / 4; all: 7 / 9, which 'unknown' takes. Usable at as_of: A, D, F (monthly 2.0, due 04-25, 04-25, 05-10),
    G (unknown 2.2, due 04-25), and B, C, I (yearly 2.25, due in 2027: never within 90 days).
    Due dates within 30 days (to 05-12): one each; 60 (to 06-11): two each (A, D 04-25 and
    05-25, F 05-10 and 06-10); 90 (to 07-11): three each.
    """
    rates = {"monthly": 3 / 5, "yearly": 4 / 4, "unknown": 7 / 9}
    due = [(2.0, "monthly"), (2.0, "monthly"), (2.0, "monthly"), (2.2, "unknown")]
    not_due = 3 * 2.25
    mrr_now = not_due + 3 * 2.0 + 2.2
    expected = []
    for horizon, n in ((30, 1), (60, 2), (90, 3)):
        q = [round(rates[period] ** n, 6) for _, period in due]
        mean = not_due + sum(amount * qi for (amount, _), qi in zip(due, q, strict=True))
        variance = sum(a * a * qi * (1 - qi) for (a, _), qi in zip(due, q, strict=True))
        margin = 1.96 * math.sqrt(variance)
        expected.append(
            (
                horizon,
                4,
                round(sum(q), 6),
                mrr_now,
                not_due,
                round(mean, 6),
                round(max(not_due, mean - margin), 6),
                round(min(mrr_now, mean + margin), 6),
                rates["monthly"],
                rates["yearly"],
                rates["unknown"],
                True,
                None,
            )
        )
    return expected


def test_revenue_forecast(revenue_warehouse: Path) -> None:
    got = rows(
        revenue_warehouse,
        "select horizon_days, coming_due, expected_renewals, mrr_now, mrr_not_due, "
        "expected_mrr, expected_mrr_low, expected_mrr_high, renewal_rate_monthly, "
        "renewal_rate_yearly, renewal_rate_unknown, is_measurable, needs "
        "from analytics.revenue_forecast order by horizon_days",
    )
    for row, hand in zip(got, forecast_by_hand(), strict=True):
        assert row == pytest.approx(hand, abs=2e-6)
    assert rows(revenue_warehouse, "select bool_and(is_forecast) from analytics.revenue_forecast")


def test_lifetime_value_and_the_report_figures(revenue_warehouse: Path) -> None:
    """ARPU now 14.95 / 6 users. Monthly churn after the first sync, complete months: February
    churned E (02-15) and D (its lapse on 02-28: churn at the expiry though it was won back in
    March, as mrr_movements' churned MRR) of 6 at its start (A B C D E I), March none of 5 (A B
    C I and F, usable from its estimated start 02-10; D lapsed, not usable on 03-01): 2 / 11.
    The survival curve follows F (38 days, censored) and G (0, censored): it never falls, so
    the churn rate is used.
    March is the last full month; MRR on 03-31 was 14.95: March's movements are G new 2.2, D
    won back 2.0, I's expansion 0.25 and the price cut -1.5."""
    assert rows(
        revenue_warehouse,
        "select arpu, churn_rate, churn_months, survival_area_days, survival_last_day, "
        "survival_min, ltv_method, lifetime_months, ltv, needs from analytics.lifetime_value",
    ) == [
        (
            14.95 / 6,
            pytest.approx(2 / 11),
            2,
            38.0,
            38,
            1.0,
            "churn_rate",
            pytest.approx(11 / 2),
            pytest.approx((14.95 / 6) / (2 / 11)),
            None,
        )
    ]
    names = [
        "currency",
        "revenue_basis",
        "mrr",
        "arr",
        "arpu",
        "mrr_month_before",
        "ltv",
        "ltv_method",
        "last_full_month_mrr_new",
        "last_full_month_mrr_churned",
        "last_full_month_mrr_reactivated",
        "last_full_month_mrr_net_change",
        "last_full_month_mrr_is_partial",
        "forecast_30d_mrr",
    ]
    assert one_row(revenue_warehouse, "analytics.report_figures", names) == {
        "currency": "EUR",
        "revenue_basis": "net",
        "mrr": 14.95,
        "arr": 12 * 14.95,
        "arpu": 14.95 / 6,
        "mrr_month_before": 14.95,
        "ltv": pytest.approx((14.95 / 6) / (2 / 11)),
        "ltv_method": "churn_rate",
        "last_full_month_mrr_new": 2.2,
        "last_full_month_mrr_churned": 0.0,
        "last_full_month_mrr_reactivated": 2.0,
        "last_full_month_mrr_net_change": 2.95,
        "last_full_month_mrr_is_partial": False,
        "forecast_30d_mrr": forecast_by_hand()[0][5],
    }


MONEY_QUERIES = {
    "mrr_daily": "select * from {t} order by day",
    "mrr_movements": "select * from {t} order by month",
    "revenue_forecast": "select * from {t} order by horizon_days",
    "lifetime_value": "select * from {t}",
    "report_figures": "select mrr, arr, arpu, ltv, mrr_month_before, forecast_30d_mrr from {t}",
}


def money_rows(warehouse: Path, destination: str | None) -> dict[str, list[tuple[Any, ...]]]:
    """The money marts' rows exactly as the engine returns them (no rounding)."""
    with engines.connect(Target.of(warehouse, destination), read_only=True) as engine:
        return {
            name: [
                tuple(row)
                for row in engine.columns(sql.format(t=engine.qualify("analytics", name)))[1]
            ]
            for name, sql in MONEY_QUERIES.items()
        }


def test_the_revenue_story_on_postgres_gives_the_same_rows(
    revenue_warehouse: Path, postgres: str, tmp_path: Path
) -> None:
    """The same story synced into PostgreSQL: every model's and seed's rows equal DuckDB's,
    the money marts' exactly (no rounding: the amounts are summed in decimal), and --check
    passes there too."""
    info = build_revenue_story(tmp_path / "pg.duckdb", destination="postgres")
    assert info["clock"] == [S1, S2, S3, S4]
    duck = model_rows(revenue_warehouse, None)
    pg = model_rows(tmp_path / "pg.duckdb", "postgres")
    assert sorted(pg) == sorted(duck)
    assert set(duck) >= MONEY_MODELS | {"prices", "price_book"}
    for table in duck:
        assert pg[table] == duck[table], table
    assert money_rows(tmp_path / "pg.duckdb", "postgres") == money_rows(revenue_warehouse, None)
    assert info["summary"]["tests"] > 200


def copy_of(warehouse: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(warehouse, folder / "copy.duckdb"))


def test_flat_prices_price_unknown_as_monthly_and_gross(
    revenue_warehouse: Path, tmp_path: Path
) -> None:
    """price_monthly 4.99 and price_yearly 49.99 (valid for all time), no price_unknown: G is
    priced as monthly; revenue_share unset: gross. Now: A D F G monthly 4.99, B C I yearly
    49.99 / 12 = 4.165833 (to 6 decimals): 19.96 + 12.497499 = 32.457499. The currency code is
    taken in any case."""
    warehouse = copy_of(revenue_warehouse, tmp_path)
    flat = {
        "ANALYTICS__CURRENCY": "usd",
        "ANALYTICS__PRICE_MONTHLY": "4.99",
        "ANALYTICS__PRICE_YEARLY": "49.99",
    }
    with environment(flat):
        models.build(warehouse, check=True)
    assert rows(
        warehouse,
        "select period, amount, valid_from, valid_to, currency, mrr_amount "
        "from analytics.prices order by period",
    ) == [
        ("monthly", 4.99, None, None, "USD", Decimal("4.99")),
        ("unknown", 4.99, None, None, "USD", Decimal("4.99")),
        ("yearly", 49.99, None, None, "USD", Decimal("4.165833")),
    ]
    assert rows(warehouse, "select * from analytics.price_book") == [("USD", 1.0, True, "gross")]
    assert rows(warehouse, "select mrr, revenue_basis, currency from analytics.report_figures") == [
        (32.457499, "gross", "USD")
    ]


def test_days_before_a_periods_first_price_are_null_not_guessed(
    revenue_warehouse: Path, tmp_path: Path
) -> None:
    """A prices_file whose monthly prices start 2026-02-01, after the first sync: the days
    before have no MRR (monthly subscriptions were usable then), nor do the movements of the
    months touching them; from February's last day on, the figures are measured, and the
    build's reconciliations hold (each month starts where the one before ended)."""
    warehouse = copy_of(revenue_warehouse, tmp_path)
    prices = tmp_path / "late.csv"
    prices.write_text(
        "period,amount,valid_from\nmonthly,5.00,2026-02-01\nyearly,54.00,2026-01-01\n",
        encoding="utf-8",
    )
    settings = {"ANALYTICS__CURRENCY": "EUR", "ANALYTICS__PRICES_FILE": str(prices)}
    with environment(settings):
        models.build(warehouse, check=True)
    assert rows(
        warehouse,
        "select min(day), max(day), count(*) from analytics.mrr_daily where mrr is null",
    ) == [(date(2026, 1, 10), date(2026, 1, 31), 22)]
    # gross now (no share): monthly 5.0, yearly 54 / 12 = 4.5, unknown as monthly (no rows).
    # 02-01: A C D E I monthly, B yearly = 29.5 (F starts 02-10). February's end (03-01
    # 00:00): A I F monthly, B C yearly = 24.0. March: I switches to yearly: contraction 0.5;
    # D won back and G new on 03-25 (5.0 each). April: nothing.
    assert rows(warehouse, "select mrr from analytics.mrr_daily where day = '2026-02-01'") == [
        (29.5,)
    ]
    got = rows(
        warehouse,
        "select month, mrr_start, new_mrr, reactivated_mrr, contraction_mrr, churned_mrr, "
        "mrr_end from analytics.mrr_movements order by month",
    )
    assert got == [
        (date(2026, 1, 1), None, None, None, None, None, None),
        (date(2026, 2, 1), None, None, None, None, None, 24.0),
        (date(2026, 3, 1), 24.0, 5.0, 5.0, 0.5, 0.0, 33.5),
        (date(2026, 4, 1), 33.5, 0.0, 0.0, 0.0, 0.0, 33.5),
    ]


def test_no_prices_build_succeeds_with_every_money_figure_null(
    revenue_warehouse: Path, tmp_path: Path
) -> None:
    """No price set (the checked-in .dlt/config.toml sets none): the build and its data tests
    pass, the subscriber counts stay, every money figure is NULL (not 0)."""
    warehouse = copy_of(revenue_warehouse, tmp_path)
    with environment({}):
        summary = models.build(warehouse, check=True)
    assert set(summary["built"]) >= MONEY_MODELS
    assert rows(warehouse, "select count(*) from analytics.prices") == [(0,)]
    assert rows(warehouse, "select * from analytics.price_book") == [(None, 1.0, False, "gross")]
    assert rows(
        warehouse,
        "select count(*), count(mrr), count(arpu), count(currency), sum(subscribers), "
        "max(paying_users) from analytics.mrr_daily",
    ) == [(92, 0, 0, 0, sum(row[2] for row in expected_daily()), 6)]
    assert rows(
        warehouse,
        "select count(*), count(mrr_start), count(new_mrr), count(churned_mrr), count(net_change), "
        "count(mrr_end) from analytics.mrr_movements",
    ) == [(4, 0, 0, 0, 0, 0)]
    # the forecast still counts what comes due and the renewals expected; no money
    assert rows(
        warehouse,
        "select horizon_days, coming_due, expected_renewals, mrr_now, expected_mrr, "
        "expected_mrr_low, expected_mrr_high, is_measurable from analytics.revenue_forecast "
        "order by 1",
    ) == [
        (h, 4, row[2], None, None, None, None, True)
        for h, row in zip((30, 60, 90), forecast_by_hand(), strict=True)
    ]
    names = (
        "currency, revenue_basis, mrr, arr, arpu, mrr_month_before, ltv, ltv_method, "
        "last_full_month_mrr_new, last_full_month_mrr_churned, last_full_month_mrr_reactivated, "
        "last_full_month_mrr_net_change, forecast_30d_mrr"
    )
    assert rows(warehouse, f"select {names} from analytics.report_figures") == [(None,) * 13]


# lifetime_value.sql as shipped over stand-ins: a survival curve that falls to 0.1
STAND_IN_DAILY = """-- mrr_daily: a stand-in, two days.
--
-- Grain: one row per day.

select
    day,
    cast(mrr as double) as mrr,
    cast(arpu as double) as arpu
from (
    values
        (date '2026-05-01', 100, 10),
        (date '2026-05-02', 120, 12)
) as daily(day, mrr, arpu)
"""
STAND_IN_CHURN = """-- monthly_churn: a stand-in, one complete month after the first sync.
--
-- Grain: one row per month.

select *
from (
    values
        (date '2026-04-01', 2, 20, true, false)
) as churn(month, churned, subscribers_at_start, is_complete, is_estimate)
"""
STAND_IN_CURVE = """-- survival_curve: a stand-in, falling to 0.1 on day 60.
--
-- Grain: one row per day with an exit.

select
    day,
    cast(survival as double) as survival
from (
    values
        (0, 1),
        (30, 0.5),
        (60, 0.1)
) as curve(day, survival)
"""


def test_ltv_from_the_survival_curve_once_it_falls_to_a_tenth(
    engine: OnEngine, tmp_path: Path
) -> None:
    """Area: 1.0 x 30 + 0.5 x 30 = 45 days (the last row ends the curve) = 45 / 30.4375 months;
    LTV = ARPU now (12.0, the last day's) x that. The churn rate (2 / 20) is given, not used."""
    ltv_sql = (SQL_DIR / "marts" / "lifetime_value.sql").read_text(encoding="utf-8")
    sql_dir = write_models(
        tmp_path,
        {
            "marts/mrr_daily.sql": STAND_IN_DAILY,
            "marts/monthly_churn.sql": STAND_IN_CHURN,
            "marts/survival_curve.sql": STAND_IN_CURVE,
            "marts/lifetime_value.sql": ltv_sql,
        },
    )
    warehouse = raw_warehouse(tmp_path / "wh" / "w.duckdb")
    with environment({}):
        # no --check: the stand-ins carry only the columns lifetime_value reads
        models.build(Target.of(warehouse, engine.destination), sql_dir=sql_dir)
    with engines.connect(Target.of(warehouse, engine.destination), read_only=True) as conn:
        _, got = conn.columns(
            "select arpu, churn_rate, survival_area_days, survival_min, ltv_method, "
            f"lifetime_months, ltv, needs from {conn.qualify('analytics', 'lifetime_value')}"
        )
    assert [tuple(row) for row in got] == [
        (12.0, 0.1, 45.0, 0.1, "survival", 45.0 / 30.4375, 12.0 * (45.0 / 30.4375), None)
    ]
