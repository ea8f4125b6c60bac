"""The retention charts: the cohort retention heat map and the Kaplan-Meier survival curve
(with its median lifetime), and what they need (a month end, subscriptions followed since
first seen)."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from devportal import numbers
from devportal.charts.chart import Chart, _figure
from devportal.charts.style import (
    ACTIVE_COLOR,
    MUTED_COLOR,
    RATE_COLOR,
    _counts,
    _fit_rates,
    _label,
    _percent_formatter,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def cohort_label(cohort: str, month: date, is_backfill: bool, size: int) -> str:
    """A cohort's row label: its month (for the first sync's backfill, that sync's month and
    `backfill`) and its size."""
    name = f"{month:%Y-%m} backfill" if is_backfill else str(cohort)
    return f"{name} (n={numbers.count(size)})"


def cohort_retention(cohorts: pd.DataFrame) -> Figure:
    """Heat map: one row per cohort (the backfill of the first sync first, then by month first
    seen), one column per month since; each cell the share of the cohort still usable, as a
    colour and a percent. Cells of a month not over yet are marked `*`; no cell, no month yet."""
    import numpy as np

    rows = cohorts.drop_duplicates("cohort")
    fig, ax = _figure(COHORT_RETENTION, cohorts, height=max(2.6, 0.42 * len(rows) + 1.8))
    if ax is None:
        return fig
    order = {cohort: i for i, cohort in enumerate(rows["cohort"])}
    offsets = int(cohorts["month_offset"].max()) + 1
    shares = np.full((len(order), offsets), np.nan)
    partial = np.zeros((len(order), offsets), dtype=bool)
    for record in cohorts.itertuples(index=False):
        cell = (order[record.cohort], int(record.month_offset))
        if record.retention is not None and not np.isnan(record.retention):
            shares[cell] = float(record.retention)
        partial[cell] = not bool(record.is_complete)
    from matplotlib import colormaps

    palette = colormaps["Blues"].with_extremes(bad="#f4f4f4")
    image = ax.imshow(np.ma.masked_invalid(shares), cmap=palette, vmin=0.0, vmax=1.0, aspect="auto")
    # a percent in every cell while they stay readable; white on the dark cells
    if offsets <= 24:
        size = 9 if offsets <= 12 else 7
        for (row, column), share in np.ndenumerate(shares):
            if np.isnan(share):
                continue
            text = f"{share:.0%}" + ("*" if partial[row, column] else "")
            color = "white" if share >= 0.6 else "#222222"
            ax.text(column, row, text, ha="center", va="center", color=color, fontsize=size)
    labels = [
        cohort_label(r.cohort, r.cohort_month, bool(r.is_backfill), int(r.cohort_size))
        for r in rows.itertuples(index=False)
    ]
    ax.set_yticks(range(len(labels)), labels)
    step = max(1, offsets // 12)
    ax.set_xticks(range(0, offsets, step))
    ax.set_xlabel("months since the cohort's month (* month not over yet)")
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label("still usable")
    bar.ax.yaxis.set_major_formatter(_percent_formatter())
    return fig


def median_lifetime(curve: pd.DataFrame) -> int | None:
    """The Kaplan-Meier median the curve's query carries (`report_figures.median_lifetime_days`,
    computed there once: the first day the survival is at or below 50%); None when the curve
    has not come down that far (yet)."""
    if "median_lifetime_days" not in curve:
        return None
    values = curve["median_lifetime_days"].dropna()
    return int(values.iloc[0]) if len(values) else None


def survival_curve(curve: pd.DataFrame) -> Figure:
    """Step plot of the Kaplan-Meier survival: the share of subscriptions not yet churned by
    each day since first seen, with the censored ones (still subscribed when last seen) ticked;
    the 50% line and the median lifetime when the curve reaches it, else the last value
    labelled. The y axis fits the curve (a curve at 97% is not drawn on 0-100%)."""
    fig, ax = _figure(SURVIVAL_CURVE, curve)
    if ax is None:
        return fig
    days = [0, *curve["day"].astype(int).tolist()]
    survival = [1.0, *curve["survival"].astype(float).tolist()]
    ax.step(days, survival, where="post", color=ACTIVE_COLOR, linewidth=2, label="still subscribed")
    censored = curve[curve["censored"].astype(int) > 0]
    if not censored.empty:
        ax.plot(
            censored["day"].astype(int),
            censored["survival"].astype(float),
            linestyle="none",
            marker="|",
            markersize=9,
            color=ACTIVE_COLOR,
            label="censored (no churn seen: still subscribed, or no longer listed)",
        )
    _fit_rates(ax, [*survival, 1.0])
    median = median_lifetime(curve)
    if median is not None:
        ax.axhline(0.5, color=MUTED_COLOR, linestyle="--", linewidth=1)
        ax.axvline(median, color=RATE_COLOR, linestyle=":", linewidth=1.5)
        ax.annotate(
            f"median {median} days",
            xy=(median, 0.5),
            xytext=(6, 6),
            textcoords="offset points",
            color=RATE_COLOR,
        )
    else:
        _label(
            ax,
            days[-1],
            survival[-1],
            f"{survival[-1]:.1%} still subscribed on day {days[-1]}; median not reached yet",
            below=True,
            ha="right",
        )
    # a little room left of day 0: a drop on day 0 would hide in the axis
    span = max(days[-1], 1)
    ax.set_xlim(-0.02 * span, 1.04 * span)
    ax.set_xlabel("days since first seen")
    ax.set_ylabel("still subscribed")
    _counts(ax.xaxis)
    ax.legend(loc="lower left", frameon=False)
    return fig


def _needs_month_end(frame: pd.DataFrame) -> str | None:
    if frame.empty or not frame["is_complete"].astype(bool).any():
        return (
            "not measurable yet (needs a month end after the first sync: each cell is the "
            "share still usable at a month's end)"
        )
    return None


def _needs_followed(frame: pd.DataFrame) -> str | None:
    if frame.empty:
        return (
            "not measurable yet (needs subscriptions first seen after the first sync, "
            "followed by later syncs)"
        )
    return None


COHORT_RETENTION = Chart(
    "cohort_retention",
    "Cohort retention: share still usable, by month since first seen",
    "cohort_retention.sql",
    cohort_retention,
    on_page=True,
    needs=_needs_month_end,
)
SURVIVAL_CURVE = Chart(
    "survival_curve",
    "Subscription survival (Kaplan-Meier)",
    "survival_curve.sql",
    survival_curve,
    on_page=True,
    needs=_needs_followed,
)
