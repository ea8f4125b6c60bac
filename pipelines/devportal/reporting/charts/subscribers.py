"""The charts of the subscribers and users as they stand: usable subscribers over time, the
expiry calendar of the next `EXPIRY_DAYS` days, users by platform, and what they need.

Labels that come from the API (platform names) are drawn through `safe_text.chart_label`: one
line, no control characters, shortened, and `$` escaped, since matplotlib would read `$...$` as
mathematics and fail the whole page on a bad formula. Bars are placed by position, not by
label, so two names that read alike stay two bars.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from devportal.base import safe_text
from devportal.reporting import number_format
from devportal.reporting.charts.chart import Chart, chart_figure, note_under_title
from devportal.reporting.charts.style import (
    ACTIVE_COLOR,
    CANCELED_COLOR,
    MUTED_COLOR,
    count_axis,
    estimated_band,
    estimated_part,
    label_point,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# the days the expiry calendar covers: its query's window (sql/charts/expiry_calendar_chart.sql,
# `interval '60 days'`) and its axis
EXPIRY_DAYS = 60


def usable_over_time(daily: pd.DataFrame) -> Figure:
    """Stacked area: active, canceled-but-usable and (when there are any) other-status
    subscribers per day, by the status as sent, so the stack is every usable subscriber; the
    last day's total labelled."""
    fig, ax = chart_figure(USABLE_OVER_TIME, daily)
    if ax is None:
        return fig
    days = daily["day"].astype("datetime64[ns]")
    bands = [
        (daily["active"], "active", ACTIVE_COLOR),
        (daily["canceled_usable"], "canceled, usable until expiry", CANCELED_COLOR),
    ]
    other = daily.get("other_usable")  # a frame of two columns (a query of its own) has none
    if other is not None and float(other.astype(float).abs().sum()) > 0:
        bands.append((other, "other status", MUTED_COLOR))
    ax.stackplot(
        days,
        *(values.astype(float) for values, _, _ in bands),
        labels=[label for _, label, _ in bands],
        colors=[color for _, _, color in bands],
        alpha=0.9,
    )
    estimated = estimated_part(daily, "estimated_usable")
    if estimated is not None:
        totals = sum(values.astype(float) for values, _, _ in bands)
        estimated_band(ax, days, totals - estimated, totals)
    total = sum(float(values.iloc[-1]) for values, _, _ in bands)
    label_point(ax, days.iloc[-1], total, number_format.count(total))
    ax.set_ylabel("subscribers")
    ax.set_ylim(0, total * 1.15 if total else 1)
    count_axis(ax.yaxis)
    ax.legend(loc="lower left", frameon=False)
    fig.autofmt_xdate()
    return fig


def expiry_calendar(expiring: pd.DataFrame, as_of: datetime | None = None) -> Figure:
    """Stacked bars per day: usable subscriptions expiring, by treatment: active (renew),
    canceled (churn), other (a status not mapped: neither)."""
    # deferred: pandas costs ~0.3 s at startup
    import pandas as pd

    fig, ax = chart_figure(EXPIRY_CALENDAR, expiring)
    if ax is None:
        return fig
    table = expiring.pivot_table(
        index="day", columns="status", values="subscriptions", aggfunc="sum", fill_value=0
    )
    table.index = pd.to_datetime(table.index)
    start = pd.Timestamp(as_of.date()) if as_of is not None else table.index.min()
    days = pd.date_range(start, periods=EXPIRY_DAYS + 1, freq="D")
    table = table.reindex(days, fill_value=0)
    bottom = [0.0] * len(days)
    x = days
    for status, color, label in (
        ("active", ACTIVE_COLOR, "active: renews"),
        ("canceled", CANCELED_COLOR, "canceled: churns"),
        ("other", MUTED_COLOR, "other status: neither"),
    ):
        if status not in table.columns:
            continue
        values = table[status].astype(float).tolist()
        ax.bar(x, values, bottom=bottom, color=color, label=label, width=0.8)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("subscriptions expiring")
    count_axis(ax.yaxis)
    ax.legend(loc="upper right", frameon=False)
    fig.autofmt_xdate()
    return fig


def users_by_platform(platforms: pd.DataFrame) -> Figure:
    """Horizontal bars: users with a profile on each platform, each bar labelled with its
    count; a user on several platforms counts on each, and the note under the title says so
    (the users, and what the bars add up to) when the query gives `all_users`."""
    fig, ax = chart_figure(
        USERS_BY_PLATFORM, platforms, height=max(2.4, 0.5 * len(platforms) + 1.2)
    )
    if ax is None:
        return fig
    # most users on top, ties by name in code point order (the engine's collation may differ)
    ordered = platforms.sort_values(["users", "platform"], ascending=[True, False], kind="stable")
    positions = range(len(ordered))
    bars = ax.barh(positions, ordered["users"].astype(float), color=ACTIVE_COLOR)
    ax.bar_label(bars, [number_format.count(v) for v in ordered["users"]], padding=3, fontsize=8)
    ax.set_yticks(positions, [safe_text.chart_label(str(p)) for p in ordered["platform"]])
    ax.set_xlabel("users with a profile on the platform")
    ax.set_xlim(0, max(1.0, float(ordered["users"].max())) * 1.12)
    count_axis(ax.xaxis)
    counted = int(ordered["users"].astype(int).sum())
    everyone = int(platforms["all_users"].iloc[0]) if "all_users" in platforms else None
    if everyone is not None and counted > everyone:
        note_under_title(
            ax,
            f"{number_format.count(everyone)} users; one with profiles on several platforms counts on "
            f"each, so the bars add up to {number_format.count(counted)}",
        )
    elif everyone is not None:
        note_under_title(ax, f"{number_format.count(everyone)} users, each on one platform")
    return fig


def _needs_days(frame: pd.DataFrame) -> str | None:
    if len(frame) >= 2:
        return None
    if frame.empty:
        return "no data yet: needs a sync"
    day = frame["day"].iloc[0]
    return (
        f"one day so far ({number_format.count(frame['usable'].iloc[0])} usable on {day:%Y-%m-%d}); "
        "the line starts with a later sync's day"
    )


def _needs_expiries(frame: pd.DataFrame) -> str | None:
    return f"nothing expires in the next {EXPIRY_DAYS} days" if frame.empty else None


def _needs_users(frame: pd.DataFrame) -> str | None:
    return "no users read yet" if frame.empty else None


USABLE_OVER_TIME = Chart(
    "usable_over_time",
    "Usable subscribers over time",
    "usable_over_time_chart.sql",
    usable_over_time,
    on_page=True,
    needs=_needs_days,
)
EXPIRY_CALENDAR = Chart(
    "expiry_calendar",
    f"Expiry calendar, next {EXPIRY_DAYS} days",
    "expiry_calendar_chart.sql",
    expiry_calendar,
    on_page=True,
    dated=True,
    needs=_needs_expiries,
)
USERS_BY_PLATFORM = Chart(
    "users_by_platform",
    "Users by platform",
    "users_by_platform_chart.sql",
    users_by_platform,
    on_page=True,
    needs=_needs_users,
)
