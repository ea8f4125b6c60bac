"""How figures read for people, in the report's text formats, its page and the charts: counts
with thousands separators, money with its currency, rates as percents. One place, so a tile,
a table row and a chart label say the same number the same way."""

from __future__ import annotations


def count(value: float) -> str:
    """A count with thousands separators: 16804 -> '16,804'."""
    return f"{value:,.0f}"


def money(
    value: float, currency: str | None = None, *, signed: bool = False, cents: bool | None = True
) -> str:
    """An amount with thousands separators and its ISO 4217 code: 'EUR 12,345.67'; SIGNED
    puts '+' before a positive amount (a change). CENTS False rounds to whole units, None
    (a tile, a chart label) keeps them only below 100, where they matter (an ARPU of 4.99).
    No currency set: the amount alone."""
    if cents is None:
        cents = abs(value) < 100
    sign = "-" if value < 0 else "+" if signed and value > 0 else ""
    amount = f"{abs(value):,.{2 if cents else 0}f}"
    return f"{sign}{currency} {amount}" if currency else f"{sign}{amount}"


def percent(rate: float, decimals: int = 1) -> str:
    """A rate (0..1) as a percent: 0.0391 -> '3.9%'."""
    return f"{rate * 100:.{decimals}f}%"


def points(change: float) -> str:
    """A change of a rate in percentage points, signed: 0.004 -> '+0.4 pp'."""
    return f"{change * 100:+.1f} pp"
