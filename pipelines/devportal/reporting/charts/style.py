"""What every chart is drawn with: the colours, the axes (counts, money, fitted rates), the
labels beside points and bars, the months' tick labels, and the PNG rendering.

Values are written where a person looks (thousands separators and the currency by
`devportal.reporting.number_format`), and rate axes fit their rates. Figures are `matplotlib.figure.Figure`,
never pyplot: no global state, no GUI backend, safe in any thread; `png_bytes` renders one with
the Agg canvas.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

from devportal.reporting import number_format

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

ACTIVE_COLOR = "#2f6f9f"
CANCELED_COLOR = "#e08a2c"
RATE_COLOR = "#b8323a"
MUTED_COLOR = "#888888"
# one colour per billing period and per platform, in the order they are drawn
SERIES_COLORS = ("#2f6f9f", "#e08a2c", "#4c9a5b", "#8a5fb0", "#b8323a", "#6b6b6b", "#c9a227")


def count_axis(axis: Any) -> None:
    """AXIS (`ax.xaxis` or `ax.yaxis`) shows counts: whole-number ticks, thousands separated."""
    # deferred: matplotlib costs ~0.3 s at startup
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))
    axis.set_major_formatter(FuncFormatter(lambda value, _: number_format.count(value)))


def money_axis(axis: Any, currency: str | None) -> None:
    """AXIS shows money: thousands separated, whole units, the currency code."""
    # deferred: matplotlib costs ~0.3 s at startup
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(
        FuncFormatter(lambda value, _: number_format.money(value, currency, cents=False))
    )


def label_point(
    ax: Any,
    x: Any,
    y: float,
    text: str,
    color: str = "#222222",
    below: bool = False,
    ha: str = "center",
) -> None:
    """TEXT beside the point (X, Y), small: a value where a person looks."""
    ax.annotate(
        text,
        xy=(x, y),
        xytext=(0, -11 if below else 5),
        textcoords="offset points",
        ha=ha,
        va="top" if below else "bottom",
        fontsize=8,
        color=color,
    )


def fit_rate_axis(ax: Any, rates: Any) -> None:
    """The y axis of rates (0..1) fitted to RATES: churn of 0-5% is not drawn on 0-100%, nor
    renewals of 90-100%; an axis that comes near 0 starts at 0. Percent ticks."""
    # deferred: matplotlib costs ~0.3 s at startup
    from matplotlib.ticker import PercentFormatter

    values = [float(r) for r in rates if r is not None and not math.isnan(float(r))]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    pad = max((high - low) * 0.2, 0.01)
    bottom, top = max(0.0, low - pad), min(1.0, high + pad)
    if bottom < (top - bottom) * 0.5:
        bottom = 0.0
    ax.set_ylim(bottom, top + (top - bottom) * 0.08)
    ax.yaxis.set_major_formatter(
        PercentFormatter(xmax=1.0, decimals=1 if top - bottom < 0.1 else 0)
    )


# The label of the part of a day's figure resting on an estimated start: a subscription first
# seen at a sync started between it and the sync before, on a day the models estimate.
ESTIMATED_LABEL = "estimated: started between two syncs, start day estimated"


def estimated_part(frame: pd.DataFrame, column: str) -> pd.Series | None:
    """The part of each row's figure resting on an estimated start (COLUMN, when the query
    gives it), as floats; None when there is none to set apart."""
    if column not in frame:
        return None
    values = frame[column].astype(float).fillna(0.0)
    return values if float(values.abs().sum()) > 0 else None


def estimated_band(ax: Any, days: Any, low: Any, high: Any) -> None:
    """The band from LOW to HIGH over DAYS hatched and pale: the part of a figure that rests on
    an estimate (`ESTIMATED_LABEL`), set apart from what the syncs saw."""
    ax.fill_between(
        days, low, high, facecolor="white", edgecolor=MUTED_COLOR, hatch="///", alpha=0.6,
        linewidth=0, label=ESTIMATED_LABEL,
    )  # fmt: skip


def currency_of(frame: pd.DataFrame) -> str | None:
    if "currency" not in frame:
        return None
    codes = frame["currency"].dropna()
    return str(codes.iloc[-1]) if len(codes) else None


def month_tick_labels(months: Any, complete: Any, partial_start: Any = None) -> list[str]:
    """`YYYY-MM` per month, `(to date)` after one not over yet, `(from 1st sync)` after one
    that began before the first sync (PARTIAL_START, when given)."""
    partial = [False] * len(months) if partial_start is None else list(partial_start)
    return [
        f"{m:%Y-%m}" + ("" if done else " (to date)") + (" (from 1st sync)" if bool(first) else "")
        for m, done, first in zip(months, complete, partial, strict=True)
    ]


def percent_formatter() -> Any:
    # deferred: matplotlib costs ~0.3 s at startup
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(xmax=1.0, decimals=0)


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG, rendered by the Agg canvas (no display needed)."""
    # deferred: matplotlib costs ~0.3 s at startup
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # attaches itself as the figure's canvas
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()
