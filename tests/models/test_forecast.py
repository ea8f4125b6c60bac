"""The forecast says what it is: the MRR of today's subscriptions in 30 days (their renewals
only), its interval, and apart the new MRR expected from the observed rate of new sales, on
the revenue story (tests/models/revenue_story.py; test_revenue_known_answers.py's docstring
tells it), synced on DuckDB.

Acquisition: the story is watched from S1 (01-10) to S4 (04-12), more than 30 days. The new
subscriptions of the last 30 days, (03-13, 04-12]: G (8), added 03-25 at the unknown period's
2.2 a month after the share. F (7) is new at or before S3 (03-05), outside the window; D's
return is a win-back, not a sale. So 2.2 of new MRR in 30 days: 2.2, 4.4 and 6.6 expected over
30, 60 and 90 days.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from devportal.reporting import report
from devportal.reporting.report.figures import FORECAST_SCOPE
from devportal.reporting.report.formats import render
from tests.helpers import query as rows
from tests.models.revenue_story import S1, S2, S3, S4, build_revenue_story
from tests.models.test_revenue_known_answers import forecast_by_hand


@pytest.fixture(scope="module")
def revenue_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    warehouse = tmp_path_factory.mktemp("forecast") / "revenue.duckdb"
    assert build_revenue_story(warehouse)["clock"] == [S1, S2, S3, S4]
    yield warehouse


def test_the_new_mrr_expected_is_the_rate_of_the_last_30_days(revenue_warehouse: Path) -> None:
    got = rows(
        revenue_warehouse,
        "select horizon_days, new_mrr_last_30d, expected_new_mrr, new_mrr_needs "
        "from analytics.revenue_forecast order by horizon_days",
    )
    assert got == [(30, 2.2, 2.2, None), (60, 2.2, 4.4, None), (90, 2.2, 6.6, None)]


def test_the_report_gives_the_forecast_its_interval_and_the_new_sales_apart(
    revenue_warehouse: Path,
) -> None:
    _, _, _, _, _, expected, low, high, *_ = forecast_by_hand()[0]
    figures = report.collect(revenue_warehouse)
    as_json = json.loads(render(figures, "json"))
    assert {
        key: as_json[key]
        for key in (
            "forecast_30d_mrr",
            "forecast_30d_mrr_low",
            "forecast_30d_mrr_high",
            "forecast_30d_new_mrr",
            "forecast_30d_mrr_scope",
        )
    } == {
        "forecast_30d_mrr": round(expected, 2),
        "forecast_30d_mrr_low": round(low, 2),
        "forecast_30d_mrr_high": round(high, 2),
        "forecast_30d_new_mrr": 2.2,
        "forecast_30d_mrr_scope": FORECAST_SCOPE,
    }
    assert as_json["forecast_30d_mrr_low"] <= as_json["forecast_30d_mrr"]
    assert as_json["forecast_30d_mrr"] <= as_json["forecast_30d_mrr_high"] <= as_json["mrr"]
    assert "new sales" in FORECAST_SCOPE and "renewals" in FORECAST_SCOPE
    for key in ("forecast_30d_mrr", "forecast_30d_new_mrr"):
        assert key not in figures.unmeasured

    table = render(figures, "table").splitlines()
    labels = {m.key: m.label for m in figures.metrics()}
    assert "no new sales" in labels["forecast_30d_mrr"]
    assert "new sales" in labels["forecast_30d_new_mrr"]
    forecast_at = next(i for i, line in enumerate(table) if labels["forecast_30d_mrr"] in line)
    assert [
        line.strip().rsplit("  ", 1)[-1].strip() for line in table[forecast_at : forecast_at + 4]
    ] == [
        f"EUR {expected:,.2f}",
        f"EUR {round(low + 1e-9, 2):,.2f}",
        f"EUR {round(high + 1e-9, 2):,.2f}",
        "EUR 2.20",
    ]


def test_a_sql_test_holds_the_new_mrr_to_its_rate() -> None:
    from devportal.models import checks

    names = {test.name for test in checks.reconciliations()}
    assert {
        "revenue_forecast_stays_within_its_bounds",
        "report_figures_forecast_is_revenue_forecasts",
        "report_figures_last_30_days_share_one_window",
    } <= names
