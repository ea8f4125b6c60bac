"""Where each extra field lands: its column under dlt's naming convention (`Naming`), kept
stable within a run and across runs (`Columns`); a dict row's extras as `{column: value}`; and
what the destination holds (its naming, its stored columns, its schema contract)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from dlt.common.normalizers.naming import NamingConvention
from dlt.common.normalizers.naming.snake_case import NamingConvention as SnakeCase
from dlt.common.typing import VARIANT_FIELD_FORMAT

from devportal.extract.extra_fields import keyed
from devportal.extract.extra_fields.fields import EMPTY_KEY, FieldStats, Path, dotted

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

COLLISION_PREFIX = "api"


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
        # maps (`keyed`): the paths earlier runs kept whole, and this run's (with why)
        self.whole: dict[Path, str] = {
            tuple(p.split(".")): str(v["whole"])
            for p, v in (known or {}).items()
            if isinstance(v, Mapping) and v.get("whole")
        }
        self.known_paths = [tuple(p.split(".")) for p in (known or {})]
        self._spec_prefixes = {path[:n] for path in self.spec for n in range(1, len(path))}
        self._keys: dict[Path, set[str]] | None = None  # distinct keys under each path

    def may_be_whole(self, path: Path) -> bool:
        """Whether PATH may be kept whole (no field the spec shows is below it)."""
        return bool(path) and path not in self._spec_prefixes and path not in self.spec

    def whole_reason(self, path: Path, keys: Iterable[str]) -> str | None:
        """Why the object at PATH, whose keys in one row are KEYS, is kept whole (None: it is
        flattened): it was, in this run or an earlier one; its keys are a map's
        (`keyed.whole_reason`); or the distinct keys under PATH, this run's and those the
        warehouse holds, pass `keyed.KEYS_MAX`. Once whole, whole for the rest of the run."""
        if not self.may_be_whole(path):
            return None
        reason = self.whole.get(path)
        if reason is None:
            seen = self._keys_under(path)
            seen.update(keys)
            reason = keyed.whole_reason(seen)
            if reason is None:
                return None
            self.whole[path] = reason
        return reason

    def _keys_under(self, path: Path) -> set[str]:
        if self._keys is None:
            self._keys = {}
            for known in self.known_paths:
                for n in range(1, len(known)):
                    self._keys.setdefault(known[:n], set()).add(known[n])
        return self._keys.setdefault(path, set())

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


def flat_extras(
    extras: Iterable[tuple[Path, Any]], stats: FieldStats, columns: Columns
) -> dict[str, Any]:
    """Leaves of a dict row's extra fields as `{column: value}`, seen in STATS. A null is left
    out: the column reads NULL all the same, and dlt would warn of a column with no type. An
    object (a path kept whole, `Columns.whole_reason`) stays one value: dlt stores it as `json`
    (the source's `max_table_nesting=0`)."""
    row: dict[str, Any] = {}
    for path, value in extras:
        stats.see(path, value)
        if type(value) is dict:
            stats.whole[path] = columns.whole.get(path) or keyed.KEYED
        if value is not None:
            row[columns(path)] = value
    return row


# -- the destination --------------------------------------------------------------------------


def naming_of(pipeline: Pipeline | None, schema_name: str) -> Naming:
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


def stored_schema(pipeline: Pipeline | None, schema_name: str) -> Any | None:
    if pipeline is None or schema_name not in pipeline.schema_names:
        return None
    return pipeline.schemas[schema_name]


def stored_columns(pipeline: Pipeline | None, schema_name: str, table: str) -> dict[str, Any]:
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
