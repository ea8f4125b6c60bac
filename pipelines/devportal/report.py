"""The business report: the figures of the `analytics` models, as text or a page.

The figures are computed by the model `analytics.report_figures` (sql/marts/report_figures.sql,
whose header defines each one); this module reads its one row and formats it. They are (live
subscriptions only, all relative to `analytics.as_of`, never the wall clock):

- usable subscribers now: active, and canceled but usable until `expires_at` (in grace);
- the last full calendar month: churned, subscribers at its start, churn rate, and whether
  its base is an estimate (a month that began before the first sync);
- subscriptions expiring within 7 and 30 days: renewing (active) vs churning (canceled);
- the last 30 days, (as_of - 30 days, as_of]: new subscriptions and cancellations observed
  (backfill of the first sync excluded), and churned (expiries, as in monthly_churn).

Formats: an aligned text table, JSON (one flat object), CSV (metric,label,value) and Markdown.
`--html PATH` also writes one self-contained page: the figures and the charts of
`devportal.charts` as inline PNG images. The `devportal report` command is devportal.cli.report.
"""

from __future__ import annotations

import base64
import csv
import html as html_lib
import io
import json
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from devportal.errors import DevportalError, first_line
from devportal.models import render as qualify
from devportal.warehouse import catalog_of, connect

FORMATS = ("table", "json", "csv", "markdown")


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    value: Any
    kind: str = "count"  # count | rate | time | month | flag


@dataclass
class Section:
    title: str
    metrics: list[Metric] = field(default_factory=list)


@dataclass
class Report:
    """The figures, grouped as printed; `values()` is the flat {key: value} view."""

    as_of: datetime | None
    sections: list[Section]

    def values(self) -> dict[str, Any]:
        return {m.key: m.value for s in self.sections for m in s.metrics}

    def metrics(self) -> list[Metric]:
        return [m for s in self.sections for m in s.metrics]


# The figures are the model sql/marts/report_figures.sql (one row, one column per figure key);
# the report only reads that row and formats it.
_FIGURES_SQL = "select * from analytics.report_figures"

_REQUIRED = ("as_of", "subscriptions_current", "monthly_churn", "expiring_soon", "report_figures")


class _Reader:
    """Runs analytics queries on a read-only connection, qualified for its catalog."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.catalog = catalog_of(con)
        rows = con.execute(
            "select table_name from information_schema.tables "
            "where table_catalog = ? and table_schema = 'analytics'",
            [self.catalog],
        ).fetchall()
        self.tables = {r[0] for r in rows}

    def sql(self, sql: str) -> str:
        return qualify(sql, self.catalog)

    def _run(self, sql: str) -> Any:
        import duckdb

        try:
            return self.con.execute(self.sql(sql))
        except duckdb.Error as err:
            raise DevportalError(
                f"the warehouse's analytics tables do not answer the report ({first_line(err)}); "
                "run `devportal models` to rebuild them"
            ) from None

    def record(self, sql: str) -> dict[str, Any] | None:
        """The first row of SQL as {column: value}, or None when it returns no row."""
        cursor = self._run(sql)
        row = cursor.fetchone()
        if row is None:
            return None
        return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}

    def frame(self, sql: str) -> Any:
        return self._run(sql).df()


# How the figures are grouped and labelled: (section title, ((key, label, kind), ...)).
_LAYOUT: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = (
    ("As of", (("as_of", "latest successful sync (server clock)", "time"),)),
    (
        "Usable subscribers",
        (
            ("usable_subscribers", "usable now", "count"),
            ("usable_active", "active", "count"),
            ("usable_canceled", "canceled, usable until expiry", "count"),
        ),
    ),
    (
        "Last full month: {month}",
        (
            ("last_full_month", "month", "month"),
            ("last_full_month_churned", "churned", "count"),
            ("last_full_month_subscribers_at_start", "subscribers at start", "count"),
            ("last_full_month_churn_rate", "churn rate", "rate"),
            ("last_full_month_is_estimate", "base is an estimate", "flag"),
        ),
    ),
    (
        "Expiring within 7 days",
        (
            ("expiring_7d", "expiring", "count"),
            ("expiring_7d_renewing", "renewing (active)", "count"),
            ("expiring_7d_churning", "churning (canceled)", "count"),
        ),
    ),
    (
        "Expiring within 30 days",
        (
            ("expiring_30d", "expiring", "count"),
            ("expiring_30d_renewing", "renewing (active)", "count"),
            ("expiring_30d_churning", "churning (canceled)", "count"),
        ),
    ),
    (
        "Last 30 days",
        (
            ("new_30d", "new subscriptions", "count"),
            ("canceled_30d", "cancellations", "count"),
            ("churned_30d", "churned (expired)", "count"),
        ),
    ),
)


def _figures(reader: _Reader) -> dict[str, Any]:
    """The one row of analytics.report_figures; one-line errors when the models are not built."""
    missing = [t for t in _REQUIRED if t not in reader.tables]
    if missing:
        raise DevportalError(
            f"the warehouse has no analytics.{missing[0]}: run `devportal models` "
            "(or a sync) to build the models first"
        )
    figures = reader.record(_FIGURES_SQL)
    if figures is None:
        raise DevportalError(
            "the warehouse's analytics.report_figures has no row: run `devportal models` "
            "to rebuild it"
        )
    return figures


def _collect(reader: _Reader) -> Report:
    figures = _figures(reader)
    month = figures["last_full_month"]
    month_label = f"{month:%Y-%m}" if month is not None else "none yet"
    if figures["last_full_month_is_estimate"]:
        month_label += " (estimated base)"
    sections = [
        Section(
            title.format(month=month_label),
            [Metric(key, label, figures[key], kind) for key, label, kind in metrics],
        )
        for title, metrics in _LAYOUT
    ]
    return Report(as_of=figures["as_of"], sections=sections)


def collect(warehouse: str | Path) -> Report:
    """The report's figures, read from the warehouse (read-only).

    The warehouse is opened by `devportal.warehouse.connect`, like every DuckDB connection of
    the models and the report: no extension autoload, one-line errors (missing, not a DuckDB
    database, busy, damaged).
    """
    with connect(warehouse, read_only=True) as con:
        return _collect(_Reader(con))


# -- formats ----------------------------------------------------------------------------------


def _text(metric: Metric) -> str:
    """A value for people: counts as numbers, rates as percents, missing as n/a."""
    value = metric.value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if metric.kind == "rate":
        return f"{value * 100:.1f}%"
    if metric.kind == "time":
        return f"{value:%Y-%m-%d %H:%M:%S}"
    if metric.kind == "month":
        return f"{value:%Y-%m}"
    if metric.kind == "flag":
        return "yes" if value else "no"
    return str(value)


def _json_value(metric: Metric) -> Any:
    value = metric.value
    if value is None:
        return None
    if metric.kind == "time":
        return value.isoformat(sep=" ")
    if metric.kind == "month":
        return f"{value:%Y-%m}"
    if metric.kind == "rate":
        return float(value)
    if metric.kind == "flag":
        return bool(value)
    return int(value)


def format_table(report: Report) -> str:
    rows: list[tuple[str, str]] = []
    for section in report.sections[1:]:
        rows.append((section.title, ""))
        rows.extend(
            ("  " + m.label, _text(m)) for m in section.metrics if m.kind not in ("month", "flag")
        )
    width = max(len(label) for label, _ in rows) + 2
    value_width = max(len(value) for _, value in rows)
    as_of = _text(report.sections[0].metrics[0])
    lines = [f"Subscriptions as of {as_of} (latest successful sync, server clock)", ""]
    lines += [f"{label:<{width}}{value:>{value_width}}".rstrip() for label, value in rows]
    return "\n".join(lines)


def format_json(report: Report) -> str:
    return json.dumps({m.key: _json_value(m) for m in report.metrics()}, indent=2)


def format_csv(report: Report) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["metric", "label", "value"])
    for m in report.metrics():
        value = _json_value(m)
        if isinstance(value, bool):
            value = "true" if value else "false"  # as JSON spells them, not Python
        writer.writerow([m.key, m.label, "" if value is None else value])
    return buffer.getvalue().rstrip("\n")


def format_markdown(report: Report) -> str:
    as_of = _text(report.sections[0].metrics[0])
    lines = [f"## Subscriptions as of {as_of}", "", "| Figure | Value |", "|---|---:|"]
    for section in report.sections[1:]:
        lines.append(f"| **{section.title}** | |")
        lines.extend(
            f"| {m.label} | {_text(m)} |"
            for m in section.metrics
            if m.kind not in ("month", "flag")
        )
    return "\n".join(lines)


def render(report: Report, fmt: str = "table") -> str:
    """REPORT in format FMT (one of FORMATS)."""
    formatters = {
        "table": format_table,
        "json": format_json,
        "csv": format_csv,
        "markdown": format_markdown,
    }
    if fmt not in formatters:
        raise DevportalError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    return formatters[fmt](report)


# -- the HTML page ----------------------------------------------------------------------------

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222; }}
h1 {{ font-size: 1.5rem; margin-bottom: 0.2rem; }}
p.note {{ color: #666; margin-top: 0; }}
table {{ border-collapse: collapse; margin: 1rem 0 2rem; }}
td {{ padding: 0.2rem 1.2rem 0.2rem 0; }}
td.value {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.section td {{ font-weight: 600; padding-top: 0.8rem; }}
td.sub {{ padding-left: 1.2rem; }}
figure {{ margin: 0 0 2rem; }}
figure img {{ max-width: 100%; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p class="note">All figures are live subscriptions, computed as of the latest successful sync
(the API server's clock), not the time this page was written.</p>
<table>
{rows}
</table>
{charts}
</body>
</html>
"""


def _chart_images(reader: _Reader, as_of: datetime | None) -> list[tuple[str, bytes]]:
    from devportal import charts

    images = []
    for name, sql in charts.QUERIES.items():
        needed = set(re.findall(r"analytics\.(\w+)", sql))
        if not needed <= reader.tables:
            continue  # e.g. users before any model could build it
        fig = charts.draw(name, reader.frame(sql), as_of)
        images.append((charts.TITLES[name], charts.png_bytes(fig)))
    return images


def format_html(report: Report, images: Sequence[tuple[str, bytes]]) -> str:
    esc = html_lib.escape
    as_of = _text(report.sections[0].metrics[0])
    rows = []
    for section in report.sections[1:]:
        rows.append(f'<tr class="section"><td colspan="2">{esc(section.title)}</td></tr>')
        rows.extend(
            f'<tr><td class="sub">{esc(m.label)}</td><td class="value">{esc(_text(m))}</td></tr>'
            for m in section.metrics
            if m.kind not in ("month", "flag")
        )
    figures = [
        f'<figure><img alt="{esc(title)}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"></figure>'
        for title, png in images
    ]
    return _PAGE.format(
        title=esc(f"Subscriptions as of {as_of}"), rows="\n".join(rows), charts="\n".join(figures)
    )


def write_html(warehouse: str | Path, path: str | Path) -> Path:
    """Write the self-contained HTML page (figures and charts) to PATH."""
    with connect(warehouse, read_only=True) as con:
        reader = _Reader(con)
        report = _collect(reader)
        images = _chart_images(reader, report.as_of)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(format_html(report, images), encoding="utf-8")
    except OSError as err:
        raise DevportalError(f"cannot write {target}: {err.strerror or err}") from None
    return target


def print_report(warehouse: str | Path, fmt: str = "table", html: str | Path | None = None) -> None:
    """Print the report in FMT; with HTML, also write the page there."""
    if fmt not in FORMATS:
        raise DevportalError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    print(render(collect(warehouse), fmt))
    if html is not None:
        target = write_html(warehouse, html)
        # stdout stays one document for json/csv; the note goes with the logs
        print(f"wrote {target}", file=sys.stderr if fmt in ("json", "csv") else sys.stdout)
