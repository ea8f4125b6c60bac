"""An extra field's paths and the kinds of its values: flattening objects into leaf paths
(row by row or column by column), what a read saw (`FieldStats`), `history_ignore_fields`
matching, and the JSON text both ways."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from typing import Any

import orjson
from dlt.common.normalizers.naming.snake_case import NamingConvention as SnakeCase

from devportal.extract.extra_fields.keyed import whole_reason

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
INT64 = (-(2**63), 2**63)
EMPTY_KEY = "_empty"  # dlt's name for an empty key


def kind_of(value: Any) -> str:
    """The dlt data type of a parsed JSON value (`wei`: an integer beyond 64 bits)."""
    kind = _KIND_OF_TYPE.get(type(value), "text")
    if kind == "bigint" and not INT64[0] <= value < INT64[1]:
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


def flatten(
    obj: Mapping[str, Any],
    prefix: Path = (),
    *,
    empty_leaves: bool = False,
    whole: Callable[[Path, dict[str, Any]], bool] | None = None,
) -> Iterator[tuple[Path, Any]]:
    """(path, value) of each leaf of OBJ: nested objects descended (an empty one adds nothing,
    or with EMPTY_LEAVES is a leaf `{}`), lists and scalars are leaves; an object for which
    WHOLE(path, object) says so is a leaf too (a map: `keyed`). Iterative: any depth the page
    parser accepted."""
    stack: list[tuple[Path, Iterator[tuple[str, Any]]]] = [(prefix, iter(obj.items()))]
    while stack:
        base, items = stack[-1]
        step = next(items, None)
        if step is None:
            stack.pop()
            continue
        key, value = step
        path = (*base, str(key))
        descend = type(value) is dict and (value or not empty_leaves)
        if descend and (whole is None or not value or not whole(path, value)):
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
    objs: Sequence[Any],
    skip: frozenset[str] = frozenset(),
    absent: Any = ABSENT,
    whole: dict[Path, str] | None = None,
) -> dict[Path, list[Any]]:
    """Flatten many objects at once, column by column: each leaf path (in `flatten`'s sense) and
    its value in each object, ABSENT where an object has none. Top-level keys in SKIP are left
    out. A path that is an object in some rows and a value in others is both a prefix and a
    leaf, as dlt would have it. Iterative: any depth.

    With WHOLE (a dict, filled here): a path whose objects are a map (`keyed.whole_reason` of
    their keys in these rows, or already in WHOLE) is not descended: its values are kept whole
    as one leaf, and WHOLE records why."""
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
        every = types == {dict}  # every row has an object here: the common case, at C speed
        if every:
            keys = dict.fromkeys(chain.from_iterable(values))
        else:
            keys = dict.fromkeys(k for v in values if type(v) is dict for k in v)
        if path and whole is not None:
            reason = whole.get(path) or whole_reason(keys)
            if reason is not None:
                whole[path] = reason
                out[path] = list(values)
                continue
        if path and types - {dict, type(absent)}:  # a value here in some rows
            out[path] = [absent if type(v) is dict else v for v in values]
        if len(path) >= _COLUMNWISE_DEPTH:
            cut = None if whole is None else _cutter(whole)
            for i, value in enumerate(values):
                if type(value) is dict:
                    for leaf, inner in flatten(value, path, whole=cut):
                        out.setdefault(leaf, [absent] * n)[i] = inner
            continue
        if every:
            children = [
                ((*path, key), _column(values, key, absent))
                for key in keys
                if path or key not in skip
            ]
        else:
            children = [
                ((*path, key), [v.get(key, absent) if type(v) is dict else absent for v in values])
                for key in keys
                if path or key not in skip
            ]
        stack.extend(reversed(children))
    return out


def _cutter(whole: dict[Path, str]) -> Callable[[Path, dict[str, Any]], bool]:
    """`flatten`'s WHOLE for one object at a time, recording why in WHOLE."""

    def cut(path: Path, value: dict[str, Any]) -> bool:
        reason = whole.get(path) or whole_reason(value.keys())
        if reason is not None:
            whole[path] = reason
        return reason is not None

    return cut


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


@dataclass
class FieldStats:
    """Each leaf path seen in one read and the kinds of its values, both in first-seen order.

    `ignored(path)`: the path's change alone makes no new version (`history_ignore_fields`)."""

    ignored: Callable[[Path], bool] = field(default=lambda path: False)
    kinds: dict[Path, dict[str, None]] = field(default_factory=dict)
    # the paths kept whole as one JSON value (maps, `keyed`), and why
    whole: dict[Path, str] = field(default_factory=dict)

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
        for path, reason in other.whole.items():
            self.whole.setdefault(path, reason)

    def collapse(self, whole: Mapping[Path, str]) -> None:
        """Each path of WHOLE becomes one leaf (kind `json`, with the kinds of the values seen
        at the path itself) in place of every path below it; recorded in `whole`."""
        for top, reason in whole.items():
            below = [p for p in self.kinds if len(p) > len(top) and p[: len(top)] == top]
            found = self.kinds.setdefault(top, {})
            if below:
                for path in below:
                    del self.kinds[path]
                found["json"] = None
            self.whole[top] = reason
        for path in [p for p in self.whole if p not in whole]:
            if any(len(path) > len(t) and path[: len(t)] == t for t in whole):
                del self.whole[path]  # inside a path kept whole further up

    def record(self, column: Callable[[Path], str]) -> dict[str, dict[str, Any]]:
        """`sync_runs.fields` of one table: dotted path -> types seen and its column (and, for
        a path kept whole, `"whole"`: why)."""
        found: dict[str, dict[str, Any]] = {}
        for path, kinds in self.kinds.items():
            if any(path[:n] in self.whole for n in range(1, len(path))):
                continue  # read before the path above it was kept whole: inside it now
            entry: dict[str, Any] = {"types": reported(kinds), "column": column(path)}
            if path in self.whole:
                entry["whole"] = self.whole[path]
            found[dotted(path)] = entry
        return found


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
