"""The money charts: MRR over time and the MRR movements by month, and what they need (a
second day, prices: `PRICES_HINT` says how to set them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from devportal.reporting import number_format
from devportal.reporting.charts.chart import Chart, chart_figure, monthly_figure
from devportal.reporting.charts.style import (
    ACTIVE_COLOR,
    currency_of,
    estimated_band,
    estimated_part,
    label_point,
    money_axis,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# What a money figure or chart says when no price is set: not an error, the way to set them.
PRICES_HINT = (
    "no prices set: set [analytics] price_monthly and price_yearly in .dlt/config.toml "
    "(or ANALYTICS__PRICE_MONTHLY, ANALYTICS__PRICE_YEARLY)"
)


def mrr_over_time(daily: pd.DataFrame) -> Figure:
    """Area from zero: the MRR on each day since the first sync (amounts start at zero, so a
    dip reads at its true size), the first and last days' MRR labelled."""
    fig, ax = chart_figure(MRR_OVER_TIME, daily)
    if ax is None:
        return fig
    currency = currency_of(daily)
    measured = daily[daily["mrr"].notna()]
    days = measured["day"].astype("datetime64[ns]")
    mrr = measured["mrr"].astype(float)
    estimated = estimated_part(measured, "estimated_mrr")
    if estimated is None:
        ax.fill_between(days, mrr, color=ACTIVE_COLOR, alpha=0.25, linewidth=0)
    else:
        known = mrr - estimated
        ax.fill_between(days, known, color=ACTIVE_COLOR, alpha=0.25, linewidth=0)
        estimated_band(ax, days, known, mrr)
        ax.legend(loc="lower left", frameon=False)
    ax.plot(days, mrr, color=ACTIVE_COLOR, linewidth=2)
    for at in (0, len(mrr) - 1):
        label_point(
            ax,
            days.iloc[at],
            float(mrr.iloc[at]),
            number_format.money(mrr.iloc[at], currency, cents=None),
        )
    ax.set_ylim(0, max(1.0, float(mrr.max())) * 1.2)
    ax.set_ylabel("MRR")
    money_axis(ax.yaxis, currency)
    fig.autofmt_xdate()
    return fig


# The movements of mrr_movements, as stacked: (column, label, colour, up).
MOVEMENTS = (
    ("new_mrr", "new", "#4c9a5b", True),
    ("expansion_mrr", "expansion", "#2f6f9f", True),
    ("reactivated_mrr", "reactivated", "#8a5fb0", True),
    ("contraction_mrr", "contraction", "#e08a2c", False),
    ("churned_mrr", "churned", "#b8323a", False),
)
_PRICE_CHANGE = ("price_change_mrr", "price change", "#c9a227")


def mrr_movements(monthly: pd.DataFrame) -> Figure:
    """Stacked bars per month: new, expansion and reactivated MRR up, contraction and churned
    MRR down (a price change up or down, by its sign); the net change a line, each month's
    net labelled."""
    fig, ax, positions = monthly_figure(MRR_MOVEMENTS, monthly)
    if ax is None:
        return fig
    currency = currency_of(monthly)
    # a month watched only in part (to date, or from the first sync): pale, beside full ones
    partial_start = monthly.get("is_partial_start")
    starts = [False] * len(positions) if partial_start is None else partial_start.tolist()
    complete = [
        bool(done) and not bool(start)
        for done, start in zip(monthly["is_complete"], starts, strict=True)
    ]
    up = [0.0] * len(positions)
    down = [0.0] * len(positions)
    change = monthly[_PRICE_CHANGE[0]].astype(float).fillna(0.0)
    stacks = [
        *(
            (monthly[column].astype(float).fillna(0.0), label, color, is_up)
            for column, label, color, is_up in MOVEMENTS
        ),
        (change.clip(lower=0.0), _PRICE_CHANGE[1] + " (up)", _PRICE_CHANGE[2], True),
        (-change.clip(upper=0.0), _PRICE_CHANGE[1] + " (down)", _PRICE_CHANGE[2], False),
    ]
    for values, label, color, is_up in stacks:
        heights = [float(v) if is_up else -float(v) for v in values]
        if not any(heights):
            continue
        base = up if is_up else down
        bars = ax.bar(positions, heights, bottom=base, color=color, label=label, width=0.7)
        for bar, done in zip(bars, complete, strict=True):
            if not done:
                bar.set_alpha(0.45)
        for i, height in enumerate(heights):
            base[i] += height
    net = monthly["net_change"].astype(float).fillna(0.0).tolist()
    ax.plot(positions, net, color="#222222", marker="o", linewidth=1.5, label="net change")
    for x, value in zip(positions, net, strict=True):
        label_point(
            ax,
            x,
            value,
            number_format.money(value, currency, signed=True, cents=None),
            below=value < 0,
        )
    ax.axhline(0, color="#222222", linewidth=0.8)
    span = max([1.0, *up, *(-d for d in down)])
    ax.set_ylim(min(down) - span * 0.2, max(up) + span * 0.2)
    ax.set_ylabel("MRR change")
    money_axis(ax.yaxis, currency)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def _needs_mrr(frame: pd.DataFrame) -> str | None:
    if frame.empty:
        return "no data yet: needs a sync"
    measured = frame[frame["mrr"].notna()]
    if measured.empty:
        return PRICES_HINT
    if len(measured) == 1:
        day, mrr = measured["day"].iloc[0], measured["mrr"].iloc[0]
        currency = currency_of(measured)
        return (
            f"one day so far ({number_format.money(mrr, currency)} on {day:%Y-%m-%d}); "
            "the line starts with a later sync's day"
        )
    return None


def _needs_movements(frame: pd.DataFrame) -> str | None:
    if frame.empty:
        return "no data yet: needs a sync"
    if frame["mrr_end"].isna().all():
        return PRICES_HINT
    columns = [column for column, *_ in (*MOVEMENTS, _PRICE_CHANGE)]
    moved = frame[columns].astype(float).fillna(0.0).abs().to_numpy().sum() > 0
    if moved:
        return None
    if len(frame) == 1 and not bool(frame["is_complete"].iloc[0]):
        return "not measurable yet (needs a later sync: a movement is a change between two syncs)"
    return "no MRR movement yet"


MRR_OVER_TIME = Chart(
    "mrr_over_time",
    "MRR over time",
    "mrr_over_time_chart.sql",
    mrr_over_time,
    on_page=True,
    needs=_needs_mrr,
)
MRR_MOVEMENTS = Chart(
    "mrr_movements",
    "MRR movements by month",
    "mrr_movements_chart.sql",
    mrr_movements,
    on_page=True,
    needs=_needs_movements,
    between_syncs="MRR movements are changes between two syncs",
)
