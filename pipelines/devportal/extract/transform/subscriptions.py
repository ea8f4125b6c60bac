"""Subscription pages to one Arrow table per batch, one small coercer per column.

Each batch of pages becomes one Arrow table with an explicit schema (columns built once per
batch, dates parsed by Arrow's vectorised strptime), so the load never touches per-row dicts.
Values that do not fit their type are kept as NULL with the raw text beside them, flagged and
counted (`quality.DataQuality`). Fields the spec does not show travel beside the typed columns,
one spooled column per leaf path (`extras.encode_leaf`); every field seen is recorded
(`extras.FieldStats`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from devportal.base.api import TIMESTAMP_FORMAT
from devportal.base.coercion import to_int
from devportal.extract import extra_fields
from devportal.extract.transform.quality import ID_DROPPED, DataQuality, raw_text
from devportal.extract.transform.versions import extras_hashes, row_versions

KNOWN_STATUSES = ("active", "canceled")

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


# Unix epoch numbers read as expiries: 9 to 11 digits are seconds (1973-03-03 to 5138), 12 to 14
# milliseconds (the same span). Shorter numbers (0, a day count, `20270101`) and longer ones say
# nothing certain about a date: unreadable, never guessed.
EPOCH_SECONDS = (10**8, 10**11)
EPOCH_MILLISECONDS = (10**11, 10**14)


def parse_epoch(value: Any) -> datetime | None:
    """An expiry sent as a Unix epoch number: an integer (JSON number, integral float, or a
    string of digits) of seconds or milliseconds since 1970-01-01 UTC (`EPOCH_SECONDS`,
    `EPOCH_MILLISECONDS`), as naive UTC; None for anything else."""
    if isinstance(value, float) and not value.is_integer():
        return None
    number = to_int(value)
    if number is None:
        return None
    if EPOCH_SECONDS[0] <= number < EPOCH_SECONDS[1]:
        seconds = float(number)
    elif EPOCH_MILLISECONDS[0] <= number < EPOCH_MILLISECONDS[1]:
        seconds = number / 1000
    else:
        return None
    parsed = datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
    return parsed if parsed.year <= 9999 else None


def parse_timestamp(value: Any) -> datetime | None:
    """Second-chance parse of a value the vectorised spec-format parse refused.

    Only real calendar times: `2024-02-30`, `2023-02-29` or second 60 are refused (NULL, raw text
    kept, counted), never moved to a neighbouring day or minute. Accepts the spec format with
    unpadded fields, ISO 8601 (a zone is converted to UTC) and a Unix epoch number of seconds
    or milliseconds (`parse_epoch`, UTC).
    """
    epoch = parse_epoch(value)
    if epoch is not None:
        return epoch
    if not isinstance(value, str) or not value.strip() or value.startswith("0000"):
        return None
    text = value.strip()
    try:
        parsed = datetime.strptime(text, TIMESTAMP_FORMAT)
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


class _Batch:
    """One batch of subscription rows being typed: the rows, their ids, and what was flagged."""

    def __init__(
        self,
        rows: Sequence[dict[str, Any]],
        ids: pa.Array,
        dq: DataQuality,
        stats: extra_fields.FieldStats,
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

    def text(self, name: str, to_text: Callable[[Any], str]) -> tuple[list[Any], pa.Array]:
        """Spec field NAME's values and their Arrow string array: at once when they are all
        strings (or null), else each non-null value through TO_TEXT; the kinds recorded."""
        raw = self.column(name)
        try:
            text = pa.array(raw, type=pa.string())
            self.saw(name, raw, text, "text")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            self.saw(name, raw)
            text = pa.array([None if v is None else to_text(v) for v in raw], type=pa.string())
        return raw, text

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
    stats: extra_fields.FieldStats, name: str, raw: list[Any], typed: pa.Array | None, kind: str
) -> bool:
    """See spec field NAME's kinds in STATS (see `_Batch.saw`); whether some were null."""
    if typed is None:
        kinds = extra_fields.kinds_of(raw)
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
    rows: Sequence[dict[str, Any]], dq: DataQuality, stats: extra_fields.FieldStats
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
    raw, status = batch.text("status", raw_text)
    known = pc.is_in(status, value_set=pa.array(KNOWN_STATUSES))
    if not pc.all(known).as_py():
        for i, ok in enumerate(known.to_pylist()):
            if not ok:
                batch.flag(i, "status", "unknown_status", raw[i])
    return status


def _expiries(batch: _Batch) -> tuple[pa.Array, pa.Array | None]:
    """`expires_at` as TIMESTAMP and, where it could not be read, the raw text beside it.

    The spec format first (vectorised), a strict second chance per value (`parse_timestamp`),
    else NULL with the raw value kept and flagged. An epoch number read as a date keeps its
    raw text too (the timestamp is devportal's reading of it). No value sent (null or no key)
    leaves `expires_at_raw` NULL: a lifetime plan to the models (stg_subscriptions
    `expiry_kind`); an empty string is kept as `""` there, unreadable like any other text.
    """
    raw, text = batch.text("expires_at", str)
    expires = pc.strptime(text, format=TIMESTAMP_FORMAT, unit="us", error_is_null=True)
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
            if not isinstance(raw[i], str) or raw[i].strip().isdigit():  # an epoch number
                raw_kept[i] = raw_text(raw[i])[:200]
            continue
        # an empty string kept as its JSON text `""`: PostgreSQL's COPY loads '' as NULL, which
        # says "nothing sent" (a lifetime plan to the models), not "sent something unreadable"
        raw_kept[i] = None if raw[i] is None else raw_text(raw[i])[:200] or '""'
        problem = "missing_expires_at" if raw[i] in (None, "") else "invalid_expires_at"
        batch.flag(i, "expires_at", problem, raw[i])
    return pa.array(parsed, type=pa.timestamp("us")), pa.array(raw_kept, type=pa.string())


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
    objs = [rows[i] for i in at] if len(at) < n else rows
    leaves = extra_fields.leaf_columns(objs, skip=spec, whole=batch.stats.whole)
    encoded: dict[extra_fields.Path, tuple[pa.Field, pa.Array]] = {}
    for path, values in leaves.items():
        batch.stats.see_column(path, values)
        column = extra_fields.encode_leaf(path, values)
        if column is not None:
            encoded[path] = column
    hashes, versioned = extras_hashes(leaves, batch.stats.ignored, len(at), encoded)
    del leaves
    rows_at = np.asarray(at, dtype=np.intp)
    columns = list(encoded.values())
    if len(at) < n:  # each row without extra fields: NULL in every column
        where = np.full(n, -1, dtype=np.int64)
        where[rows_at] = np.arange(len(at), dtype=np.int64)
        spread = pa.array(where, mask=where < 0)
        columns = [(leaf, array.take(spread)) for leaf, array in columns]
    return columns, rows_at[versioned], hashes[versioned]


def subscriptions_table(
    rows: Sequence[dict[str, Any]],
    is_test: bool,
    dq: DataQuality,
    stats: extra_fields.FieldStats | None = None,
) -> tuple[pa.Table, np.ndarray]:
    """One Arrow table for a batch of subscription rows (`SUBSCRIPTIONS_SCHEMA`, then a column
    per extra leaf path), and their ids.

    Rows without a usable `id` cannot be keyed: they are dropped and counted. Every other
    column is typed by its own coercer; a value that does not fit is NULL, flagged and counted.
    Fields beyond the spec's are kept in columns of their own. STATS records the paths seen
    and the kinds of their values (and says which extra fields make no new version).
    """
    stats = stats if stats is not None else extra_fields.FieldStats()
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
            row_versions(ids, service, status, expires, expires_raw, is_test, versioned, hashes),
            *(array for _, array in extra_columns),
        ],
        schema=pa.schema([*SUBSCRIPTIONS_SCHEMA, *(leaf for leaf, _ in extra_columns)]),
    )
    return table, ids.to_numpy(zero_copy_only=False).astype(np.int64)


def subscription_columns(
    naming: extra_fields.Naming, known: Mapping[str, Any] | None = None
) -> extra_fields.Columns:
    """Where each field of a subscription lands (`known`: the paths of earlier runs)."""
    spec: dict[extra_fields.Path, str] = {(name,): name for name in SUBSCRIPTION_FIELDS}
    return extra_fields.Columns(naming, SUBSCRIPTIONS_COLUMNS, known, spec)


def status_counts(status: pa.Array | pa.ChunkedArray) -> dict[str, int]:
    """{status as sent: rows} of a status column (a missing status is no status: not counted)."""
    counts = pc.value_counts(status.drop_null())
    return {str(item["values"]): int(item["counts"]) for item in counts.to_pylist()}
