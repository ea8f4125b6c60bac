"""Fields the spec does not show: where each one lands, what a run saw, and how it is typed.

One rule for every table (docs/extra-fields.md), the one dlt applies to a nested dict: nested
objects become `parent__child` columns, lists one JSON column, a name devportal already uses
gets the prefix `api__`; a column keeps the name an earlier run gave its path. Dict rows (user
settings, accounts) are typed by dlt itself; subscriptions take the Arrow path (spooled leaf
columns, then a typing plan).

One job per module, imports running one way (keyed <- fields <- names, column_spool <- planning):

    keyed         which objects are maps (keys that are ids, too many keys): kept whole as JSON
    fields        leaf paths and the kinds of their values; `FieldStats`; ignore patterns; JSON text
    names         the column of each path (`Naming`, `Columns`); what the destination holds
    column_spool  an extra leaf path as a spooled Arrow column, and back (`encode_leaf`, `decode_leaf`)
    planning      each extra column's dlt type and its variant columns (`plan`, `Plan.expand`)

Callers use the names below (`from devportal.extract import extra_fields; extra_fields.FieldStats()`).
"""

from devportal.extract.extra_fields.column_spool import (
    decode_leaf,
    encode_leaf,
    is_leaf_name,
    json_lists,
    leaf_name,
    native,
    native_ints,
    native_strings,
    spooled_leaves,
)
from devportal.extract.extra_fields.fields import (
    ABSENT,
    EMPTY_KEY,
    KINDS,
    Fields,
    FieldStats,
    Path,
    dotted,
    dumps,
    flatten,
    ignore_matcher,
    kind_of,
    kinds_of,
    leaf_columns,
    loads,
    reported,
)
from devportal.extract.extra_fields.keyed import KEYS_MAX, id_key, value_key, whole_reason
from devportal.extract.extra_fields.names import (
    COLLISION_PREFIX,
    Columns,
    Naming,
    can_discard_rows,
    discards_values,
    flat_extras,
    naming_of,
    stored_columns,
    stored_schema,
)
from devportal.extract.extra_fields.planning import (
    NATIVE,
    Plan,
    PlannedColumn,
    coerce,
    fold,
    plan,
    whole_paths,
)

__all__ = [
    "ABSENT",
    "COLLISION_PREFIX",
    "EMPTY_KEY",
    "KEYS_MAX",
    "KINDS",
    "NATIVE",
    "Columns",
    "FieldStats",
    "Fields",
    "Naming",
    "Path",
    "Plan",
    "PlannedColumn",
    "can_discard_rows",
    "coerce",
    "decode_leaf",
    "discards_values",
    "dotted",
    "dumps",
    "encode_leaf",
    "flat_extras",
    "flatten",
    "fold",
    "id_key",
    "ignore_matcher",
    "is_leaf_name",
    "json_lists",
    "kind_of",
    "kinds_of",
    "leaf_columns",
    "leaf_name",
    "loads",
    "naming_of",
    "native",
    "native_ints",
    "native_strings",
    "plan",
    "reported",
    "spooled_leaves",
    "stored_columns",
    "stored_schema",
    "value_key",
    "whole_paths",
    "whole_reason",
]
