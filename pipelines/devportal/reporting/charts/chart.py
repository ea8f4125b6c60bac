"""One chart: `Chart` (its name, title, query file, drawer, on the page or not, what it needs),
and the figure its drawer draws on.

Honest with short history: each chart says what it still `needs` (`Chart.needs`: no rows yet, a
single day, no month watched from its start, no prices) and then draws that one line instead of
a plot (`chart_figure`), never an empty plot area and never a zero that was not measured; the
report's page shows the line as text.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from devportal.reporting.charts.queries import CHARTS_DIR, query_file
from devportal.reporting.charts.style import month_tick_labels

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def _no_rows(frame: pd.DataFrame) -> str | None:
    return "no data yet" if frame.empty else None


@dataclass(frozen=True)
class Chart:
    """One chart: NAME, TITLE, its query `sql/charts/<SQL>` (`<name>_chart.sql`), the function drawing the query's
    DataFrame (DATED: it also takes the report's `as_of`), whether the HTML page shows it, and
    NEEDS: what the chart still needs before it can show anything (no rows, too little history,
    no prices), as the one line shown instead of an empty plot, or None when it can draw."""

    name: str
    title: str
    sql: str
    drawer: Callable[..., Figure]
    on_page: bool
    dated: bool = False
    needs: Callable[[pd.DataFrame], str | None] = _no_rows
    # what it counts is seen only between two syncs: after one sync its zeros are no
    # measurement (`needs_history`)
    between_syncs: str | None = None

    @property
    def query(self) -> str:
        """Its SQL, read from the file on first use (`query_file`)."""
        return query_file(f"{CHARTS_DIR}/{self.sql.removesuffix('.sql')}")

    def draw(self, frame: pd.DataFrame, as_of: datetime | None = None) -> Figure:
        return self.drawer(frame, as_of) if self.dated else self.drawer(frame)

    def needs_history(self, frame: pd.DataFrame, history: bool) -> str | None:
        """What the chart still needs (`needs`), knowing whether the warehouse has HISTORY (a
        sync after the first): a chart of what is seen between two syncs has none without."""
        if not history and self.between_syncs is not None:
            return f"not measurable yet (needs a second sync: {self.between_syncs})"
        return self.needs(frame)


def chart_figure(chart: Chart, frame: pd.DataFrame, height: float = 3.4) -> tuple[Figure, Any]:
    """The figure of CHART and its axes, titled. When the chart's data cannot show anything
    yet (`Chart.needs`: no rows, too little history, no prices) the figure is that one line,
    with no plot area, and the axes are None: there is nothing to draw."""
    # deferred: matplotlib costs ~0.3 s at startup
    from matplotlib.figure import Figure

    note = chart.needs(frame)
    fig = Figure(figsize=(8.0, 1.1 if note else height), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(chart.title)
    if note is None:
        return fig, ax
    ax.set_axis_off()
    ax.text(0.5, 0.4, note, ha="center", va="center", wrap=True, transform=ax.transAxes)
    return fig, None


def note_under_title(ax: Any, *lines: str) -> None:
    """LINES under the chart's title, inside the figure, small and grey: what a reader must
    know to read it (what it leaves out, what is not measurable yet), never drawn over the plot
    or its axes. The title moves up to the figure's own (`suptitle`); constrained layout keeps
    both clear of the plot."""
    lines = tuple(line for line in lines if line)
    if not lines:
        return
    figure = ax.get_figure()
    before = ax.get_title()
    if not figure.get_suptitle():
        # the first note: the chart's title becomes the figure's
        figure.suptitle(before, fontsize="large")
        before = ""
    wrapped = [textwrap.fill(line, 125) for line in lines]
    ax.set_title("\n".join([before, *wrapped] if before else wrapped), fontsize=8.5, color="#555")


def monthly_figure(chart: Chart, frame: pd.DataFrame) -> tuple[Figure, Any, list[int]]:
    """The figure of the monthly CHART with its months on the x axis (`month_tick_labels`), and
    their positions; the axes are None when there is nothing to draw (`chart_figure`)."""
    fig, ax = chart_figure(chart, frame)
    if ax is None:
        return fig, None, []
    labels = month_tick_labels(frame["month"], frame["is_complete"], frame.get("is_partial_start"))
    positions = list(range(len(labels)))
    ax.set_xticks(positions, labels, rotation=45, ha="right")
    return fig, ax, positions
