"""The monthly charts: churn, renewal rates by billing period, churn rates by platform,
reactivations, and what they need.

Months that began before the first sync (`is_estimate`) are set apart and left out of every
rate line: their base is an estimate, and a line through them reads as a trend. Legends get
their labels explicitly, so a name starting with `_` (matplotlib's mark for "leave out of the
legend") is still shown.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from devportal.base import safe_text
from devportal.reporting import number_format
from devportal.reporting.charts.chart import Chart, chart_figure, monthly_figure, note_under_title
from devportal.reporting.charts.style import (
    ACTIVE_COLOR,
    CANCELED_COLOR,
    RATE_COLOR,
    SERIES_COLORS,
    count_axis,
    fit_rate_axis,
    label_point,
    month_tick_labels,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def _days_so_far(frame: pd.DataFrame) -> list[int | None]:
    """Per month of FRAME: the days the month not over yet has run by `as_of` (when the query
    gives it), None for a full month."""
    # deferred: pandas costs ~0.3 s at startup
    import pandas as pd

    as_of = frame["as_of"] if "as_of" in frame else [None] * len(frame)
    return [
        None if bool(done) or at is None else max(1, (pd.Timestamp(at) - pd.Timestamp(m)).days)
        for m, done, at in zip(frame["month"], frame["is_complete"], as_of, strict=True)
    ]


def monthly_churn(monthly: pd.DataFrame) -> Figure:
    """Bars: churned per month; line: the churn rate on its own axis, each point labelled.
    Months that began before the first sync are set apart (hatched, pale) and left out of the
    rate line: their base is an estimate and their churn a lower bound that grows towards the
    first sync (the API lists fewer of the older expiries), which a line would show as a trend.
    The month to date is set apart too (a pale bar, its rate so far a hollow point off the
    line, with the days it has run): a few days' churn beside full months reads as a fall."""
    fig, ax, positions = monthly_figure(MONTHLY_CHURN, monthly)
    if ax is None:
        return fig
    estimate = monthly["is_estimate"].astype(bool).tolist()
    so_far = _days_so_far(monthly)
    churned = monthly["churned"].astype(float)
    bars = ax.bar(positions, churned, color=CANCELED_COLOR, label="churned")
    for bar, is_estimate, days in zip(bars, estimate, so_far, strict=True):
        if is_estimate:
            bar.set_hatch("//")
            bar.set_alpha(0.35)
        elif days is not None:
            bar.set_alpha(0.4)
            bar.set_edgecolor(CANCELED_COLOR)
            bar.set_linestyle("--")
    ax.set_ylabel("churned subscriptions")
    count_axis(ax.yaxis)
    rate_ax = ax.twinx()
    rates = [
        (x, float(rate) * 100, days)
        for x, rate, is_estimate, days in zip(
            positions, monthly["churn_rate"], estimate, so_far, strict=True
        )
        if not is_estimate and rate is not None and not math.isnan(float(rate))
    ]
    measured = [(x, rate) for x, rate, days in rates if days is None]
    rate_ax.plot([x for x, _ in measured], [r for _, r in measured], color=RATE_COLOR, marker="o")
    for x, rate in measured:
        label_point(rate_ax, x, rate, f"{rate:.1f}%", RATE_COLOR)
    partial = [(x, rate, days) for x, rate, days in rates if days is not None]
    for x, rate, days in partial:
        rate_ax.plot([x], [rate], linestyle="none", marker="o", markerfacecolor="white",
                     color=RATE_COLOR)  # fmt: skip
        label_point(rate_ax, x, rate, f"{rate:.1f}% in {days} d", RATE_COLOR)
    rate_ax.set_ylabel("churn rate, %")
    # headroom above both series keeps the legend clear of the data
    ax.set_ylim(0, max(1.0, float(churned.max())) * 1.35)
    rate_ax.set_ylim(0, max([1.0, *(r for _, r, _ in rates)]) * 1.35)
    # deferred: matplotlib costs ~0.3 s at startup
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Patch(color=CANCELED_COLOR), Line2D([], [], color=RATE_COLOR, marker="o")]
    names = ["churned", "churn rate"]
    if partial:
        handles.append(
            Line2D([], [], color=RATE_COLOR, marker="o", markerfacecolor="white", linestyle="none")
        )
        names.append("month to date: so far")
    if any(estimate):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//"))
        names.append("before the first sync: estimated, no rate")
    ax.legend(handles, names, loc="upper left", frameon=False, ncol=len(names), fontsize=8)
    notes = []
    if not rates:
        rate_ax.set_yticks([])
        notes.append(
            "churn rate: not measurable yet (needs a month that starts after the first sync)"
        )
    elif not measured:
        notes.append("churn rate: no full month watched yet; the month to date's is so far")
    for days, is_estimate in zip(so_far, estimate, strict=True):
        if days is not None and not is_estimate:
            notes.append(
                f"the month to date has run {days} day{'' if days == 1 else 's'}: its churn is "
                "not comparable with a full month's"
            )
    note_under_title(ax, *notes)
    return fig


def _rates_by(
    chart: Chart,
    frame: pd.DataFrame,
    series: str,
    rate: str,
    ylabel: str,
    first: tuple[str, ...] = (),
) -> Figure:
    """Lines: RATE per month, one line per value of SERIES (those in FIRST first, in that
    order, then the others by name), each line's last rate labelled; `all` is drawn dark and
    thicker, as the total. Months that began before the first sync (`is_estimate`) are left
    out: their rates rest on an estimate. The y axis fits the rates (`fit_rate_axis`)."""
    fig, ax = chart_figure(chart, frame)
    if ax is None:
        return fig
    if "is_estimate" in frame:
        frame = frame[~frame["is_estimate"].astype(bool)]
    months = frame.drop_duplicates("month").sort_values("month")
    labels = month_tick_labels(months["month"], months["is_complete"])
    position = {m: i for i, m in enumerate(months["month"])}
    # a series without a single rate (nothing decided in any month) has no line to draw
    present = set(frame[frame[rate].notna()][series].astype(str))
    names = [s for s in first if s in present] + sorted(present - set(first))
    colors = iter(SERIES_COLORS * len(names))
    lines = []
    for value in names:
        rows = frame[(frame[series].astype(str) == value) & frame[rate].notna()]
        rows = rows.sort_values("month")
        total = value == "all"
        color = "#222222" if total else next(colors)
        x = [position[m] for m in rows["month"]]
        (line,) = ax.plot(
            x, rows[rate].astype(float), marker="o", color=color, linewidth=2.4 if total else 1.5
        )
        label_point(
            ax, x[-1], float(rows[rate].iloc[-1]), number_format.percent(rows[rate].iloc[-1]), color
        )
        lines.append(line)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_xlim(-0.5, len(labels) - 0.5)
    fit_rate_axis(ax, frame[rate])
    ax.set_ylabel(ylabel)
    # beside the plot: the lines may fill the fitted axis
    legend = [safe_text.chart_label(value) for value in names]
    ax.legend(lines, legend, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def monthly_renewals(renewals: pd.DataFrame) -> Figure:
    """Lines: renewal rate per month (renewed / (renewed + churned) of those that came due),
    for all and per billing period."""
    return _rates_by(
        MONTHLY_RENEWALS,
        renewals,
        "period",
        "renewal_rate",
        "renewed of those decided",
        ("all", "monthly", "yearly"),
    )


def churn_by_platform(churn: pd.DataFrame) -> Figure:
    """Lines: churn rate per month (churned / subscribers at its start), one per platform."""
    return _rates_by(
        CHURN_BY_PLATFORM, churn, "platform", "churn_rate", "churned of subscribers at start"
    )


def reactivations(monthly: pd.DataFrame) -> Figure:
    """Stacked bars per month: canceled subscriptions saved before they ran out, and expired
    ones won back; each month's total labelled."""
    fig, ax, positions = monthly_figure(REACTIVATIONS, monthly)
    if ax is None:
        return fig
    saved = monthly["saved"].astype(float).tolist()
    won_back = monthly["won_back"].astype(float).tolist()
    ax.bar(positions, saved, color=ACTIVE_COLOR, label="saved (reactivated before expiry)")
    bars = ax.bar(
        positions, won_back, bottom=saved, color=CANCELED_COLOR, label="won back (after expiry)"
    )
    totals = [a + b for a, b in zip(saved, won_back, strict=True)]
    ax.bar_label(bars, [number_format.count(t) for t in totals], padding=2, fontsize=8)
    ax.set_ylabel("subscriptions")
    ax.set_ylim(0, max([1.0, *totals]) * 1.35)
    count_axis(ax.yaxis)
    ax.legend(loc="upper left", frameon=False)
    return fig


def _needs_rates(rate: str, why: str) -> Callable[[pd.DataFrame], str | None]:
    def needs(frame: pd.DataFrame) -> str | None:
        watched = frame if "is_estimate" not in frame else frame[~frame["is_estimate"].astype(bool)]
        if watched.empty or not watched[rate].notna().any():
            return f"not measurable yet (needs {why})"
        return None

    return needs


def _needs_comebacks(frame: pd.DataFrame) -> str | None:
    if frame.empty or not frame["reactivated"].astype(int).any():
        return "none seen yet (a reactivation is seen between two syncs)"
    return None


MONTHLY_CHURN = Chart(
    "monthly_churn", "Monthly churn", "monthly_churn_chart.sql", monthly_churn, on_page=True
)
MONTHLY_RENEWALS = Chart(
    "monthly_renewals",
    "Renewal rate by billing period",
    "monthly_renewals_chart.sql",
    monthly_renewals,
    on_page=False,
    needs=_needs_rates(
        "renewal_rate", "a sync after a due date: a renewal is seen between two syncs"
    ),
    between_syncs="a renewal is seen between two syncs",
)
CHURN_BY_PLATFORM = Chart(
    "churn_by_platform",
    "Churn rate by platform",
    "churn_by_platform_chart.sql",
    churn_by_platform,
    on_page=False,
    needs=_needs_rates("churn_rate", "a month that starts after the first sync"),
)
REACTIVATIONS = Chart(
    "reactivations",
    "Reactivations",
    "reactivations_chart.sql",
    reactivations,
    on_page=False,
    needs=_needs_comebacks,
    between_syncs="a reactivation is seen between two syncs",
)
