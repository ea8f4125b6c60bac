"""How figures read for people, in the report's text formats, its page and the charts: counts
with thousands separators, money with its currency, rates as percents. One place, so a tile,
a table row and a chart label say the same number the same way.

Money is exact at its currency's minor unit (`exact`): the ISO 4217 exponent of the code
(`minor_unit`: 2 for EUR, 0 for JPY, 3 for KWD), so JSON, CSV, Markdown and the page give
the same amount, rounded half up once, never a binary fraction's digits."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import SupportsFloat

# The ISO 4217 exponents (List One, as devportal.settings.currencies) that are not 2: the digits after the
# decimal point of the currency's minor unit. The codes with no minor unit at all (precious
# metals, the bond-market units, SDR: "N.A." in the list) keep the models' 6 decimals.
_EXPONENTS = {
    code: exponent
    for exponent, codes in (
        (0, "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"),
        (3, "BHD IQD JOD KWD LYD OMR TND"),
        (4, "CLF UYW"),
        (6, "XAG XAU XBA XBB XBC XBD XDR XPD XPT XSU XUA"),
    )
    for code in codes.split()
}
# The models sum money in decimal to 6 decimals (sql/marts/mrr_daily.sql): the precision an
# amount is first read at, whichever engine's type carried it (a double, a numeric).
MODEL_DECIMALS = 6


def minor_unit(currency: str | None) -> int:
    """The digits after the decimal point of CURRENCY's minor unit (ISO 4217 exponent); 2 when
    no currency is set."""
    return _EXPONENTS.get((currency or "").upper(), 2)


def exact(value: SupportsFloat | Decimal | None, currency: str | None = None) -> Decimal | None:
    """An amount as the exact Decimal at CURRENCY's minor unit: read at the models' precision
    first (a double's shortest repr, a numeric's digits: so both engines give the same
    amount), then rounded half up to the minor unit; None stays None, -0 is 0."""
    if value is None:
        return None
    amount = value if isinstance(value, Decimal) else Decimal(repr(float(value)))
    if not amount.is_finite():
        return None
    amount = amount.quantize(Decimal(1).scaleb(-MODEL_DECIMALS), rounding=ROUND_HALF_UP)
    amount = amount.quantize(Decimal(1).scaleb(-minor_unit(currency)), rounding=ROUND_HALF_UP)
    return amount.copy_abs() if amount.is_zero() else amount


def count(value: float) -> str:
    """A count with thousands separators: 16804 -> '16,804'."""
    return f"{value:,.0f}"


def money(
    value: float | Decimal,
    currency: str | None = None,
    *,
    signed: bool = False,
    cents: bool | None = True,
) -> str:
    """An amount with thousands separators and its ISO 4217 code: 'EUR 12,345.67'; SIGNED
    puts '+' before a positive amount (a change). CENTS True shows the currency's minor unit
    (`minor_unit`: 'JPY 1,235', 'KWD 1.235'), False rounds to whole units, None (a tile, a
    chart label) keeps the minor unit only below 100, where it matters (an ARPU of 4.99). A
    float or a Decimal (the report's exact amounts), rounded half up. No currency set: the
    amount alone."""
    if cents is None:
        cents = abs(float(value)) < 100
    digits = minor_unit(currency) if cents else 0
    amount = exact(value, currency)
    if amount is None:  # not a number (NaN, infinite): as Python writes it
        return f"{currency} {value}" if currency else f"{value}"
    rounded = amount.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    sign = "-" if rounded < 0 else "+" if signed and rounded > 0 else ""
    text = f"{abs(rounded):,.{digits}f}"
    return f"{sign}{currency} {text}" if currency else f"{sign}{text}"


def percent(rate: float, decimals: int = 1) -> str:
    """A rate (0..1) as a percent: 0.0391 -> '3.9%'."""
    return f"{rate * 100:.{decimals}f}%"


def points(change: float) -> str:
    """A change of a rate in percentage points, signed: 0.004 -> '+0.4 pp'."""
    return f"{change * 100:+.1f} pp"
