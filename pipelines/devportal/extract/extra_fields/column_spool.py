"""An extra leaf path in a spooled batch: one Arrow column of its own, named by its path,
holding the values' own Arrow type when they all have one, else each value's JSON text
(`encode_leaf`), and read back as parsed values (`decode_leaf`)."""

from __future__ import annotations

import gc
import json
from collections.abc import Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from devportal.extract.extra_fields.fields import ABSENT, Path, dumps, loads

# field metadata of a spooled leaf column: how its values are held
_ENCODING = b"devportal.encoding"
_NATIVE = b"native"  # the values themselves (one Arrow type: bool, int64, float64, string)
_JSON = b"json"  # each value's JSON text, read back by orjson
_JSON_STD = b"json-std"  # JSON text orjson cannot read exactly (an integer beyond 64 bits)
_LISTS = b"devportal.lists"  # b"1": every value is a list (its text is the `json` column's)
_NATIVE_TYPES: dict[type, pa.DataType] = {
    str: pa.string(),
    bool: pa.bool_(),
    int: pa.int64(),
    float: pa.float64(),
}


def leaf_name(path: Path) -> str:
    """The spooled column of an extra leaf path: the path as a JSON array (no name of a typed
    column starts with `[`)."""
    return dumps(list(path))


def is_leaf_name(name: str) -> bool:
    return name.startswith("[")


def spooled_leaves(table: pa.Table) -> dict[Path, tuple[pa.Field, pa.ChunkedArray]]:
    """Each extra leaf path of a spooled batch: its field and column."""
    return {
        tuple(loads(f.name)): (f, table.column(i))
        for i, f in enumerate(table.schema)
        if is_leaf_name(f.name)
    }


def encode_leaf(path: Path, values: Sequence[Any]) -> tuple[pa.Field, pa.Array] | None:
    """One extra leaf path's values in many rows (ABSENT or None: none) as a spooled column;
    None when no row has a value. Values of one type that Arrow holds natively are kept as
    they are (a float that is not finite as null, as JSON text would have it); anything else
    as each value's JSON text."""
    types = set(map(type, values))
    if type(ABSENT) in types:
        values = [None if v is ABSENT else v for v in values]
        types.discard(type(ABSENT))
    types.discard(type(None))
    if not types:
        return None
    name = leaf_name(path)
    native = _NATIVE_TYPES.get(next(iter(types))) if len(types) == 1 else None
    if native is not None:
        try:
            array = pa.array(values, type=native)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            pass  # an integer beyond 64 bits: JSON text
        else:
            if native == pa.float64() and not pc.all(pc.is_finite(array)).as_py():
                array = pc.if_else(pc.is_finite(array), array, pa.scalar(None, pa.float64()))
            return pa.field(name, native, metadata={_ENCODING: _NATIVE}), array
    encoding = _JSON
    try:
        texts = [None if v is None else orjson.dumps(v).decode() for v in values]
    except (TypeError, orjson.JSONEncodeError):  # deeper than orjson goes, or beyond 64 bits
        texts = [None if v is None else dumps(v) for v in values]
        encoding = _JSON_STD
    metadata = {_ENCODING: encoding, _LISTS: b"1" if types == {list} else b"0"}
    return pa.field(name, pa.string(), metadata=metadata), pa.array(texts, type=pa.string())


def _encoding(leaf: pa.Field) -> bytes:
    return (leaf.metadata or {}).get(_ENCODING, _NATIVE)


def native(leaf: pa.Field) -> bool:
    """Whether a spooled column holds the values themselves (not their JSON text)."""
    return _encoding(leaf) == _NATIVE


def json_lists(leaf: pa.Field) -> bool:
    """Whether a spooled column holds the JSON text of lists only."""
    return _encoding(leaf) != _NATIVE and (leaf.metadata or {}).get(_LISTS) == b"1"


def native_strings(leaf: pa.Field) -> bool:
    return _encoding(leaf) == _NATIVE and leaf.type == pa.string()


def native_ints(leaf: pa.Field) -> bool:
    return _encoding(leaf) == _NATIVE and leaf.type == pa.int64()


def decode_leaf(leaf: pa.Field, array: pa.Array | pa.ChunkedArray) -> list[Any]:
    """A spooled column's values as parsed JSON values again (None: none)."""
    listed = array.to_pylist()
    encoding = _encoding(leaf)
    if encoding == _NATIVE:
        return listed
    # one parse of them all (a JSON array), the collector paused meanwhile (it would walk the
    # new objects again and again; they hold no cycles)
    text = "[" + ",".join("null" if t is None else t for t in listed) + "]"
    collecting = gc.isenabled()
    gc.disable()
    try:
        parsed: list[Any] = json.loads(text) if encoding == _JSON_STD else loads(text)
        return parsed
    finally:
        if collecting:
            gc.enable()
