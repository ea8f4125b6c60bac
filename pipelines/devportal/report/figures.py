"""The report's figures: read read-only from the `analytics` models through `devportal.engines`
(the DuckDB warehouse, or PostgreSQL with `destination="postgres"`), made one Python type per
kind (`_figure`: counts int, rates float, times naive UTC datetimes, months dates) so the same
data gives the same output on either engine, and grouped and labelled as printed.

The figures are the one row of `analytics.report_figures` (sql/marts/report_figures.sql, whose
header defines each one), all live subscriptions, relative to `analytics.as_of`; and
`other_statuses`, the statuses beyond the spec's two, the one figure that is a list. `data_basis`
says what the subscription figures rest on: a verified sweep and the partial reads since, or
that no verified sweep ever read the list (the report is then partial).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from devportal import charts, engines
from devportal.errors import DevportalError, first_line
from devportal.warehouse import ANALYTICS_SCHEMA

if TYPE_CHECKING:
    import pandas as pd

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
class ReportFigures:
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
            ) from err

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
    *(
        (
            f"Expiring within {days} days",
            (
                (f"expiring_{days}d", "expiring", "count"),
                (f"expiring_{days}d_renewing", "renewing (active)", "count"),
                (f"expiring_{days}d_churning", "churning (canceled)", "count"),
                (f"expiring_{days}d_other", "other (status not mapped)", "count"),
            ),
        )
        for days in (7, 30)
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


def _report(row: Mapping[str, Any]) -> ReportFigures:
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
    return ReportFigures(
        as_of=figures["as_of"],
        sections=sections,
        basis=basis,
        partial=not _verified(figures),
    )


def collect(warehouse: str | Path, destination: str | None = None) -> ReportFigures:
    """The report's figures, read read-only from the warehouse, or with DESTINATION
    ("postgres") from that database, through `devportal.engines.connect`: one-line errors
    (no warehouse, not a DuckDB database, busy, damaged, no server, models not built)."""
    with _reading(warehouse, destination) as reader:
        return _report(_figures(reader))
