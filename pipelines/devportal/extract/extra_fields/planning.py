"""The typing plan of the Arrow path: once a whole list is read, each extra column's dlt
type (the type the destination already holds, else the type seen), and the spooled columns
expanded into the typed ones, a value that does not fit going to dlt's variant column
`<column>__v_<type>` exactly as dlt's `coerce_value` would decide."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
from dlt.common.data_types.type_helpers import _COERCE_DISPATCH, coerce_value
from dlt.common.destination.capabilities import DestinationCapabilitiesContext
from dlt.common.libs.pyarrow import get_py_arrow_datatype

from devportal.extract.extra_fields import keyed
from devportal.extract.extra_fields.column_spool import (
    decode_leaf,
    encode_leaf,
    is_leaf_name,
    json_lists,
    native,
    spooled_leaves,
)
from devportal.extract.extra_fields.fields import INT64, KINDS, FieldStats, Path, dumps, kind_of
from devportal.extract.extra_fields.names import Columns, Naming

NATIVE = {"bool": pa.bool_(), "bigint": pa.int64(), "double": pa.float64(), "text": pa.string()}
NATIVE["json"] = pa.string()  # JSON text; the column hint says `json`
# type -> the Python types whose values a column of it takes as they are
_FITS: dict[str, tuple[type, ...]] = {
    "bool": (bool,),
    "bigint": (int,),
    "double": (float, int),
    "text": (str,),
}
# pairs (column type, value kind) whose values always fit (dlt's coerce_value never fails)
_ALWAYS_FIT = {("double", "bigint"), ("double", "wei"), ("bool", "bigint"), ("bool", "double")}
_ALWAYS_FIT |= {("text", k) for k in KINDS}


def _fits(data_type: str, kind: str) -> bool | None:
    """Whether a KIND value always (True) or never (False) fits a DATA_TYPE column; None: it
    depends on the value (text into a number, a double into a bigint, ...)."""
    if kind == data_type or (data_type, kind) in _ALWAYS_FIT:
        return True
    if kind == "wei":
        return False  # 64 bits cannot hold it

    return None if (data_type, kind) in _COERCE_DISPATCH else False


def _variant_kind(kind: str) -> str:
    return "text" if kind == "wei" else kind


def _to_arrow_value(data_type: str, value: Any) -> Any:
    """A value coerced to DATA_TYPE, as the Arrow column of that type takes it."""
    if data_type == "json":
        return value if isinstance(value, str) else dumps(value)
    return value


def coerce(data_type: str, value: Any) -> tuple[bool, Any]:
    """(fits, value as DATA_TYPE holds it): dlt's `coerce_value`, and 64 bits for a bigint."""
    kind = kind_of(value)
    if kind == "wei":
        if data_type == "bigint":
            return False, None
        kind = "bigint"
    if kind == data_type and data_type != "json":
        return True, value
    try:
        coerced = coerce_value(data_type, kind, value)  # type: ignore[arg-type]
    except (ValueError, TypeError, SyntaxError, ArithmeticError):
        return False, None
    if data_type == "bigint" and not INT64[0] <= coerced < INT64[1]:
        return False, None
    if data_type == "json" and kind == "text":
        coerced = value  # text that parses as JSON: stored as sent
    return True, _to_arrow_value(data_type, coerced)


def _arrow_type(column: Mapping[str, Any]) -> pa.DataType:
    """The Arrow type of a dlt column (native types, else dlt's own mapping)."""
    native = NATIVE.get(column["data_type"])
    if native is not None:
        return native

    caps = DestinationCapabilitiesContext.generic_capabilities()
    return get_py_arrow_datatype(column, caps, "UTC")  # type: ignore[arg-type]


@dataclass
class PlannedColumn:
    """One extra path's column: its dlt type and, per kind of value that does not fit, the
    variant column that takes it."""

    path: Path
    name: str
    column: dict[str, Any]  # dlt column schema (data_type and type properties)
    kinds: list[str]  # non-null kinds seen, first-seen order
    stored: bool  # the destination has this column already
    variants: dict[str, str] = field(default_factory=dict)  # kind -> variant column
    unsure: bool = False  # whether some kind fits depends on each value: scanned first
    whole: bool = False  # a map kept whole: a batch that flattened it is folded back

    @property
    def data_type(self) -> str:
        return str(self.column["data_type"])


@dataclass
class Plan:
    """The extra columns of a table on the Arrow path, in first-seen order."""

    columns: list[PlannedColumn]
    naming: Naming
    stored_variants: frozenset[str] = frozenset()
    skip: frozenset[str] = frozenset()  # the spec's top-level fields: typed columns already

    @property
    def unsure(self) -> list[PlannedColumn]:
        return [c for c in self.columns if c.unsure]

    def hints(self) -> dict[str, dict[str, Any]]:
        """dlt column hints of the extra and variant columns."""
        found: dict[str, dict[str, Any]] = {}
        for planned in self.columns:
            found[planned.name] = {**planned.column, "nullable": True}
            for kind, name in planned.variants.items():
                found[name] = {"data_type": _variant_kind(kind), "nullable": True}
                # `variant` only on a new one: dlt applies the `data_type` contract to every
                # hinted variant column, stored or not (a frozen warehouse would refuse its own)
                if name not in self.stored_variants:
                    found[name]["variant"] = True
        return found

    def new_paths(self) -> set[Path]:
        """The paths whose column the destination does not have yet."""
        return {c.path for c in self.columns if not c.stored}

    def new_columns(self) -> list[str]:
        """Columns (variants included) the destination does not have yet."""
        found = [c.name for c in self.columns if not c.stored]
        for planned in self.columns:
            found += [v for v in planned.variants.values() if v not in self.stored_variants]
        return found

    def scan(self, table: pa.Table) -> None:
        """Choose the variant columns of the columns whose fit depends on each value, on one
        spooled batch (every batch must carry every column, so this runs before the first)."""
        unsure = self.unsure
        if not unsure:
            return
        spooled = spooled_leaves(table)
        for planned in unsure:
            if planned.whole:
                fold(spooled, planned.path, table.num_rows)
            found = spooled.get(planned.path)
            for value in decode_leaf(*found) if found is not None else ():
                if value is None:
                    continue
                kind = kind_of(value)
                if kind in planned.variants:
                    continue
                if not coerce(planned.data_type, value)[0]:
                    planned.variants[kind] = self.naming.variant(planned.name, _variant_kind(kind))

    def choose_variants(self) -> None:
        """After `scan`: no column is unsure any more."""
        for planned in self.columns:
            planned.unsure = False

    def expand(self, table: pa.Table) -> pa.Table:
        """The spooled batch with its extra leaf columns replaced by every extra and variant
        column of the plan."""
        spooled = spooled_leaves(table)
        for planned in self.columns:
            if planned.whole:
                fold(spooled, planned.path, table.num_rows)
        base = table.select([n for n in table.column_names if not is_leaf_name(n)])
        if not self.columns:
            return base
        n = table.num_rows
        names, arrays = list(base.column_names), list(base.columns)
        for planned in self.columns:
            for name, array in _expanded(planned, spooled.get(planned.path), n):
                names.append(name)
                arrays.append(array)
        return pa.Table.from_arrays(arrays, names=names)


def _expanded(
    planned: PlannedColumn, spooled: tuple[pa.Field, pa.ChunkedArray] | None, n: int
) -> Iterator[tuple[str, pa.Array | pa.ChunkedArray]]:
    """(name, array) of PLANNED's column and of each of its variant columns, from the spooled
    column of its path (None: no row of the batch has it). A spooled column that already is
    what the plan's type makes of it is taken as it is; else each value is typed (`_typed`)."""
    if spooled is None:
        yield from _typed(planned, None, n)
        return
    leaf, array = spooled
    data_type = planned.data_type
    as_is = data_type in _FITS and native(leaf) and NATIVE[data_type] == leaf.type
    as_is = as_is or (data_type == "json" and json_lists(leaf))
    if not as_is:
        yield from _typed(planned, decode_leaf(leaf, array), n)
        return
    yield planned.name, array
    for kind, name in planned.variants.items():
        yield name, pa.nulls(n, type=NATIVE[_variant_kind(kind)])


def _typed(
    planned: PlannedColumn, values: list[Any] | None, n: int
) -> Iterator[tuple[str, pa.Array]]:
    """(name, array) of PLANNED's column and of each of its variant columns, for one batch
    whose rows have VALUES for its path (None: no row has it)."""
    main_type = _arrow_type(planned.column)
    if values is None:
        yield planned.name, pa.nulls(n, type=main_type)
        for kind, name in planned.variants.items():
            yield name, pa.nulls(n, type=NATIVE[_variant_kind(kind)])
        return
    data_type = planned.data_type
    fits = _FITS.get(data_type)
    present = set(map(type, values))
    present.discard(type(None))
    if data_type == "json" and present <= {list, dict}:
        try:
            texts = [None if v is None else orjson.dumps(v).decode() for v in values]
        except (TypeError, orjson.JSONEncodeError):  # deeper than orjson goes
            texts = [None if v is None else dumps(v) for v in values]
        yield planned.name, pa.array(texts, main_type)
        for kind, name in planned.variants.items():
            yield name, pa.nulls(n, type=NATIVE[_variant_kind(kind)])
        return
    if fits is not None and present <= set(fits) and not (bool in present and bool not in fits):
        try:
            yield planned.name, pa.array(values, type=main_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            pass
        else:
            for kind, name in planned.variants.items():
                yield name, pa.nulls(n, type=NATIVE[_variant_kind(kind)])
            return
    main: list[Any] = [None] * n
    variants: dict[str, list[Any]] = {kind: [None] * n for kind in planned.variants}
    for i, value in enumerate(values):
        if value is None:
            continue
        ok, coerced = coerce(data_type, value)
        if ok:
            main[i] = coerced
            continue
        kind = kind_of(value)
        if kind not in variants:  # the plan did not expect it: a bug, never a silent loss
            raise ValueError(f"no variant column for a {kind} value of {planned.name}")
        variants[kind][i] = _variant_value(kind, value)
    yield planned.name, pa.array(main, type=main_type)
    for kind, name in planned.variants.items():
        yield name, pa.array(variants[kind], type=NATIVE[_variant_kind(kind)])


def _variant_value(kind: str, value: Any) -> Any:
    if kind == "wei":
        return str(value)
    if kind == "json":
        return dumps(value)
    return value


def plan(
    stats: FieldStats,
    columns: Columns,
    stored: Mapping[str, Mapping[str, Any]] | None = None,
) -> Plan:
    """The typing plan of a table's extra paths seen in STATS (spec fields left out by the
    caller), given the columns the destination has (STORED, dlt's table schema columns).

    A stored column keeps its type. A new column takes the kind its path had first (dlt's rule:
    the first value decides), a path seen with whole and fractional numbers only is a double;
    a path only ever null makes no column (dlt makes none either). A kind that never fits the
    column's type gets a variant column; where fitting depends on the value, `Plan.scan`
    decides before anything is handed to dlt."""
    stored = stored or {}
    stats.collapse(whole_paths(stats, columns))
    planned: list[PlannedColumn] = []
    for path, seen in stats.kinds.items():
        if path in columns.spec:
            continue
        name = columns(path)
        kinds = [k for k in seen if k != "null"]
        if path in stats.whole and "json" in kinds:  # a map: a json column, as lists are
            kinds.remove("json")
            kinds.insert(0, "json")
        existing = stored.get(name)
        if existing is not None and existing.get("data_type"):
            column = {
                k: existing[k]
                for k in ("data_type", "precision", "scale", "timezone")
                if k in existing
            }
            is_stored = True
        elif kinds:
            column = {"data_type": _new_type(kinds)}
            is_stored = False
        else:
            continue
        entry = PlannedColumn(path, name, column, kinds, is_stored, whole=path in stats.whole)
        for kind in kinds:
            fit = _fits(entry.data_type, kind)
            if fit is False:
                entry.variants[kind] = columns.naming.variant(name, _variant_kind(kind))
            elif fit is None:
                entry.unsure = True
        planned.append(entry)
    stored_variants = frozenset(n for n, c in stored.items() if c.get("variant"))
    skip = frozenset(path[0] for path in columns.spec if len(path) == 1)
    return Plan(planned, columns.naming, stored_variants, skip)


def _new_type(kinds: list[str]) -> str:
    numeric = set(kinds) <= {"bigint", "double", "wei"}
    if numeric and "double" in kinds:
        return "double"
    first = kinds[0]
    if first == "wei":
        return "double" if numeric else "text"
    return first


def whole_paths(stats: FieldStats, columns: Columns) -> dict[Path, str]:
    """The paths of a table's extra fields kept whole this run, each with why (`keyed`):
    those a batch kept whole (STATS), those earlier runs did (COLUMNS), and every object path
    whose distinct keys, this run's and those the warehouse holds, make it a map. The
    outermost of nested ones; never one above a field the spec shows."""
    found: dict[Path, str] = {**columns.whole, **stats.whole}
    keys: dict[Path, set[str]] = {}
    for path in [*stats.kinds, *columns.known_paths]:
        for n in range(1, len(path)):
            keys.setdefault(path[:n], set()).add(path[n])
    for path, under in keys.items():
        if path not in found:
            reason = keyed.whole_reason(under)
            if reason is not None:
                found[path] = reason
    return {
        path: reason
        for path, reason in found.items()
        if columns.may_be_whole(path) and not any(path[:n] in found for n in range(1, len(path)))
    }


def fold(spooled: dict[Path, tuple[pa.Field, pa.ChunkedArray]], top: Path, n: int) -> None:
    """SPOOLED (a batch's leaf columns, changed in place) with the columns below TOP folded
    into TOP's: each row's object rebuilt from its leaves (a batch read before TOP was kept
    whole spooled it flattened). A null leaf is left out: the spool cannot tell it from none."""
    below = [p for p in spooled if len(p) > len(top) and p[: len(top)] == top]
    if not below:
        return
    found = spooled.get(top)
    values: list[Any] = decode_leaf(*found) if found is not None else [None] * n
    for path in sorted(below, key=len):
        rest = path[len(top) :]
        for i, value in enumerate(decode_leaf(*spooled.pop(path))):
            if value is None:
                continue
            node = values[i]
            if type(node) is not dict:
                if node is not None:
                    continue  # a value at TOP itself in this row: nothing below it
                node = values[i] = {}
            for key in rest[:-1]:
                inner = node.get(key)
                if type(inner) is not dict:
                    inner = node[key] = {}
                node = inner
            node[rest[-1]] = value
    encoded = encode_leaf(top, values)
    if encoded is None:
        spooled.pop(top, None)
    else:
        spooled[top] = (encoded[0], pa.chunked_array([encoded[1]]))
