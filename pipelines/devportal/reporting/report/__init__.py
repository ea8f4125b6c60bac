"""The business report: the figures of the `analytics` models, as text or a page.

One job per module, imports running one way (coverage <- figures <- formats <- page):

    coverage  what the history can measure yet: the basis line, what each figure needs, the window
    figures   reading the figures from the models (either engine), one type per kind, the layout
    formats   the text formats: table, JSON, CSV, Markdown (`render`)
    page      the HTML page with the charts; `print_report`, what `devportal report` runs

Callers use the names below (`from devportal.reporting import report; report.print_report(...)`); the
few underscored ones are re-exported for the tests that check them directly.
"""

from devportal.reporting.report.coverage import (
    FULL_MONTH,
    LAST_30_DAYS_NEEDS,
    SECOND_SYNC,
    WINDOW_DAYS,
    span_text,
)
from devportal.reporting.report.figures import (
    _FIGURES_SQL,
    _KINDS,
    _MONEY_KEYS,
    BASIS_KEY,
    BASIS_LABEL,
    FORECAST_SCOPE,
    Metric,
    ReportFigures,
    Section,
    _figure,
    _report,
    collect,
)
from devportal.reporting.report.formats import (
    FORMATS,
    _text,
    exact_json,
    format_csv,
    format_json,
    format_markdown,
    format_table,
    render,
)
from devportal.reporting.report.page import format_html, print_report, write_html

__all__ = [
    "BASIS_KEY",
    "BASIS_LABEL",
    "FORECAST_SCOPE",
    "FORMATS",
    "FULL_MONTH",
    "LAST_30_DAYS_NEEDS",
    "SECOND_SYNC",
    "WINDOW_DAYS",
    "_FIGURES_SQL",
    "_KINDS",
    "_MONEY_KEYS",
    "Metric",
    "ReportFigures",
    "Section",
    "_figure",
    "_report",
    "_text",
    "collect",
    "exact_json",
    "format_csv",
    "format_html",
    "format_json",
    "format_markdown",
    "format_table",
    "print_report",
    "render",
    "span_text",
    "write_html",
]
