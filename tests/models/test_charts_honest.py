"""Charts honest at any age (issue 32), on frames made here: a curve of a day is a line of text,
notes sit in the figure (under its title), overlapping counts say so, the first sync's
subscriptions are no month 0 of a cohort, the month to date stands apart from full months; and
the page's forecast tile says what it counts. The real browser checks the pages
(test_browser.py); these check each rule on the smallest frame that breaks it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd

from devportal.reporting import charts
from devportal.reporting.charts.registry import TITLES, draw
from devportal.reporting.report.figures import Metric, ReportFigures, Section
from devportal.reporting.report.page import _money_tiles, _windowed


def _texts(fig: Any) -> str:
    """Every text of FIG (its title, notes, labels), one per line."""
    found = [fig.get_suptitle()]
    for ax in fig.axes:
        found += [ax.get_title(), *(t.get_text() for t in ax.texts)]
        found += [label.get_text() for label in ax.get_yticklabels() + ax.get_xticklabels()]
    return "\n".join(found)


def test_a_survival_curve_of_a_day_is_a_line_not_a_frame() -> None:
    curve = pd.DataFrame(
        {"day": [0, 1], "at_risk": [6, 3], "churned": [0, 0], "censored": [3, 3],
         "survival": [1.0, 1.0], "median_lifetime_days": [None, None]}
    )  # fmt: skip
    needs = charts.BY_NAME["survival_curve"].needs(curve)
    assert needs is not None and needs.startswith("not measurable yet: 6 subscriptions")
    assert "followed for 1 day so far, 0 churned" in needs
    fig = draw("survival_curve", curve)
    assert fig.axes[0].axison is False  # no plot area: the one line


def test_a_survival_curve_says_its_summary_under_its_title() -> None:
    curve = pd.DataFrame(
        {"day": [0, 9, 30], "at_risk": [100, 100, 90], "churned": [0, 2, 0],
         "censored": [0, 8, 90], "survival": [1.0, 0.98, 0.98],
         "median_lifetime_days": [None, None, None]}
    )  # fmt: skip
    fig = draw("survival_curve", curve)
    ax = fig.axes[0]
    assert fig.get_suptitle() == TITLES["survival_curve"]
    assert "98.0% still subscribed on day 30" in ax.get_title()
    # nothing written over the plot or its legend but the last value, at the curve's end
    assert [t.get_text() for t in ax.texts] == ["98.0%"]


def test_users_on_several_platforms_say_so() -> None:
    platforms = pd.DataFrame(
        {"platform": ["twitch", "youtube"], "users": [2000, 974], "all_users": [2040, 2040]}
    )
    text = _texts(draw("users_by_platform", platforms))
    assert "2,040 users" in text and "bars add up to 2,974" in text


def test_the_first_syncs_subscriptions_are_no_month_zero() -> None:
    first = datetime(2026, 9, 29)
    rows = [
        # cohort, month, backfill, offset, size, base, retention, complete
        ("backfill", "2026-09-01", True, 0, 19039, 14000, 0.99, True),
        ("backfill", "2026-09-01", True, 1, 19039, 14000, 0.95, True),
        ("2026-10", "2026-10-01", False, 0, 130, 130, 0.99, True),
        ("2026-10", "2026-10-01", False, 1, 130, 130, 0.95, False),
    ]
    cohorts = pd.DataFrame(
        [
            {"cohort": c, "cohort_month": pd.Timestamp(m).date(), "is_backfill": b,
             "month_offset": o, "month": pd.Timestamp(m) + pd.DateOffset(months=o),
             "cohort_size": n, "base": base, "usable": round(r * base), "retention": r,
             "is_complete": done, "first_sync_at": first}
            for c, m, b, o, n, base, r, done in rows
        ]
    )  # fmt: skip
    text = _texts(draw("cohort_retention", cohorts))
    assert "backfill" not in text
    assert "Already subscribed at the first sync (2026-09-29)" in text
    assert "n=14,000" in text and "end of 2026-09" in text
    assert "2026-10 (n=130)" in text


def test_the_month_to_date_stands_apart() -> None:
    monthly = pd.DataFrame(
        {"month": [datetime(2026, 9, 1), datetime(2026, 10, 1), datetime(2026, 11, 1)],
         "churned": [40, 42, 2], "cancellations": [5, 5, 1], "new": [50, 50, 3],
         "subscribers_at_start": [1000, 1010, 1020], "churn_rate": [0.04, 0.0416, 0.002],
         "is_estimate": [False, False, False], "is_complete": [True, True, False],
         "as_of": [datetime(2026, 11, 3)] * 3}
    )  # fmt: skip
    fig = draw("monthly_churn", monthly)
    ax, rate_ax = fig.axes
    line: list[Any] = [artist for artist in rate_ax.lines if len(artist.get_xdata()) > 1]  # type: ignore[arg-type]
    assert [list(artist.get_xdata()) for artist in line] == [[0, 1]]  # full months only
    text = _texts(fig)
    assert "0.2% in 2 d" in text
    assert "the month to date has run 2 days" in ax.get_title()


def _report(values: dict[str, Any]) -> ReportFigures:
    metrics = [Metric(key, "", value) for key, value in values.items()]
    return ReportFigures(as_of=datetime(2026, 11, 28), sections=[Section("x", metrics)],
                         currency="EUR")  # fmt: skip


def test_the_forecast_tile_says_what_it_counts() -> None:
    values = {
        "mrr": 83732.0, "last_full_month": datetime(2026, 10, 1).date(), "ltv_method": None,
        "arr": 1.0, "arpu": 1.0, "ltv": 1.0, "last_full_month_mrr_net_change": 1.0,
        "last_full_month_mrr_new": 1.0, "last_full_month_mrr_churned": 0.0,
        "last_full_month_mrr_reactivated": 0.0, "forecast_30d_mrr": 82170.0,
    }  # fmt: skip
    (tile,) = [t for t in _money_tiles(_report(values)) if "30 days" in t.name]
    assert "today's subscriptions" in tile.name and "new sales left out" in tile.line
    assert tile.value == "EUR 82,170" and tile.parts == ()
    interval = {"forecast_30d_mrr_low": 80000.0, "forecast_30d_mrr_high": 84000.0}
    (tile,) = [
        t
        for t in _money_tiles(_report({**values, **interval, "forecast_30d_new_mrr": 3100.0}))
        if "30 days" in t.name
    ]
    (low, new) = tile.parts
    assert low[1] == "EUR\u00a080,000 and EUR\u00a084,000"
    assert new[0] == "plus new sales" and new[1] == "+EUR\u00a03,100"
    assert "EUR\u00a085,270" in new[2]


def test_a_last_30_days_title_says_the_span_watched() -> None:
    assert _windowed("Last 30 days", 1) == "Last 1 day (watched so far)"
    assert _windowed("Last 30 days", 30) == "Last 30 days"
    assert _windowed("Last 30 days", None) == "Last 30 days"
    assert _windowed("Usable subscribers", 1) == "Usable subscribers"


def test_the_survival_axis_is_the_whole_scale() -> None:
    """A curve that falls from 100% to 96% is drawn on 0-100%, its last value written at its
    end: a 4-point drop does not look like a collapse on an axis cut at 95% (what it was)."""
    curve = pd.DataFrame(
        {"day": [0, 10, 20, 30], "at_risk": [500, 500, 480, 300], "churned": [0, 10, 10, 0],
         "censored": [0, 0, 10, 300], "survival": [1.0, 0.98, 0.96, 0.96],
         "median_lifetime_days": [None, None, None, None]}
    )  # fmt: skip
    ax = draw("survival_curve", curve).axes[0]
    bottom, top = ax.get_ylim()
    assert bottom == 0.0 and 1.0 <= top <= 1.1
    ticks = [label.get_text() for label in ax.get_yticklabels()]
    assert ticks[0] == "0%" and "100%" in ticks
    assert "96.0%" in [t.get_text() for t in ax.texts]
    # with the median reached, the same whole scale
    reached = curve.assign(survival=[1.0, 0.7, 0.45, 0.4], median_lifetime_days=[20] * 4)
    assert draw("survival_curve", reached).axes[0].get_ylim()[0] == 0.0
