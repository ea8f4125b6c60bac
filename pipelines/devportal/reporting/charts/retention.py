"""The retention charts: the cohort retention heat map and the Kaplan-Meier survival curve
(with its median lifetime), and what they need (a month end, subscriptions followed since
first seen)."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from devportal.reporting import number_format
from devportal.reporting.charts.chart import Chart, chart_figure, note_under_title
from devportal.reporting.charts.style import (
    ACTIVE_COLOR,
    MUTED_COLOR,
    RATE_COLOR,
    count_axis,
    percent_formatter,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def cohort_label(cohort: str, month: date, is_backfill: bool, size: int) -> str:
    """A cohort's row label: its month (for the subscriptions already there at the first sync,
    words saying so and that sync's month) and its size. The heat map labels only the cohorts
    started after the first sync so; it names the first sync's subscriptions on a strip of
    their own."""
    name = f"already subscribed at the first sync ({month:%Y-%m})" if is_backfill else str(cohort)
    return f"{name} (n={number_format.count(size)})"


def _cells(ax: Any, shares: Any, partial: Any) -> Any:
    """SHARES (rows x columns, NaN: no cell) as a heat map on AX, each cell's percent written
    in it while they stay readable (`*`: a month not over yet); the image, for a colour bar."""
    # deferred: matplotlib and numpy cost ~0.3 s at startup
    import numpy as np
    from matplotlib import colormaps

    palette = colormaps["Blues"].with_extremes(bad="#f4f4f4")
    image = ax.imshow(np.ma.masked_invalid(shares), cmap=palette, vmin=0.0, vmax=1.0, aspect="auto")
    columns = shares.shape[1]
    if columns <= 24:
        size = 9 if columns <= 12 else 7
        for (row, column), share in np.ndenumerate(shares):
            if np.isnan(share):
                continue
            text = f"{share:.0%}" + ("*" if partial[row, column] else "")
            color = "white" if share >= 0.6 else "#222222"
            ax.text(column, row, text, ha="center", va="center", color=color, fontsize=size)
    return image


def _grid(rows: pd.DataFrame) -> tuple[Any, Any, list[Any]]:
    """The shares and not-over-yet marks of ROWS (one cohort's or several), one row per cohort
    in order, one column per month offset; and the cohorts' first rows."""
    # deferred: numpy costs ~0.08 s at startup
    import numpy as np

    firsts = rows.drop_duplicates("cohort")
    order = {cohort: i for i, cohort in enumerate(firsts["cohort"])}
    offsets = int(rows["month_offset"].max()) + 1
    shares = np.full((len(order), offsets), np.nan)
    partial = np.zeros((len(order), offsets), dtype=bool)
    for record in rows.itertuples(index=False):
        cell = (order[record.cohort], int(record.month_offset))
        if record.retention is not None and not np.isnan(record.retention):
            shares[cell] = float(record.retention)
        partial[cell] = not bool(record.is_complete)
    return shares, partial, list(firsts.itertuples(index=False))


def cohort_retention(cohorts: pd.DataFrame) -> Figure:
    """Heat map: one row per cohort (by the month it started, after the first sync: its `new`
    event, dated at its start as the syncs revealed it), one column per
    month since; each cell the share of the cohort still usable, as a colour and a percent.
    The subscriptions already there at the first sync started at unknown times before it: a
    strip of their own above it, by calendar month, each cell the share of those usable at the
    first sync still usable at that month's end (never a month 0 of a cohort). Cells of a month
    not over yet are marked `*`; no cell, no month yet."""
    backfill = cohorts[cohorts["is_backfill"].astype(bool)]
    new = cohorts[~cohorts["is_backfill"].astype(bool)]
    rows = new["cohort"].nunique()
    height = (1.4 if len(backfill) else 0.0) + (0.42 * rows + 1.2 if rows else 0.0) + 0.9
    fig, ax = chart_figure(COHORT_RETENTION, cohorts, height=max(2.6, height))
    if ax is None:
        return fig
    # deferred: matplotlib costs ~0.3 s at startup
    from matplotlib.gridspec import GridSpec

    axes = []
    ax.remove()
    weights = [w for w in (0.6 if len(backfill) else 0.0, 0.42 * rows + 0.6 if rows else 0.0) if w]
    grid = GridSpec(len(weights), 1, figure=fig, height_ratios=weights)
    image = None
    if len(backfill):
        top = fig.add_subplot(grid[0])
        axes.append(top)
        shares, partial, _ = _grid(backfill)
        image = _cells(top, shares, partial)
        first = backfill["first_sync_at"].iloc[0]
        base = int(backfill["base"].iloc[0])
        months = backfill.sort_values("month_offset")
        top.set_xticks(
            range(len(months)),
            [
                f"end of {m:%Y-%m}" + ("" if done else " (to date)*")
                for m, done in zip(months["month"], months["is_complete"], strict=True)
            ],
        )
        top.set_yticks([0], [f"n={number_format.count(base)}"])
        top.set_title(
            f"Already subscribed at the first sync ({first:%Y-%m-%d}): of those usable then, "
            "share still usable",
            fontsize=9,
        )
    if rows:
        bottom = fig.add_subplot(grid[len(weights) - 1])
        axes.append(bottom)
        shares, partial, firsts = _grid(new)
        image = _cells(bottom, shares, partial)
        labels = [cohort_label(r.cohort, r.cohort_month, False, int(r.cohort_size)) for r in firsts]
        bottom.set_yticks(range(len(labels)), labels)
        offsets = shares.shape[1]
        step = max(1, offsets // 12)
        bottom.set_xticks(range(0, offsets, step))
        bottom.set_xlabel("months since the month started (* month not over yet)")
        bottom.set_title("Started after the first sync, by month", fontsize=9)
    fig.suptitle(COHORT_RETENTION.title, fontsize="large")
    assert image is not None  # a row of either kind: the chart needs a month end
    bar = fig.colorbar(image, ax=axes, fraction=0.04, pad=0.02)
    bar.set_label("still usable")
    bar.ax.yaxis.set_major_formatter(percent_formatter())
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
    labelled. The y axis is the whole scale, 0 to 100%: a curve at 96% is drawn near the top,
    not as a steep fall on an axis cut at 95%."""
    fig, ax = chart_figure(SURVIVAL_CURVE, curve)
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
    # the whole scale, 0 to 100%: the curve is a share of all those followed, and an axis cut
    # at 95% draws a drop of 3 points as a collapse; the last value is written at its end
    ax.set_ylim(0.0, 1.06)
    ax.yaxis.set_major_formatter(percent_formatter())
    median = median_lifetime(curve)
    followed = int(curve["at_risk"].astype(int).iloc[0])
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
        summary = f"median lifetime {median} days"
    else:
        summary = (
            f"{survival[-1]:.1%} still subscribed on day {number_format.count(days[-1])}; "
            "median not reached yet"
        )
        ax.annotate(
            f"{survival[-1]:.1%}",
            xy=(days[-1], survival[-1]),
            xytext=(0, -14),
            textcoords="offset points",
            ha="right",
            fontsize=8,
            color=ACTIVE_COLOR,
        )
    note_under_title(
        ax,
        f"{number_format.count(followed)} subscriptions followed since first seen (after the first "
        f"sync); {summary}",
    )
    # a little room left of day 0: a drop on day 0 would hide in the axis
    span = max(days[-1], 1)
    ax.set_xlim(-0.02 * span, 1.04 * span)
    ax.set_xlabel("days since first seen")
    ax.set_ylabel("still subscribed")
    count_axis(ax.xaxis)
    ax.legend(loc="lower left", frameon=False)
    return fig


def _needs_month_end(frame: pd.DataFrame) -> str | None:
    if frame.empty or not frame["is_complete"].astype(bool).any():
        return (
            "not measurable yet (needs a month end after the first sync: each cell is the "
            "share still usable at a month's end)"
        )
    return None


# The fewest days a survival curve follows its subscriptions before it is drawn: a curve of a
# day or two is one step in an empty frame.
FOLLOWED_DAYS = 7


def _needs_followed(frame: pd.DataFrame) -> str | None:
    if frame.empty:
        return (
            "not measurable yet (needs subscriptions first seen after the first sync, "
            "followed by later syncs)"
        )
    days = int(frame["day"].astype(int).max())
    if days < FOLLOWED_DAYS:
        followed = int(frame["at_risk"].astype(int).max())
        churned = int(frame["churned"].astype(int).sum())
        return (
            f"not measurable yet: {number_format.count(followed)} subscriptions followed for "
            f"{number_format.count(days)} day{'' if days == 1 else 's'} so far, "
            f"{number_format.count(churned)} churned (the curve needs {FOLLOWED_DAYS} days of "
            "syncs after the first)"
        )
    return None


COHORT_RETENTION = Chart(
    "cohort_retention",
    "Cohort retention: share still usable, by month since the month started",
    "cohort_retention_chart.sql",
    cohort_retention,
    on_page=True,
    needs=_needs_month_end,
)
SURVIVAL_CURVE = Chart(
    "survival_curve",
    "Subscription survival (Kaplan-Meier)",
    "survival_curve_chart.sql",
    survival_curve,
    on_page=True,
    needs=_needs_followed,
)
