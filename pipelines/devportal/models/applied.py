"""Whether the models were built with the settings as they are now.

The seeds (`seeds`: the price book, the status map) are written at every build, so the figures
use the prices and status treatments of their build. A price set or changed in
`.dlt/config.toml` (or a changed `prices_file`) after it applies at the next build. `differences`
says, in words an owner reads, what the settings set that the built seeds do not hold; the
commands that print figures (`report`, `digest`) then rebuild the models when they can, or say
this in one line with the command that applies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from devportal.models.project import SCHEMA
from devportal.models.seeds import PRICE_BOOK, PRICES, STATUS_MAP, Seed, seeds_from_settings

_PERIOD_KEYS = {"monthly": "price_monthly", "yearly": "price_yearly", "unknown": "price_unknown"}


def _amount(value: Any) -> str | None:
    """An amount as text, the same for 4.99, 4.990000 and Decimal('4.99'), on either engine."""
    if value is None:
        return None
    return format(Decimal(str(round(float(value), 6))).normalize(), "f")


def _day(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat()[:10] if isinstance(value, date) else str(value)[:10]


def _prices(rows: Iterable[Sequence[Any]]) -> dict[tuple[str, str | None], tuple[Any, ...]]:
    """{(period, valid_from): (amount, valid_to)} of `analytics.prices` rows."""
    return {(str(row[0]), _day(row[2])): (_amount(row[1]), _day(row[3])) for row in rows}


def _price_name(period: str, since: str | None) -> str:
    name = _PERIOD_KEYS.get(period, f"{period} price")
    return f"{name} from {since}" if since else name


def _describe_prices(built: Sequence[Sequence[Any]], wanted: Sequence[Sequence[Any]]) -> list[str]:
    have, want = _prices(built), _prices(wanted)
    said = []
    for key in sorted(set(have) | set(want), key=lambda k: (k[0], k[1] or "")):
        name = _price_name(*key)
        now, then = want.get(key), have.get(key)
        if now == then:
            continue
        if then is None:
            said.append(f"{name} {now[0]} (the figures have none)" if now else name)
        elif now is None:
            said.append(f"{name} no longer set (the figures use {then[0]})")
        elif now[0] != then[0]:
            said.append(f"{name} {now[0]} (the figures use {then[0]})")
        else:
            said.append(f"{name} until {now[1] or 'open'} (the figures: {then[1] or 'open'})")
    return said


def _describe_book(built: Sequence[Sequence[Any]], wanted: Sequence[Sequence[Any]]) -> list[str]:
    have = built[0] if built else (None, None, None, None)
    want = wanted[0]
    said = []
    if (have[0] or None) != (want[0] or None):
        said.append(f"currency {want[0] or 'unset'} (the figures use {have[0] or 'none'})")
    if _amount(have[1]) != _amount(want[1]):
        said.append(
            f"revenue_share {_amount(want[1])} (the figures use {_amount(have[1]) or 'none'})"
        )
    return said


def _describe_status_map(
    built: Sequence[Sequence[Any]], wanted: Sequence[Sequence[Any]]
) -> list[str]:
    have = {str(s): str(t) for s, t in built}
    want = {str(s): str(t) for s, t in wanted}
    said = []
    for status in sorted(set(have) | set(want)):
        if have.get(status) != want.get(status):
            now = want.get(status, "other (not mapped)")
            then = have.get(status, "other")
            said.append(f"status_map {status} = {now} (the figures: {then})")
    return said


_DESCRIBE = {
    PRICES: _describe_prices,
    PRICE_BOOK: _describe_book,
    STATUS_MAP: _describe_status_map,
}


def seed_differences(
    built: Mapping[str, Sequence[Sequence[Any]] | None], configured: Sequence[Seed]
) -> list[str]:
    """What CONFIGURED (the seeds of the settings now) sets that BUILT ({seed: its rows, None
    when the build has no such table}) does not hold, one phrase each, prices first."""
    said: list[str] = []
    for seed in sorted(configured, key=lambda s: (s.name != PRICES, s.name != PRICE_BOOK)):
        rows = built.get(seed.name)
        if rows is None:
            if seed.name in built:  # a build from before this seed: every figure of it is new
                said.append(f"{seed.name} (this build of the models predates it)")
            continue
        said.extend(_DESCRIBE[seed.name](rows, seed.rows))
    return said


def differences(engine: Any, configured: Sequence[Seed] | None = None) -> list[str]:
    """`seed_differences` of the models built on ENGINE (an `engines.Engine`); [] when no model
    is built yet (nothing was built with other settings)."""
    relations = engine.relations(SCHEMA)
    if not relations:
        return []
    configured = seeds_from_settings() if configured is None else configured
    built: dict[str, Sequence[Sequence[Any]] | None] = {}
    for seed in configured:
        if seed.name not in relations:
            # a seed table is written only when a model reads it, and every model that reads
            # one is a mart of this project: its absence in a built project is an old build
            built[seed.name] = None if seed.rows else []
            continue
        columns = ", ".join(name for name, _ in seed.columns)
        built[seed.name] = engine.execute(
            f"select {columns} from {engine.qualify(SCHEMA, seed.name)}"
        )
    return seed_differences(built, configured)
