"""Seeds: the tables the runner writes from settings at every build.

They are written in the build's transaction, before any model, so the models and the settings
they were built with are one snapshot. `analytics.status_map(status, treated_as)` is
`[analytics] status_map` (`devportal.settings.config.resolve_analytics`) with the two statuses the spec
shows (`active`, `canceled`, each treated as itself): how churn, renewal and cancellation
figures treat each status as sent (a status not in it is "other";
sql/staging/stg_subscriptions.sql). A model reads a seed like a model (`analytics.<name>`); a
seed no model reads is not written; no SQL file may take a seed's name; seeds have data tests
too (`SEED_TESTS`, written like a model header's `@test` lines). The build's summary lists the
seeds written under `seeds`, apart from `built`.

The price book (`devportal.settings.prices`, from `[analytics]`): `analytics.prices(period, amount,
valid_from, valid_to, currency, mrr_amount)`, one row per price (`valid_from` NULL: since always,
the flat keys; `valid_to` NULL: open; `mrr_amount` the monthly-normalised amount after the
revenue share, decimal(18, 6)), no rows without prices; and `analytics.price_book(currency,
revenue_share, has_prices, basis)`, exactly one row (`basis` 'gross' when revenue_share is 1,
else 'net').
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from devportal.base.api import SPEC_STATUSES as SPEC_STATUSES
from devportal.base.errors import ConfigError
from devportal.settings import prices

if TYPE_CHECKING:
    from devportal.settings.command import CommandSettings

STATUS_MAP = "status_map"
# what `[analytics] status_map` may treat a status as (`config.STATUS_TREATMENTS`): the spec's
# statuses; SPEC_STATUSES are each treated as themselves, whatever the map says
TREATMENTS = SPEC_STATUSES
PRICES = "prices"
PRICE_BOOK = "price_book"
SEEDS = (STATUS_MAP, PRICES, PRICE_BOOK)
SEED_TESTS: dict[str, tuple[str, ...]] = {
    STATUS_MAP: (
        "unique(status)",
        "not_null(status, treated_as)",
        f"accepted_values(treated_as: {', '.join(TREATMENTS)})",
    ),
    PRICES: (
        "unique(period, valid_from)",
        "not_null(period, amount, currency, mrr_amount)",
        f"accepted_values(period: {', '.join(prices.PERIODS)})",
    ),
    PRICE_BOOK: (
        "not_null(revenue_share, has_prices, basis)",
        "accepted_values(basis: gross, net)",
    ),
}


@dataclass(frozen=True)
class Seed:
    """A table written from settings at every build: `analytics.<name>` of COLUMNS (name, type;
    types both engines spell alike) holding ROWS."""

    name: str
    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[Any, ...], ...]


def status_map_seed(status_map: Mapping[str, str] | None) -> Seed:
    """`analytics.status_map`: each status and the treatment churn, renewal and cancellation
    figures give it: the spec's two as themselves, then `[analytics] status_map` (validated by
    `config.resolve_analytics`) in status order."""
    rows = [(status, status) for status in SPEC_STATUSES]
    rows += sorted((str(k), str(v)) for k, v in (status_map or {}).items())
    return Seed(STATUS_MAP, (("status", "varchar"), ("treated_as", "varchar")), tuple(rows))


def price_seeds(book: prices.PriceBook) -> list[Seed]:
    """`analytics.prices` and `analytics.price_book` of BOOK (module docstring)."""
    rows = tuple(
        (
            price.period,
            float(price.amount),
            price.valid_from,
            price.valid_to,
            book.currency,
            book.mrr_amount(price),
        )
        for price in book.prices
    )
    price_columns = (
        ("period", "varchar"),
        ("amount", "double precision"),
        ("valid_from", "date"),
        ("valid_to", "date"),
        ("currency", "varchar"),
        ("mrr_amount", "decimal(18, 6)"),
    )
    book_columns = (
        ("currency", "varchar"),
        ("revenue_share", "double precision"),
        ("has_prices", "boolean"),
        ("basis", "varchar"),
    )
    book_row = (book.currency, float(book.revenue_share), book.has_prices, book.basis)
    return [Seed(PRICES, price_columns, rows), Seed(PRICE_BOOK, book_columns, (book_row,))]


# The seeds a sync resolved, handed to the `devportal models` it execs in its place
# (`cli.speedups`): that process then builds without importing dlt's configuration (about 0.3 s
# of every hourly run). Prices and status treatments only: nothing secret.
HANDED_OVER = "DEVPORTAL_SEEDS"


def seeds_from_settings(settings: CommandSettings | None = None) -> list[Seed]:
    """Every seed, from `[analytics]` as the command resolves it once (SETTINGS, its
    `target.settings`; else as dlt resolves it now; one-line ConfigError), or as the sync that
    started this process resolved them a moment ago (`HANDED_OVER`, read once)."""
    handed = os.environ.pop(HANDED_OVER, None)
    if handed:
        return decode_seeds(handed)
    # deferred: dlt's configuration costs startup time, which a sync's handed seeds skip
    from devportal.settings.config import resolve_analytics, unknown_keys

    analytics = settings.analytics() if settings is not None else resolve_analytics()
    try:
        book = prices.price_book(analytics)
    except ConfigError as err:  # often a misspelt key: name it beside what it left unset
        typos = [line for line in unknown_keys() if "[analytics]" in line or "ANALYTICS__" in line]
        raise ConfigError("; ".join([str(err), *typos])) from err
    return [status_map_seed(analytics.status_map), *price_seeds(book)]


def _tagged(value: Any) -> Any:
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, date):
        return {"date": value.isoformat()}
    return value


def _untagged(value: Any) -> Any:
    if isinstance(value, dict):
        if "decimal" in value:
            return Decimal(value["decimal"])
        return date.fromisoformat(value["date"])
    return value


def encode_seeds(seeds: Sequence[Seed]) -> str:
    """SEEDS as JSON text, every value as it was (decimals and dates tagged)."""
    return json.dumps(
        [
            {
                "name": seed.name,
                "columns": [list(column) for column in seed.columns],
                "rows": [[_tagged(value) for value in row] for row in seed.rows],
            }
            for seed in seeds
        ]
    )


def decode_seeds(text: str) -> list[Seed]:
    """The seeds of `encode_seeds`' TEXT."""
    return [
        Seed(
            item["name"],
            tuple((str(name), str(kind)) for name, kind in item["columns"]),
            tuple(tuple(_untagged(value) for value in row) for row in item["rows"]),
        )
        for item in json.loads(text)
    ]
