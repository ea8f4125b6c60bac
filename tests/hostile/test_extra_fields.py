"""Nothing the API sends is lost: fields the spec does not show land in columns (issue 21).

A hostile API (tests/hostile/server.py) sends what real subscription APIs add: a creation date,
a `plan` object, a list, a field named like one of devportal's own columns, other platforms'
profiles in settings entries, extra top-level account fields. The real CLI syncs it; every value
sent must then be found in the warehouse under the column docs/extra-fields.md names, history
must version on a plan change and not on an ignored field, and a value whose type changes must
land in dlt's variant column, on the Arrow path as on a dict resource.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devportal.extract import extra_fields
from devportal.warehouse.target import Target
from tests.helpers import CliResult, query, subscription, warehouse_of
from tests.hostile.conftest import synced
from tests.hostile.server import SUBSCRIPTIONS, Answer, HostileApi, Request

Devportal = Callable[..., CliResult]
SyncArgs = Callable[..., list[str]]


def plan(name: str = "gold", amount: Any = 999, **more: Any) -> dict[str, Any]:
    return {"name": name, "interval": "month", "amount": amount, "currency": "usd", **more}


def rich(i: int, **changes: Any) -> dict[str, Any]:
    """A subscription with the fields real APIs add beyond the spec's four."""
    row = subscription(
        i,
        created_at=f"2024-05-0{i} 10:00:00",
        plan=plan(),
        tags=["promo", i],
        is_test=False,  # the API's own flag: collides with devportal's `is_test`
        meta={},  # an empty object adds nothing
        note=None,  # a null is kept as null
        updated_at=f"2026-01-01 00:00:0{i}",
    )
    row.update(changes)
    return row


def settings_entry(uid: int, **more: Any) -> dict[str, Any]:
    return {
        "user": {
            "service": {"id": uid, "username": f"user{uid}"},
            "twitch": {"twitch_id": 500 + uid, "display_name": f"T{uid}", "followers": 7},
            "youtube": {"channel_id": f"UC{uid}", "display_name": f"Y{uid}", "subs": 42},
        },
        "settings": {"theme": "dark"},
        "locale": "de",
        **more,
    }


@pytest.fixture
def args(sync_args: SyncArgs) -> list[str]:
    """argv of `devportal sync` into a fresh warehouse (see `sync_args`)."""
    return sync_args()


def columns_of(warehouse: Path, table: str) -> dict[str, str]:
    rows = query(
        warehouse,
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'devportal' AND table_name = ?",
        table,
    )
    return {name: kind for name, kind in rows}


def current(warehouse: Path, columns: str, where: str = "") -> dict[int, tuple[Any, ...]]:
    rows = query(
        warehouse,
        f"SELECT id, {columns} FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL "
        f"{where} ORDER BY id",
    )
    return {r[0]: tuple(r[1:]) for r in rows}


def last_run(warehouse: Path) -> dict[str, Any]:
    fields, statuses = query(
        warehouse,
        "SELECT fields, statuses FROM devportal.sync_runs ORDER BY observed_at DESC LIMIT 1",
    )[0]
    return {"fields": json.loads(fields), "statuses": json.loads(statuses)}


def versions(warehouse: Path) -> dict[int, int]:
    rows = query(warehouse, "SELECT id, count(*) FROM devportal.subscriptions GROUP BY id")
    return dict(rows)


def as_sent(value: Any) -> Any:
    """A warehouse value as the API would send it (JSON columns decoded, timestamps as text)."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, str) and value[:1] in "[{":
        return json.loads(value)
    return value


# -- every value sent is found ------------------------------------------------------------------


class _Said(logging.Handler):
    """What a logger let through (dlt's logger does not propagate to pytest's capture)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_every_field_sent_lands_in_its_documented_column(
    api: HostileApi, devportal: Devportal, args: list[str]
) -> None:
    api.subscriptions = [rich(1), rich(2, status="trialing"), rich(3, plan=plan("silver", 1999))]
    api.subscriptions.append(subscription(4))  # spec fields only
    api.settings = [
        settings_entry(1001, created_at="2024-01-02 03:04:05"),
        settings_entry(1002, tags=["a", "b"], user_id="mine"),  # `user_id` is devportal's
    ]
    api.accounts = {
        1001: {"primary": "twitch", "twitch": {"id": 9}, "updated_at": "x", "badges": [1, 2]},
        1002: {"primary": "youtube", "youtube": {"id": 8}, "status": "vip"},  # collides
    }
    said = _Said()
    logging.getLogger("dlt").addHandler(said)
    try:
        synced(devportal, api, args)
    finally:
        logging.getLogger("dlt").removeHandler(said)
    warehouse = warehouse_of(args)
    # JSON columns travel as Arrow text on purpose: dlt's notice of it is not shown
    assert [m for m in said.messages if "hints were different" in m] == []

    found = current(
        warehouse,
        "created_at, plan__name, plan__interval, plan__amount, plan__currency, tags, "
        "api__is_test, updated_at",
    )
    for row in api.subscriptions:
        sent_plan = row.get("plan") or {}
        expected = (
            row.get("created_at"),
            *(sent_plan.get(k) for k in ("name", "interval", "amount", "currency")),
            row.get("tags"),
            row.get("is_test"),
            row.get("updated_at"),
        )
        assert tuple(as_sent(v) for v in found[row["id"]]) == expected, row["id"]
    cols = columns_of(warehouse, "subscriptions")
    assert cols["plan__amount"] == "BIGINT" and cols["tags"] == "JSON"
    assert "meta" not in cols and not any(c.startswith("meta__") for c in cols)
    assert "note" not in cols  # a field only ever null makes no column (dlt makes none)

    settings = query(
        warehouse,
        "SELECT user_id, locale, user__service__username, user__twitch__followers, "
        "user__youtube__channel_id, user__youtube__display_name, user__youtube__subs, "
        "twitch_display_name, platforms FROM devportal.user_settings ORDER BY user_id",
    )
    assert settings == [
        (1001, "de", "user1001", 7, "UC1001", "Y1001", 42, "T1001", "twitch,youtube"),
        (1002, "de", "user1002", 7, "UC1002", "Y1002", 42, "T1002", "twitch,youtube"),
    ]
    extra = query(
        warehouse,
        "SELECT api__user_id, tags FROM devportal.user_settings WHERE user_id = 1002",
    )
    assert [(r[0], as_sent(r[1])) for r in extra] == [("mine", ["a", "b"])]
    created = query(
        warehouse, "SELECT created_at FROM devportal.user_settings WHERE user_id = 1001"
    )
    assert as_sent(created[0][0]) == "2024-01-02 03:04:05"

    accounts = query(
        warehouse,
        "SELECT user_id, updated_at, badges, api__status, status FROM devportal.user_accounts "
        "WHERE user_id IN (1001, 1002) ORDER BY user_id",
    )
    assert [tuple(as_sent(v) for v in r) for r in accounts] == [
        (1001, "x", [1, 2], None, "found"),
        (1002, None, None, "vip", "found"),
    ]

    run = last_run(warehouse)
    assert run["statuses"] == {"active": 3, "trialing": 1}
    subs = run["fields"]["subscriptions"]
    assert subs["plan.amount"] == {"types": ["bigint"], "column": "plan__amount"}
    assert subs["is_test"] == {"types": ["bool"], "column": "api__is_test"}
    assert subs["note"] == {"types": ["null"], "column": "note"}
    assert subs["tags"]["types"] == ["json"] and subs["id"]["column"] == "id"
    assert "meta" not in subs
    users = run["fields"]["user_settings"]
    assert users["user.youtube.subs"] == {"types": ["bigint"], "column": "user__youtube__subs"}
    assert users["user.service.id"]["column"] == "user_id"
    assert users["user_id"]["column"] == "api__user_id"
    assert run["fields"]["user_accounts"]["status"]["column"] == "api__status"


def test_every_value_is_found_whatever_its_shape(
    api: HostileApi, devportal: Devportal, args: list[str]
) -> None:
    """A generic check: every leaf of every row sent is in the column `sync_runs.fields`
    names for it, equal to what was sent (deep objects, odd keys, names that collide)."""
    deep: dict[str, Any] = {"leaf": "bottom"}
    for level in range(12):
        deep = {f"l{level}": deep}
    api.subscriptions = [
        subscription(1, planName="a", plan_name="b", **{"Odd Key!": 1.5, "": "empty"}),
        subscription(2, deep=deep, flags=[{"x": 1}], _dlt_id="theirs", dq_flags="theirs"),
        subscription(3, amount=10, ratio=1, ok=True),
        subscription(4, amount=2.5, ratio=2.25, ok=False),
    ]
    warehouse = synced(devportal, api, args)
    record = last_run(warehouse)["fields"]["subscriptions"]
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        for row in api.subscriptions:
            extra = {k: v for k, v in row.items() if k not in ("id", "service_id", "status")}
            extra.pop("expires_at")
            for path, value in extra_fields.flatten(extra):
                column = record[extra_fields.dotted(path)]["column"]
                got = con.execute(
                    f'SELECT "{column}" FROM devportal.subscriptions WHERE id = ?', [row["id"]]
                ).fetchone()
                assert got is not None and as_sent(got[0]) == value, (path, column, got)
    finally:
        con.close()
    assert record["planName"]["column"] == "plan_name"
    assert record["plan_name"]["column"] == "plan_name_2"
    assert record["_dlt_id"]["column"] == "api___dlt_id"
    assert record["dq_flags"]["column"] == "api__dq_flags"
    assert record[""]["column"] == "_empty"
    cols = columns_of(warehouse, "subscriptions")
    # whole and fractional numbers: a double; a bool column for bools
    assert (cols["amount"], cols["ratio"], cols["ok"]) == ("DOUBLE", "DOUBLE", "BOOLEAN")


# -- history ----------------------------------------------------------------------------------


def test_a_plan_change_versions_an_ignored_field_does_not(
    api: HostileApi, devportal: Devportal, args: list[str]
) -> None:
    api.subscriptions = [rich(1), rich(2), subscription(3)]
    warehouse = synced(devportal, api, args)
    assert versions(warehouse) == {1: 1, 2: 1, 3: 1}

    api.subscriptions[0]["updated_at"] = "2026-02-02 00:00:00"  # history_ignore_fields
    api.subscriptions[1]["updated_at"] = "2026-02-02 00:00:00"
    synced(devportal, api, args)
    assert versions(warehouse) == {1: 1, 2: 1, 3: 1}
    # an ignored field is stored as seen when the version began
    assert current(warehouse, "updated_at")[1] == ("2026-01-01 00:00:01",)

    api.subscriptions[1]["plan"] = plan("gold", 1299)  # a price change is a business event
    api.subscriptions[0]["tags"] = ["promo", 1]  # the same value again
    synced(devportal, api, args)
    assert versions(warehouse) == {1: 1, 2: 2, 3: 1}
    assert current(warehouse, "plan__amount") == {1: (999,), 2: (1299,), 3: (None,)}

    # ignoring `plan` from now on: what versions the rows that have one changes, once
    synced(devportal, api, args, history_ignore_fields='["plan"]')
    assert versions(warehouse) == {1: 2, 2: 3, 3: 1}
    api.subscriptions[1]["plan"] = plan("gold", 1399)  # ignored: its object is named
    synced(devportal, api, args, history_ignore_fields='["plan"]')
    assert versions(warehouse) == {1: 2, 2: 3, 3: 1}


def test_rows_without_extra_fields_keep_their_row_version(
    api: HostileApi, devportal: Devportal, args: list[str]
) -> None:
    """An upgrade adds no version: a spec-only row hashes as it did before extra fields were
    kept (the figures: `_row_version` of these rows by the release before issue 21)."""
    api.subscriptions = [
        subscription(1),
        subscription(2, status="canceled"),
        subscription(3, updated_at="2026-01-01"),  # only an ignored field: no versioned extras
        subscription(4, note=None),  # a null counts as absent
    ]
    warehouse = synced(devportal, api, args)
    rows = query(warehouse, "SELECT id, _row_version FROM devportal.subscriptions ORDER BY id")
    assert rows == [(1, BEFORE[1]), (2, BEFORE[2]), (3, BEFORE[3]), (4, BEFORE[4])]
    synced(devportal, api, args)
    assert versions(warehouse) == {1: 1, 2: 1, 3: 1, 4: 1}


# `_row_version` of subscription(1), subscription(2, status="canceled"), subscription(3) and
# subscription(4), live, computed by transform.py as of commit ab5bedb (before issue 21)
BEFORE = {
    1: 1246902364761618257,
    2: -1616137183481020817,
    3: 9079123700623382405,
    4: -7772140175526391744,
}


def test_a_field_that_appears_on_the_second_sync_gets_its_column(
    api: HostileApi, devportal: Devportal, args: list[str]
) -> None:
    api.subscriptions = [subscription(1), subscription(2)]
    warehouse = synced(devportal, api, args)
    api.subscriptions[1]["trial_ends_at"] = "2026-12-01 00:00:00"
    synced(devportal, api, args)
    assert current(warehouse, "trial_ends_at") == {1: (None,), 2: ("2026-12-01 00:00:00",)}
    assert versions(warehouse) == {1: 1, 2: 2}  # the field is news for the row that has it
    fields = last_run(warehouse)["fields"]["subscriptions"]
    assert fields["trial_ends_at"] == {"types": ["text"], "column": "trial_ends_at"}


# -- types that change ----------------------------------------------------------------------------


def test_a_type_change_goes_to_a_variant_column_on_the_arrow_path(
    api: HostileApi, devportal: Devportal, args: list[str]
) -> None:
    api.subscriptions = [rich(1), rich(2), rich(3)]
    warehouse = synced(devportal, api, args)
    api.subscriptions[0]["plan"] = plan(amount="9.99 USD")  # text into a bigint column
    api.subscriptions[1]["plan"] = plan(amount="1200")  # text dlt reads as a bigint: fits
    api.subscriptions[2]["plan"] = plan(amount=12.5)  # a fraction into a bigint column
    api.subscriptions[2]["created_at"] = 20240503  # a number into a text column: fits
    synced(devportal, api, args)
    cols = columns_of(warehouse, "subscriptions")
    assert cols["plan__amount"] == "BIGINT"
    assert cols["plan__amount__v_text"] == "VARCHAR"
    assert cols["plan__amount__v_double"] == "DOUBLE"
    assert current(warehouse, "plan__amount, plan__amount__v_text, plan__amount__v_double") == {
        1: (None, "9.99 USD", None),
        2: (1200, None, None),
        3: (None, None, 12.5),
    }
    assert current(warehouse, "created_at")[3] == ("20240503",)
    fields = last_run(warehouse)["fields"]["subscriptions"]
    assert fields["plan.amount"]["types"] == ["double", "text"]  # what this run saw


def test_mixed_types_in_one_read_are_all_kept(
    api: HostileApi, devportal: Devportal, args: list[str]
) -> None:
    """No stored column yet: the first value's kind decides (dlt's rule), the others that do
    not fit land in variants; the confirmed rows of a sweep (`?id=N`) go the same way."""
    api.subscriptions = [
        subscription(1, seats=3),
        subscription(2, seats="many"),
        subscription(3, seats=[1, 2]),
    ]
    warehouse = synced(devportal, api, args)
    assert current(warehouse, "seats, seats__v_text, seats__v_json") == {
        1: (3, None, None),
        2: (None, "many", None),
        3: (None, None, "[1,2]"),
    }

    # the list no longer shows subscription 2 but `?id=2` answers it, with a new field
    hidden = subscription(2, seats="few", region={"code": "EU"})

    def answer(req: Request) -> Answer:
        if req.query.get("id"):
            return Answer(200, hidden) if req.query["id"] == "2" else Answer(404, {})
        rows = [r for r in api.subscriptions if r["id"] != 2]
        return Answer(200, api.page(req, rows))

    api.route(SUBSCRIPTIONS, answer)
    synced(devportal, api, args)
    assert current(warehouse, "seats__v_text, region__code")[2] == ("few", "EU")


def test_a_type_change_goes_to_a_variant_column_on_a_dict_resource(
    api: HostileApi, devportal: Devportal, sync_args: SyncArgs
) -> None:
    api.settings = [settings_entry(1001, level=3), settings_entry(1002, level=4)]
    args = sync_args("--resources", "user_settings")
    warehouse = synced(devportal, api, args)
    api.settings[0]["level"] = "gold"
    synced(devportal, api, args)
    rows = query(
        warehouse,
        "SELECT user_id, level, level__v_text FROM devportal.user_settings ORDER BY user_id",
    )
    assert rows == [(1001, None, "gold"), (1002, 4, None)]


# -- schema contracts -----------------------------------------------------------------------------


def test_discard_row_does_not_close_the_subscription_it_discards(
    api: HostileApi, devportal: Devportal, args: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    """dlt drops a row that brings a new column under `discard_row`: it never reaches
    staging, so a verified sweep must not read its absence as the subscription being gone."""
    api.subscriptions = [subscription(1), subscription(2), subscription(3)]
    warehouse = synced(devportal, api, args, schema_contract="discard_row")
    api.subscriptions[1].update(status="canceled", coupon="SPRING")
    api.subscriptions[2]["status"] = "canceled"
    caplog.clear()
    synced(devportal, api, args, schema_contract="discard_row")
    said = [r.getMessage() for r in caplog.records if r.name == "devportal.source"]
    assert [m for m in said if "closes only the subscriptions it loaded" in m] == [
        "schema_contract discards rows with new fields (coupon): this sweep closes only the "
        "subscriptions it loaded, so that a discarded row does not close its subscription"
    ]
    assert "coupon" not in columns_of(warehouse, "subscriptions")
    # 2 is discarded (its old version stays current), 3 is loaded; none is closed
    assert current(warehouse, "status") == {1: ("active",), 2: ("active",), 3: ("canceled",)}


def test_discard_value_loads_the_row_without_the_new_column(
    api: HostileApi, devportal: Devportal, args: list[str]
) -> None:
    api.subscriptions = [subscription(1), subscription(2)]
    warehouse = synced(devportal, api, args, schema_contract="discard_value")
    api.subscriptions[1].update(status="canceled", coupon="SPRING")
    synced(devportal, api, args, schema_contract="discard_value")
    assert "coupon" not in columns_of(warehouse, "subscriptions")
    assert current(warehouse, "status") == {1: ("active",), 2: ("canceled",)}


# -- PostgreSQL -------------------------------------------------------------------------------


def test_extra_fields_and_variants_arrive_on_postgres(
    api: HostileApi, devportal: Devportal, sync_args: SyncArgs, postgres: str
) -> None:
    from devportal.warehouse.engines import connect

    api.subscriptions = [rich(1), rich(2)]
    api.settings = [settings_entry(1001, level=3)]
    args = [*sync_args(), "--destination", "postgres"]
    synced(devportal, api, args)
    api.subscriptions[0]["plan"] = plan(amount="9.99 USD")
    api.subscriptions[1]["tier"] = "pro"  # a new column on the second sync
    api.settings[0]["level"] = "gold"
    synced(devportal, api, args)
    with connect(Target.of("unused.duckdb", "postgres")) as engine:
        subs = engine.execute(
            "SELECT id, plan__name, plan__amount, plan__amount__v_text, tags::text, tier "
            "FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL ORDER BY id"
        )
        users = engine.execute(
            "SELECT user_id, user__youtube__display_name, level, level__v_text "
            "FROM devportal.user_settings"
        )
    assert [tuple(r) for r in subs] == [
        (1, "gold", None, "9.99 USD", '["promo", 1]', None),
        (2, "gold", 999, None, '["promo", 2]', "pro"),
    ]
    assert [tuple(r) for r in users] == [(1001, "Y1001", None, "gold")]


@pytest.fixture(autouse=True)
def _no_developer_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCES__DEVPORTAL__SCHEMA_CONTRACT", raising=False)
    monkeypatch.delenv("SOURCES__DEVPORTAL__HISTORY_IGNORE_FIELDS", raising=False)
