"""The business report: the figures of the `analytics` models, as text or a page.

The figures are computed by the model `analytics.report_figures` (sql/marts/report_figures.sql,
whose header defines each one); this module reads its one row and formats it. They are (live
subscriptions only, all relative to `analytics.as_of`, never the wall clock):

- usable subscribers now: active, canceled but usable until `expires_at` (in grace), and
  other: statuses the spec does not show (`trialing`, `past_due`, ...), by the status as sent,
  so that usable = active + canceled + other; the other line names each such status with its
  count and its treatment (`[analytics] status_map`, the seed `analytics.status_map`; a status
  not in it is usable until expiry, never a cancellation). These figures (`usable_other`,
  `other_statuses`, `expiring_*_other`) are there when a live subscription read has such a
  status, and left out otherwise, so a report of the two statuses the spec shows is unchanged;
  `other_statuses` is the one figure that is a list (JSON: `[{"status", "treated_as",
  "usable", "subscriptions"}]`; text elsewhere), read from `analytics.subscriptions_current`;
- the last full calendar month: churned, subscribers at its start, churn rate, and whether
  its base is an estimate (a month that began before the first sync);
- subscriptions expiring within 7 and 30 days: renewing (active) vs churning (canceled), and
  other (a status not mapped: neither), by their treatment;
- the last 30 days, (as_of - 30 days, as_of]: new subscriptions and cancellations observed
  (backfill of the first sync excluded), and churned (expiries, as in monthly_churn);
- renewals and retention: of the subscriptions that came due in the last full month, how many
  renewed and the renewal rate (renewed / (renewed + churned): the ones still undecided are
  left out; monthly_renewals), the median lifetime since first seen of the Kaplan-Meier curve
  (survival_curve; "not reached yet" while the curve has not come down to 50%), and the
  platform with the highest churn rate in the last full month (churn_by_platform).

Every format also says, in one line (`data_basis`), what the subscription figures rest on
(`analytics.as_of`): the whole live list read and verified by a sweep at a time, and the window
syncs (and unverified sweeps) since; or, with no verified sweep in the history, that the list is
partial: the figures count only the subscriptions read so far, whatever the API lists.

Text that came from the API (a platform's name) is made safe for each format by
`devportal.display`: no control characters on a terminal, no formula in a CSV cell, nothing
Markdown or HTML would interpret; JSON keeps it exact (its escapes are terminal-safe).

Formats: an aligned text table, JSON (one flat object), CSV (metric,label,value) and Markdown.
`--html PATH` also writes one self-contained page: the figures and the charts of
`devportal.charts` (`charts.PAGE`: among them the cohort retention heat map and the survival
curve) as inline PNG images. The `devportal report` command is devportal.cli.report.

The models are read through `devportal.engines`, read-only: the DuckDB warehouse by default,
or the PostgreSQL database of `destination="postgres"`. The queries are plain SELECTs from
`analytics.*`, and every figure is made one Python type per kind (`_figure`: counts int, rates
float, times naive UTC datetimes, months dates), so the same data gives byte-identical output
in every format on either engine.
"""

from __future__ import annotations

import base64
import csv
import html as html_lib
import io
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from devportal import charts, display, engines
from devportal.errors import DevportalError, first_line
from devportal.warehouse import ANALYTICS_SCHEMA

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("table", "json", "csv", "markdown")

T = TypeVar("T")


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    value: Any
    kind: str = "count"  # count | rate | days | text | time | month | flag | statuses


@dataclass
class Section:
    title: str
    metrics: list[Metric] = field(default_factory=list)


@dataclass
class Report:
    """The figures, grouped as printed; `values()` is the flat {key: value} view. `basis` is
    the line saying what the subscription figures rest on; `partial` when no verified sweep
    does (the line is then a warning)."""

    as_of: datetime | None
    sections: list[Section]
    basis: str = ""
    partial: bool = False

    def values(self) -> dict[str, Any]:
        return {m.key: m.value for s in self.sections for m in s.metrics}

    def metrics(self) -> list[Metric]:
        return [m for s in self.sections for m in s.metrics]


# The figures are the model sql/marts/report_figures.sql (one row, one column per figure key);
# the report only reads that row (sql/report/figures.sql) and formats it.
_FIGURES_SQL = "report/figures"

# The statuses beyond the spec's two among the live subscriptions read, as sent, with their
# treatment and counts: a list, so not a column of the one-row report_figures.
_OTHER_STATUSES_SQL = """
    select
        current_subscriptions.status_sent,
        current_subscriptions.status as treated_as,
        count(*) filter (where current_subscriptions.is_usable) as usable,
        count(*) as subscriptions
    from analytics.subscriptions_current as current_subscriptions
    where
        not current_subscriptions.is_test
        and (
            current_subscriptions.status_sent is null
            or current_subscriptions.status_sent not in ('active', 'canceled')
        )
    group by current_subscriptions.status_sent, current_subscriptions.status
"""

_REQUIRED = ("as_of", "subscriptions_current", "monthly_churn", "expiring_soon", "report_figures")


class _Reader:
    """Runs analytics queries on one read-only engine; its failures are one-line errors that
    name the command rebuilding the models on that engine."""

    def __init__(self, engine: engines.Engine) -> None:
        self.engine = engine
        on_postgres = engine.dialect == "postgres"
        self.where = "the PostgreSQL database" if on_postgres else "the warehouse"
        self.models = "devportal models" + (" --destination postgres" if on_postgres else "")
        self.build_hint = f"`{self.models}`" + ("" if on_postgres else " (or a sync)")
        self.tables = set(self._run(lambda: engine.relations(ANALYTICS_SCHEMA)))

    def _run(self, read: Callable[[], T]) -> T:
        try:
            return read()
        except self.engine.errors as err:
            raise DevportalError(
                f"{self.where}'s analytics tables do not answer the report ({first_line(err)}); "
                f"run `{self.models}` to rebuild them"
            ) from None

    def records(self, sql: str) -> list[dict[str, Any]]:
        """Every row of SQL as {column: value}."""
        names, rows = self._run(lambda: self.engine.columns(charts.qualified(self.engine, sql)))
        return [dict(zip(names, row, strict=True)) for row in rows]

    def record(self, sql: str) -> dict[str, Any] | None:
        """The first row of SQL as {column: value}, or None when it returns no row."""
        rows = self.records(sql)
        return rows[0] if rows else None

    def frame(self, sql: str) -> pd.DataFrame:
        return self._run(lambda: charts.read(self.engine, sql))


@contextmanager
def _reading(warehouse: str | Path, destination: str | None) -> Iterator[_Reader]:
    """A reader on the warehouse (DuckDB) or the destination's database, read-only."""
    with engines.connect(warehouse, destination, read_only=True) as engine:
        yield _Reader(engine)


# How the figures are grouped and labelled: (section title, ((key, label, kind), ...)).
_LAYOUT: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = (
    (
        "As of",
        (
            ("as_of", "latest successful sync (server clock)", "time"),
            # what the subscription figures rest on (analytics.as_of), said by `data_basis`
            ("has_verified_sweep", "a verified full read of the subscription list exists", "flag"),
            ("last_verified_sweep_at", "latest verified full read (server clock)", "time"),
            ("window_syncs_since_verified_sweep", "window syncs since", "count"),
            ("unverified_sweeps_since_verified_sweep", "unverified sweeps since", "count"),
            ("subscriptions_read", "live subscriptions read so far", "count"),
        ),
    ),
    (
        "Usable subscribers",
        (
            ("usable_subscribers", "usable now", "count"),
            ("usable_active", "active", "count"),
            ("usable_canceled", "canceled, usable until expiry", "count"),
            ("usable_other", "other", "count"),
            ("other_statuses", "other, by status", "statuses"),
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
            ("expiring_7d_other", "other (status not mapped)", "count"),
        ),
    ),
    (
        "Expiring within 30 days",
        (
            ("expiring_30d", "expiring", "count"),
            ("expiring_30d_renewing", "renewing (active)", "count"),
            ("expiring_30d_churning", "churning (canceled)", "count"),
            ("expiring_30d_other", "other (status not mapped)", "count"),
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
    (
        "Renewals and retention",
        (
            ("last_full_month_came_due", "came due, last full month", "count"),
            ("last_full_month_renewed", "renewed", "count"),
            ("last_full_month_renewal_rate", "renewal rate (of those decided)", "rate"),
            ("median_lifetime_days", "median lifetime since first seen", "days"),
            ("top_churn_platform", "highest-churn platform", "text"),
            ("top_churn_platform_churn_rate", "its churn rate, last full month", "rate"),
        ),
    ),
)

# What a figure that is missing (NULL) reads as, where "n/a" would not say why.
_MISSING_TEXT = {"median_lifetime_days": "not reached yet"}


# figure key -> its kind
_KINDS = {key: kind for _, metrics in _LAYOUT for key, _, kind in metrics}
# the figures of statuses beyond the spec's two: shown only when a live subscription has one
_OTHER_KEYS = frozenset(
    {"usable_other", "other_statuses", "expiring_7d_other", "expiring_30d_other"}
)
# the figures that are columns of analytics.report_figures
_COLUMNS = tuple(key for key, kind in _KINDS.items() if kind != "statuses")

# The one line on what the figures rest on: a key of JSON and CSV, after `as_of`.
BASIS_KEY, BASIS_LABEL = "data_basis", "what the subscription figures rest on"


def _figures(reader: _Reader) -> dict[str, Any]:
    """The one row of analytics.report_figures and `other_statuses`; one-line errors when the
    models are not built."""
    missing = [t for t in _REQUIRED if t not in reader.tables]
    if missing:
        raise DevportalError(
            f"{reader.where} has no analytics.{missing[0]}: run {reader.build_hint} "
            "to build the models first"
        )
    figures = reader.record(charts.query_file(_FIGURES_SQL))
    if figures is None:
        raise DevportalError(
            f"{reader.where}'s analytics.report_figures has no row: run `{reader.models}` "
            "to rebuild it"
        )
    absent = [key for key in _COLUMNS if key not in figures]
    if absent:
        raise DevportalError(
            f"{reader.where}'s analytics.report_figures has no column {absent[0]} (an older "
            f"build): run `{reader.models}` to rebuild it"
        )
    return {**figures, "other_statuses": _other_statuses(reader.records(_OTHER_STATUSES_SQL))}


def _other_statuses(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The statuses beyond the spec's two, each {status, treated_as, usable, subscriptions}:
    most usable first, then most subscriptions, then by status in code point order (never
    the engine's collation, so both engines give the same list), a missing status last."""
    statuses = [
        {
            "status": charts.plain(row["status_sent"]),
            "treated_as": str(row["treated_as"]),
            "usable": int(charts.plain(row["usable"])),
            "subscriptions": int(charts.plain(row["subscriptions"])),
        }
        for row in rows
    ]
    return sorted(
        statuses,
        key=lambda s: (-s["usable"], -s["subscriptions"], s["status"] is None, s["status"] or ""),
    )


def _figure(value: Any, kind: str) -> Any:
    """A figure as one Python type per KIND, whatever the engine returned: a count int, a rate
    float, days an int (a float only when not whole), text str, a time a naive UTC datetime, a
    month a date, a flag bool; missing (NULL, NaN) None."""
    value = charts.plain(value)
    if value is None:
        return None
    if kind == "days":
        days = float(value)
        return int(days) if days.is_integer() else days
    if kind == "text":
        return str(value)
    if kind == "time":
        return value if isinstance(value, datetime) else datetime.combine(value, time())
    if kind == "month":
        return (value.date() if isinstance(value, datetime) else value).replace(day=1)
    if kind == "rate":
        return float(value)
    if kind == "flag":
        return bool(value)
    if kind == "statuses":
        return list(value)
    return int(value)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _verified(figures: Mapping[str, Any]) -> bool:
    """Whether a verified sweep of the live list is what the figures start from."""
    return bool(figures["has_verified_sweep"]) and figures["last_verified_sweep_at"] is not None


def _basis(figures: Mapping[str, Any]) -> str:
    """The line on what the subscription figures rest on: the verified sweep they start from
    and the partial reads since, or the warning that no verified sweep ever read the list."""
    windows = figures["window_syncs_since_verified_sweep"] or 0
    unverified = figures["unverified_sweeps_since_verified_sweep"] or 0
    if _verified(figures):
        since = [
            _plural(windows, "window sync") if windows else "",
            _plural(unverified, "unverified sweep") if unverified else "",
        ]
        later = " and ".join(part for part in since if part)
        return (
            "Based on the full subscription list read and verified at "
            f"{figures['last_verified_sweep_at']:%Y-%m-%d %H:%M:%S}"
            + (f" (+{later} since)" if later else "")
        )
    read = figures["subscriptions_read"] or 0
    why = (
        f" ({_plural(unverified, 'sweep')} read it, none verified against the API's total: "
        "see sync_runs.sweeps)"
        if unverified
        else ""
    )
    return (
        f"Partial: no complete, verified read of the subscription list yet{why}; counts cover "
        f"only the {_plural(read, 'subscription')} read so far. Run `devportal sync` (a full "
        "sweep)."
    )


def _report(row: Mapping[str, Any]) -> Report:
    """The report of one row of analytics.report_figures (with `other_statuses`)."""
    figures = {key: _figure(row[key], kind) for key, kind in _KINDS.items()}
    hidden = frozenset() if figures["other_statuses"] else _OTHER_KEYS
    month = figures["last_full_month"]
    month_label = f"{month:%Y-%m}" if month is not None else "none yet"
    if figures["last_full_month_is_estimate"]:
        month_label += " (estimated base)"
    sections = [
        Section(
            title.format(month=month_label),
            [
                Metric(key, label, figures[key], kind)
                for key, label, kind in metrics
                if key not in hidden
            ],
        )
        for title, metrics in _LAYOUT
    ]
    basis = _basis(figures)
    sections[0].metrics.insert(1, Metric(BASIS_KEY, BASIS_LABEL, basis, "text"))
    return Report(
        as_of=figures["as_of"],
        sections=sections,
        basis=basis,
        partial=not _verified(figures),
    )


def collect(warehouse: str | Path, destination: str | None = None) -> Report:
    """The report's figures, read read-only from the warehouse, or with DESTINATION
    ("postgres") from that database, through `devportal.engines.connect`: one-line errors
    (no warehouse, not a DuckDB database, busy, damaged, no server, models not built)."""
    with _reading(warehouse, destination) as reader:
        return _report(_figures(reader))


# -- formats ----------------------------------------------------------------------------------


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


def _text(metric: Metric) -> str:
    """A value for people: counts as numbers, rates as percents, days with their unit, missing
    as n/a (or what a missing figure means, `_MISSING_TEXT`), statuses as one line."""
    value = metric.value
    if value is None:
        return _MISSING_TEXT.get(metric.key, "n/a")
    if metric.kind == "statuses":
        return ", ".join(_status_text(entry) for entry in value)
    if metric.kind == "rate":
        return f"{value * 100:.1f}%"
    if metric.kind == "days":
        return f"{value:g} day" + ("" if value == 1 else "s")
    if metric.kind == "time":
        return f"{value:%Y-%m-%d %H:%M:%S}"
    if metric.kind == "month":
        return f"{value:%Y-%m}"
    if metric.kind == "flag":
        return "yes" if value else "no"
    return str(value)


def _json_value(metric: Metric) -> Any:
    """A value for JSON and CSV (the figures are already one type per kind, see `_figure`)."""
    value = metric.value
    if value is None:
        return None
    if metric.kind == "time":
        return value.isoformat(sep=" ")
    if metric.kind == "month":
        return f"{value:%Y-%m}"
    return value


def _as_of(report: Report) -> str:
    return _text(report.sections[0].metrics[0])


def _shown(section: Section) -> list[Metric]:
    """The metrics a table shows: months and flags are in the section titles instead."""
    return [m for m in section.metrics if m.kind not in ("month", "flag")]


def format_table(report: Report) -> str:
    """Aligned text for a terminal: every cell `display.terminal` (one line, no controls). A
    list of statuses is a line of its own under its count, outside the alignment."""
    safe = display.terminal
    rows: list[tuple[str, str | None]] = []  # (label, value); value None: a line as it is
    for section in report.sections[1:]:
        rows.append((safe(section.title), ""))
        for m in _shown(section):
            if m.kind == "statuses":
                rows.append(("    " + safe(_text(m)), None))
            else:
                rows.append(("  " + safe(m.label), safe(_text(m))))
    aligned = [(label, value) for label, value in rows if value is not None]
    width = max(len(label) for label, _ in aligned) + 2
    value_width = max(len(value) for _, value in aligned)
    lines = [
        f"Subscriptions as of {_as_of(report)} (latest successful sync, server clock)",
        safe(report.basis),
        "",
    ]
    lines += [
        label if value is None else f"{label:<{width}}{value:>{value_width}}".rstrip()
        for label, value in rows
    ]
    return "\n".join(lines)


def format_json(report: Report) -> str:
    return json.dumps({m.key: _json_value(m) for m in report.metrics()}, indent=2)


def format_csv(report: Report) -> str:
    """metric,label,value rows; text cells `display.csv_cell` (no formula for a spreadsheet,
    no control characters), numbers as they are."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["metric", "label", "value"])
    for m in report.metrics():
        value = _text(m) if m.kind == "statuses" else _json_value(m)  # one cell: the line
        if isinstance(value, bool):
            value = "true" if value else "false"  # as JSON spells them, not Python
        cells = [m.key, m.label, "" if value is None else value]
        writer.writerow([display.csv_cell(cell) for cell in cells])
    return buffer.getvalue().rstrip("\n")


def format_markdown(report: Report) -> str:
    """A Markdown table; every cell `display.markdown_cell` (shown literally, one line). The
    basis line is a quote under the heading, bold when the list is partial."""
    cell = display.markdown_cell
    basis = cell(report.basis)
    if report.partial:
        head, _, rest = basis.partition(":")
        basis = f"**{head}:**{rest}"
    lines = [f"## Subscriptions as of {_as_of(report)}", "", f"> {basis}", ""]
    lines += ["| Figure | Value |", "|---|---:|"]
    for section in report.sections[1:]:
        lines.append(f"| **{cell(section.title)}** | |")
        lines.extend(f"| {cell(m.label)} | {cell(_text(m))} |" for m in _shown(section))
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
p.basis {{ margin: 0.4rem 0; }}
p.partial {{ border-left: 4px solid #b8323a; padding: 0.3rem 0.6rem; background: #fbeaea; }}
table {{ border-collapse: collapse; margin: 1rem 0 2rem; }}
td {{ padding: 0.2rem 1.2rem 0.2rem 0; }}
td.value {{ text-align: right; font-variant-numeric: tabular-nums; }}
td.note {{ text-align: left; }}
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
{basis}
<table>
{rows}
</table>
{charts}
</body>
</html>
"""


def _chart_frames(reader: _Reader) -> dict[str, pd.DataFrame]:
    """The DataFrame of every chart whose models exist (e.g. no users before any model could
    build it)."""
    frames = {}
    for name in charts.PAGE:
        sql = charts.QUERIES[name]
        if set(re.findall(r"analytics\.(\w+)", sql)) <= reader.tables:
            frames[name] = reader.frame(sql)
    return frames


def _chart_images(
    frames: Mapping[str, pd.DataFrame], as_of: datetime | None
) -> list[tuple[str, bytes]]:
    """The charts drawn, as (title, PNG): drawn after the connection is closed."""
    return [
        (charts.TITLES[name], charts.png_bytes(charts.draw(name, frame, as_of)))
        for name, frame in frames.items()
    ]


def format_html(report: Report, images: Sequence[tuple[str, bytes]]) -> str:
    """The page; every text `html.escape`d, and one line without control characters
    (`display.terminal`: a right-to-left override would reorder what the page shows)."""

    def esc(text: str) -> str:
        return html_lib.escape(display.terminal(text))

    as_of = _as_of(report)
    rows = []
    for section in report.sections[1:]:
        rows.append(f'<tr class="section"><td colspan="2">{esc(section.title)}</td></tr>')
        rows.extend(
            f'<tr><td class="sub">{esc(m.label)}</td>'
            f'<td class="{"note" if m.kind == "statuses" else "value"}">{esc(_text(m))}</td></tr>'
            for m in _shown(section)
        )
    basis_class = "basis partial" if report.partial else "basis"
    if report.partial:
        head, _, rest = report.basis.partition(":")
        basis = f'<p class="{basis_class}"><strong>{esc(head)}:</strong>{esc(rest)}</p>'
    else:
        basis = f'<p class="{basis_class}">{esc(report.basis)}</p>'
    figures = [
        f'<figure><img alt="{esc(title)}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"></figure>'
        for title, png in images
    ]
    return _PAGE.format(
        title=esc(f"Subscriptions as of {as_of}"),
        basis=basis,
        rows="\n".join(rows),
        charts="\n".join(figures),
    )


def _write(path: str | Path, text: str) -> Path:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as err:
        raise DevportalError(f"cannot write {target}: {err.strerror or err}") from None
    return target


def _read_page(reader: _Reader, with_charts: bool = True) -> tuple[Report, dict[str, pd.DataFrame]]:
    """The figures and (WITH_CHARTS) the charts' data, read in one go on one connection."""
    report = _report(_figures(reader))
    return report, _chart_frames(reader) if with_charts else {}


def write_html(warehouse: str | Path, path: str | Path, destination: str | None = None) -> Path:
    """Write the self-contained HTML page (figures and charts) to PATH."""
    with _reading(warehouse, destination) as reader:
        report, frames = _read_page(reader)
    return _write(path, format_html(report, _chart_images(frames, report.as_of)))


def print_report(
    warehouse: str | Path,
    fmt: str = "table",
    html: str | Path | None = None,
    destination: str | None = None,
) -> None:
    """Print the report in FMT; with HTML, also write the page there. DESTINATION "postgres"
    reads the models in PostgreSQL instead of the DuckDB warehouse."""
    if fmt not in FORMATS:
        raise DevportalError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    with _reading(warehouse, destination) as reader:
        report, frames = _read_page(reader, with_charts=html is not None)
    print(render(report, fmt))
    if html is not None:
        target = _write(html, format_html(report, _chart_images(frames, report.as_of)))
        # stdout stays one document for json/csv; the note goes with the logs
        print(f"wrote {target}", file=sys.stderr if fmt in ("json", "csv") else sys.stdout)
