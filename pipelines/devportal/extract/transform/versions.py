"""`_row_version`: a deterministic 64-bit hash of a subscription's business columns.

dlt's SCD2 merge compares it to decide whether a subscription changed; on the Arrow path dlt
would otherwise have no content hash at all (its `add_dlt_id` makes random ids, which would
version every row on every sweep). Fields the spec does not show version the row too, except
those `history_ignore_fields` names; a row without such fields keeps the hash it always had.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from devportal.extract import extra_fields

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


def row_versions(
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


_INT_DOMAIN = np.uint64(0x5BD1E9955BD1E995)  # an integer's hash is apart from any text's


def extras_hashes(
    leaves: Mapping[extra_fields.Path, Sequence[Any]],
    ignored: Callable[[extra_fields.Path], bool],
    n: int,
    encoded: Mapping[extra_fields.Path, tuple[pa.Field, pa.Array]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(hash, versioned) per row: the hash of its versioned extra fields (every leaf not ignored
    and not null, in the order of their dotted paths, each its path and its value's JSON) and
    whether it has any. A value hashes alike whatever else its batch holds. ENCODED: the same
    values as spooled columns (`extras.encode_leaf`), hashed without a pass over each value
    where their form allows it."""
    h = np.zeros(n, dtype=np.uint64)
    versioned = np.zeros(n, dtype=bool)
    # a path kept whole (its values objects) hashes as its leaves would, flattened: its
    # objects' leaves in the order of their dotted paths, where those sort (after "path.")
    steps: list[tuple[str, extra_fields.Path, bool]] = []
    for path, values in leaves.items():
        objects = any(type(v) is dict for v in values)
        steps.append((extra_fields.dotted(path), path, False))
        if objects:
            steps.append((extra_fields.dotted(path) + ".", path, True))
    for _, path, objects in sorted(steps, key=lambda step: step[0]):
        values = leaves[path]
        if objects:
            _fold_objects(h, versioned, values, path, ignored)
            continue
        if ignored(path):
            continue
        whole = any(type(v) is dict for v in values)
        if whole:  # the values at the path itself (its objects are folded apart)
            values = [None if type(v) is dict else v for v in values]
        value_hash = _value_hashes(values, None if whole else (encoded or {}).get(path))
        present = value_hash != 0  # 0: absent or null (a value hashing to 0: 2**-64)
        if not present.any():
            continue
        path_hash = np.uint64(_text_hash(extra_fields.dotted(path)))
        mixed = _mix(h ^ _mix(value_hash ^ path_hash))
        h = mixed if present.all() else np.where(present, mixed, h)
        versioned |= present
    return h, versioned


_M64 = 0xFFFFFFFFFFFFFFFF


def _mix_one(x: int) -> int:
    """`_mix` of one 64-bit integer (Python ints, the same wrapping)."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _value_hash(value: Any) -> int:
    """`_value_hashes` of one value (0: null)."""
    if value is None:
        return 0
    if type(value) is int and -(2**63) <= value < 2**63:
        return _mix_one((value & _M64) ^ int(_INT_DOMAIN))
    if type(value) is str:
        return _text_hash("s:" + value)
    return _text_hash(extra_fields.dumps(value, sort_keys=True))


def _fold_objects(
    h: np.ndarray,
    versioned: np.ndarray,
    values: Sequence[Any],
    path: extra_fields.Path,
    ignored: Callable[[extra_fields.Path], bool],
) -> None:
    """Mix into H, in place, each object of VALUES (one per row) as its leaves would mix
    flattened (`extras_hashes`): a change of key order changes nothing."""
    for i, value in enumerate(values):
        if type(value) is not dict:
            continue
        leaves = sorted(
            (
                (extra_fields.dotted(p), p, v)
                for p, v in extra_fields.flatten(value, path)
                if v is not None
            ),
            key=lambda leaf: leaf[0],
        )
        x = int(h[i])
        for name, leaf, inner in leaves:
            if ignored(leaf):
                continue
            value_hash = _value_hash(inner)
            if value_hash == 0:
                continue
            x = _mix_one(x ^ _mix_one(value_hash ^ _text_hash(name)))
            versioned[i] = True
        h[i] = np.uint64(x)


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
        if extra_fields.native_strings(leaf):
            return _unique_text_hashes(array, "s:")
        if extra_fields.native_ints(leaf):
            numbers = array.fill_null(0).to_numpy(zero_copy_only=False).view(np.uint64)
            mixed = _mix(numbers ^ _INT_DOMAIN)
            if not array.null_count:
                return mixed
            return np.where(array.is_valid().to_numpy(zero_copy_only=False), mixed, np.uint64(0))
        if extra_fields.json_lists(leaf) and not pc.any(pc.match_substring(array, "{")).as_py():
            return _unique_text_hashes(array)
    n = len(values)
    types = set(map(type, values))
    types -= {type(None), type(extra_fields.ABSENT)}
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
            if v is None or v is extra_fields.ABSENT or i in small
            else "s:" + v
            if type(v) is str
            else extra_fields.dumps(v, sort_keys=True)
            for i, v in enumerate(values)
        ]
        hashed = _unique_text_hashes(texts)
        out = np.where(hashed != 0, hashed, out)
    return out


def rehash(table: pa.Table, ignored: Callable[[extra_fields.Path], bool]) -> pa.Table:
    """A spooled batch with `_row_version` computed again, its extra fields versioning as
    IGNORED now says (a contract that drops a new column's values: they version nothing)."""
    spooled = extra_fields.spooled_leaves(table)
    if not spooled:
        return table
    leaves = {path: extra_fields.decode_leaf(*column) for path, column in spooled.items()}
    hashes, versioned = extras_hashes(leaves, ignored, table.num_rows)
    rows_at = np.arange(table.num_rows, dtype=np.intp)
    expires_raw = table.column("expires_at_raw").combine_chunks()
    versions = row_versions(
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
