"""The business report: the figures of the `analytics` models, as text or a page.

One job per module, imports running one way (coverage <- figures <- formats <- page):

    coverage  what the history can measure yet: the basis line, what each figure needs, the window
    figures   reading the figures from the models (either engine), one type per kind, the layout
    formats   the text formats: table, JSON, CSV, Markdown (`render`)
    page      the HTML page with the charts; `print_report`, what `devportal report` runs

Callers use the names below (`from devportal.reporting import report; report.print_report(...)`):
what the command, the alerts and the tests use of the package. A test of one module's own
helpers imports them from that module.
"""

from devportal.reporting.report.coverage import WINDOW_DAYS, span_text
from devportal.reporting.report.figures import Unapplied, collect
from devportal.reporting.report.formats import FORMATS
from devportal.reporting.report.page import print_report

__all__ = [
    "FORMATS",
    "WINDOW_DAYS",
    "Unapplied",
    "collect",
    "print_report",
    "span_text",
]
