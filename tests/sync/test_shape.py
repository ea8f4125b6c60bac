"""The rules of `shape.changes` and `shape.summary` (pure functions), case by case; the CLI's
side (what a sync records and says) is in tests/hostile/test_schema_changes.py."""

from __future__ import annotations

from typing import Any

from devportal.extract import schema_drift


def entry(*types: str, column: str, column_type: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"types": sorted(types), "column": column}
    if column_type is not None:
        found["column_type"] = column_type
    return found


SPEC = {
    "id": entry("bigint", column="id"),
    "service_id": entry("bigint", column="service_id"),
    "status": entry("text", column="status"),
    "expires_at": entry("text", column="expires_at"),
}
FULL = {"subscriptions"}


def subs(**paths: dict[str, Any]) -> schema_drift.Fields:
    return {"subscriptions": {**SPEC, **{k.replace("__", "."): v for k, v in paths.items()}}}


def kinds(changes: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(c["change"], c["field"], c["column"]) for c in changes]


def test_a_first_record_names_only_what_the_spec_does_not_show() -> None:
    current = subs(plan__name=entry("text", column="plan__name"))
    assert kinds(schema_drift.changes({}, {}, current, FULL)) == [
        ("new", "plan.name", "plan__name")
    ]
    assert schema_drift.changes({}, {}, subs(), FULL) == []


def test_a_path_is_new_once_and_gone_only_on_a_full_read() -> None:
    held = subs(coupon=entry("text", column="coupon"))
    assert kinds(schema_drift.changes(held, held, subs(), FULL)) == [("gone", "coupon", "coupon")]
    assert schema_drift.changes(held, held, subs(), set()) == []  # a window: a sample
    # told once: the last full read no longer had it
    assert schema_drift.changes(held, subs(), subs(), FULL) == []
    # seen before, by any run: not new again
    assert schema_drift.changes(held, subs(), held, FULL) == []


def test_a_type_change_names_where_the_new_values_land() -> None:
    held = subs(plan__amount=entry("bigint", column="plan__amount", column_type="bigint"))
    text = subs(plan__amount=entry("text", column="plan__amount"))
    [change] = schema_drift.changes(held, held, text, FULL)
    assert change == {
        "table": "subscriptions",
        "field": "plan.amount",
        "change": "type",
        "from": ["bigint"],
        "to": ["text"],
        "column": "plan__amount__v_text",
    }
    # the column's type decides, not the last run's: text seen last, a list lands in the JSON
    # variant of the bigint column
    last_text = subs(plan__amount=entry("text", column="plan__amount", column_type="bigint"))
    listed = subs(plan__amount=entry("json", column="plan__amount"))
    assert kinds(schema_drift.changes(last_text, last_text, listed, FULL)) == [
        ("type", "plan.amount", "plan__amount__v_json")
    ]
    # values that fit the column: a whole number into a double, anything into text
    double = subs(price=entry("double", column="price", column_type="double"))
    number = subs(price=entry("bigint", column="price"))
    assert kinds(schema_drift.changes(double, double, number, FULL)) == [("type", "price", "price")]
    texts = subs(note=entry("text", column="note", column_type="text"))
    obj = subs(note=entry("json", column="note"))
    assert kinds(schema_drift.changes(texts, texts, obj, FULL)) == [("type", "note", "note")]
    # a field the spec shows keeps its column (devportal types it)
    spec = subs(service_id=entry("text", column="service_id"))
    assert kinds(schema_drift.changes(subs(), subs(), spec, FULL)) == [
        ("type", "service_id", "service_id")
    ]


def test_nulls_and_fewer_types_are_no_change() -> None:
    held = subs(plan__amount=entry("bigint", "text", column="plan__amount"))
    assert (
        schema_drift.changes(held, held, subs(plan__amount=entry("bigint", column="x")), FULL) == []
    )
    nulls = subs(plan__amount=entry("bigint", "null", column="plan__amount"))
    assert schema_drift.changes(held, held, nulls, FULL) == []
    only_null = subs(coupon=entry("null", column="coupon"))
    assert (
        schema_drift.changes(only_null, only_null, subs(coupon=entry("text", column="c")), FULL)
        == []
    )


def test_the_summary_is_one_bounded_line_of_safe_names() -> None:
    assert schema_drift.summary([]) == ""
    current = subs(
        **{f"f{i}": entry("text", column=f"f{i}") for i in range(12)},
        evil=entry("text", column="evil"),
    )
    current["subscriptions"]["bad\nname\x1b[2J"] = entry("text", column="bad_name")
    text = schema_drift.summary(schema_drift.changes({}, {}, current, FULL))
    assert text.startswith("schema: subscriptions new bad name[2J (bad_name), new evil (evil)")
    assert text.endswith(" | 6 more in sync_runs.schema_changes")
    assert "\n" not in text and "\x1b" not in text
    dropped = [
        {**c, "column": None, "dropped": True}
        for c in schema_drift.changes(
            {}, {}, subs(plan__name=entry("text", column="plan__name")), FULL
        )
    ]
    assert (
        schema_drift.summary(dropped)
        == "schema: subscriptions new plan.name (dropped by schema_contract)"
    )


def test_full_tables_follow_what_the_run_verified() -> None:
    subs_ok = {"endpoint": "/api/v1/developer/subscriptions", "verified": True}
    subs_bad = {"endpoint": "/api/v1/developer/subscriptions", "verified": False}
    settings = {"endpoint": "/api/v1/developer/users/settings", "verified": True}
    assert schema_drift.full_tables("sweep", [subs_ok, settings]) == {
        "subscriptions",
        "user_settings",
    }
    assert schema_drift.full_tables("sweep", [subs_ok, subs_bad]) == set()
    assert schema_drift.full_tables("window", [subs_ok, settings]) == {"user_settings"}
