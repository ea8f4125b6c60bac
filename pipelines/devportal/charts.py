"""The charts of the HTML report and the notebook: their queries and their matplotlib figures.

Each chart is one entry of `CHARTS`: its name, title, query (a file in `sql/charts/`), the function
drawing the query's DataFrame, and whether the report's HTML page shows it (the notebooks draw them
all); adding a chart is an entry, its SQL file and its drawer. `TITLES`, `QUERIES` and `PAGE` are
views of `CHARTS`. Figures are built with `matplotlib.figure.Figure`, never pyplot: no global
state, no GUI backend, safe in any thread; `png_bytes` renders one with the Agg canvas. Every chart
draws an empty state instead of failing, so a young warehouse still gets a page.

The queries are plain SQL that DuckDB and PostgreSQL both run. `frame(engine, name)` (and
`read(engine, sql)` for any query on `analytics.*`) runs one through a `devportal.engines`
engine and returns the same DataFrame on either: every value is made a plain Python value by
`plain` (Decimal, numpy and pandas scalars, timestamps with a time zone) before pandas sees it,
so the report, its page and the notebook show the same figures whichever engine they read.

Labels that come from the API (platform names) are drawn through `display.chart_label`: one
line, no control characters, shortened, and `$` escaped, since matplotlib would read `$...$` as
mathematics and fail the whole page on a bad formula. Bars are placed by position, not by label,
so two names that read alike stay two bars, and legends get their labels explicitly, so a name
starting with `_` (matplotlib's mark for "leave out of the legend") is still shown.
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devportal import display
from devportal.errors import DevportalError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from devportal.engines import Engine

ACTIVE_COLOR = "#2f6f9f"
CANCELED_COLOR = "#e08a2c"
RATE_COLOR = "#b8323a"
MUTED_COLOR = "#888888"
# one colour per billing period and per platform, in the order they are drawn
SERIES_COLORS = ("#2f6f9f", "#e08a2c", "#4c9a5b", "#8a5fb0", "#b8323a", "#6b6b6b", "#c9a227")
# the days the expiry calendar covers: its query's window (sql/charts/expiry_calendar.sql,
# `interval '60 days'`) and its axis
EXPIRY_DAYS = 60

# The charts' queries are files in `sql/charts/`, one per chart of CHARTS, each opening
# with a comment saying what the chart shows; `sql/report/` holds the report's. They ship as
# package data beside the models (a link to the repository's sql/ in a checkout). Each names the
# model(s) it reads as `analytics.<model>`, which `qualified` turns into the engine's full name,
# and is portable SQL run as written (no translation) by DuckDB and PostgreSQL alike.
SQL_DIR = Path(__file__).parent / "sql"
CHARTS_DIR = "charts"


@functools.cache
def query_file(name: str) -> str:
    """The query in `sql/<NAME>.sql` (e.g. "charts/monthly_churn", "report/figures"), read on
    first use and kept. A missing file is a DevportalError saying to reinstall."""
    path = SQL_DIR / f"{name}.sql"
    try:
        return path.read_text(encoding="utf-8").strip().rstrip(";").strip()
    except OSError as err:
        raise DevportalError(
            f"sql/{name}.sql cannot be read ({err.strerror or err}); "
            "reinstall devportal, which ships it"
        ) from err


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


def _figure(
    name: str, frame: pd.DataFrame, height: float = 3.4, empty: str = "no data yet"
) -> tuple[Figure, Any]:
    """The figure of chart NAME and its axes, titled. For an empty FRAME the figure shows the
    empty state (EMPTY) and the axes are None: there is nothing to draw."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, height), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(TITLES[name])
    if not frame.empty:
        return fig, ax
    ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])
    return fig, None


def _integer_ticks(axis: Any) -> None:
    """Whole-number ticks only on AXIS (`ax.xaxis` or `ax.yaxis`): the values are counts."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def usable_over_time(daily: pd.DataFrame) -> Figure:
    """Stacked area: active, canceled-but-usable and (when there are any) other-status
    subscribers per day, by the status as sent, so the stack is every usable subscriber."""
    fig, ax = _figure("usable_over_time", daily)
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
    labels = _month_labels(monthly["month"], monthly["is_complete"])
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
    """Stacked bars per day: usable subscriptions expiring, by treatment: active (renew),
    canceled (churn), other (a status not mapped: neither)."""
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
        ("other", MUTED_COLOR, "other status: neither"),
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
    positions = range(len(ordered))
    ax.barh(positions, ordered["users"].astype(float), color=ACTIVE_COLOR)
    ax.set_yticks(positions, [display.chart_label(str(p)) for p in ordered["platform"]])
    ax.set_xlabel("users")
    _integer_ticks(ax.xaxis)
    return fig


def _month_labels(months: Any, complete: Any) -> list[str]:
    """`YYYY-MM` per month, `(to date)` after one not over yet."""
    return [
        f"{m:%Y-%m}" + ("" if done else " (to date)")
        for m, done in zip(months, complete, strict=True)
    ]


def cohort_label(cohort: str, month: date, is_backfill: bool, size: int) -> str:
    """A cohort's row label: its month (for the first sync's backfill, that sync's month and
    `backfill`) and its size."""
    name = f"{month:%Y-%m} backfill" if is_backfill else str(cohort)
    return f"{name} (n={size})"


def cohort_retention(cohorts: pd.DataFrame) -> Figure:
    """Heat map: one row per cohort (the backfill of the first sync first, then by month first
    seen), one column per month since; each cell the share of the cohort still usable, as a
    colour and a percent. Cells of a month not over yet are marked `*`; no cell, no month yet."""
    import numpy as np

    rows = cohorts.drop_duplicates("cohort")
    fig, ax = _figure("cohort_retention", cohorts, height=max(2.6, 0.42 * len(rows) + 1.8))
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


def _percent_formatter() -> Any:
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(xmax=1.0, decimals=0)


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
    each day since first seen, with the censored ones (still subscribed when last seen) ticked,
    the 50% line and the median lifetime when the curve reaches it."""
    fig, ax = _figure(
        "survival_curve",
        curve,
        empty="no data yet: the curve follows the subscriptions first seen after the first sync",
    )
    if ax is None:
        return fig
    days = [0, *curve["day"].astype(int).tolist()]
    survival = [1.0, *curve["survival"].astype(float).tolist()]
    ax.step(days, survival, where="post", color=ACTIVE_COLOR, label="still subscribed")
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
    ax.axhline(0.5, color=MUTED_COLOR, linestyle="--", linewidth=1)
    median = median_lifetime(curve)
    if median is not None:
        ax.axvline(median, color=RATE_COLOR, linestyle=":", linewidth=1.5)
        ax.annotate(
            f"median {median} days",
            xy=(median, 0.5),
            xytext=(6, 6),
            textcoords="offset points",
            color=RATE_COLOR,
        )
    else:
        ax.annotate(
            "median: not reached yet",
            xy=(0, 0.5),
            xytext=(6, 6),
            textcoords="offset points",
            color=MUTED_COLOR,
        )
    # a little room left of day 0: a drop on day 0 would hide in the axis
    span = max(days[-1], 1)
    ax.set_xlim(-0.02 * span, 1.04 * span)
    ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(_percent_formatter())
    ax.set_xlabel("days since first seen")
    ax.set_ylabel("still subscribed")
    _integer_ticks(ax.xaxis)
    ax.legend(loc="lower left", frameon=False)
    return fig


def _rates_by(
    name: str,
    frame: pd.DataFrame,
    series: str,
    rate: str,
    ylabel: str,
    first: tuple[str, ...] = (),
) -> Figure:
    """Lines: RATE per month, one line per value of SERIES (those in FIRST first, in that
    order, then the others by name); `all` is drawn dark and thicker, as the total."""
    fig, ax = _figure(name, frame)
    if ax is None:
        return fig
    months = frame.drop_duplicates("month").sort_values("month")
    labels = _month_labels(months["month"], months["is_complete"])
    position = {m: i for i, m in enumerate(months["month"])}
    # a series without a single rate (nothing decided in any month) has no line to draw
    present = set(frame[frame[rate].notna()][series].astype(str))
    names = [s for s in first if s in present] + sorted(present - set(first))
    colors = iter(SERIES_COLORS * len(names))
    lines = []
    for value in names:
        rows = frame[frame[series].astype(str) == value].sort_values("month")
        total = value == "all"
        (line,) = ax.plot(
            [position[m] for m in rows["month"]],
            rows[rate].astype(float),
            marker="o",
            color="#222222" if total else next(colors),
            linewidth=2.4 if total else 1.5,
        )
        lines.append(line)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(_percent_formatter())
    ax.set_ylabel(ylabel)
    if names:
        # beside the plot: rates near 100% leave no room for it inside
        labels = [display.chart_label(value) for value in names]
        ax.legend(lines, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    else:
        ax.text(0.5, 0.5, "no rate yet", ha="center", va="center", transform=ax.transAxes)
    return fig


def monthly_renewals(renewals: pd.DataFrame) -> Figure:
    """Lines: renewal rate per month (renewed / (renewed + churned) of those that came due),
    for all and per billing period."""
    return _rates_by(
        "monthly_renewals",
        renewals,
        "period",
        "renewal_rate",
        "renewed of those decided",
        ("all", "monthly", "yearly"),
    )


def churn_by_platform(churn: pd.DataFrame) -> Figure:
    """Lines: churn rate per month (churned / subscribers at its start), one per platform."""
    return _rates_by(
        "churn_by_platform", churn, "platform", "churn_rate", "churned of subscribers at start"
    )


def reactivations(monthly: pd.DataFrame) -> Figure:
    """Stacked bars per month: canceled subscriptions saved before they ran out, and expired
    ones won back."""
    fig, ax = _figure("reactivations", monthly)
    if ax is None:
        return fig
    labels = _month_labels(monthly["month"], monthly["is_complete"])
    positions = list(range(len(labels)))
    saved = monthly["saved"].astype(float).tolist()
    won_back = monthly["won_back"].astype(float).tolist()
    ax.bar(positions, saved, color=ACTIVE_COLOR, label="saved (reactivated before expiry)")
    ax.bar(positions, won_back, bottom=saved, color=CANCELED_COLOR, label="won back (after expiry)")
    ax.set_xticks(positions, labels, rotation=45, ha="right")
    ax.set_ylabel("subscriptions")
    top = max([a + b for a, b in zip(saved, won_back, strict=True)] or [0.0])
    ax.set_ylim(0, max(1.0, top) * 1.35)
    _integer_ticks(ax.yaxis)
    ax.legend(loc="upper left", frameon=False)
    return fig


# -- the charts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chart:
    """One chart: NAME, TITLE, its query `sql/charts/<SQL>`, the function drawing the query's
    DataFrame (DATED: it also takes the report's `as_of`), and whether the HTML page shows it."""

    name: str
    title: str
    sql: str
    drawer: Callable[..., Figure]
    on_page: bool
    dated: bool = False

    @property
    def query(self) -> str:
        """Its SQL, read from the file on first use (`query_file`)."""
        return query_file(f"{CHARTS_DIR}/{self.sql.removesuffix('.sql')}")

    def draw(self, frame: pd.DataFrame, as_of: datetime | None = None) -> Figure:
        return self.drawer(frame, as_of) if self.dated else self.drawer(frame)


# Every chart, in the notebooks' order; those `on_page`, in this order, make the HTML page.
CHARTS: tuple[Chart, ...] = (
    Chart("usable_over_time", "Usable subscribers over time", "usable_over_time.sql",
          usable_over_time, on_page=True),
    Chart("monthly_churn", "Monthly churn", "monthly_churn.sql", monthly_churn, on_page=True),
    Chart("expiry_calendar", f"Expiry calendar, next {EXPIRY_DAYS} days", "expiry_calendar.sql",
          expiry_calendar, on_page=True, dated=True),
    Chart("users_by_platform", "Users by platform", "users_by_platform.sql", users_by_platform,
          on_page=True),
    Chart("cohort_retention", "Cohort retention: share still usable, by month since first seen",
          "cohort_retention.sql", cohort_retention, on_page=True),
    Chart("survival_curve", "Subscription survival (Kaplan-Meier)", "survival_curve.sql",
          survival_curve, on_page=True),
    Chart("monthly_renewals", "Renewal rate by billing period", "monthly_renewals.sql",
          monthly_renewals, on_page=False),
    Chart("churn_by_platform", "Churn rate by platform", "churn_by_platform.sql",
          churn_by_platform, on_page=False),
    Chart("reactivations", "Reactivations", "reactivations.sql", reactivations, on_page=False),
)  # fmt: skip
BY_NAME: dict[str, Chart] = {chart.name: chart for chart in CHARTS}
TITLES: dict[str, str] = {chart.name: chart.title for chart in CHARTS}
# The charts of the report's HTML page, in page order (the notebooks draw every chart).
PAGE: tuple[str, ...] = tuple(chart.name for chart in CHARTS if chart.on_page)


class _Queries(Mapping[str, str]):
    """The charts' queries by chart name (CHARTS' order), each read when first asked for."""

    def __getitem__(self, name: str) -> str:
        return BY_NAME[name].query

    def __iter__(self) -> Iterator[str]:
        return iter(BY_NAME)

    def __len__(self) -> int:
        return len(BY_NAME)


# Live subscriptions only, like the report. `print(QUERIES["monthly_churn"])` shows one.
QUERIES: Mapping[str, str] = _Queries()


def draw(name: str, frame: pd.DataFrame, as_of: datetime | None = None) -> Figure:
    """The figure of chart NAME (a key of QUERIES) for its query's FRAME."""
    return BY_NAME[name].draw(frame, as_of)


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG, rendered by the Agg canvas (no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # attaches itself as the figure's canvas
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()
