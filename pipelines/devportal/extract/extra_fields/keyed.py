"""Which objects the API sends are maps rather than records: stored as one JSON value.

A record has a few keys its code chose (`plan: {name, amount}`); a map's keys are data: ids
(PHP serialises an array whose keys are not 0..n-1 as an object: `orders: {"18734": {...}}`),
UUIDs, hashes, dates, e-mails, or simply more keys than a record has. Flattened, every key of a
map would be a column of its own (thousands: DuckDB runs out of memory, PostgreSQL stops at 1,600
columns), so an object field is stored whole, as one `json` column, when (`whole_reason`):

- one of its keys is an id: digits (`18734`, `-1`), a UUID (with or without dashes or braces), a
  hex string of 8 or more characters holding a digit (`5f2b9c1e`, an ObjectId, a SHA), a ULID;
- or every key of it is value-like: the above, or a prefixed id (`sub_18734`, `user:42`,
  `cus_NffrFeUfNV2Hib`: letters, `_`/`-`/`:`, then two or more digits or ten or more letters
  and digits holding a digit), a date (`2024-05-01...`) or an e-mail address;
- or it has more than KEYS_MAX distinct keys, counted over the rows of a run and the keys the
  warehouse already holds under it (`sync_runs.fields`).

Once whole, a field stays whole (its `sync_runs.fields` entry says `"whole"`).
"""

from __future__ import annotations

import re
from collections.abc import Collection

# distinct keys of one object beyond which it is a map (a record has far fewer; DuckDB's memory
# cap at its default fits about 140 columns of a large table, PostgreSQL 1,600 in all)
KEYS_MAX = 64
KEYED = "keyed by ids"  # the reason an id key gives

_STRONG = re.compile(
    r"[+-]?\d+"
    r"|\{?[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\}?"
    r"|(?:0x)?(?=[a-fA-F]*\d)[0-9a-fA-F]{8,}"
    r"|[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}"
)
_WEAK = re.compile(
    r"[A-Za-z]{1,16}[_:\-](?:\d{2,}|(?=[A-Za-z]*\d)[0-9A-Za-z]{10,})"
    r"|\d{4}-\d{2}(?:-\d{2})?(?:[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|[^@\s]+@[^@\s]+\.[A-Za-z]{2,}"
)


def id_key(key: str) -> bool:
    """Whether KEY is an id by itself (digits, a UUID, a hex string, a ULID)."""
    return _STRONG.fullmatch(key) is not None


def value_key(key: str) -> bool:
    """Whether KEY reads as a value rather than a name (an id, a prefixed id, a date, an
    e-mail address)."""
    return id_key(key) or _WEAK.fullmatch(key) is not None


def whole_reason(keys: Collection[str], bound: int = KEYS_MAX) -> str | None:
    """Why an object whose (distinct) keys are KEYS is stored whole, None when it is a record:
    `keyed by ids`, or `N keys` beyond BOUND."""
    if not keys:
        return None
    if any(id_key(k) for k in keys) or all(value_key(k) for k in keys):
        return KEYED
    if len(keys) > bound:
        return f"{len(keys)} keys"
    return None
