"""Simulated time for the sandbox: timestamps, the API's date formats, calendar months, rates.

Everything inside the sandbox counts time as integer seconds since the Unix epoch in UTC;
`datetime` objects only appear at the edges (naive, meaning UTC). Integers keep a million rows
compact (`array('q')`) and make comparisons and heap keys cheap.

This module also owns `Rates`, the per-clock-step hazards; `transitions` applies them when
`World.advance` moves the clock. It imports nothing from the sandbox: every other module may
import it.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

DAY = 86_400
# Mean Gregorian month, only used to guess a month count before exact calendar arithmetic.
AVG_MONTH = 30.436875 * DAY
_EPOCH = datetime(1970, 1, 1)

# The two forms the spec accepts for `start`/`end`; nothing else (no `T`, no zone).
_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2}))?$")


def to_epoch(value: datetime | str) -> int:
    """Naive-UTC datetime (or 'YYYY-MM-DD[ HH:MM:SS]' text) -> epoch seconds."""
    if isinstance(value, str):
        value = parse_datetime(value)
    # utctimetuple() converts an aware datetime to UTC and leaves a naive one as it is.
    return calendar.timegm(value.utctimetuple())


def from_epoch(ts: int) -> datetime:
    """Epoch seconds -> naive UTC datetime."""
    return _EPOCH + timedelta(seconds=ts)


_TWO_DIGITS = [f"{i:02d}" for i in range(60)]
_DAY_TEXT: dict[int, str] = {}  # day number -> "YYYY-MM-DD "; a few thousand entries at most


def fmt(ts: int) -> str:
    """Epoch seconds -> 'YYYY-MM-DD HH:MM:SS', the API's date-time shape.

    Five times faster than gmtime + formatting, which matters when a cold page formats 200.
    """
    days, sod = divmod(ts, DAY)
    date = _DAY_TEXT.get(days)
    if date is None:
        t = time.gmtime(days * DAY)
        date = _DAY_TEXT[days] = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d} "
    hours, rest = divmod(sod, 3600)
    minutes, seconds = divmod(rest, 60)
    return date + _TWO_DIGITS[hours] + ":" + _TWO_DIGITS[minutes] + ":" + _TWO_DIGITS[seconds]


def parse_datetime(text: str) -> datetime:
    """Strict 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS' -> datetime; ValueError otherwise."""
    m = _DATE_RE.match(text.strip())
    if m is None:
        raise ValueError(f"not a date: {text!r} (use YYYY-MM-DD or YYYY-MM-DD HH:MM:SS)")
    y, mo, d, hh, mi, ss = (int(g) if g is not None else 0 for g in m.groups())
    return datetime(y, mo, d, hh, mi, ss)  # raises ValueError for 2026-02-30 and friends


def parse_bound(text: str, *, is_end: bool) -> int | None:
    """A `start`/`end` filter value -> inclusive epoch bound, None when unparsable.

    A date-only `end` means the whole day is included (up to 23:59:59); a date-only `start`
    means from 00:00:00. This is the sandbox's reading; the spec does not say.
    """
    try:
        dt = parse_datetime(text)
    except ValueError:
        return None
    ts = calendar.timegm(dt.timetuple())
    if is_end and len(text.strip()) == 10:
        ts += DAY - 1
    return ts


_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).

    Hand-rolled because the clock renews up to a million rows per simulated month and
    calendar.timegm + monthrange cost about four times as much.
    """
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m - 3 if m > 2 else m + 9) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _shifted(year: int, month0: int, day: int, sod: int, months: int) -> int:
    """Epoch seconds of (year, month0 + months, day clamped, second-of-day)."""
    m = month0 + months
    year += m // 12
    month = m % 12 + 1
    dim = _DAYS_IN_MONTH[month - 1]
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        dim = 29
    return _days_from_civil(year, month, day if day <= dim else dim) * DAY + sod


def add_months(ts: int, months: int) -> int:
    """Calendar month arithmetic on epoch seconds; the day clamps to the month's last day."""
    t = time.gmtime(ts)
    return _shifted(t.tm_year, t.tm_mon - 1, t.tm_mday, ts % DAY, months)


def period_end_after(anchor: int, period_months: int, t: int) -> int:
    """The first `anchor + n * period` (n >= 1, calendar months) strictly after `t`."""
    a = time.gmtime(anchor)
    y, m0, d, sod = a.tm_year, a.tm_mon - 1, a.tm_mday, anchor % DAY
    n = max(1, int((t - anchor) / (AVG_MONTH * period_months)))
    end = _shifted(y, m0, d, sod, n * period_months)
    while end <= t:
        n += 1
        end = _shifted(y, m0, d, sod, n * period_months)
    while n > 1:
        prev = _shifted(y, m0, d, sod, (n - 1) * period_months)
        if prev <= t:
            break
        n -= 1
        end = prev
    return end


@dataclass(frozen=True)
class Rates:
    """What one simulated day does to the world (all deterministic under the world's seed).

    `cancel_per_month`: share of active subscriptions that cancel per month (a constant hazard).
    `reactivate_per_month`: share of canceled-but-still-usable subscriptions that come back.
    `new_per_day`: expected new subscriptions per day; None means "derive from the world's
    growth curve" (the generated history's rate at the clock start).
    `yearly_share`: share of new subscriptions paid yearly (the rest monthly).
    Renewals (active and `expires_at` reached) and expiries (canceled and `expires_at`
    reached) are not random: they always happen.
    """

    cancel_per_month: float = 0.04
    reactivate_per_month: float = 0.10
    new_per_day: float | None = None
    yearly_share: float = 0.15

    @classmethod
    def static(cls) -> Rates:
        """No random events: only renewals and expiries. The default of a scripted world."""
        return cls(cancel_per_month=0.0, reactivate_per_month=0.0, new_per_day=0.0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
