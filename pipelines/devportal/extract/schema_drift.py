"""What changed in the shape of what the API sends, from one run to the next: pure functions.

A run records, per table, every field path it saw with the types of its values and the column
it landed in (`sync_runs.fields`). This module compares that record with what earlier loaded
runs saw and names the changes (`changes`, recorded in `sync_runs.schema_changes`), and turns
them into the one clause of the sync summary (`summary`):

- **new**: a path no earlier run saw (on a table's first record, only the paths the spec does
  not show: a first sync tells what the API sends beyond the spec, not the spec itself);
- **gone**: a path the latest full read of the table saw and this full read did not (a
  window, or the accounts read per user, sees a sample: its absences mean nothing);
- **whole**: a map (`extras.keyed`: keys that are ids, or too many keys) is kept whole as
  one JSON value from this run on; named once, not per key (its keys are no paths);
- **type**: this run saw a type of value the last run that saw the path did not (nulls fit
  any column and are never a change; a type no longer seen sends nothing anywhere new); the
  change names the column the new values land in: the column itself when they fit its type,
  else dlt's variant column `<column>__v_<type>` (a field the spec shows keeps its column:
  devportal types it, a value that does not fit is a data-quality problem).

Which tables a run reads in full is decided here too (`full_tables`), for the run being read
and for the record of earlier runs (`destination.Holdings`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dlt.common.normalizers.naming.snake_case import NamingConvention
from dlt.common.typing import VARIANT_FIELD_FORMAT

from devportal.base.safe_text import terminal
from devportal.http import SUBSCRIPTIONS_PATH, USER_SETTINGS_PATH

# {table: {dotted path: {"types": [dlt types seen], "column": column name}}}; an entry of the
# fields held (`Holdings.known_fields`) may also carry "column_type": the destination column's
# dlt type, which decides whether a new type fits it or lands in a variant column
Fields = dict[str, dict[str, dict[str, Any]]]

# The fields the spec shows, as dotted paths (spec 2.1, 2.3; the Profiles object shows none).
# A table's first record names as new only the fields beyond these.
SPEC_FIELDS: dict[str, frozenset[str]] = {
    "subscriptions": frozenset({"id", "service_id", "status", "expires_at"}),
    "user_settings": frozenset(
        {
            "user.service.id",
            "user.twitch.twitch_id",
            "user.twitch.display_name",
            "user.twitch.name",
            "user.twitch.partnered",
            "user.twitch.icon_url",
            "user.twitch.profile_banner_url",
            "user.twitch.profile_background_color",
            "settings",
        }
    ),
    "user_accounts": frozenset({"primary"}),
}
NULL = "null"
# (column type, value type) pairs dlt's `coerce_value` stores in the column as they are;
# anything fits a text column (as its JSON text). A text value into a number column, or a
# double into a bigint one, depends on the value: it is taken as a variant (the Arrow path
# keeps whole columns typed).
_FITS = frozenset({("double", "bigint"), ("bool", "bigint"), ("bool", "double")})
# the lists a run may read in full, by table
_LISTS = {"subscriptions": SUBSCRIPTIONS_PATH, "user_settings": USER_SETTINGS_PATH}
# how many changes and statuses the one-line summary names; sync_runs keeps them all
SUMMARY_MAX = 8
_NAME_MAX = 80  # characters of one name from the API in the summary


def full_tables(mode: str, list_reads: Iterable[Mapping[str, Any]]) -> set[str]:
    """The tables a run read in full, from its `sync_runs` record (`mode`, `sweeps`): the
    subscription list on a sweep whose every read was verified, the user settings list when its
    read was; user accounts never (only the accounts due are read)."""
    reports: dict[str, list[bool]] = {}
    for report in list_reads:
        endpoint = str(report.get("endpoint", ""))
        for table, path in _LISTS.items():
            if endpoint.endswith(path):
                reports.setdefault(table, []).append(report.get("verified") is True)
    tables = {table for table, verified in reports.items() if verified and all(verified)}
    if mode != "sweep":
        tables.discard("subscriptions")
    return tables


def changes(
    known: Fields, last_full: Fields, current: Fields, full_tables: set[str]
) -> list[dict[str, Any]]:
    """The schema changes of a run that saw CURRENT.

    KNOWN: every path earlier loaded runs saw, each with the entry of the last run that saw it;
    LAST_FULL: per table, the fields of the latest loaded run that read it in full;
    FULL_TABLES: the tables this run read in full. Each change is
    `{"table", "field", "change": "new"|"gone"|"type"|"whole", "from", "to", "column"}` (`from`/`to`:
    sorted dlt types, [] for none), in the order table, change (new, gone, type), field.
    """
    found: list[dict[str, Any]] = []
    for table in sorted(set(current) | (set(last_full) & full_tables)):
        seen = current.get(table) or {}
        held = known.get(table) or {}
        spec = SPEC_FIELDS.get(table, frozenset())
        whole = {p for p, e in seen.items() if e.get("whole")}
        for path in sorted(seen):
            entry = seen[path]
            if path in whole and not (held.get(path) or {}).get("whole"):
                # a map kept whole: named once, whatever was held below it
                change = _change(table, path, "whole", [], _types(entry), _column(entry))
                change["whole"] = str(entry.get("whole"))
                found.append(change)
                continue
            if path in held or (table not in known and path in spec):
                continue
            found.append(_change(table, path, "new", [], _types(entry), _column(entry)))
        if table in full_tables:
            gone = set(last_full.get(table) or {}) - set(seen)
            for path in sorted(p for p in gone if not _inside(p, whole)):
                last = last_full[table][path]
                column = _column(held.get(path) or last)
                found.append(_change(table, path, "gone", _types(last), [], column))
        for path in sorted(set(seen) & set(held)):
            before, now = _types(held[path]), _types(seen[path])
            added = [t for t in now if t != NULL and t not in before]
            if not added or not [t for t in before if t != NULL]:
                continue  # no type it had not before; or the path held only nulls
            column = _column(seen[path]) or _column(held[path])
            if path not in spec:  # a shown field: devportal's own coercer types its column
                column = _landing(column, held[path], added)
            found.append(_change(table, path, "type", before, now, column))
    return found


def summary(changes: list[dict[str, Any]]) -> str:
    """The sync summary's clause naming CHANGES (`changes`' list), "" when there are none:
    `schema: subscriptions new plan.name (plan__name), gone coupon, plan.amount bigint -> text
    (plan__amount__v_text) | user_settings new created_at (created_at)`. At most SUMMARY_MAX
    are named (`sync_runs.schema_changes` holds every one). A change marked `"dropped": True`
    (the schema contract discarded its values: the sync knows, after the load) says so instead
    of naming a column."""
    if not changes:
        return ""
    by_table: dict[str, list[str]] = {}
    for change in changes[:SUMMARY_MAX]:
        by_table.setdefault(str(change.get("table")), []).append(_said(change))
    # tables apart with " | ": the summary itself separates its clauses with "; "
    text = " | ".join(f"{name(table)} {', '.join(said)}" for table, said in by_table.items())
    more = len(changes) - SUMMARY_MAX
    if more > 0:
        text += f" | {more} more in sync_runs.schema_changes"
    return f"schema: {text}"


def _inside(path: str, whole: set[str]) -> bool:
    """Whether dotted PATH is below one of the paths kept WHOLE (its values are in there)."""
    return any(path.startswith(top + ".") for top in whole)


def _change(
    table: str, path: str, kind: str, before: list[str], now: list[str], column: str | None
) -> dict[str, Any]:
    return {
        "table": table,
        "field": path,
        "change": kind,
        "from": before,
        "to": now,
        "column": column,
    }


def _types(entry: Mapping[str, Any]) -> list[str]:
    return sorted({str(t) for t in entry.get("types") or ()})


def _column(entry: Mapping[str, Any]) -> str | None:
    column = entry.get("column")
    return str(column) if column else None


def _landing(column: str | None, held: Mapping[str, Any], added: list[str]) -> str | None:
    """Where values of the ADDED types land: the column when they fit its type (the
    destination's, else the first type the path was held with), else dlt's variant column,
    named as dlt names it (`shorten_fragments(column, "v_<type>")`); the first one that does
    not fit when several."""
    if column is None:
        return None
    held_types = [t for t in _types(held) if t != NULL]
    column_type = str(held.get("column_type") or (held_types[0] if held_types else ""))
    for value_type in added:
        if not _fits(column_type, value_type):
            return variant_column(column, value_type)
    return column


def _fits(column_type: str, value_type: str) -> bool:
    return (
        column_type in ("", value_type, "text")
        or value_type == NULL
        or (column_type, value_type) in _FITS
    )


def variant_column(column: str, value_type: str) -> str:
    """dlt's variant column of COLUMN for values of VALUE_TYPE (its normalizer's own rule)."""
    return str(NamingConvention().shorten_fragments(column, VARIANT_FIELD_FORMAT % value_type))


def _said(change: Mapping[str, Any]) -> str:
    field, column = name(str(change.get("field"))), change.get("column")
    where = f" ({name(str(column))})" if column else ""
    if change.get("dropped"):
        where = " (dropped by schema_contract)"
    if change.get("change") == "new":
        return f"new {field}{where}"
    if change.get("change") == "gone":
        return f"gone {field}"
    if change.get("change") == "whole":
        return f"{field} kept whole as JSON{where}: {name(str(change.get('whole')))}"
    before = "/".join(change.get("from") or ()) or NULL
    now = "/".join(change.get("to") or ()) or NULL
    return f"{field} {before} -> {now}{where}"


def name(text: str) -> str:
    """A name the API chose, fit for the one summary line (no controls, not too long)."""
    line = terminal(text)
    return line if len(line) <= _NAME_MAX else line[: _NAME_MAX - 3] + "..."
