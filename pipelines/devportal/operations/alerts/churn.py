"""Whether the last full month's churn calls for an alert, from `analytics.monthly_churn` (the
report's monthly churn, sql/marts/monthly_churn.sql: `churned / subscribers_at_start`).

The month judged is the latest complete one (`is_complete`: it ended by `as_of`); a month still
running is never judged on its first days. Two tests, each on when set:
- `churn_rate_above`: its churn rate is above the share. A month that began before the first
  sync (`is_estimate`) has a rate that is a lower bound (its base is an upper bound): above the
  threshold, it is above it all the more, so it is judged too.
- `churn_spike_factor`: its rate is above FACTOR x the mean rate of the three complete months
  before it. Only when those three are measured (none an estimate: a lower-bound rate in the
  average would make ordinary months look like spikes) and their mean is above 0 (a spike needs
  a baseline; from none, `churn_rate_above` is the test).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from devportal.reporting import number_format
from devportal.warehouse import ANALYTICS_SCHEMA, engines
from devportal.warehouse.target import Target

TRAILING_MONTHS = 3


@dataclass(frozen=True)
class Month:
    month: date
    churned: int
    subscribers_at_start: int
    churn_rate: float | None
    is_estimate: bool


@dataclass(frozen=True)
class ChurnFinding:
    """The month judged and why it is alarming (one clause per test it failed)."""

    month: Month
    reasons: list[str]
    trailing_mean: float | None

    def message(self) -> str:
        m = self.month
        rate = number_format.percent(m.churn_rate or 0.0)
        estimate = (
            " (a lower bound: the month began before the first sync)" if m.is_estimate else ""
        )
        return (
            f"churn in {m.month:%B %Y} was {rate} ({m.churned:,} of "
            f"{m.subscribers_at_start:,} subscribers at the month's start){estimate}: "
            + "; ".join(self.reasons)
        )


def complete_months(target: Target) -> list[Month]:
    """The complete months of `analytics.monthly_churn`, latest first (up to the trailing
    window and the month judged); none when the models are not built."""
    with engines.connect(target, read_only=True) as engine:
        if "monthly_churn" not in engine.relations(ANALYTICS_SCHEMA):
            return []
        rows = engine.execute(
            "select month, churned, subscribers_at_start, churn_rate, is_estimate "
            f"from {engine.qualify(ANALYTICS_SCHEMA, 'monthly_churn')} "
            f"where is_complete order by month desc limit {TRAILING_MONTHS + 1}"
        )
    return [_month(row) for row in rows]


def _month(row: tuple[Any, ...]) -> Month:
    month, churned, base, rate, estimate = row
    return Month(
        month=month.date() if hasattr(month, "date") else month,
        churned=int(churned or 0),
        subscribers_at_start=int(base or 0),
        churn_rate=None if rate is None else float(rate),
        is_estimate=bool(estimate),
    )


def judge(
    months: list[Month], rate_above: float | None, spike_factor: float | None
) -> ChurnFinding | None:
    """The finding for the latest of MONTHS (latest first), or None when churn is within
    the thresholds (or cannot be judged: no complete month, no subscribers at its start)."""
    if not months or months[0].churn_rate is None:
        return None
    latest, before = months[0], months[1 : 1 + TRAILING_MONTHS]
    rate = latest.churn_rate
    assert rate is not None
    reasons = []
    if rate_above is not None and rate > rate_above:
        reasons.append(f"above churn_rate_above {number_format.percent(rate_above)}")
    mean = None
    measured = [m.churn_rate for m in before if m.churn_rate is not None and not m.is_estimate]
    if len(measured) == TRAILING_MONTHS:
        mean = sum(measured) / TRAILING_MONTHS
    if spike_factor is not None and mean and rate > spike_factor * mean:
        reasons.append(
            f"{rate / mean:.1f}x the mean of the {TRAILING_MONTHS} months before "
            f"({number_format.percent(mean)}), above churn_spike_factor {spike_factor:g}"
        )
    return ChurnFinding(latest, reasons, mean) if reasons else None
