"""The report as text for people and programs: an aligned table for a terminal, JSON (one flat
object), CSV (metric,label,value) and Markdown. Text that came from the API (a platform's
name) is made safe for each format by `devportal.base.safe_text`: no control characters on a
terminal, no formula in a CSV cell, nothing Markdown would interpret; JSON keeps it exact.

Money is exact (`number_format.exact`, a Decimal at the currency's minor unit): JSON writes it as a
number with exactly those digits (`"arr": 1004779.56`, never a binary fraction's
`223321.83122399997`), CSV the same digits, people the same amount with separators."""

from __future__ import annotations

import csv
import io
import json
import secrets
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from devportal.base import safe_text
from devportal.base.errors import DevportalError
from devportal.reporting import number_format
from devportal.reporting.report.coverage import span_text
from devportal.reporting.report.figures import Metric, ReportFigures, Section

FORMATS = ("table", "json", "csv", "markdown")

# The minimum base of the highest-churn platform, its subscribers at the month's start (as
# sql/marts/report_figures.sql chooses it).
TOP_CHURN_MIN_BASE = 20
# What a figure that is missing (NULL) reads as, where "n/a" would not say why.
_MISSING_TEXT = {
    "median_lifetime_days": "not reached yet",
    # a measured month, but no platform with the minimum base (sql/marts/report_figures.sql)
    "top_churn_platform": f"no platform with {TOP_CHURN_MIN_BASE}+ subscribers at its start",
    "top_churn_platform_churn_rate": "n/a",
}


def _status_text(entry: Mapping[str, Any]) -> str:
    """One status of `other_statuses` for people: its name, usable count and treatment."""
    status = entry["status"]
    name = "(no status)" if status is None else status or "(empty status)"
    treated = entry["treated_as"]
    if treated != "other":
        how = f"treated as {treated}"
    elif status is None:
        how = "not a cancellation"
    else:
        how = "not a cancellation; set [analytics] status_map"
    return f"{name} {entry['usable']} ({how})"


def _text(metric: Metric, grouped: bool = False) -> str:
    """A value for people: counts as numbers (GROUPED: with thousands separators), money with
    thousands separators and its currency, rates as percents, days with their unit, missing as
    n/a (or what a missing figure means, `_MISSING_TEXT`; a figure the history cannot measure
    yet: "not measurable yet"), statuses as one line."""
    value = metric.value
    if metric.needs is not None:
        return "not measurable yet"
    if value is None:
        return _MISSING_TEXT.get(metric.key, "n/a")
    if metric.kind == "statuses":
        return ", ".join(_status_text(entry) for entry in value)
    if metric.kind == "needs":
        return "; ".join(f"{key}: needs {needs}" for key, needs in value.items())
    if metric.kind == "rate":
        return number_format.percent(value)
    if metric.kind == "money":
        return number_format.money(value, metric.unit)
    if metric.kind == "days":
        return f"{value:g} day" + ("" if value == 1 else "s")
    if metric.kind == "span":
        return span_text(value)
    if metric.kind == "time":
        return f"{value:%Y-%m-%d %H:%M:%S}"
    if metric.kind == "month":
        return f"{value:%Y-%m}"
    if metric.kind == "flag":
        return "yes" if value else "no"
    if metric.kind == "count" and grouped:
        return number_format.count(value)
    return str(value)


def _json_value(metric: Metric) -> Any:
    """A value for JSON and CSV (the figures are already one type per kind: `figures._figure`)."""
    value = metric.value
    if value is None:
        return None
    if metric.kind == "time":
        return value.isoformat(sep=" ")
    if metric.kind == "month":
        return f"{value:%Y-%m}"
    return value


def as_of_text(report: ReportFigures) -> str:
    return _text(report.sections[0].metrics[0])


# The kinds people read in a section's title or nowhere (JSON and CSV have them): months, flags
# and spans are in the titles, codes in the revenue title or labels, `needs` under each figure.
_UNSHOWN = ("month", "flag", "code", "needs", "span")


def _shown(section: Section) -> list[Metric]:
    """The metrics a table shows; while the section has a note and no money figure (no prices
    in the figures), only it; a note beside money figures (settings set now that they were not
    built with) a line under them."""
    notes = [m for m in section.metrics if m.kind == "note" and m.value is not None]
    shown = [m for m in section.metrics if m.kind not in (*_UNSHOWN, "note")]
    if notes and all(m.value is None for m in section.metrics if m.kind == "money"):
        return notes
    return shown + notes


# A row people read: (label, value text, how it is shown): "value" a label and its value,
# "statuses" a list under its count, "note" a line of its own (no label), "needs" the line
# under the figures saying what they still need.
Row = tuple[str, str, str]


def section_rows(section: Section, grouped: bool = False) -> list[Row]:
    """The rows of SECTION as people read them (table, Markdown, the page): every shown
    metric, and after the last of those that need the same history, one line saying what;
    the section's note (what its figures count over) a line under them all."""
    shown = _shown(section)
    rows: list[Row] = []
    for i, m in enumerate(shown):
        how = m.kind if m.kind in ("statuses", "note") else "value"
        rows.append((m.label, _text(m, grouped), how))
        following = shown[i + 1].needs if i + 1 < len(shown) else None
        if m.needs is not None and following != m.needs:
            rows.append(("", f"needs {m.needs}", "needs"))
    if section.note and shown and shown[0].kind != "note":
        rows.append(("", section.note, "needs"))
    return rows


def format_table(report: ReportFigures) -> str:
    """Aligned text for a terminal: every cell `safe_text.terminal` (one line, no controls). A
    list of statuses, a note and what figures need are lines of their own under their figures,
    outside the alignment."""
    safe = safe_text.terminal
    rows: list[tuple[str, str | None]] = []  # (label, value); value None: a line as it is
    for section in report.sections[1:]:
        rows.append((safe(section.title), ""))
        for label, text, how in section_rows(section):
            if how == "value":
                rows.append(("  " + safe(label), safe(text)))
            else:
                rows.append(("    " + safe(text), None))
    aligned = [(label, value) for label, value in rows if value is not None]
    width = max(len(label) for label, _ in aligned) + 2
    value_width = max(len(value) for _, value in aligned)
    lines = [
        f"Subscriptions as of {as_of_text(report)} (latest successful sync, server clock)",
        safe(report.basis),
        "",
    ]
    lines += [
        label if value is None else f"{label:<{width}}{value:>{value_width}}".rstrip()
        for label, value in rows
    ]
    return "\n".join(lines)


def format_json(report: ReportFigures) -> str:
    """One flat object, every figure at the top level; money (a Decimal) a JSON number with
    exactly its digits at the currency's minor unit (`exact_json`)."""
    return exact_json({m.key: _json_value(m) for m in report.metrics()})


def exact_json(values: Mapping[str, Any]) -> str:
    """VALUES as indented JSON, each Decimal written as the number it is ("1004779.58", "0.00",
    "1235"), where `json` would refuse it or, made a float, could print binary noise. Each
    Decimal goes through `json` as a placeholder string that no other value can hold (a random
    token), then the placeholder is replaced by its digits."""
    token = secrets.token_hex(8)
    exact: dict[str, str] = {}

    def placeholder(value: Any) -> Any:
        if not isinstance(value, Decimal):
            return value
        name = f"{token}:{len(exact)}"
        exact[name] = _decimal_text(value)
        return name

    text = json.dumps({key: placeholder(value) for key, value in values.items()}, indent=2)
    for name, digits in exact.items():
        text = text.replace(json.dumps(name), digits)
    return text


def _decimal_text(value: Decimal) -> str:
    """A finite Decimal as a JSON number with its own digits: 12.50 stays 12.50, never 1.25E+1."""
    if not value.is_finite():
        raise ValueError(f"no JSON number for {value}")
    return f"{value:f}"


def format_csv(report: ReportFigures) -> str:
    """metric,label,value rows; text cells `safe_text.csv_cell` (no formula for a spreadsheet,
    no control characters), numbers as they are."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["metric", "label", "value"])
    for m in report.metrics():
        # one cell: the line of statuses, of what the figures need
        value = _text(m) if m.kind in ("statuses", "needs") else _json_value(m)
        if isinstance(value, bool):
            value = "true" if value else "false"  # as JSON spells them, not Python
        cells = [m.key, m.label, "" if value is None else value]
        writer.writerow([safe_text.csv_cell(cell) for cell in cells])
    return buffer.getvalue().rstrip("\n")


def format_markdown(report: ReportFigures) -> str:
    """A Markdown table; every cell `safe_text.markdown_cell` (shown literally, one line). The
    basis line is a quote under the heading, bold when the list is partial."""
    cell = safe_text.markdown_cell
    basis = cell(report.basis)
    if report.partial:
        head, _, rest = basis.partition(":")
        basis = f"**{head}:**{rest}"
    lines = [f"## Subscriptions as of {as_of_text(report)}", "", f"> {basis}", ""]
    lines += ["| Figure | Value |", "|---|---:|"]
    for section in report.sections[1:]:
        lines.append(f"| **{cell(section.title)}** | |")
        for label, text, how in section_rows(section):
            if how in ("note", "needs"):
                lines.append(f"| *{cell(text)}* | |")
            else:
                lines.append(f"| {cell(label)} | {cell(text)} |")
    return "\n".join(lines)


def render(report: ReportFigures, fmt: str = "table") -> str:
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
