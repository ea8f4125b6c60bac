"""The daily digest: the report's headline in one line (`devportal digest`), from the same
figures as `devportal report` (`report.collect`, analytics.report_figures): MRR when prices are
set, usable subscribers, the last full month's churn, and the last 30 days."""

from __future__ import annotations

from typing import Any

from devportal import numbers, report
from devportal.target import Target

SEPARATOR = "; "


def headline(target: Target, where: str) -> str:
    """The headline of TARGET's report, naming WHERE (the warehouse) and the sync it rests on."""
    figures = report.collect(target)
    f: dict[str, Any] = figures.values()
    parts = []
    if f.get("mrr") is not None:
        parts.append(f"MRR {numbers.money(f['mrr'], figures.currency)}")
    parts.append(f"{numbers.count(f['usable_subscribers'] or 0)} usable subscribers")
    rate = f.get("last_full_month_churn_rate")
    if f.get("last_full_month") is not None and rate is not None:
        estimate = ", a lower bound" if f.get("last_full_month_is_estimate") else ""
        parts.append(
            f"churn {f['last_full_month']:%B %Y} {numbers.percent(rate)} "
            f"({numbers.count(f['last_full_month_churned'] or 0)} of "
            f"{numbers.count(f['last_full_month_subscribers_at_start'] or 0)}{estimate})"
        )
    else:
        parts.append("churn: no full month synced yet")
    if figures.history:
        parts.append(
            f"last 30 days +{numbers.count(f['new_30d'] or 0)} new, "
            f"{numbers.count(f['churned_30d'] or 0)} churned"
        )
    as_of = f"{figures.as_of:%Y-%m-%d %H:%M} (server clock)" if figures.as_of else "n/a"
    return f"devportal digest for {where}, as of {as_of}: " + SEPARATOR.join(parts)
