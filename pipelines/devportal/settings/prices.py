"""The price book: `[analytics]`'s prices, validated into the rows the revenue models read.

The Developer API sends no prices; the developer knows them. `[analytics]` holds them
(`config.AnalyticsConfig`): the flat keys `price_monthly`, `price_yearly` and `price_unknown`
(for a subscription whose billing period is not known yet; unset: `price_monthly`), valid for
all time, or a `prices_file` of rows `period, amount, valid_from[, valid_to]` (CSV with that
header, or TOML `[[prices]]` tables) for prices that changed over time, which overrides the flat
keys. A file's relative path is relative to the current folder (where the command runs, as
dlt's own `.dlt/` is). `currency` is the ISO 4217 code every amount is in (`iso4217`), and
`revenue_share` the developer's share after the platform's cut (1.0: the figures are gross).

Every amount is a period's full price: a yearly price is the year's. The models count each
subscription at its period's monthly-normalised price (`mrr_amount`: amount / months of the
period x revenue_share, to 6 decimals, computed here in decimal so both engines sum the same
numbers exactly). A file row lasts from `valid_from` until its `valid_to` (exclusive), or else
until the next row of its period; before a period's first row there is no price (the figures
of those days are NULL, not a guess). Rows of one period may not overlap.

Bad input is one `ConfigError` line naming the key (and, for the file, the line): a negative
amount, one that is not a number, an unknown period, overlapping rows, an unknown currency
code, a share outside (0, 1]. No price at all is no error: `PriceBook.has_prices` is false
and the money figures are NULL.
"""

from __future__ import annotations

import csv
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devportal.base.errors import ConfigError
from devportal.settings.currencies import CURRENCIES

if TYPE_CHECKING:  # dlt's configuration is not imported to read a price book's rows
    from devportal.settings.config import AnalyticsConfig

PERIODS = ("monthly", "yearly", "unknown")
# months one payment of a period buys: 'unknown' is counted as monthly (as price_unknown is)
PERIOD_MONTHS = {"monthly": 1, "yearly": 12, "unknown": 1}
FLAT_KEYS = {"monthly": "price_monthly", "yearly": "price_yearly", "unknown": "price_unknown"}
FILE_COLUMNS = ("period", "amount", "valid_from", "valid_to")
REQUIRED_COLUMNS = ("period", "amount", "valid_from")
MRR_DECIMALS = Decimal("0.000001")
FIX_CONFIG = "fix it in .dlt/config.toml or ANALYTICS__{key}"


@dataclass(frozen=True)
class Price:
    """One row of the price book: PERIOD's full price AMOUNT from VALID_FROM (None: always)
    until VALID_TO (exclusive; None: open)."""

    period: str
    amount: Decimal
    valid_from: date | None = None
    valid_to: date | None = None


@dataclass(frozen=True)
class PriceBook:
    """The prices of `[analytics]`, validated; `source` says where they came from."""

    currency: str | None
    revenue_share: Decimal
    prices: tuple[Price, ...]
    source: str

    @property
    def has_prices(self) -> bool:
        return bool(self.prices)

    @property
    def basis(self) -> str:
        """'gross' (the full price) or 'net' (after the platform's cut)."""
        return "gross" if self.revenue_share == 1 else "net"

    def mrr_amount(self, price: Price) -> Decimal:
        """PRICE's monthly-normalised amount after the revenue share, to 6 decimals."""
        monthly = price.amount * self.revenue_share / PERIOD_MONTHS[price.period]
        return monthly.quantize(MRR_DECIMALS, rounding=ROUND_HALF_UP)


def _key_error(key: str, value: Any, why: str) -> ConfigError:
    fix = FIX_CONFIG.format(key=key.upper())
    return ConfigError(f"configuration [analytics] {key} = {value!r} {why}: {fix}")


def _amount(value: Any) -> Decimal:
    """VALUE as a finite amount >= 0, or ValueError saying what is wrong with it."""
    if isinstance(value, bool):
        raise ValueError("is not a number")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation as err:
        raise ValueError("is not a number") from err
    if not amount.is_finite():
        raise ValueError("is not a finite number")
    if amount < 0:
        raise ValueError("is negative")
    return amount


def _currency(cfg: AnalyticsConfig) -> str | None:
    if cfg.currency is None:
        return None
    code = str(cfg.currency).strip().upper()
    if code not in CURRENCIES:
        raise _key_error(
            "currency", cfg.currency, "is not an ISO 4217 currency code (e.g. EUR, USD, GBP)"
        )
    return code


def _revenue_share(cfg: AnalyticsConfig) -> Decimal:
    value = cfg.revenue_share
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _key_error("revenue_share", value, "is not a number")
    if not 0 < value <= 1:
        raise _key_error(
            "revenue_share", value, "must be above 0 and at most 1 (1.0: gross, 0.7: 70% net)"
        )
    return Decimal(str(value))


def _flat_prices(cfg: AnalyticsConfig) -> tuple[Price, ...]:
    given = {period: getattr(cfg, key) for period, key in FLAT_KEYS.items()}
    if all(value is None for value in given.values()):
        return ()
    amounts = {}
    for period, value in given.items():
        if value is None:
            continue
        try:
            amounts[period] = _amount(value)
        except ValueError as err:
            raise _key_error(FLAT_KEYS[period], value, f"{err} (a price is a number >= 0)") from err
    for period in ("monthly", "yearly"):
        if period not in amounts:
            other = next(FLAT_KEYS[p] for p in amounts)
            raise ConfigError(
                f"configuration [analytics] {FLAT_KEYS[period]} is not set while {other} is: "
                f"set {FLAT_KEYS[period]} too (a subscription's period is inferred from its "
                "history, so any may turn out monthly or yearly)"
            )
    amounts.setdefault("unknown", amounts["monthly"])
    return tuple(Price(period, amounts[period]) for period in PERIODS)


def _file_rows(path: Path) -> Iterable[tuple[int, Mapping[str, Any]]]:
    """(line or row number, row) of a prices file, CSV or TOML by its suffix."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            columns = [c.strip() for c in reader.fieldnames or ()]
            _check_columns(columns, path, "its header")
            for row in reader:
                cells = {str(k).strip(): v for k, v in row.items() if k is not None}
                if None in row:
                    raise _file_error(path, f"line {reader.line_num} has more cells than columns")
                if all(not (v or "").strip() for v in cells.values()):
                    continue  # a blank line
                yield reader.line_num, {k: (v or "").strip() for k, v in cells.items()}
    elif suffix == ".toml":
        with path.open("rb") as handle:
            data = tomllib.load(handle)
        rows = data.get("prices")
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise _file_error(path, "has no [[prices]] tables (rows of period, amount, valid_from)")
        for number, row in enumerate(rows, start=1):
            _check_columns(list(row), path, f"[[prices]] table {number}")
            yield number, row
    else:
        raise _file_error(path, "is neither .csv nor .toml")


def _file_error(path: Path | str, why: str) -> ConfigError:
    return ConfigError(f"configuration [analytics] prices_file {str(path)!r} {why}: fix the file")


def _check_columns(columns: list[str], path: Path, where: str) -> None:
    unknown = [c for c in columns if c not in FILE_COLUMNS]
    if unknown:
        raise _file_error(
            path, f"{where} has the column {unknown[0]!r}; columns: {', '.join(FILE_COLUMNS)}"
        )
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise _file_error(path, f"{where} has no column {missing[0]!r}")


def _date(value: Any, what: str) -> date:
    if isinstance(value, date) and not hasattr(value, "hour"):
        return value
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError as err:
        raise ValueError(f"{what} {value!r} is not a date (YYYY-MM-DD)") from err


def _file_prices(name: str) -> tuple[Price, ...]:
    path = Path(name).expanduser()
    if not path.is_file():
        raise _file_error(
            name,
            f"is not a file (a relative path is relative to the current folder, {Path.cwd()})",
        )
    rows: list[tuple[str, Price]] = []
    try:
        for number, row in _file_rows(path):
            where = f"[[prices]] table {number}" if path.suffix == ".toml" else f"line {number}"
            try:
                period = str(row["period"]).strip().lower()
                if period not in PERIODS:
                    raise ValueError(f"period {row['period']!r} is not one of {', '.join(PERIODS)}")
                try:
                    amount = _amount(row["amount"])
                except ValueError as err:
                    raise ValueError(f"amount {row['amount']!r} {err}") from err
                valid_from = _date(row["valid_from"], "valid_from")
                end = row.get("valid_to")
                valid_to = None if end in (None, "") else _date(end, "valid_to")
                if valid_to is not None and valid_to <= valid_from:
                    raise ValueError(f"valid_to {valid_to} is not after valid_from {valid_from}")
            except ValueError as err:
                raise _file_error(path, f"{where}: {err}") from err
            rows.append((where, Price(period, amount, valid_from, valid_to)))
    except (OSError, UnicodeDecodeError, csv.Error, tomllib.TOMLDecodeError) as err:
        raise _file_error(path, f"cannot be read ({err})") from err
    by_period = {
        period: sorted((r for r in rows if r[1].period == period), key=_starts)
        for period in PERIODS
    }
    for period in ("monthly", "yearly"):
        if not by_period[period]:
            raise _file_error(path, f"has no {period} row (any subscription may be {period})")
    prices: list[Price] = []
    for ordered in by_period.values():
        if not ordered:  # no unknown rows: priced as monthly, as price_unknown is
            ordered = [
                (where, Price("unknown", p.amount, p.valid_from, p.valid_to))
                for where, p in by_period["monthly"]
            ]
        prices += _chained(path, ordered)
    return tuple(prices)


def _starts(row: tuple[str, Price]) -> date:
    return row[1].valid_from or date.min


def _chained(path: Path, ordered: list[tuple[str, Price]]) -> list[Price]:
    """ORDERED (one period's rows by valid_from) with each open end closed by the next row's
    start; overlapping rows are a ConfigError naming both."""
    chained = []
    for (where, price), following in zip(ordered, [*ordered[1:], None], strict=True):
        valid_to = price.valid_to
        if following is not None:
            next_where, nxt = following
            assert nxt.valid_from is not None and price.valid_from is not None
            if nxt.valid_from == price.valid_from or (valid_to and valid_to > nxt.valid_from):
                ends = f"until {valid_to}" if valid_to else "with no valid_to"
                raise _file_error(
                    path,
                    f"the {price.period} prices of {where} (from {price.valid_from}, {ends}) "
                    f"and {next_where} (from {nxt.valid_from}) overlap",
                )
            valid_to = valid_to or nxt.valid_from
        chained.append(Price(price.period, price.amount, price.valid_from, valid_to))
    return chained


def price_book(cfg: AnalyticsConfig) -> PriceBook:
    """The validated price book of CFG (`config.resolve_analytics()`); one-line ConfigError
    naming the key for bad input."""
    currency = _currency(cfg)
    share = _revenue_share(cfg)
    if cfg.prices_file:
        prices, source = _file_prices(str(cfg.prices_file)), f"prices_file {cfg.prices_file}"
    else:
        prices, source = _flat_prices(cfg), "price_monthly, price_yearly, price_unknown"
    if prices and currency is None:
        raise ConfigError(
            "configuration [analytics] currency is not set while prices are: set the ISO 4217 "
            'code the prices are in (e.g. currency = "EUR") in .dlt/config.toml or '
            "ANALYTICS__CURRENCY"
        )
    return PriceBook(currency, share, prices, source if prices else "none")
