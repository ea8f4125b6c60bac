"""Fields the spec does not show: where each one lands, what a run saw, and how it is typed.

One rule for every table (docs/extra-fields.md), the one dlt applies to a nested dict: nested
objects are flattened into `parent__child` columns, each key normalized by dlt's naming
convention; lists are kept whole as one JSON column; an empty object adds nothing; a name that
devportal already uses for a column of that table (or a dlt `_dlt_*` one) gets the prefix
`api__`, and two paths that normalize alike: the later one `_2`, `_3`. A column keeps the name
an earlier run gave its path (`sync_runs.fields` records it), so data never changes columns.

Dict rows (user settings, accounts) are flattened here and typed by dlt itself. Subscriptions
take the Arrow path: while paging, each extra leaf path of a batch travels as one Arrow column
of its own (`encode_leaf`: the values' own Arrow type when they all have one, else each value's
JSON text) and `FieldStats` counts the kinds of value each path had; once the whole list is
read, `plan` decides each column's dlt type (the type the destination already holds, else the
type seen) and `Plan.expand` turns the spooled columns into the typed ones, a value that does
not fit its column going to dlt's variant column `<column>__v_<type>` exactly as dlt's
`coerce_value` would decide (a spooled column of the planned type is taken as it is).
"""

from __future__ import annotations

import fnmatch
import gc
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from dlt.common.data_types.type_helpers import coerce_value
from dlt.common.normalizers.naming import NamingConvention
from dlt.common.normalizers.naming.snake_case import NamingConvention as SnakeCase
from dlt.common.typing import VARIANT_FIELD_FORMAT

# {table: {dotted path: {"types": [...], "column": name}}}: what `sync_runs.fields` holds
Fields = dict[str, dict[str, dict[str, Any]]]
Path = tuple[str, ...]

# dlt data types a JSON value can have; `wei` is an integer beyond 64 bits (a BIGINT cannot hold
# it), reported as `bigint`
KINDS = ("bool", "bigint", "double", "text", "json", "null")
_KIND_OF_TYPE: dict[type, str] = {
    bool: "bool",
    int: "bigint",
    float: "double",
    str: "text",
    list: "json",
    dict: "json",
    type(None): "null",
}
_INT64 = (-(2**63), 2**63)
COLLISION_PREFIX = "api"
EMPTY_KEY = "_empty"  # dlt's name for an empty key


def kind_of(value: Any) -> str:
    """The dlt data type of a parsed JSON value (`wei`: an integer beyond 64 bits)."""
    kind = _KIND_OF_TYPE.get(type(value), "text")
    if kind == "bigint" and not _INT64[0] <= value < _INT64[1]:
        return "wei"
    return kind


def kinds_of(values: Iterable[Any]) -> set[str]:
    """The kinds of VALUES (one pass over their types; an integer beyond 64 bits is `bigint`)."""
    return {_KIND_OF_TYPE.get(t, "text") for t in set(map(type, values))}


def reported(kinds: Iterable[str]) -> list[str]:
    """Kinds as `sync_runs.fields` names them: sorted, `wei` as `bigint`."""
    return sorted({"bigint" if k == "wei" else k for k in kinds})


def dotted(path: Path) -> str:
    return ".".join(path)


def flatten(obj: Mapping[str, Any], prefix: Path = ()) -> Iterator[tuple[Path, Any]]:
    """(path, value) of each leaf of OBJ: nested objects descended (an empty one adds nothing),
    lists and scalars are leaves. Iterative: any depth the page parser accepted."""
    stack: list[tuple[Path, Iterator[tuple[str, Any]]]] = [(prefix, iter(obj.items()))]
    while stack:
        base, items = stack[-1]
        step = next(items, None)
        if step is None:
            stack.pop()
            continue
        key, value = step
        path = (*base, str(key))
        if type(value) is dict:
            stack.append((path, iter(value.items())))
            continue
        yield path, value


class _Absent:
    """The value of a path an object does not have (not the same as JSON null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
# below this depth, objects are flattened row by row (no list per row for each level)
_COLUMNWISE_DEPTH = 8


def leaf_columns(
    objs: Sequence[Any], skip: frozenset[str] = frozenset(), absent: Any = ABSENT
) -> dict[Path, list[Any]]:
    """Flatten many objects at once, column by column: each leaf path (in `flatten`'s sense) and
    its value in each object, ABSENT where an object has none. Top-level keys in SKIP are left
    out. A path that is an object in some rows and a value in others is both a prefix and a
    leaf, as dlt would have it. Iterative: any depth."""
    n = len(objs)
    out: dict[Path, list[Any]] = {}
    stack: list[tuple[Path, Sequence[Any]]] = [((), objs)]
    while stack:
        path, values = stack.pop()
        types = set(map(type, values))
        if dict not in types:
            if path and types != {type(absent)}:
                out[path] = list(values)
            continue
        if path and types - {dict, type(absent)}:  # a value here in some rows
            out[path] = [absent if type(v) is dict else v for v in values]
        if len(path) >= _COLUMNWISE_DEPTH:
            for i, value in enumerate(values):
                if type(value) is dict:
                    for leaf, inner in flatten(value, path):
                        out.setdefault(leaf, [absent] * n)[i] = inner
            continue
        if types == {dict}:  # every row has an object here: the common case, at C speed
            keys = dict.fromkeys(chain.from_iterable(values))
            children = [
                ((*path, key), _column(values, key, absent))
                for key in keys
                if path or key not in skip
            ]
        else:
            keys = dict.fromkeys(k for v in values if type(v) is dict for k in v)
            children = [
                ((*path, key), [v.get(key, absent) if type(v) is dict else absent for v in values])
                for key in keys
                if path or key not in skip
            ]
        stack.extend(reversed(children))
    return out


def _column(objs: Sequence[dict[str, Any]], key: str, absent: Any) -> list[Any]:
    """KEY's value in each of OBJS (ABSENT where it has none)."""
    try:
        return list(map(itemgetter(key), objs))
    except KeyError:
        return [v.get(key, absent) for v in objs]


def ignore_matcher(patterns: Iterable[str]) -> Callable[[Path], bool]:
    """`history_ignore_fields`: a path is ignored when a pattern matches its dotted path, the
    dotted path of an object holding it (`plan` ignores `plan.amount`), or its last name as sent
    or as its column names it (`updated_at` ignores `updatedAt`)."""
    compiled = tuple(patterns)

    @lru_cache(maxsize=4096)
    def ignored(path: Path) -> bool:
        if not compiled or not path:
            return False
        names = [dotted(path[:n]) for n in range(1, len(path) + 1)]
        names += [path[-1], SnakeCase().normalize_identifier(path[-1] or EMPTY_KEY)]
        return any(fnmatch.fnmatchcase(name, p) for p in compiled for name in names)

    return ignored


# -- names ------------------------------------------------------------------------------------


class Naming:
    """dlt's naming convention for column names (the destination's; snake_case by default)."""

    def __init__(self, convention: NamingConvention | None = None) -> None:
        self.convention = convention or SnakeCase()
        self._key = lru_cache(maxsize=8192)(self._normalize)

    def _normalize(self, key: str) -> str:
        # dlt: an empty or blank key is `_empty`
        return self.convention.normalize_identifier(key) if key.strip() else EMPTY_KEY

    def column(self, path: Path) -> str:
        """The column dlt would flatten PATH into: normalized keys joined by `__`."""
        return self.convention.shorten_fragments(*(self._key(k) for k in path))

    def prefixed(self, name: str) -> str:
        return self.convention.shorten_fragments(COLLISION_PREFIX, name)

    def variant(self, column: str, kind: str) -> str:
        return self.convention.shorten_fragments(column, VARIANT_FIELD_FORMAT % kind)


class Columns:
    """The column of each path of one table's extra fields, stable within a run and across runs.

    `own`: the table's devportal columns; `spec`: the spec's fields and the columns they are
    typed into; `known`: the table's paths and columns of earlier runs (`sync_runs.fields`),
    kept; a new path avoids every name already used."""

    def __init__(
        self,
        naming: Naming,
        own: Iterable[str],
        known: Mapping[str, Mapping[str, Any]] | None = None,
        spec: Mapping[Path, str] | None = None,
    ) -> None:
        self.naming = naming
        self.own = frozenset(own)
        self.spec = dict(spec or {})  # spec field -> the devportal column it is typed into
        self._known = {
            p: str(v["column"])
            for p, v in (known or {}).items()
            if isinstance(v, Mapping) and v.get("column")
        }
        self._taken: set[str] = set(self.own) | set(self._known.values())
        self._assigned: dict[Path, str] = dict(self.spec)

    def __call__(self, path: Path) -> str:
        found = self._assigned.get(path)
        if found is not None:
            return found
        name = self._known.get(dotted(path))
        if name is None or name in self.own:
            name = self._new_name(path)
        self._assigned[path] = name
        return name

    def _new_name(self, path: Path) -> str:
        name = self.naming.column(path)
        if name in self.own or name.startswith("_dlt"):
            name = self.naming.prefixed(name)
        base, n = name, 1
        while name in self._taken:
            n += 1
            name = f"{base}_{n}"
        self._taken.add(name)
        return name


# -- what a read saw ----------------------------------------------------------------------------


@dataclass
class FieldStats:
    """Each leaf path seen in one read and the kinds of its values, both in first-seen order.

    `ignored(path)`: the path's change alone makes no new version (`history_ignore_fields`)."""

    ignored: Callable[[Path], bool] = field(default=lambda path: False)
    kinds: dict[Path, dict[str, None]] = field(default_factory=dict)

    def see(self, path: Path, value: Any) -> None:
        found = self.kinds.get(path)
        if found is None:
            found = self.kinds[path] = {}
        found[kind_of(value)] = None

    def see_column(self, path: Path, values: Sequence[Any]) -> None:
        """The kinds of one path's values in many rows (ABSENT: not there), the first value's
        kind first."""
        types = set(map(type, values))
        types.discard(_Absent)
        if not types:
            return
        found = self.kinds.setdefault(path, {})
        found[kind_of(next(v for v in values if v is not ABSENT))] = None
        for t in types:
            if t is int:
                ints = [v for v in values if type(v) is int]
                found.update(dict.fromkeys({kind_of(min(ints)), kind_of(max(ints))}))
                if found.keys() >= {"wei"}:  # beyond 64 bits at one end: the others may fit
                    found.update(dict.fromkeys(map(kind_of, ints)))
            else:
                found[_KIND_OF_TYPE.get(t, "text")] = None

    def see_kinds(self, path: Path, kinds: Iterable[str]) -> None:
        found = self.kinds.setdefault(path, {})
        for kind in kinds:
            found[kind] = None

    def merge(self, other: FieldStats) -> None:
        for path, kinds in other.kinds.items():
            self.see_kinds(path, kinds)

    def record(self, column: Callable[[Path], str]) -> dict[str, dict[str, Any]]:
        """`sync_runs.fields` of one table: dotted path -> types seen and its column."""
        return {
            dotted(path): {"types": reported(kinds), "column": column(path)}
            for path, kinds in self.kinds.items()
        }


def loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # deeper than orjson goes (the page parser took it)
        return json.loads(text)


def dumps(value: Any, sort_keys: bool = False) -> str:
    """Compact JSON text (keys sorted with SORT_KEYS); deeper than orjson goes: the standard
    library's."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)


def flat_extras(
    extras: Iterable[tuple[Path, Any]], stats: FieldStats, columns: Columns
) -> dict[str, Any]:
    """Leaves of a dict row's extra fields as `{column: value}`, seen in STATS. A null is left
    out: the column reads NULL all the same, and dlt would warn of a column with no type."""
    row: dict[str, Any] = {}
    for path, value in extras:
        stats.see(path, value)
        if value is not None:
            row[columns(path)] = value
    return row


# -- the typing plan of the Arrow path ----------------------------------------------------------

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
    from dlt.common.data_types.type_helpers import _COERCE_DISPATCH

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
    if data_type == "bigint" and not _INT64[0] <= coerced < _INT64[1]:
        return False, None
    if data_type == "json" and kind == "text":
        coerced = value  # text that parses as JSON: stored as sent
    return True, _to_arrow_value(data_type, coerced)


def _arrow_type(column: Mapping[str, Any]) -> pa.DataType:
    """The Arrow type of a dlt column (native types, else dlt's own mapping)."""
    native = NATIVE.get(column["data_type"])
    if native is not None:
        return native
    from dlt.common.destination.capabilities import DestinationCapabilitiesContext
    from dlt.common.libs.pyarrow import get_py_arrow_datatype

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
        """Settle the variant columns of the columns whose fit depends on each value, on one
        spooled batch (every batch must carry every column, so this runs before the first)."""
        unsure = self.unsure
        if not unsure:
            return
        spooled = spooled_leaves(table)
        for planned in unsure:
            found = spooled.get(planned.path)
            for value in decode_leaf(*found) if found is not None else ():
                if value is None:
                    continue
                kind = kind_of(value)
                if kind in planned.variants:
                    continue
                if not coerce(planned.data_type, value)[0]:
                    planned.variants[kind] = self.naming.variant(planned.name, _variant_kind(kind))

    def settle(self) -> None:
        """After `scan`: no column is unsure any more."""
        for planned in self.columns:
            planned.unsure = False

    def expand(self, table: pa.Table) -> pa.Table:
        """The spooled batch with its extra leaf columns replaced by every extra and variant
        column of the plan."""
        spooled = spooled_leaves(table)
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


# -- extra fields in a spooled batch ------------------------------------------------------------

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
    if _Absent in types:
        values = [None if v is ABSENT else v for v in values]
        types.discard(_Absent)
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
    as_is = data_type in _FITS and _encoding(leaf) == _NATIVE and NATIVE[data_type] == leaf.type
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
    planned: list[PlannedColumn] = []
    for path, seen in stats.kinds.items():
        if path in columns.spec:
            continue
        name = columns(path)
        kinds = [k for k in seen if k != "null"]
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
        entry = PlannedColumn(path, name, column, kinds, is_stored)
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


# -- the destination --------------------------------------------------------------------------


def naming_of(pipeline: Any | None, schema_name: str) -> Naming:
    """The naming convention the destination's columns get: the stored schema's, else dlt's
    snake_case shortened to the destination's identifier length."""
    schema = stored_schema(pipeline, schema_name)
    if schema is not None:
        return Naming(schema.naming)
    destination = getattr(pipeline, "destination", None)
    if destination is None:
        return Naming()
    length = destination.capabilities().max_column_identifier_length
    return Naming(SnakeCase(max_length=length))


def stored_schema(pipeline: Any | None, schema_name: str) -> Any | None:
    if pipeline is None or schema_name not in pipeline.schema_names:
        return None
    return pipeline.schemas[schema_name]


def stored_columns(pipeline: Any | None, schema_name: str, table: str) -> dict[str, Any]:
    """TABLE's columns in the pipeline's stored dlt schema (empty: no table yet)."""
    schema = stored_schema(pipeline, schema_name)
    if schema is None or table not in schema.tables:
        return {}
    return dict(schema.tables[table]["columns"])


def discards_values(contract: Any) -> bool:
    """Whether a schema contract drops the values of new columns (dlt `discard_value`)."""
    if isinstance(contract, str):
        return contract == "discard_value"
    if isinstance(contract, Mapping):
        return contract.get("columns") == "discard_value"
    return False


def can_discard_rows(contract: Any) -> bool:
    """Whether a schema contract may drop whole rows of an existing table (dlt `discard_row`
    on new columns or new types)."""
    if isinstance(contract, str):
        return contract == "discard_row"
    if isinstance(contract, Mapping):
        return "discard_row" in (contract.get("columns"), contract.get("data_type"))
    return False
