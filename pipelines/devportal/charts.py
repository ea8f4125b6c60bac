"""The charts of the HTML report and the notebook: their queries and their matplotlib figures.

Each chart is a query on the `analytics` models (`QUERIES`) and a function drawing its
DataFrame. Figures are built with `matplotlib.figure.Figure`, never pyplot: no global state,
no GUI backend, safe in any thread; `png_bytes` renders one with the Agg canvas. Every chart
draws an empty state instead of failing, so a young warehouse still gets a page.

The queries are plain SQL that DuckDB and PostgreSQL both run. `frame(engine, name)` (and
`read(engine, sql)` for any query on `analytics.*`) runs one through a `devportal.engines`
engine and returns the same DataFrame on either: every value is made a plain Python value by
`plain` (Decimal, numpy and pandas scalars, timestamps with a time zone) before pandas sees it,
so the report, its page and the notebook show the same figures whichever engine they read.
"""

from __future__ import annotations

import io
import math
import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from devportal.engines import Engine

ACTIVE_COLOR = "#2f6f9f"
CANCELED_COLOR = "#e08a2c"
RATE_COLOR = "#b8323a"
EXPIRY_DAYS = 60

# Live subscriptions only, like the report. Each query names the model(s) it needs as
# `analytics.<model>`, which `qualified` turns into the engine's full name. Portable SQL only:
# DuckDB and PostgreSQL run every one of them as written.
QUERIES: dict[str, str] = {
    "usable_over_time": """
        select day, usable, active, canceled_usable
        from analytics.daily_subscribers
        order by day
    """,
    "monthly_churn": """
        select month, churned, cancellations, new, subscribers_at_start, churn_rate,
            is_estimate, is_complete
        from analytics.monthly_churn
        order by month
    """,
    "expiry_calendar": f"""
        select
            cast(current_subscriptions.expires_at as date) as day,
            current_subscriptions.status,
            count(*) as subscriptions
        from analytics.subscriptions_current as current_subscriptions
        cross join analytics.as_of as clock
        where
            not current_subscriptions.is_test
            and current_subscriptions.is_usable
            and current_subscriptions.expires_at <= clock.as_of + interval '{EXPIRY_DAYS} days'
        group by cast(current_subscriptions.expires_at as date), current_subscriptions.status
        order by day, current_subscriptions.status
    """,
    "users_by_platform": """
        select listed.platform, count(*) as users
        from analytics.users as users
        cross join
            unnest(string_to_array(coalesce(users.platforms, 'unknown'), ',')) as listed(platform)
        group by listed.platform
        order by users desc, listed.platform
    """,
}

TITLES: dict[str, str] = {
    "usable_over_time": "Usable subscribers over time",
    "monthly_churn": "Monthly churn",
    "expiry_calendar": f"Expiry calendar, next {EXPIRY_DAYS} days",
    "users_by_platform": "Users by platform",
}


# -- reading the models, alike on every engine ------------------------------------------------

_ANALYTICS_NAME = re.compile(r"\banalytics\.(\w+)\b")


def qualified(engine: Engine, sql: str) -> str:
    """SQL with each `analytics.<model>` written as the engine's full name for it (the
    warehouse's catalog on DuckDB). A plain text substitution: for queries like QUERIES'."""
    return _ANALYTICS_NAME.sub(lambda m: engine.qualify("analytics", m.group(1)), sql)


def plain(value: Any) -> Any:
    """VALUE as the plain Python value DuckDB gives for it, whichever engine and driver read it.

    Decimal (PostgreSQL's numeric: sums, divisions) becomes int when it has no fractional
    digits, else float; numpy and pandas scalars become Python ones; a timestamp with a time
    zone becomes the naive UTC timestamp (DuckDB's models and the API's clock are UTC); NaN
    and NaT become None.
    """
    if type(value).__module__.split(".")[0] in ("numpy", "pandas"):
        value = _builtin(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _builtin(value: Any) -> Any:
    """A numpy or pandas scalar as the Python value it stands for."""
    import numpy as np
    import pandas as pd

    if isinstance(value, np.datetime64):
        value = pd.Timestamp(value)
    if value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, np.generic):
        return value.item()
    return value


def read(engine: Engine, sql: str) -> pd.DataFrame:
    """A query on the `analytics` models as a DataFrame, the same on every engine: values made
    `plain`, then typed by pandas alike (PostgreSQL sessions are in UTC, see `engines`)."""
    import pandas as pd

    names, rows = engine.columns(qualified(engine, sql))
    records = [tuple(plain(value) for value in row) for row in rows]
    return pd.DataFrame.from_records(records, columns=names)


def frame(engine: Engine, name: str) -> pd.DataFrame:
    """The DataFrame of chart NAME (a key of QUERIES), read through ENGINE."""
    return read(engine, QUERIES[name])


# -- the figures ------------------------------------------------------------------------------


def _figure(name: str, frame: pd.DataFrame, height: float = 3.4) -> tuple[Figure, Any]:
    """The figure of chart NAME and its axes, titled. For an empty FRAME the figure shows the
    empty state and the axes are None: there is nothing to draw."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, height), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(TITLES[name])
    if not frame.empty:
        return fig, ax
    ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])
    return fig, None


def _integer_ticks(axis: Any) -> None:
    """Whole-number ticks only on AXIS (`ax.xaxis` or `ax.yaxis`): the values are counts."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def usable_over_time(daily: pd.DataFrame) -> Figure:
    """Stacked area: active and canceled-but-usable subscribers per day."""
    fig, ax = _figure("usable_over_time", daily)
    if ax is None:
        return fig
    days = daily["day"].astype("datetime64[ns]")
    ax.stackplot(
        days,
        daily["active"].astype(float),
        daily["canceled_usable"].astype(float),
        labels=["active", "canceled, usable until expiry"],
        colors=[ACTIVE_COLOR, CANCELED_COLOR],
        alpha=0.9,
    )
    ax.set_ylabel("subscribers")
    ax.set_ylim(bottom=0)
    _integer_ticks(ax.yaxis)
    ax.legend(loc="lower left", frameon=False)
    fig.autofmt_xdate()
    return fig


def monthly_churn(monthly: pd.DataFrame) -> Figure:
    """Bars: churned per month (estimated months hatched); line: churn rate on its own axis."""
    fig, ax = _figure("monthly_churn", monthly)
    if ax is None:
        return fig
    labels = [
        f"{m:%Y-%m}" + ("" if complete else " (to date)")
        for m, complete in zip(monthly["month"], monthly["is_complete"], strict=True)
    ]
    positions = list(range(len(labels)))
    estimate = monthly["is_estimate"].astype(bool).tolist()
    bars = ax.bar(
        positions, monthly["churned"].astype(float), color=CANCELED_COLOR, label="churned"
    )
    for bar, is_estimate in zip(bars, estimate, strict=True):
        if is_estimate:
            bar.set_hatch("//")
            bar.set_alpha(0.6)
    ax.set_xticks(positions, labels, rotation=45, ha="right")
    ax.set_ylabel("churned subscriptions")
    _integer_ticks(ax.yaxis)
    rate_ax = ax.twinx()
    rates = monthly["churn_rate"].astype(float) * 100
    rate_ax.plot(positions, rates, color=RATE_COLOR, marker="o", label="churn rate")
    rate_ax.set_ylabel("churn rate, %")
    # headroom above both series keeps the legend clear of the data
    ax.set_ylim(0, max(1.0, float(monthly["churned"].max())) * 1.35)
    top_rate = float(rates.max()) if rates.notna().any() else 0.0
    rate_ax.set_ylim(0, max(1.0, top_rate) * 1.35)
    from matplotlib.patches import Patch

    handles: list[Any] = [Patch(color=CANCELED_COLOR), *rate_ax.get_lines()]
    names = ["churned", "churn rate"]
    if any(estimate):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//"))
        names.append("estimated base (before the first sync)")
    ax.legend(handles, names, loc="upper left", frameon=False, ncol=len(names))
    return fig


def expiry_calendar(expiring: pd.DataFrame, as_of: datetime | None = None) -> Figure:
    """Stacked bars per day: usable subscriptions expiring, active (renew) vs canceled (churn)."""
    import pandas as pd

    fig, ax = _figure("expiry_calendar", expiring)
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
    ):
        if status not in table.columns:
            continue
        values = table[status].astype(float).tolist()
        ax.bar(x, values, bottom=bottom, color=color, label=label, width=0.8)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("subscriptions expiring")
    _integer_ticks(ax.yaxis)
    ax.legend(loc="upper right", frameon=False)
    fig.autofmt_xdate()
    return fig


def users_by_platform(platforms: pd.DataFrame) -> Figure:
    """Horizontal bars: users with a profile on each platform (a user may count twice)."""
    fig, ax = _figure("users_by_platform", platforms, height=max(2.4, 0.5 * len(platforms) + 1.2))
    if ax is None:
        return fig
    # most users on top, ties by name in code point order (the engine's collation may differ)
    ordered = platforms.sort_values(["users", "platform"], ascending=[True, False], kind="stable")
    ax.barh(ordered["platform"].astype(str), ordered["users"].astype(float), color=ACTIVE_COLOR)
    ax.set_xlabel("users")
    _integer_ticks(ax.xaxis)
    return fig


def draw(name: str, frame: pd.DataFrame, as_of: datetime | None = None) -> Figure:
    """The figure of chart NAME (a key of QUERIES) for its query's FRAME."""
    if name == "usable_over_time":
        return usable_over_time(frame)
    if name == "monthly_churn":
        return monthly_churn(frame)
    if name == "expiry_calendar":
        return expiry_calendar(frame, as_of)
    if name == "users_by_platform":
        return users_by_platform(frame)
    raise KeyError(name)


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG, rendered by the Agg canvas (no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # attaches itself as the figure's canvas
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()
