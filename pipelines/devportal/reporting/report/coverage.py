"""What a warehouse's history can measure yet, for the report's figures: the line on what the
subscription figures rest on (`basis_line`), the figures not measurable yet and what each needs
(`unmeasured_figures`), and the one window of the "Last 30 days" figures
(`window_title_and_note`, `span_text`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

# The span the "Last 30 days" figures are meant to cover, in days (report_figures.window_days).
WINDOW_DAYS = 30


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def starts_from_verified_sweep(figures: Mapping[str, Any]) -> bool:
    """Whether a verified sweep of the live list is what the figures start from."""
    return bool(figures["has_verified_sweep"]) and figures["last_verified_sweep_at"] is not None


def basis_line(figures: Mapping[str, Any]) -> str:
    """The line on what the subscription figures rest on: the verified sweep they start from
    and the partial reads since, or the warning that no verified sweep ever read the list."""
    windows = figures["window_syncs_since_verified_sweep"] or 0
    unverified = figures["unverified_sweeps_since_verified_sweep"] or 0
    if starts_from_verified_sweep(figures):
        since = [
            _plural(windows, "window sync") if windows else "",
            _plural(unverified, "unverified sweep") if unverified else "",
        ]
        later = " and ".join(part for part in since if part)
        empty = (
            "" if figures["subscriptions_read"] else ": no subscriptions yet, the API lists none"
        )
        return (
            "Based on the full subscription list read and verified at "
            f"{figures['last_verified_sweep_at']:%Y-%m-%d %H:%M:%S}"
            + (f" (+{later} since)" if later else "")
            + empty
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


def first_full_month(moment: datetime) -> date:
    """The first month that starts at or after MOMENT."""
    first = moment.date().replace(day=1)
    if moment == datetime.combine(first, time()):
        return first
    return (first + timedelta(days=32)).replace(day=1)


def has_history(as_of: datetime | None, first_sync_at: datetime | None) -> bool:
    """Whether a sync came after the first one: what is seen between two syncs is measured."""
    return first_sync_at is not None and as_of is not None and as_of > first_sync_at


# What a figure needs that a warehouse's history may not have yet (`unmeasured_figures`).
SECOND_SYNC = "a second sync: {what} are seen between two syncs"
FULL_MONTH = "a full month watched from its start ({month} is the first)"
# The "Last 30 days" figures: one window for all, the days watched after the first sync.
LAST_30_DAYS_NEEDS = (
    SECOND_SYNC.format(what="new subscriptions and cancellations")
    + "; churn is counted over the same days"
)


def span_text(days: float) -> str:
    """A span of DAYS for people, never rounded up to more than was watched: '1 day', '2.5
    days', '29.9 days'; under a day in hours."""
    if days >= 1:
        shown = math.floor(days * 10) / 10
        return f"{shown:g} day" + ("" if shown == 1 else "s")
    hours = math.floor(days * 24)
    if hours >= 1:
        return f"{hours} hour" + ("" if hours == 1 else "s")
    return "less than an hour"


def window_title_and_note(
    window_days: float | None, first_sync_at: datetime | None
) -> tuple[str, str | None]:
    """The "Last 30 days" section's title and the line under its figures: while fewer than 30
    days have been watched after the first sync, the span they count over (all of them alike)
    and how much more history the full window needs; None when they cover the 30 days (or
    cannot be measured yet: each then says what it needs)."""
    title = f"Last {WINDOW_DAYS} days"
    if window_days is None or window_days >= WINDOW_DAYS:
        return title, None
    span = span_text(window_days)
    since = f" ({first_sync_at:%Y-%m-%d %H:%M})" if first_sync_at is not None else ""
    more = span_text(WINDOW_DAYS - window_days)
    return (
        f"{title}: {span} watched so far",
        f"new, cancellations and churn are all counted over the {span} since the first sync"
        f"{since}; the full {WINDOW_DAYS} days need {more} more of history",
    )


def unmeasured_figures(f: Mapping[str, Any], money_keys: Sequence[str]) -> dict[str, str]:
    """{key: what it needs} of the figures F's history cannot measure yet, whatever their
    column holds: a figure counted between two syncs (new subscriptions, cancellations,
    renewals, MRR movements) reads 0 after one sync, which is not a measurement. The others:
    the renewals of a month that began before the first sync (the renewals before it are
    unseen), the highest-churn platform while the churn rate is not measured (its month's base
    an estimate, as the churn tile says), the median lifetime while no subscription first seen after the first sync has
    been followed, and the money figures (MONEY_KEYS) their model left NULL."""
    first = f["first_sync_at"]
    history = has_history(f["as_of"], first)
    month = f"{first_full_month(first):%Y-%m}" if first is not None else "the month after it"
    watched = f["last_full_month"] is not None and not f["last_full_month_is_estimate"]
    needs: dict[str, str] = {}

    def unless(measured: bool, keys: Sequence[str], what: str) -> None:
        if not measured:
            needs.update(dict.fromkeys(keys, what))

    unless(history, ("window_days", "new_30d", "canceled_30d", "churned_30d"), LAST_30_DAYS_NEEDS)
    unless(
        history and watched,
        ("last_full_month_came_due", "last_full_month_renewed", "last_full_month_renewal_rate"),
        FULL_MONTH.format(month=month) + "; renewals are seen between two syncs",
    )
    unless(
        watched,
        ("top_churn_platform", "top_churn_platform_churn_rate"),
        FULL_MONTH.format(month=month) + "; as the churn rate, per platform",
    )
    unless(
        bool(f["survival_curve_days"]),
        ("median_lifetime_days",),
        "subscriptions first seen after the first sync, followed by later syncs",
    )
    if f["mrr"] is None:
        return needs  # no prices: the revenue section says how to set them instead
    movements = [key for key in money_keys if key.startswith("last_full_month_mrr_")]
    unless(
        history and all(f[key] is not None for key in movements),
        movements,
        "a full month after the first sync; MRR movements are changes between two syncs",
    )
    unless(
        f["ltv"] is not None,
        ("ltv",),
        f["ltv_needs"] or "a measured monthly churn rate: " + FULL_MONTH.format(month=month),
    )
    unless(
        history and f["forecast_30d_mrr"] is not None,
        ("forecast_30d_mrr", "forecast_30d_mrr_low", "forecast_30d_mrr_high"),
        f["forecast_30d_mrr_needs"] or "renewals observed: a sync after subscriptions came due",
    )
    new_needs = f["forecast_30d_new_mrr_needs"]
    if new_needs is not None and f["window_days"] is not None:
        new_needs += f" ({span_text(f['window_days'])} watched so far)"
    unless(
        f["forecast_30d_new_mrr"] is not None or new_needs is None,
        ("forecast_30d_new_mrr",),
        new_needs or "",
    )
    unless(f["mrr_month_before"] is not None, ("mrr_month_before",), "a sync in the month before")
    return needs
