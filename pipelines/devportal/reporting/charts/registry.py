"""Every chart, in order: `CHARTS` and its views (`BY_NAME`, `TITLES`, `PAGE`, `QUERIES`),
`draw` and `frame` by chart name.

Each chart's entry (`Chart`: name, title, SQL file, drawer, on the page or not, needs) is
defined beside its drawer, in the module of its kind; this module puts them in order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from devportal.reporting.charts.chart import Chart
from devportal.reporting.charts.money import MRR_MOVEMENTS, MRR_OVER_TIME
from devportal.reporting.charts.monthly import (
    CHURN_BY_PLATFORM,
    MONTHLY_CHURN,
    MONTHLY_RENEWALS,
    REACTIVATIONS,
)
from devportal.reporting.charts.queries import read
from devportal.reporting.charts.retention import COHORT_RETENTION, SURVIVAL_CURVE
from devportal.reporting.charts.subscribers import (
    EXPIRY_CALENDAR,
    USABLE_OVER_TIME,
    USERS_BY_PLATFORM,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from devportal.warehouse.engines import Engine

# Every chart, in the notebooks' order; those `on_page`, in this order, make the HTML page: the
# money first (what an owner reads first), then subscribers, churn, expiries, users, retention.
CHARTS: tuple[Chart, ...] = (
    MRR_OVER_TIME,
    MRR_MOVEMENTS,
    USABLE_OVER_TIME,
    MONTHLY_CHURN,
    EXPIRY_CALENDAR,
    USERS_BY_PLATFORM,
    COHORT_RETENTION,
    SURVIVAL_CURVE,
    MONTHLY_RENEWALS,
    CHURN_BY_PLATFORM,
    REACTIVATIONS,
)
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


def frame(engine: Engine, name: str) -> pd.DataFrame:
    """The DataFrame of chart NAME (a key of QUERIES), read through ENGINE."""
    return read(engine, QUERIES[name])


def draw(name: str, frame: pd.DataFrame, as_of: datetime | None = None) -> Figure:
    """The figure of chart NAME (a key of QUERIES) for its query's FRAME."""
    return BY_NAME[name].draw(frame, as_of)
