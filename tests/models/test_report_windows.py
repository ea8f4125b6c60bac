"""Every windowed figure has one window: two syncs a day apart, through the real sync on DuckDB
and on PostgreSQL, then the "last 30 days" figures, the digest and the forecast's acquisition
part, each counted over the one day watched or "not measurable yet", never a short count
beside a long one.

The story, sandbox clock, prices EUR 3.33 a month and 33.33 a year (a price whose MRR, 16.65,
gives binary noise in floating point: 12 x 16.65 = 199.79999999999998):

    sync 1 (W1) 2026-05-10 00:00, sync 2 (W2) 2026-05-11 00:00 = as_of: one day watched

    id svc  at W1                         then
     1 501  active,   exp 05-20           untouched
     2 502  canceled, exp 04-25           expired before the first sync (15 days before W1)
     3 503  canceled, exp 04-15           expired before the first sync (26 days before W2)
     4 504  canceled, exp 05-10 12:00     expires between the syncs: churn in the day watched
     5 505  active,   exp 06-01           canceled between the syncs
     6 506  active,   exp 2027-01-01      yearly, untouched
     7 507  added 05-10 06:00, exp 06-10  first seen at W2: new
     8 508  added 05-10 18:00, exp 06-10  first seen at W2: new

Over the day watched, (W1, W2]: 2 new (7, 8), 1 cancellation (5), 1 churned (4). The last 30
days before W2 also hold the expiries of 2 and 3, read from the first sync's list: counting them
beside the new subscriptions of one day ("+2 new, 3 churned") is what the report used to say.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from devportal import models
from devportal.operations.alerts import digest
from devportal.reporting import report
from devportal.reporting.report.figures import FORECAST_SCOPE
from devportal.reporting.report.formats import render
from devportal.warehouse.target import Target
from tests.helpers import StorySyncs
from tests.models.revenue_story import environment

W1 = datetime(2026, 5, 10)
W2 = datetime(2026, 5, 11)
PRICES = {
    "ANALYTICS__CURRENCY": "EUR",
    "ANALYTICS__PRICE_MONTHLY": "3.33",
    "ANALYTICS__PRICE_YEARLY": "33.33",
}


def build_window_story(warehouse: Path, destination: str | None = None) -> list[datetime]:
    """Sync the story into WAREHOUSE (or DESTINATION `postgres`) and build the models with
    their data tests; the sandbox's clock at each sync."""
    from devportal.sandbox import Sandbox

    run_sync = StorySyncs(warehouse, destination)
    with Sandbox(subscriptions=0, users=0, seed=7, start=W1.isoformat(sep=" ")) as sb:
        world = sb.world
        add = world.add_subscription
        assert add(501, "active", "2026-05-20 00:00:00") == 1
        add(502, "canceled", "2026-04-25 00:00:00")  # 2
        add(503, "canceled", "2026-04-15 00:00:00")  # 3
        add(504, "canceled", "2026-05-10 12:00:00")  # 4
        add(505, "active", "2026-06-01 00:00:00")  # 5
        add(506, "active", "2027-01-01 00:00:00", period_months=12)  # 6
        run_sync(sb)  # W1

        sb.advance(hours=6)  # 05-10 06:00
        assert add(507, "active", "2026-06-10 00:00:00") == 7
        world.cancel(5)
        sb.advance(hours=12)  # 05-10 18:00 (4 expired at 12:00)
        assert add(508, "active", "2026-06-10 00:00:00") == 8
        sb.advance(hours=6)  # 05-11 00:00
        run_sync(sb)  # W2
    with environment(PRICES):
        models.build(Target.of(warehouse, destination), check=True)
    return run_sync.clock


@pytest.fixture(scope="module")
def window_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    warehouse = tmp_path_factory.mktemp("windows") / "windows.duckdb"
    assert build_window_story(warehouse) == [W1, W2]
    return warehouse


@pytest.fixture(scope="module")
def window_on_postgres(
    postgres_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    """The same story synced, recorded and built in a PostgreSQL database; its Target (the
    credentials set for the module)."""
    name = postgres_cluster.create_database()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DESTINATION__POSTGRES__CREDENTIALS", postgres_cluster.uri(name))
        warehouse = tmp_path_factory.mktemp("windows-pg") / "windows.duckdb"
        assert build_window_story(warehouse, destination="postgres") == [W1, W2]
        yield Target.of(warehouse, "postgres")
    postgres_cluster.drop_database(name)


@pytest.fixture(params=["duckdb", "postgres"])
def target(request: pytest.FixtureRequest, window_warehouse: Path) -> Target:
    if request.param == "duckdb":
        return Target.of(window_warehouse, None)
    on_postgres: Target = request.getfixturevalue("window_on_postgres")
    return on_postgres


LAST_30_DAYS = {"window_days": 1, "new_30d": 2, "canceled_30d": 1, "churned_30d": 1}
NOTE = (
    "new, cancellations and churn are all counted over the 1 day since the first sync "
    "(2026-05-10 00:00); the full 30 days need 29 days more of history"
)


def test_the_last_30_days_count_over_the_one_day_watched(target: Target) -> None:
    figures = report.collect(target)
    values = figures.values()
    assert {key: values[key] for key in LAST_30_DAYS} == LAST_30_DAYS
    assert not set(LAST_30_DAYS) & set(figures.unmeasured)
    [section] = [s for s in figures.sections if s.title.startswith("Last 30 days")]
    assert section.title == "Last 30 days: 1 day watched so far"
    assert section.note == NOTE

    as_json = json.loads(render(figures, "json"))
    assert {key: as_json[key] for key in LAST_30_DAYS} == LAST_30_DAYS

    table = render(figures, "table").splitlines()
    start = table.index("Last 30 days: 1 day watched so far")
    assert [line.split()[-1] for line in table[start + 1 : start + 4]] == ["2", "1", "1"]
    assert table[start + 4] == f"    {NOTE}"
    markdown = render(figures, "markdown").splitlines()
    assert "| **Last 30 days: 1 day watched so far** | |" in markdown
    assert f"| *{NOTE}* | |" in markdown
    rows = render(figures, "csv").splitlines()
    assert "window_days,days the last 30 days' figures count over,1" in rows


def test_the_digest_says_the_day_watched(target: Target) -> None:
    line = digest.headline(target, "the warehouse")
    assert line.endswith("; +2 new, 1 churned in the 1 day watched")
    assert "last 30 days" not in line


def test_acquisition_is_not_extrapolated_from_one_day(target: Target) -> None:
    """The forecast's new-sales part needs 30 days watched; the renewals part needs a renewal
    decided after the first sync (May began before it: its renewals are estimates)."""
    figures = report.collect(target)
    values = figures.values()
    assert values["mrr"] is not None
    for key in (
        "forecast_30d_mrr",
        "forecast_30d_mrr_low",
        "forecast_30d_mrr_high",
        "forecast_30d_new_mrr",
    ):
        assert values[key] is None and key in figures.unmeasured, key
    assert figures.unmeasured["forecast_30d_new_mrr"].startswith("30 days watched after the first")
    assert figures.unmeasured["forecast_30d_new_mrr"].endswith("(1 day watched so far)")
    assert values["forecast_30d_mrr_scope"] == FORECAST_SCOPE


def test_money_is_exact_at_the_cent(target: Target) -> None:
    """Usable at W2: 1, 5 (canceled, usable until 06-01), 6 (its period not known yet: priced
    monthly), 7 and 8, five users: MRR 5 x 3.33 = 16.65, ARR 199.80, ARPU 3.33. The model's
    ARR and ARPU are doubles with binary noise; the report gives the cents, exactly."""
    from devportal.warehouse import engines

    with engines.connect(target, read_only=True) as engine:
        [(arr, arpu)] = engine.execute(
            f"select arr, arpu from {engine.qualify('analytics', 'report_figures')}"
        )
    assert float(arr) == pytest.approx(199.8) and float(arpu) == pytest.approx(3.33)
    figures = report.collect(target)
    text = render(figures, "json")
    for line in ('"mrr": 16.65,', '"arr": 199.80,', '"arpu": 3.33,'):
        assert line in text.splitlines() or f"  {line}" in text.splitlines(), line
    assert json.loads(text)["arr"] == 199.8
    rows = render(figures, "csv").splitlines()
    assert "arr,ARR (12 x MRR),199.80" in rows and "arpu,ARPU (MRR per paying user),3.33" in rows
    assert "| ARR (12 x MRR) | EUR 199.80 |" in render(figures, "markdown").splitlines()


def test_the_model_has_the_noise_the_report_leaves_out(window_warehouse: Path) -> None:
    """Without rounding, the JSON would say what floating point says (the issue's
    `"arr": 223321.83122399997`): DuckDB's ARR and ARPU are such doubles here."""
    from tests.helpers import query

    [(arr, arpu)] = query(window_warehouse, "select arr, arpu from analytics.report_figures")
    assert (repr(arr), repr(arpu)) == ("199.79999999999998", "3.3299999999999996")


def test_both_engines_print_the_same(window_warehouse: Path, window_on_postgres: Target) -> None:
    on_duckdb = report.collect(window_warehouse)
    on_pg = report.collect(window_on_postgres)
    assert on_pg == on_duckdb
    for fmt in report.FORMATS:
        assert render(on_pg, fmt) == render(on_duckdb, fmt), fmt


def test_one_window_after_30_days_watched(story_warehouse: Path) -> None:
    """The known-answer story watched 49 days: the window is the whole 30, no note."""
    figures = report.collect(story_warehouse)
    assert figures.values()["window_days"] == 30
    [section] = [s for s in figures.sections if s.title.startswith("Last 30 days")]
    assert (section.title, section.note) == ("Last 30 days", None)
    assert "in the" not in digest.headline(Target.of(story_warehouse), "w")


@pytest.mark.parametrize(
    ("days", "text"),
    [(1, "1 day"), (1.01, "1 day"), (2.5, "2.5 days"), (29.99, "29.9 days"), (0.5, "12 hours")],
)
def test_a_span_is_never_said_longer_than_watched(days: float, text: str) -> None:
    assert report.span_text(days) == text
    assert report.span_text(0.01) == "less than an hour"
