"""The charts of the HTML report and the notebook: their queries and their matplotlib figures.

Each chart is one `Chart`: its name, title, query (a file in `sql/charts/`), the function
drawing the query's DataFrame, whether the report's HTML page shows it (the notebooks draw them
all) and what it still `needs` before it can show anything (then it draws that one line instead
of a plot, never an empty plot area or a zero that was not measured); adding a chart is an
entry beside its drawer, its SQL file, and its place in `CHARTS`. `TITLES`, `QUERIES` and
`PAGE` are views of `CHARTS`. `frame(engine, name)` (and `read(engine, sql)` for any query on
`analytics.*`) returns the same DataFrame on DuckDB and PostgreSQL, values made `plain`.

One job per module, imports running one way (queries <- style <- chart <- the charts <-
registry):

    queries      the files of `sql/charts/`, `sql/report/`; reading alike on any engine (`read`)
    style        colours, axes (counts, money, fitted rates), labels, month ticks, `png_bytes`
    chart        `Chart` (one entry: name, title, SQL file, drawer, on the page, needs), its figure
    money        MRR over time, MRR movements by month, `PRICES_HINT`
    subscribers  usable subscribers over time, the expiry calendar, users by platform
    monthly      monthly churn, renewal and churn rates by month, reactivations
    retention    cohort retention, the survival curve and its median lifetime
    registry     `CHARTS` in order, its views (`BY_NAME`, `TITLES`, `PAGE`, `QUERIES`), `draw`

Callers use the names below (`from devportal.reporting import charts; charts.frame(engine, name)`):
what the report's page, the notebooks and the tests use of the package. The rest is reached in
its module (`Chart` in `charts.chart`, the drawing helpers and colours in `charts.style`).
"""

from devportal.reporting.charts.money import PRICES_HINT
from devportal.reporting.charts.monthly import (
    churn_by_platform,
    monthly_churn,
    monthly_renewals,
    reactivations,
)
from devportal.reporting.charts.queries import plain, qualified, query_file, read
from devportal.reporting.charts.registry import BY_NAME, CHARTS, frame
from devportal.reporting.charts.retention import cohort_retention, median_lifetime, survival_curve
from devportal.reporting.charts.style import png_bytes
from devportal.reporting.charts.subscribers import (
    expiry_calendar,
    usable_over_time,
    users_by_platform,
)

__all__ = [
    "BY_NAME",
    "CHARTS",
    "PRICES_HINT",
    "churn_by_platform",
    "cohort_retention",
    "expiry_calendar",
    "frame",
    "median_lifetime",
    "monthly_churn",
    "monthly_renewals",
    "plain",
    "png_bytes",
    "qualified",
    "query_file",
    "reactivations",
    "read",
    "survival_curve",
    "usable_over_time",
    "users_by_platform",
]
