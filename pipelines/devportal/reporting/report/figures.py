"""The report's figures: read read-only from the `analytics` models through `devportal.warehouse.engines`
(the DuckDB warehouse, or PostgreSQL: a `Target` of `postgres`), made one Python type per
kind (`_figure`: counts int, rates float, times naive UTC datetimes, months dates) so the same
data gives the same output on either engine, and grouped and labelled as printed.

The figures are the one row of `analytics.report_figures` (sql/marts/report_figures.sql, whose
header defines each one), all live subscriptions, relative to `analytics.as_of`; and
`other_statuses`, the statuses beyond the spec's two, the one figure that is a list. The
subscriptions listed without a readable expiry are lines of their own (`usable_no_expiry`, lifetime
plans counted as usable; `expiry_unreadable`, not), so nothing listed vanishes. `data_basis`
says what the subscription figures rest on: a verified sweep and the partial reads since, or
that no verified sweep ever read the list (the report is then partial).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from devportal.base.errors import DevportalError, first_line
from devportal.reporting import charts, number_format
from devportal.reporting.report.coverage import (
    WINDOW_DAYS,
    basis_line,
    has_history,
    starts_from_verified_sweep,
    unmeasured_figures,
    window_title_and_note,
)
from devportal.warehouse import ANALYTICS_SCHEMA, engines
from devportal.warehouse.target import Where

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")


@dataclass(frozen=True)
class Metric:
    """One figure: KEY (as in JSON), LABEL, VALUE (one type per KIND) and, when the warehouse's
    history cannot measure it yet, NEEDS: what it needs (its value is then None)."""

    key: str
    label: str
    value: Any
    # count | rate | days | span | text | time | month | flag | statuses | money | code | note
    kind: str = "count"
    needs: str | None = None
    unit: str | None = None  # a money figure's currency (ISO 4217), when set


@dataclass
class Section:
    """A block of figures under TITLE; NOTE, when set, a line under them saying what they
    count over (the last 30 days while fewer have been watched)."""

    title: str
    metrics: list[Metric] = field(default_factory=list)
    note: str | None = None


@dataclass
class ReportFigures:
    """The figures, grouped as printed; `values()` is the flat {key: value} view. `basis` is
    the line saying what the subscription figures rest on; `partial` when no verified sweep
    does (the line is then a warning). `unmeasured`: {key: what it needs} of the figures the
    history cannot measure yet. `context`: what the page's tiles compare with (the month
    before), beside the figures; `currency` of the money figures."""

    as_of: datetime | None
    sections: list[Section]
    basis: str = ""
    partial: bool = False
    unmeasured: dict[str, str] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    currency: str | None = None
    history: bool = True  # a sync after the first one: what is seen between syncs is measured

    def values(self) -> dict[str, Any]:
        return {m.key: m.value for s in self.sections for m in s.metrics}

    def metrics(self) -> list[Metric]:
        return [m for s in self.sections for m in s.metrics]


@dataclass(frozen=True)
class Unapplied:
    """Settings set now that the figures were not built with, because the models could not be
    rebuilt before the report (`cli.options.figures_current`): LINE says in one line which
    settings differ, the command that applies them and why it could not now (no raw error, no
    path); PRICES_SET whether prices are set now (so the report never says "no prices set")."""

    line: str
    prices_set: bool


# The figures are the model sql/marts/report_figures.sql (one row, one column per figure key);
# the report only reads that row (sql/report/report_row.sql) and formats it.
_FIGURES_SQL = "report/report_row"

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

_REQUIRED = (
    "as_of",
    "subscriptions_current",
    "monthly_churn",
    "monthly_renewals",
    "daily_subscribers",
    "survival_curve",
    "expiring_soon",
    "report_figures",
)

# What the forecast and the lifetime value still need, from the models that make them (when
# built): {figure key: (model, query)}.
_NEEDS_SQL = {
    "forecast_30d_mrr": (
        "revenue_forecast",
        "select needs from analytics.revenue_forecast where horizon_days = 30 and needs is not null",
    ),
    "forecast_30d_new_mrr": (
        "revenue_forecast",
        "select new_mrr_needs as needs from analytics.revenue_forecast "
        "where horizon_days = 30 and new_mrr_needs is not null",
    ),
    "ltv": ("lifetime_value", "select needs from analytics.lifetime_value where needs is not null"),
}


class AnalyticsReader:
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
def open_reader(target: Where) -> Iterator[AnalyticsReader]:
    """A reader on the warehouse (DuckDB) or the destination's database, read-only."""
    with engines.connect(target, read_only=True) as engine:
        yield AnalyticsReader(engine)


# How the figures are grouped and labelled: a section title, then one line per figure: its key
# (the JSON key, a column of analytics.report_figures), its kind (`_figure`) and its label. A
# title with `{days}` is one section per number of days of `_EXPIRING`.
_LAYOUT_TEXT = """
As of
    as_of time latest successful sync (server clock)
    has_verified_sweep flag a verified full read of the subscription list exists
    last_verified_sweep_at time latest verified full read (server clock)
    window_syncs_since_verified_sweep count window syncs since
    unverified_sweeps_since_verified_sweep count unverified sweeps since
    subscriptions_read count live subscriptions read so far
    subscriptions_listed count live subscriptions listed now
    listed_expired count listed, expiry passed
Revenue
    currency code currency (ISO 4217)
    revenue_basis code gross, or net of the platform's share
    mrr money MRR (monthly recurring revenue)
    arr money ARR (12 x MRR)
    arpu money ARPU (MRR per paying user)
    ltv money LTV (lifetime value per paying user)
    ltv_method code how LTV is estimated
    last_full_month_mrr_new money new MRR, last full month
    last_full_month_mrr_churned money churned MRR, last full month
    last_full_month_mrr_reactivated money reactivated MRR, last full month
    last_full_month_mrr_net_change money net MRR change, last full month
    forecast_30d_mrr money MRR in 30 days: today's subscriptions, no new sales
    forecast_30d_mrr_low money low end (95% interval)
    forecast_30d_mrr_high money high end (95% interval)
    forecast_30d_new_mrr money new sales' MRR expected in 30 days, apart
    forecast_30d_mrr_scope code what the 30-day forecast counts
    mrr_month_before money MRR at the end of the month before
Usable subscribers
    usable_subscribers count usable now
    usable_active count active
    usable_canceled count canceled, usable until expiry
    usable_other count other
    other_statuses statuses other, by status
    usable_no_expiry count of them, no expiry sent (lifetime: usable while listed)
    expiry_unreadable count expiry unreadable (listed, not counted as usable)
Last full month: {month}
    last_full_month month month
    last_full_month_churned count churned
    last_full_month_subscribers_at_start count subscribers at start
    last_full_month_churn_rate rate churn rate
    last_full_month_is_estimate flag base is an estimate
Expiring within {days} days
    expiring_{days}d count expiring
    expiring_{days}d_renewing count renewing (active)
    expiring_{days}d_churning count churning (canceled)
    expiring_{days}d_other count other (status not mapped)
Last 30 days
    window_days span days the last 30 days' figures count over
    new_30d count new subscriptions
    canceled_30d count cancellations
    churned_30d count churned (expired)
Renewals and retention
    last_full_month_came_due count came due, last full month
    last_full_month_renewed count renewed
    last_full_month_renewal_rate rate renewal rate (of those decided)
    median_lifetime_days days median lifetime since first seen
    top_churn_platform text highest-churn platform
    top_churn_platform_churn_rate rate its churn rate, last full month
"""
_EXPIRING = (7, 30)

Layout = tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...]


def _layout(text: str) -> Layout:
    """The sections of TEXT (`_LAYOUT_TEXT`): (title, ((key, label, kind), ...)), in order."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.strip().splitlines():
        if line.startswith(" "):
            blocks[-1][1].append(line.strip())
        else:
            blocks.append((line, []))
    sections = []
    for title, lines in blocks:
        for days in _EXPIRING if "{days}" in title else (None,):

            def fill(text: str, days: int | None = days) -> str:
                return text.replace("{days}", str(days)) if days else text

            rows = tuple(
                (key, label, kind)
                for key, kind, label in (fill(row).split(" ", 2) for row in lines)
            )
            sections.append((fill(title), rows))
    return tuple(sections)


_LAYOUT = _layout(_LAYOUT_TEXT)

# figure key -> its kind
_KINDS = {key: kind for _, metrics in _LAYOUT for key, _, kind in metrics}
# the figures of statuses beyond the spec's two: shown only when a live subscription has one
_OTHER_KEYS = frozenset(
    {"usable_other", "other_statuses", "expiring_7d_other", "expiring_30d_other"}
)
# the figures of subscriptions without a readable expiry: shown only when a live subscription
# listed has none (no expiry sent: a lifetime plan; or one that is no date)
_EXPIRY_KEYS = frozenset({"usable_no_expiry", "expiry_unreadable"})
# the figures the report writes itself, not columns of analytics.report_figures
_DERIVED = frozenset({"forecast_30d_mrr_scope"})
# the money figures, whose columns a build of the models before the price book does not have
_MONEY_KEYS = tuple(
    key
    for title, metrics in _LAYOUT
    if title == "Revenue"
    for key, _, _ in metrics
    if key not in _DERIVED
)
# the figures that are columns of analytics.report_figures (and must be there)
_COLUMNS = tuple(
    key
    for key, kind in _KINDS.items()
    if kind != "statuses" and key not in _MONEY_KEYS and key not in _DERIVED
)
# What the 30-day forecast counts and leaves out: `forecast_30d_mrr_scope`, while prices are set.
FORECAST_SCOPE = (
    "the MRR of today's subscriptions in 30 days: their renewals expected at the observed "
    "renewal rates (interval: forecast_30d_mrr_low to forecast_30d_mrr_high); new sales and "
    "win-backs are left out (forecast_30d_new_mrr: the new MRR expected apart)"
)

# The one line on what the figures rest on: a key of JSON and CSV, after `as_of`.
BASIS_KEY, BASIS_LABEL = "data_basis", "what the subscription figures rest on"
# The figures that cannot be measured yet, {key: what it needs}: a key of JSON, after the basis.
UNMEASURED_KEY, UNMEASURED_LABEL = "not_measurable_yet", "figures not measurable yet"
# How to set prices while none is set: a key of JSON, the one line of the revenue section.
PRICES_KEY, PRICES_LABEL = "prices_hint", "how to set prices"
OLD_BUILD_HINT = (
    "no revenue figures in this build of the models: run `devportal models` to rebuild them"
)


def read_figures(reader: AnalyticsReader) -> dict[str, Any]:
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
    needs = {
        key: reader.record(sql) if model in reader.tables else None
        for key, (model, sql) in _NEEDS_SQL.items()
    }
    return {
        **figures,
        "other_statuses": _other_statuses(reader.records(_OTHER_STATUSES_SQL)),
        # a build before the price book has no money columns: said, not an error
        "has_money_columns": all(key in figures for key in _MONEY_KEYS),
        **{f"{key}_needs": row["needs"] if row else None for key, row in needs.items()},
    }


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


def _figure(value: Any, kind: str, currency: str | None = None) -> Any:
    """A figure as one Python type per KIND, whatever the engine returned: a count int, a rate
    float, money an exact Decimal at CURRENCY's minor unit (`number_format.exact`: EUR 12.35, JPY
    1235; read from a double or a numeric alike), days and a span an int (a float only when
    not whole), text and a code str, a time a naive UTC datetime, a month a date, a flag
    bool; missing (NULL, NaN) None."""
    if kind == "money" and isinstance(value, Decimal):
        return number_format.exact(value, currency)  # a numeric's digits, not a float's
    value = charts.plain(value)
    if value is None:
        return None
    if kind == "money":
        return number_format.exact(value, currency)
    if kind in ("days", "span"):
        days = float(value)
        return int(days) if days.is_integer() else days
    if kind in ("text", "code", "note"):
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


def _prices_hint(f: Mapping[str, Any], unapplied: Unapplied | None = None) -> str | None:
    """The one line of the revenue section: how to set prices while none is set (or to rebuild
    models older than the price book); while the settings set now are not in the figures
    (UNAPPLIED: the models could not be rebuilt), which differ and the command that applies
    them, under the figures built, or instead of "no prices set" when prices are set now but
    not in the figures; None when the figures are the settings'."""
    if unapplied is not None and (unapplied.prices_set or f["mrr"] is not None):
        return unapplied.line
    if not f["has_money_columns"]:
        return OLD_BUILD_HINT
    return charts.PRICES_HINT if f["mrr"] is None else None


def _revenue_title(f: Mapping[str, Any]) -> str:
    """The revenue section's title: the basis (gross, or net of the platform's share) and the
    currency of its amounts."""
    if f["mrr"] is None:
        return "Revenue"
    basis = f["revenue_basis"] or "gross"
    said = "net of the platform's share" if basis == "net" else basis
    return f"Revenue ({said}" + (f", {f['currency']})" if f["currency"] else ")")


# Beside the figures, for the page's tiles: the month before (sql/report/report_row.sql's header).
_CONTEXT = (
    "first_sync_at",
    "usable_month_before",
    "month_before_last_churn_rate",
    "month_before_last_is_estimate",
    "month_before_last_renewal_rate",
)


def report_from_row(row: Mapping[str, Any], unapplied: Unapplied | None = None) -> ReportFigures:
    """The report of one row of analytics.report_figures (with `other_statuses`); UNAPPLIED:
    settings set now that the figures were not built with (`_prices_hint`)."""
    # a build before the price book: its money figures are all NULL
    row = {
        **dict.fromkeys(_MONEY_KEYS),
        **dict.fromkeys(_DERIVED),
        "has_money_columns": True,
        **row,
    }
    currency = _figure(row["currency"], "code")
    figures = {key: _figure(row[key], kind, currency) for key, kind in _KINDS.items()}
    if figures["mrr"] is not None:
        # 12 x the MRR shown (rounded to the currency's minor unit), not the model's 12 x its
        # unrounded MRR: ARR is 12 x MRR as printed, to the cent (83,731.63 -> 1,004,779.56)
        figures["arr"] = 12 * figures["mrr"]
    figures["forecast_30d_mrr_scope"] = FORECAST_SCOPE if figures["mrr"] is not None else None
    context = {key: charts.plain(row.get(key)) for key in _CONTEXT}
    if context["first_sync_at"] is not None:
        context["first_sync_at"] = _figure(context["first_sync_at"], "time")
    unmeasured = unmeasured_figures(
        {
            **figures,
            **context,
            "survival_curve_days": charts.plain(row.get("survival_curve_days")),
            "forecast_30d_mrr_needs": row.get("forecast_30d_mrr_needs"),
            "forecast_30d_new_mrr_needs": row.get("forecast_30d_new_mrr_needs"),
            "ltv_needs": row.get("ltv_needs"),
        },
        _MONEY_KEYS,
    )
    hidden = frozenset() if figures["other_statuses"] else _OTHER_KEYS
    if not any(figures[key] for key in _EXPIRY_KEYS):
        hidden |= _EXPIRY_KEYS
    month = figures["last_full_month"]
    month_label = f"{month:%Y-%m}" if month is not None else "none yet"
    if figures["last_full_month_is_estimate"]:
        month_label += " (estimated base)"
    window_title, window_note = window_title_and_note(
        None if "window_days" in unmeasured else figures["window_days"], context["first_sync_at"]
    )

    def titled(title: str) -> str:
        if title == "Revenue":
            return _revenue_title(figures)
        if title == f"Last {WINDOW_DAYS} days":
            return window_title
        return title.format(month=month_label)

    sections = [
        Section(
            titled(title),
            [
                Metric(
                    key,
                    label,
                    None if key in unmeasured else figures[key],
                    kind,
                    unmeasured.get(key),
                    figures["currency"] if kind == "money" else None,
                )
                for key, label, kind in metrics
                if key not in hidden
            ],
            window_note if title == f"Last {WINDOW_DAYS} days" else None,
        )
        for title, metrics in _LAYOUT
    ]
    basis = basis_line(figures)
    sections[0].metrics.insert(1, Metric(BASIS_KEY, BASIS_LABEL, basis, "text"))
    sections[0].metrics.insert(2, Metric(UNMEASURED_KEY, UNMEASURED_LABEL, unmeasured, "needs"))
    revenue = next(i for i, (title, _) in enumerate(_LAYOUT) if title == "Revenue")
    sections[revenue].metrics.append(
        Metric(PRICES_KEY, PRICES_LABEL, _prices_hint({**figures, **row}, unapplied), "note")
    )
    return ReportFigures(
        as_of=figures["as_of"],
        sections=sections,
        basis=basis,
        partial=not starts_from_verified_sweep(figures),
        unmeasured=unmeasured,
        context=context,
        currency=figures["currency"],
        history=has_history(figures["as_of"], context["first_sync_at"]),
    )


def collect(target: Where, unapplied: Unapplied | None = None) -> ReportFigures:
    """The report's figures, read read-only from TARGET (a `Target`, or the DuckDB warehouse
    file's path), through `devportal.warehouse.engines.connect`: one-line errors
    (no warehouse, not a DuckDB database, busy, damaged, no server, models not built).
    UNAPPLIED: settings set now that the figures were not built with (`Unapplied`)."""
    with open_reader(target) as reader:
        return report_from_row(read_figures(reader), unapplied)
