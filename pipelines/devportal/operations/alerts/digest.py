"""The daily digest: the report's headline in one line (`devportal digest`), from the same
figures as `devportal report` (`report.collect`, analytics.report_figures): MRR when prices are
set, usable subscribers, the last full month's churn, and the last 30 days: one window for new
and churned alike (`window_days`), said when fewer than 30 days have been watched since the
first sync; left out after a first sync alone, which cannot measure them."""

from __future__ import annotations

from typing import Any

from devportal.reporting import number_format, report
from devportal.warehouse.target import Target

SEPARATOR = "; "


def headline(target: Target, where: str) -> str:
    """The headline of TARGET's report, naming WHERE (the warehouse) and the sync it rests on."""
    figures = report.collect(target)
    f: dict[str, Any] = figures.values()
    parts = []
    if not f.get("subscriptions_read") and f.get("has_verified_sweep"):
        parts.append("no subscriptions yet (the API lists none)")
    if f.get("mrr") is not None:
        parts.append(f"MRR {number_format.money(f['mrr'], figures.currency)}")
    parts.append(f"{number_format.count(f['usable_subscribers'] or 0)} usable subscribers")
    rate = f.get("last_full_month_churn_rate")
    if f.get("last_full_month") is not None and rate is not None:
        estimate = ", a lower bound" if f.get("last_full_month_is_estimate") else ""
        parts.append(
            f"churn {f['last_full_month']:%B %Y} {number_format.percent(rate)} "
            f"({number_format.count(f['last_full_month_churned'] or 0)} of "
            f"{number_format.count(f['last_full_month_subscribers_at_start'] or 0)}{estimate})"
        )
    else:
        parts.append("churn: no full month synced yet")
    if f.get("new_30d") is not None and f.get("churned_30d") is not None:
        parts.append(_last_30_days(f))
    as_of = f"{figures.as_of:%Y-%m-%d %H:%M} (server clock)" if figures.as_of else "n/a"
    return f"devportal digest for {where}, as of {as_of}: " + SEPARATOR.join(parts)


def _last_30_days(f: dict[str, Any]) -> str:
    """New and churned subscriptions over one window: the last 30 days, or the days watched
    so far ("+51 new, 20 churned in the 1 day watched")."""
    counts = (
        f"+{number_format.count(f['new_30d'])} new, {number_format.count(f['churned_30d'])} churned"
    )
    days = f.get("window_days")
    if days is None or days >= report.WINDOW_DAYS:
        return f"last {report.WINDOW_DAYS} days {counts}"
    return f"{counts} in the {report.span_text(days)} watched"
