"""Rows from API pages to typed records, and the data-quality ledger of what did not fit.

Subscriptions take the fast path: each batch of pages becomes one Arrow table with an explicit
schema (columns built once per batch, dates parsed by Arrow's vectorised strptime), so the load
never touches per-row dicts. Values that do not fit their type are kept as NULL with the raw
text beside them and counted in `DataQuality`; they never stop a sync.

`_row_version` is a deterministic 64-bit hash of the business columns. dlt's SCD2 merge compares
it to decide whether a subscription changed; on the Arrow path dlt would otherwise have no
content hash at all (its `add_dlt_id` makes random ids, which would version every row on every
sweep). Fields the spec does not show travel beside the typed columns, one spooled column per
leaf path (`extras.encode_leaf`), and version the row too, except those `history_ignore_fields` names; a row
without such fields keeps the hash it always had.

Every read also records the fields it saw (`extras.FieldStats`: each path and the kinds of its
values), spec fields included, and for dict rows puts each extra field in its own column.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from devportal import extras
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

# what the spool holds: the typed columns, then one column per extra leaf path of the batch
# (`extras.encode_leaf`), typed into the columns of the run's plan when handed to dlt
# (`extras.Plan.expand`)
# the fields of a Subscription object the spec shows (spec 4.1), each typed into its own column
SUBSCRIPTION_FIELDS = frozenset(("id", "service_id", "status", "expires_at"))

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

    def __init__(
        self,
        rows: Sequence[dict[str, Any]],
        ids: pa.Array,
        dq: DataQuality,
        stats: extras.FieldStats,
    ) -> None:
        self.rows = rows
        self.ids = ids
        self.dq = dq
        self.stats = stats
        self.n = len(rows)
        self.flags: list[list[str]] | None = None  # per row, created on the first flag
        self._id_list: list[int] | None = None
        self.spec_nulls = False  # a spec field was null or absent in some row

    def column(self, name: str) -> list[Any]:
        return [row.get(name) for row in self.rows]

    def saw(self, name: str, raw: list[Any], typed: pa.Array | None = None, kind: str = "") -> None:
        """Record the kinds of spec field NAME's values (`fields` of the run record): KIND (and
        null) when they all made the Arrow array TYPED at once, else each value's."""
        self.spec_nulls = self.spec_nulls or see_spec(self.stats, name, raw, typed, kind)

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


def see_spec(
    stats: extras.FieldStats, name: str, raw: list[Any], typed: pa.Array | None, kind: str
) -> bool:
    """See spec field NAME's kinds in STATS (see `_Batch.saw`); whether some were null."""
    if typed is None:
        kinds = extras.kinds_of(raw)
    elif not typed.null_count:
        kinds = {kind}
    else:
        kinds = {"null"} if typed.null_count == len(typed) else {kind, "null"}
    stats.see_kinds((name,), kinds)
    return "null" in kinds


def _int64(raw: list[Any]) -> pa.Array:
    """RAW as BIGINT when every value is an integer (or null); else ArrowInvalid (a typed
    conversion would truncate 1.5 to 1)."""
    found = pa.array(raw)
    if pa.types.is_int64(found.type):
        return found
    if pa.types.is_null(found.type):
        return pa.nulls(len(raw), type=pa.int64())
    raise pa.ArrowInvalid(f"not all integers: {found.type}")


def _keyed(
    rows: Sequence[dict[str, Any]], dq: DataQuality, stats: extras.FieldStats
) -> tuple[list[dict[str, Any]], pa.Array]:
    """The rows that have a usable `id`, and their ids; the others are dropped and counted."""
    raw_ids = [row.get("id") for row in rows]
    try:
        ids = _int64(raw_ids)
        see_spec(stats, "id", raw_ids, ids, "bigint")
        keep = None if ids.null_count == 0 else [v is not None for v in ids.to_pylist()]
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        see_spec(stats, "id", raw_ids, None, "")
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
        service = _int64(raw)
        batch.saw("service_id", raw, service, "bigint")
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        batch.saw("service_id", raw)
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
        batch.saw("status", raw, status, "text")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        batch.saw("status", raw)
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
        batch.saw("expires_at", raw, text, "text")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        batch.saw("expires_at", raw)
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
    extra_rows: np.ndarray | None = None,
    extra_hashes: np.ndarray | None = None,
) -> pa.Array:
    """`_row_version`: splitmix64 over the business columns, vectorised (see module docstring);
    the rows EXTRA_ROWS mix in the hash of their versioned extra fields (EXTRA_HASHES)."""
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
    if extra_rows is not None and extra_hashes is not None and extra_rows.size:
        h[extra_rows] = _mix(h[extra_rows] ^ extra_hashes)
    # from_buffers: pa.array(ndarray) would import pandas (40 MB, 0.4 s) through pyarrow's shim
    return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(h.view(np.int64))])


def _extra_fields(
    batch: _Batch,
) -> tuple[list[tuple[pa.Field, pa.Array]], np.ndarray, np.ndarray]:
    """The spooled columns of the fields beyond the spec's (`extras.encode_leaf`, NULL where a
    row has none), and the rows whose extra fields version them (`_row_version`) with the hash
    of those fields.

    Nearly free when no row has any (one pass of `len`); else each row is checked. The fields of the
    rows that have some are seen column by column (`extras.leaf_columns`)."""
    rows, n = batch.rows, batch.n
    none: tuple[list[tuple[pa.Field, pa.Array]], np.ndarray, np.ndarray] = (
        [],
        np.zeros(0, dtype=np.intp),
        np.zeros(0, dtype=np.uint64),
    )
    # no spec field missing or null: each row has the four; a total of 4n keys leaves no room
    if not n or (not batch.spec_nulls and sum(map(len, rows)) == len(SUBSCRIPTION_FIELDS) * n):
        return none
    spec = SUBSCRIPTION_FIELDS
    at = [i for i, row in enumerate(rows) if not spec.issuperset(row)]
    if not at:
        return none
    leaves = extras.leaf_columns([rows[i] for i in at] if len(at) < n else rows, skip=spec)
    encoded: dict[extras.Path, tuple[pa.Field, pa.Array]] = {}
    for path, values in leaves.items():
        batch.stats.see_column(path, values)
        column = extras.encode_leaf(path, values)
        if column is not None:
            encoded[path] = column
    hashes, versioned = _extras_hashes(leaves, batch.stats.ignored, len(at), encoded)
    del leaves
    rows_at = np.asarray(at, dtype=np.intp)
    columns = list(encoded.values())
    if len(at) < n:  # each row without extra fields: NULL in every column
        where = np.full(n, -1, dtype=np.int64)
        where[rows_at] = np.arange(len(at), dtype=np.int64)
        spread = pa.array(where, mask=where < 0)
        columns = [(leaf, array.take(spread)) for leaf, array in columns]
    return columns, rows_at[versioned], hashes[versioned]


_INT_DOMAIN = np.uint64(0x5BD1E9955BD1E995)  # an integer's hash is apart from any text's


def _extras_hashes(
    leaves: Mapping[extras.Path, Sequence[Any]],
    ignored: Callable[[extras.Path], bool],
    n: int,
    encoded: Mapping[extras.Path, tuple[pa.Field, pa.Array]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(hash, versioned) per row: the hash of its versioned extra fields (every leaf not ignored
    and not null, in the order of their dotted paths, each its path and its value's JSON) and
    whether it has any. A value hashes alike whatever else its batch holds. ENCODED: the same
    values as spooled columns (`extras.encode_leaf`), hashed without a pass over each value
    where their form allows it."""
    h = np.zeros(n, dtype=np.uint64)
    versioned = np.zeros(n, dtype=bool)
    for path in sorted(leaves, key=extras.dotted):
        if ignored(path):
            continue
        value_hash = _value_hashes(leaves[path], (encoded or {}).get(path))
        present = value_hash != 0  # 0: absent or null (a value hashing to 0: 2**-64)
        if not present.any():
            continue
        path_hash = np.uint64(_text_hash(extras.dotted(path)))
        mixed = _mix(h ^ _mix(value_hash ^ path_hash))
        h = mixed if present.all() else np.where(present, mixed, h)
        versioned |= present
    return h, versioned


def _unique_text_hashes(texts: list[str | None] | pa.Array, prefix: str = "") -> np.ndarray:
    """`_text_hash` of each text after PREFIX (0 for None), each distinct text hashed once."""
    array = texts if isinstance(texts, pa.Array) else pa.array(texts, type=pa.string())
    codes = pc.dictionary_encode(array)
    uniques = codes.dictionary.to_pylist()
    table = np.array([_text_hash(prefix + u) for u in uniques], dtype=np.uint64)
    out = np.zeros(len(array), dtype=np.uint64)
    idx = codes.indices
    if len(table):
        if idx.null_count:
            valid = idx.is_valid().to_numpy(zero_copy_only=False)
            out[valid] = table[idx.fill_null(0).to_numpy(zero_copy_only=False)[valid]]
        else:
            out = table[idx.to_numpy(zero_copy_only=False)]
    return out


def _value_hashes(
    values: Sequence[Any], encoded: tuple[pa.Field, pa.Array] | None = None
) -> np.ndarray:
    """A 64-bit hash of each value (0 where absent or null): an integer by itself, a text by
    itself after `s:` (no JSON text starts so), anything else by its JSON text (sorted keys).
    A value hashes alike whatever else its batch holds. ENCODED: the values as a spooled
    column: texts and integers are hashed from it, and lists holding no object (their JSON
    text is the same with keys sorted) by the JSON text it holds."""
    if encoded is not None:
        leaf, array = encoded
        if extras.native_strings(leaf):
            return _unique_text_hashes(array, "s:")
        if extras.native_ints(leaf):
            numbers = array.fill_null(0).to_numpy(zero_copy_only=False).view(np.uint64)
            mixed = _mix(numbers ^ _INT_DOMAIN)
            if not array.null_count:
                return mixed
            return np.where(array.is_valid().to_numpy(zero_copy_only=False), mixed, np.uint64(0))
        if extras.json_lists(leaf) and not pc.any(pc.match_substring(array, "{")).as_py():
            return _unique_text_hashes(array)
    n = len(values)
    types = set(map(type, values))
    types -= {type(None), type(extras.ABSENT)}
    if types == {str}:  # the common case: each distinct text hashed once
        if len(types) != len(set(map(type, values))):
            values = [v if type(v) is str else None for v in values]
        return _unique_text_hashes(list(values), "s:")
    out = np.zeros(n, dtype=np.uint64)
    ints: list[int] = []
    if int in types:
        ints = [i for i, v in enumerate(values) if type(v) is int and -(2**63) <= v < 2**63]
        numbers = np.array([values[i] for i in ints], dtype=np.int64).view(np.uint64)
        out[ints] = _mix(numbers ^ _INT_DOMAIN)
    if types - {int} or len(ints) < sum(type(v) is int for v in values):
        small = set(ints)
        texts = [
            None
            if v is None or v is extras.ABSENT or i in small
            else "s:" + v
            if type(v) is str
            else extras.dumps(v, sort_keys=True)
            for i, v in enumerate(values)
        ]
        hashed = _unique_text_hashes(texts)
        out = np.where(hashed != 0, hashed, out)
    return out


def rehash(table: pa.Table, ignored: Callable[[extras.Path], bool]) -> pa.Table:
    """A spooled batch with `_row_version` computed again, its extra fields versioning as
    IGNORED now says (a contract that drops a new column's values: they version nothing)."""
    spooled = extras.spooled_leaves(table)
    if not spooled:
        return table
    leaves = {path: extras.decode_leaf(*column) for path, column in spooled.items()}
    hashes, versioned = _extras_hashes(leaves, ignored, table.num_rows)
    rows_at = np.arange(table.num_rows, dtype=np.intp)
    expires_raw = table.column("expires_at_raw").combine_chunks()
    versions = _row_versions(
        table.column("id").combine_chunks(),
        table.column("service_id").combine_chunks(),
        table.column("status").combine_chunks(),
        table.column("expires_at").combine_chunks(),
        expires_raw if expires_raw.null_count < len(expires_raw) else None,
        bool(table.column("is_test")[0].as_py()) if table.num_rows else False,
        rows_at[versioned],
        hashes[versioned],
    )
    return table.set_column(table.schema.get_field_index("_row_version"), "_row_version", versions)


def subscriptions_table(
    rows: Sequence[dict[str, Any]],
    is_test: bool,
    dq: DataQuality,
    stats: extras.FieldStats | None = None,
) -> tuple[pa.Table, np.ndarray]:
    """One Arrow table for a batch of subscription rows (`SUBSCRIPTIONS_SCHEMA`, then a column
    per extra leaf path), and their ids.

    Rows without a usable `id` cannot be keyed: they are dropped and counted. Every other
    column is typed by its own coercer; a value that does not fit is NULL, flagged and counted.
    Fields beyond the spec's are kept in columns of their own. STATS records the paths seen
    and the kinds of their values (and says which extra fields make no new version).
    """
    stats = stats if stats is not None else extras.FieldStats()
    kept, ids = _keyed(rows, dq, stats)
    batch = _Batch(kept, ids, dq, stats)
    service = _service_ids(batch)
    status = _statuses(batch)
    expires, expires_raw = _expiries(batch)
    extra_columns, versioned, hashes = _extra_fields(batch)
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
            _row_versions(ids, service, status, expires, expires_raw, is_test, versioned, hashes),
            *(array for _, array in extra_columns),
        ],
        schema=pa.schema([*SUBSCRIPTIONS_SCHEMA, *(leaf for leaf, _ in extra_columns)]),
    )
    return table, ids.to_numpy(zero_copy_only=False).astype(np.int64)


def subscription_columns(
    naming: extras.Naming, known: Mapping[str, Any] | None = None
) -> extras.Columns:
    """Where each field of a subscription lands (`known`: the paths of earlier runs)."""
    spec: dict[extras.Path, str] = {(name,): name for name in SUBSCRIPTION_FIELDS}
    return extras.Columns(naming, SUBSCRIPTIONS_COLUMNS, known, spec)


def status_counts(status: pa.Array | pa.ChunkedArray) -> dict[str, int]:
    """{status as sent: rows} of a status column (a missing status is no status: not counted)."""
    counts = pc.value_counts(status.drop_null())
    return {str(item["values"]): int(item["counts"]) for item in counts.to_pylist()}


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


def settings_columns(
    naming: extras.Naming, known: Mapping[str, Any] | None = None
) -> extras.Columns:
    """Where each field of a settings entry lands in `user_settings`."""
    spec: dict[extras.Path, str] = {("user", "service", "id"): "user_id", ("settings",): "settings"}
    for name in TWITCH_FIELDS:
        spec[("user", "twitch", name)] = name if name.startswith("twitch_") else f"twitch_{name}"
    return extras.Columns(naming, USER_SETTINGS_COLUMNS, known, spec)


def _leaves(path: extras.Path, value: Any) -> Iterator[tuple[extras.Path, Any]]:
    if type(value) is dict:
        yield from extras.flatten(value, path)
    else:
        yield path, value


def _entry_extras(
    entry: dict[str, Any], user: dict[str, Any], stats: extras.FieldStats
) -> Iterator[tuple[extras.Path, Any]]:
    """The leaves of a settings entry beyond the shown ones (the shown ones are seen in STATS):
    its own extra fields, `user.service` and `user.twitch` fields beyond the spec's, and every
    field of any other platform's profile (or any other value under `user`)."""
    for key, value in entry.items():
        if key == "settings":
            stats.see(("settings",), value)
        elif key != "user":
            yield from _leaves((key,), value)
    for key, value in user.items():
        if key in ("service", "twitch") and type(value) is dict:
            shown = ("id",) if key == "service" else TWITCH_FIELDS
            for name, inner in value.items():
                if name in shown:
                    stats.see(("user", key, name), inner)
                else:
                    yield from _leaves(("user", key, name), inner)
        else:
            yield from _leaves(("user", key), value)


def user_settings_records(
    rows: Sequence[dict[str, Any]],
    dq: DataQuality,
    seen_at: datetime,
    stats: extras.FieldStats | None = None,
    columns: extras.Columns | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(user_settings rows, user_setting_values rows) for one page of settings entries.

    Fields beyond the shown ones land in columns of their own (`extras.Columns`), typed by dlt;
    STATS records every path seen."""
    users: list[dict[str, Any]] = []
    values: list[dict[str, Any]] = []
    stats = stats if stats is not None else extras.FieldStats()
    columns = columns if columns is not None else settings_columns(extras.Naming())
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
        record.update(extras.flat_extras(_entry_extras(entry, user, stats), stats, columns))
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


def account_columns(
    naming: extras.Naming, known: Mapping[str, Any] | None = None
) -> extras.Columns:
    """Where the top-level fields of a Profiles object land in `user_accounts`."""
    return extras.Columns(naming, USER_ACCOUNTS_COLUMNS, known, {("primary",): "primary_platform"})


def account_records(
    user_id: int,
    profiles: Any,
    fetched_at: datetime,
    dq: DataQuality,
    stats: extras.FieldStats | None = None,
    columns: extras.Columns | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(user_accounts row, user_account_profiles rows); `profiles` None means the API said 404.

    Each linked platform's profile is kept whole (`profile`); the Profiles object's other
    top-level fields land in `user_accounts` columns of their own; STATS records them."""
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
    stats = stats if stats is not None else extras.FieldStats()
    columns = columns if columns is not None else account_columns(extras.Naming())
    if "primary" in profiles:
        stats.see(("primary",), primary)
    top = (((k,), v) for k, v in profiles.items() if k != "primary" and not isinstance(v, dict))
    account_extras = extras.flat_extras(top, stats, columns)
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
            **account_extras,
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
