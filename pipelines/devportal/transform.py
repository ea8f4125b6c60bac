"""Rows from API pages to typed records, and the data-quality ledger of what did not fit.

Subscriptions take the fast path: each batch of pages becomes one Arrow table with an explicit
schema (columns built once per batch, dates parsed by Arrow's vectorised strptime), so the load
never touches per-row dicts. Values that do not fit their type are kept as NULL with the raw
text beside them and counted in `DataQuality`; they never stop a sync.

`_row_version` is a deterministic 64-bit hash of the business columns. dlt's SCD2 merge compares
it to decide whether a subscription changed; on the Arrow path dlt would otherwise have no
content hash at all (its `add_dlt_id` makes random ids, which would version every row on every
sweep).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from devportal.errors import scrub
from devportal.values import to_int

KNOWN_STATUSES = ("active", "canceled")
# the data-quality problem of a row that has no usable key: set aside, counted, never loaded
ID_DROPPED = "missing_or_invalid_id_row_dropped"
USER_ID_DROPPED = "missing_or_invalid_user_id_row_dropped"
EXPIRES_FORMAT = "%Y-%m-%d %H:%M:%S"
SAMPLE_SIZE = 5

SUBSCRIPTIONS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("service_id", pa.int64()),
        pa.field("status", pa.string()),
        pa.field("expires_at", pa.timestamp("us")),
        pa.field("is_test", pa.bool_(), nullable=False),
        pa.field("expires_at_raw", pa.string()),
        pa.field("dq_flags", pa.string()),
        pa.field("_row_version", pa.int64(), nullable=False),
    ]
)

# dlt column hints matching SUBSCRIPTIONS_SCHEMA (naive TIMESTAMP, as the API's clock has no zone).
SUBSCRIPTIONS_COLUMNS: dict[str, dict[str, Any]] = {
    "id": {"data_type": "bigint", "nullable": False},
    "service_id": {"data_type": "bigint", "nullable": True},
    "status": {"data_type": "text", "nullable": True},
    "expires_at": {"data_type": "timestamp", "timezone": False, "precision": 6, "nullable": True},
    "is_test": {"data_type": "bool", "nullable": False},
    "expires_at_raw": {"data_type": "text", "nullable": True},
    "dq_flags": {"data_type": "text", "nullable": True},
    "_row_version": {"data_type": "bigint", "nullable": False},
}


@dataclass
class Problem:
    count: int = 0
    sample_ids: list[str] = field(default_factory=list)
    sample_values: list[str] = field(default_factory=list)

    def add(self, ident: Any, value: Any) -> None:
        self.count += 1
        if len(self.sample_ids) < SAMPLE_SIZE:  # API text, stored: scrubbed (errors.scrub)
            self.sample_ids.append(scrub(str(ident))[:64])
            self.sample_values.append(scrub(raw_text(value))[:120])


@dataclass
class DataQuality:
    """Counts of rows whose values did not fit, keyed by (table, column, problem)."""

    problems: dict[tuple[str, str, str], Problem] = field(default_factory=dict)

    def add(self, table: str, column: str, problem: str, ident: Any, value: Any) -> None:
        self.problems.setdefault((table, column, problem), Problem()).add(ident, value)

    def merge(self, other: DataQuality) -> None:
        """Add `other`'s counts (and samples, up to SAMPLE_SIZE) to this ledger."""
        for key, problem in other.problems.items():
            mine = self.problems.setdefault(key, Problem())
            mine.count += problem.count
            room = SAMPLE_SIZE - len(mine.sample_ids)
            mine.sample_ids.extend(problem.sample_ids[:room])
            mine.sample_values.extend(problem.sample_values[:room])

    def add_count(self, table: str, column: str, problem: str, n: int, sample: str) -> None:
        """`n` occurrences at once (counted elsewhere), with one sample."""
        found = self.problems.setdefault((table, column, problem), Problem())
        found.count += n
        if not found.sample_values:
            found.sample_ids.append("-")
            found.sample_values.append(sample)

    def count(self, table: str, column: str, problem: str) -> int:
        found = self.problems.get((table, column, problem))
        return found.count if found else 0

    def total(self) -> int:
        return sum(p.count for p in self.problems.values())

    def records(self, run_id: str) -> list[dict[str, Any]]:
        return [
            {
                "run_id": run_id,
                "table_name": table,
                "column_name": column,
                "problem": problem,
                "row_count": p.count,
                "sample_ids": ", ".join(p.sample_ids),
                "sample_values": ", ".join(p.sample_values),
            }
            for (table, column, problem), p in sorted(self.problems.items())
        ]


# -- helpers ---------------------------------------------------------------------------------


def raw_text(value: Any) -> str:
    """A value as the API sent it: strings verbatim, anything else as JSON (never a repr)."""
    return value if isinstance(value, str) else json_text(value)


def parse_timestamp(value: Any) -> datetime | None:
    """Second-chance parse of a value the vectorised spec-format parse refused.

    Only real calendar times: `2024-02-30`, `2023-02-29` or second 60 are refused (NULL, raw text
    kept, counted), never moved to a neighbouring day or minute. Accepts the spec format with
    unpadded fields and ISO 8601 (a zone is converted to UTC).
    """
    if not isinstance(value, str) or not value.strip() or value.startswith("0000"):
        return None
    text = value.strip()
    try:
        parsed = datetime.strptime(text, EXPIRES_FORMAT)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    if not 1970 <= parsed.year <= 9999:
        return None
    return parsed


_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, vectorised (uint64 arithmetic wraps, as the algorithm wants)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


# -- subscriptions ---------------------------------------------------------------------------


class _Batch:
    """One batch of subscription rows being typed: the rows, their ids, and what was flagged."""

    def __init__(self, rows: Sequence[dict[str, Any]], ids: pa.Array, dq: DataQuality) -> None:
        self.rows = rows
        self.ids = ids
        self.dq = dq
        self.n = len(rows)
        self.flags: list[list[str]] | None = None  # per row, created on the first flag
        self._id_list: list[int] | None = None

    def column(self, name: str) -> list[Any]:
        return [row.get(name) for row in self.rows]

    def flag(self, i: int, column: str, problem: str, raw: Any) -> None:
        """Count row `i`'s problem in the ledger and name it in the row's `dq_flags`."""
        if self._id_list is None:
            self._id_list = self.ids.to_pylist()
        self.dq.add("subscriptions", column, problem, self._id_list[i], raw)
        if self.flags is None:
            self.flags = [[] for _ in range(self.n)]
        self.flags[i].append(problem)

    def flag_column(self) -> pa.Array:
        if self.flags is None:
            return pa.nulls(self.n, type=pa.string())
        return pa.array([",".join(f) or None for f in self.flags], type=pa.string())


def _keyed(
    rows: Sequence[dict[str, Any]], dq: DataQuality
) -> tuple[list[dict[str, Any]], pa.Array]:
    """The rows that have a usable `id`, and their ids; the others are dropped and counted."""
    raw_ids = [row.get("id") for row in rows]
    try:
        ids = pa.array(raw_ids, type=pa.int64())
        keep = None if ids.null_count == 0 else [v is not None for v in ids.to_pylist()]
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        coerced = [to_int(v) for v in raw_ids]
        keep = [v is not None for v in coerced]
        ids = pa.array(coerced, type=pa.int64())
    if keep is None or all(keep):
        return list(rows), ids
    for row, ok in zip(rows, keep, strict=True):
        if not ok:
            dq.add("subscriptions", "id", ID_DROPPED, "?", row)
    kept = [row for row, ok in zip(rows, keep, strict=True) if ok]
    return kept, pa.array([to_int(row.get("id")) for row in kept], type=pa.int64())


def _service_ids(batch: _Batch) -> pa.Array:
    """`service_id` as BIGINT: a value that is not an integer is NULL and flagged, as is none."""
    raw = batch.column("service_id")
    try:
        service = pa.array(raw, type=pa.int64())
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        coerced = [to_int(v) for v in raw]
        for i, (value, typed) in enumerate(zip(raw, coerced, strict=True)):
            if typed is None and value is not None:
                batch.flag(i, "service_id", "invalid_service_id", value)
        service = pa.array(coerced, type=pa.int64())
    if service.null_count:
        for i, value in enumerate(raw):
            if value is None:
                batch.flag(i, "service_id", "missing_service_id", value)
    return service


def _statuses(batch: _Batch) -> pa.Array:
    """`status` kept verbatim (JSON for a non-string); unknown or missing values are flagged."""
    raw = batch.column("status")
    try:
        status = pa.array(raw, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        status = pa.array([None if v is None else raw_text(v) for v in raw], type=pa.string())
    known = pc.is_in(status, value_set=pa.array(KNOWN_STATUSES))
    if not pc.all(known).as_py():
        for i, ok in enumerate(known.to_pylist()):
            if not ok:
                batch.flag(i, "status", "unknown_status", raw[i])
    return status


def _expiries(batch: _Batch) -> tuple[pa.Array, pa.Array | None]:
    """`expires_at` as TIMESTAMP and, where it could not be read, the raw text beside it.

    The spec format first (vectorised), a strict second chance per value (`parse_timestamp`),
    else NULL with the raw value kept and flagged.
    """
    raw = batch.column("expires_at")
    try:
        text = pa.array(raw, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        text = pa.array([None if v is None else str(v) for v in raw], type=pa.string())
    expires = pc.strptime(text, format=EXPIRES_FORMAT, unit="us", error_is_null=True)
    # Arrow's strptime rolls impossible dates over (02-30 -> 03-01, :60 -> next minute): a value
    # counts as parsed only if it prints back as the text it came from
    # (cast + slice, not strftime: 20x faster, and strftime prints microseconds for %S)
    printed = pc.utf8_slice_codeunits(pc.cast(expires, pa.string()), 0, len("YYYY-MM-DD HH:MM:SS"))
    exact = pc.fill_null(pc.equal(printed, text), True)
    if not pc.all(exact).as_py():
        expires = pc.if_else(exact, expires, pa.scalar(None, expires.type))
    if not expires.null_count:
        return expires, None
    parsed = expires.to_pylist()
    raw_kept: list[str | None] = [None] * batch.n
    for i, value in enumerate(parsed):
        if value is not None:
            continue
        parsed[i] = parse_timestamp(raw[i])
        if parsed[i] is not None:
            continue
        raw_kept[i] = None if raw[i] is None else raw_text(raw[i])[:200]
        problem = "missing_expires_at" if raw[i] in (None, "") else "invalid_expires_at"
        batch.flag(i, "expires_at", problem, raw[i])
    return pa.array(parsed, type=pa.timestamp("us")), pa.array(raw_kept, type=pa.string())


def _row_versions(
    ids: pa.Array,
    service: pa.Array,
    status: pa.Array,
    expires: pa.Array,
    expires_raw: pa.Array | None,
    is_test: bool,
) -> pa.Array:
    """`_row_version`: splitmix64 over the business columns, vectorised (see module docstring)."""
    n = len(ids)
    id_np = ids.to_numpy(zero_copy_only=False).astype(np.uint64)
    svc_np = service.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.uint64)
    codes = pc.dictionary_encode(status.fill_null("\x00null"))
    hashes = np.array([_text_hash(s) for s in codes.dictionary.to_pylist()], dtype=np.uint64)
    status_np = (
        hashes[codes.indices.to_numpy(zero_copy_only=False)] if n else np.zeros(0, np.uint64)
    )
    exp_np = (
        pc.cast(expires, pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.uint64)
    )
    if expires_raw is not None:  # an unreadable value versions by its text
        for i, text in enumerate(expires_raw.to_pylist()):
            if text is not None:
                exp_np[i] = np.uint64(_text_hash(text))
    h = _mix(id_np)
    for part in (svc_np, status_np, exp_np, np.full(n, 1 if is_test else 0, dtype=np.uint64)):
        h = _mix(h ^ part)
    # from_buffers: pa.array(ndarray) would import pandas (40 MB, 0.4 s) through pyarrow's shim
    return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(h.view(np.int64))])


def subscriptions_table(
    rows: Sequence[dict[str, Any]], is_test: bool, dq: DataQuality
) -> tuple[pa.Table, np.ndarray]:
    """One Arrow table for a batch of subscription rows, and the array of their ids.

    Rows without a usable `id` cannot be keyed: they are dropped and counted. Every other
    column is typed by its own coercer; a value that does not fit is NULL, flagged and counted.
    """
    kept, ids = _keyed(rows, dq)
    batch = _Batch(kept, ids, dq)
    service = _service_ids(batch)
    status = _statuses(batch)
    expires, expires_raw = _expiries(batch)
    n = batch.n
    table = pa.Table.from_arrays(
        [
            ids,
            service,
            status,
            expires,
            pa.array([is_test] * n, type=pa.bool_()),
            expires_raw if expires_raw is not None else pa.nulls(n, type=pa.string()),
            batch.flag_column(),
            _row_versions(ids, service, status, expires, expires_raw, is_test),
        ],
        schema=SUBSCRIPTIONS_SCHEMA,
    )
    return table, ids.to_numpy(zero_copy_only=False).astype(np.int64)


# -- user settings ---------------------------------------------------------------------------

TWITCH_FIELDS = (
    "twitch_id",
    "display_name",
    "name",
    "partnered",
    "icon_url",
    "profile_banner_url",
    "profile_background_color",
)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else raw_text(value)


def json_text(value: Any) -> str:
    """Compact JSON text of a parsed value, keys in the order the API sent them.

    orjson stops at 254 levels of nesting; deeper objects (the API may send them) take the
    standard library's path, which goes as deep as the page parser allowed.
    """
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def pointer_token(key: str) -> str:
    """One RFC 6901 JSON Pointer token: `~` -> `~0`, `/` -> `~1`."""
    return key.replace("~", "~0").replace("/", "~1")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def flatten_settings(settings: Any) -> Iterable[tuple[str, str | None, str]]:
    """(JSON Pointer, text value, JSON type) for each leaf of a settings object, in order.

    The path is an RFC 6901 JSON Pointer: `{"a.b": 1, "a": {"b": 2}}` gives `/a.b` and `/a/b`,
    so no two keys collide, and `json_extract(settings, key)` finds the value again. Empty
    objects and arrays are leaves (`{}`, `[]`). Iterative: any depth the page parser accepted.
    """
    if not isinstance(settings, dict):
        return
    stack: list[tuple[str, Iterator[tuple[str, Any]]]] = [("", iter(settings.items()))]
    while stack:
        prefix, items = stack[-1]
        step = next(items, None)
        if step is None:
            stack.pop()
            continue
        key, value = step
        path = f"{prefix}/{pointer_token(str(key))}"
        if isinstance(value, dict) and value:
            stack.append((path, iter(value.items())))
            continue
        if isinstance(value, bool):
            text: str | None = "true" if value else "false"
        elif isinstance(value, str):
            text = value
        elif value is None:
            text = None
        else:
            text = json_text(value)
        yield path, text, _json_kind(value)


def user_settings_records(
    rows: Sequence[dict[str, Any]], dq: DataQuality, seen_at: datetime
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(user_settings rows, user_setting_values rows) for one page of settings entries."""
    users: list[dict[str, Any]] = []
    values: list[dict[str, Any]] = []
    for entry in rows:
        user: dict[str, Any] = entry["user"] if isinstance(entry.get("user"), dict) else {}
        service: dict[str, Any] = user["service"] if isinstance(user.get("service"), dict) else {}
        user_id = to_int(service.get("id"))
        if user_id is None:
            dq.add("user_settings", "user_id", USER_ID_DROPPED, "?", entry)
            continue
        twitch: dict[str, Any] | None = (
            user["twitch"] if isinstance(user.get("twitch"), dict) else None
        )
        settings = entry.get("settings")
        if settings is not None and not isinstance(settings, dict):
            dq.add("user_settings", "settings", "settings_not_an_object", user_id, settings)
        platforms = sorted(k for k, v in user.items() if k != "service" and isinstance(v, dict))
        record: dict[str, Any] = {
            "user_id": user_id,
            "platforms": ",".join(platforms) or None,
            "has_twitch": twitch is not None,
            # exactly the object the API sent (JSON text): absent keys stay absent
            "settings": None if settings is None else json_text(settings),
            "settings_count": len(settings) if isinstance(settings, dict) else 0,
            "last_seen_at": seen_at,
        }
        for name in TWITCH_FIELDS:
            raw = twitch.get(name) if twitch else None
            record[f"twitch_{name}" if not name.startswith("twitch_") else name] = raw
        record["twitch_id"] = (
            to_int(record["twitch_id"]) if record["twitch_id"] is not None else None
        )
        record["twitch_partnered"] = to_int(record["twitch_partnered"])
        for name in (
            "twitch_display_name",
            "twitch_name",
            "twitch_icon_url",
            "twitch_profile_banner_url",
            "twitch_profile_background_color",
        ):
            record[name] = _text_or_none(record[name])
        users.append(record)
        for key, text, kind in flatten_settings(settings):
            values.append({"user_id": user_id, "key": key, "value": text, "value_type": kind})
    return users, values


USER_SETTINGS_COLUMNS: dict[str, dict[str, Any]] = {
    "user_id": {"data_type": "bigint", "nullable": False, "primary_key": True},
    "platforms": {"data_type": "text"},
    "has_twitch": {"data_type": "bool"},
    "settings": {"data_type": "text"},
    "settings_count": {"data_type": "bigint"},
    "last_seen_at": {"data_type": "timestamp", "timezone": False},
    "twitch_id": {"data_type": "bigint"},
    "twitch_display_name": {"data_type": "text"},
    "twitch_name": {"data_type": "text"},
    "twitch_partnered": {"data_type": "bigint"},
    "twitch_icon_url": {"data_type": "text"},
    "twitch_profile_banner_url": {"data_type": "text"},
    "twitch_profile_background_color": {"data_type": "text"},
}

# A child row (user_setting_values, user_account_profiles) that only says "this user has none
# now": dlt's `hard_delete` hint makes delete-insert delete the user's rows (merge_key) and not
# insert this one. NULL on every stored row.
TOMBSTONE = "_tombstone"
TOMBSTONE_COLUMN: dict[str, Any] = {"data_type": "bool", "nullable": True, "hard_delete": True}


def tombstones(
    parents: Iterable[int], children: Sequence[dict[str, Any]], columns: dict[str, Any]
) -> list[dict[str, Any]]:
    """One tombstone per parent `user_id` without a child row; the other NOT NULL columns of
    `columns` hold '' (the row is never stored, but staging checks them)."""
    required = {
        name: ""
        for name, column in columns.items()
        if column.get("nullable") is False and name != "user_id"
    }
    have = {child["user_id"] for child in children}
    return [
        {"user_id": user_id, **required, TOMBSTONE: True} for user_id in sorted(set(parents) - have)
    ]


USER_SETTING_VALUES_COLUMNS: dict[str, dict[str, Any]] = {
    "user_id": {"data_type": "bigint", "nullable": False, "merge_key": True},
    "key": {"data_type": "text", "nullable": False},
    "value": {"data_type": "text"},
    "value_type": {"data_type": "text"},
    TOMBSTONE: {**TOMBSTONE_COLUMN},
}


# -- user accounts ---------------------------------------------------------------------------

PROFILE_ID_KEYS = ("id", "twitch_id", "youtube_id", "mixer_id", "facebook_id", "channel_id")
PROFILE_NAME_KEYS = ("name", "title", "username", "login")


def account_records(
    user_id: int, profiles: Any, fetched_at: datetime, dq: DataQuality
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(user_accounts row, user_account_profiles rows); `profiles` None means the API said 404."""
    if profiles is None:
        return (
            {
                "user_id": user_id,
                "status": "missing",
                "primary_platform": None,
                "platforms": None,
                "fetched_at": fetched_at,
            },
            [],
        )
    if not isinstance(profiles, dict):
        dq.add("user_accounts", "profiles", "profiles_not_an_object", user_id, profiles)
        profiles = {}
    primary = profiles.get("primary")
    linked = {k: v for k, v in profiles.items() if isinstance(v, dict)}
    rows = []
    for platform, profile in sorted(linked.items()):
        platform_user_id = next(
            (profile[k] for k in PROFILE_ID_KEYS if profile.get(k) is not None), None
        )
        name = next((profile[k] for k in PROFILE_NAME_KEYS if profile.get(k) is not None), None)
        rows.append(
            {
                "user_id": user_id,
                "platform": platform,
                "platform_user_id": _text_or_none(platform_user_id),
                "name": _text_or_none(name),
                "display_name": _text_or_none(profile.get("display_name")),
                "profile": json_text(profile),
            }
        )
    return (
        {
            "user_id": user_id,
            "status": "found",
            "primary_platform": primary if isinstance(primary, str) else None,
            "platforms": ",".join(sorted(linked)) or None,
            "fetched_at": fetched_at,
        },
        rows,
    )


USER_ACCOUNTS_COLUMNS: dict[str, dict[str, Any]] = {
    "user_id": {"data_type": "bigint", "nullable": False, "primary_key": True},
    "status": {"data_type": "text"},
    "primary_platform": {"data_type": "text"},
    "platforms": {"data_type": "text"},
    "fetched_at": {"data_type": "timestamp", "timezone": False},
}

USER_ACCOUNT_PROFILES_COLUMNS: dict[str, dict[str, Any]] = {
    "user_id": {"data_type": "bigint", "nullable": False, "merge_key": True},
    "platform": {"data_type": "text", "nullable": False},
    "platform_user_id": {"data_type": "text"},
    "name": {"data_type": "text"},
    "display_name": {"data_type": "text"},
    "profile": {"data_type": "text"},
    TOMBSTONE: {**TOMBSTONE_COLUMN},
}
