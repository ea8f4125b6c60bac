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
    json_lists,
    native_ints,
    native_strings,
    spooled_leaves,
)
from devportal.extract.extra_fields.fields import (
    ABSENT,
    Fields,
    FieldStats,
    Path,
    dotted,
    dumps,
    flatten,
    ignore_matcher,
    kinds_of,
    leaf_columns,
)
from devportal.extract.extra_fields.names import (
    Columns,
    Naming,
    can_discard_rows,
    discards_values,
    flat_extras,
    naming_of,
    stored_columns,
)
from devportal.extract.extra_fields.planning import Plan, plan

__all__ = [
    "ABSENT",
    "Columns",
    "FieldStats",
    "Fields",
    "Naming",
    "Path",
    "Plan",
    "can_discard_rows",
    "decode_leaf",
    "discards_values",
    "dotted",
    "dumps",
    "encode_leaf",
    "flat_extras",
    "flatten",
    "ignore_matcher",
    "json_lists",
    "kinds_of",
    "leaf_columns",
    "naming_of",
    "native_ints",
    "native_strings",
    "plan",
    "spooled_leaves",
    "stored_columns",
]
