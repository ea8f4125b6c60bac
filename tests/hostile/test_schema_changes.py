"""Schema changes are told (issue 21), through the real `devportal sync` against the hostile API:
a field the API starts sending, a field gone from a full read, a value whose type changed and
statuses beyond active/canceled are named in the summary line and recorded in `sync_runs`; dlt's
`schema_contract` refuses (`freeze`: exit 1, one line, nothing loaded, nothing left behind) or
drops (`discard_value`, `discard_row`) what it does not allow. Each test compares the warehouse
with what the server sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devportal.warehouse import pipelines_dir
from devportal.warehouse.target import Target
from tests.helpers import query, subscription, warehouse_of
from tests.hostile.conftest import CliResult, token_env
from tests.hostile.server import HostileApi

Cli = Callable[..., CliResult]
Args = Callable[..., list[str]]
SUBS = ("--resources", "subscriptions")
SETTINGS = ("--resources", "user_settings")


def summary(result: CliResult) -> str:
    """The one summary line of a sync that succeeded."""
    assert result.code == 0, result.err
    lines = [line for line in result.out.splitlines() if line.startswith("sync ok")]
    assert len(lines) == 1, result.out
    return lines[0]


def clause(line: str, start: str) -> str | None:
    """The clause of a summary LINE that starts with START, None when there is none."""
    found = [part for part in line.split("; ") if part.startswith(start)]
    return "; ".join(found) if found else None


def schema_clause(line: str) -> str | None:
    """The summary's schema clause (tables apart with " | ", the clause ends at the next "; ")."""
    return clause(line, "schema: ")


def one_line_error(result: CliResult) -> str:
    lines = [line for line in result.err.strip().splitlines() if line.startswith("devportal:")]
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    return lines[0]


def runs(warehouse: Path) -> list[dict[str, Any]]:
    """The `sync_runs` rows, oldest first, JSON columns decoded."""
    rows = query(
        warehouse,
        "SELECT run_id, mode, fields, statuses, schema_changes FROM devportal.sync_runs "
        "ORDER BY observed_at",
    )
    names = ("run_id", "mode", "fields", "statuses", "schema_changes")
    decoded = []
    for row in rows:
        record = dict(zip(names, row, strict=True))
        for name in names[2:]:
            if isinstance(record[name], str):
                record[name] = json.loads(record[name])
        decoded.append(record)
    return decoded


def columns(warehouse: Path, table: str) -> set[str]:
    rows = query(
        warehouse,
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = 'devportal' AND table_name = ?",
        table,
    )
    return {r[0] for r in rows}


def counts(warehouse: Path) -> dict[str, int]:
    """Rows of every table of the dataset (dlt's own included)."""
    tables = query(
        warehouse,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'devportal'",
    )
    return {t: query(warehouse, f'SELECT count(*) FROM devportal."{t}"')[0][0] for (t,) in tables}


def leftovers(warehouse: Path) -> list[str]:
    """What a failed run may leave in the pipeline's folder: an extract's uncommitted package
    (`normalize/<random>/`), an extracted package, a half-normalized one (`load/new/<id>`)."""
    left = []
    for pipeline in pipelines_dir(warehouse).iterdir():
        normalize, new = pipeline / "normalize", pipeline / "load" / "new"
        if normalize.is_dir():
            for folder in normalize.iterdir():
                if folder.is_dir() and (folder.name != "extracted" or any(folder.iterdir())):
                    left.append(str(folder))
        if new.is_dir():
            left.extend(str(p) for p in new.iterdir())
    return left


def settings_entry(user: int, **profiles: Any) -> dict[str, Any]:
    """A user settings entry as the API sends it: user USER, a twitch profile, PROFILES on top."""
    twitch = {
        "twitch_id": user * 10,
        "display_name": f"T{user}",
        "name": f"t{user}",
        "partnered": 0,
        "icon_url": "https://example.invalid/i.png",
        "profile_banner_url": None,
        "profile_background_color": None,
    }
    return {
        "user": {"service": {"id": user}, "twitch": twitch, **profiles},
        "settings": {"theme": "dark"},
    }


# -- told: new, gone, type ----------------------------------------------------------------------


def test_a_field_the_api_starts_sending_is_named_once_and_recorded(
    api: HostileApi, devportal: Cli, sync_args: Args, caplog: pytest.LogCaptureFixture
) -> None:
    api.subscriptions = [subscription(i, created_at=f"2026-01-0{i} 10:00:00") for i in (1, 2, 3)]
    args = sync_args(*SUBS)
    warehouse = warehouse_of(args)
    first = summary(devportal(*args, env=token_env(api)))
    # a first sync tells what the API sends beyond the spec, never the spec's own fields
    assert schema_clause(first) == "schema: subscriptions new created_at (created_at)", first

    for row in api.subscriptions:
        row["plan"] = {"name": "pro", "amount": 999}
    caplog.set_level(logging.WARNING, logger="devportal")
    second = summary(devportal(*args, env=token_env(api)))
    told = "schema: subscriptions new plan.amount (plan__amount), new plan.name (plan__name)"
    assert schema_clause(second) == told, second
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    changed = [m for m in warnings if "plan.name (plan__name)" in m]
    assert len(changed) == 1 and "sync_runs.schema_changes" in changed[0], warnings
    assert runs(warehouse)[-1]["schema_changes"] == [
        {
            "table": "subscriptions",
            "field": "plan.amount",
            "change": "new",
            "from": [],
            "to": ["bigint"],
            "column": "plan__amount",
        },
        {
            "table": "subscriptions",
            "field": "plan.name",
            "change": "new",
            "from": [],
            "to": ["text"],
            "column": "plan__name",
        },
    ]
    assert query(
        warehouse,
        "SELECT id, plan__name, plan__amount FROM devportal.subscriptions "
        "WHERE _dlt_valid_to IS NULL ORDER BY id",
    ) == [(1, "pro", 999), (2, "pro", 999), (3, "pro", 999)]

    caplog.clear()
    third = summary(devportal(*args, env=token_env(api)))
    assert schema_clause(third) is None, third  # told once
    assert runs(warehouse)[-1]["schema_changes"] == []
    assert not [r for r in caplog.records if "changed shape" in r.getMessage()]


def test_a_field_gone_is_told_by_the_next_full_read_only(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [subscription(i, coupon=f"C{i}") for i in (1, 2, 3)]
    args = sync_args(*SUBS)
    warehouse = warehouse_of(args)
    summary(devportal(*args, env=token_env(api)))
    for row in api.subscriptions:
        del row["coupon"]
    # a window reads a part of the list: a field it did not see may be on the rows it did not
    window = summary(devportal(*args, "--since", "2026-01-01", env=token_env(api)))
    assert "(window)" in window and schema_clause(window) is None, window
    sweep = summary(devportal(*args, env=token_env(api)))
    assert schema_clause(sweep) == "schema: subscriptions gone coupon", sweep
    gone = runs(warehouse)[-1]["schema_changes"]
    assert gone == [
        {
            "table": "subscriptions",
            "field": "coupon",
            "change": "gone",
            "from": ["text"],
            "to": [],
            "column": "coupon",
        }
    ]
    again = summary(devportal(*args, env=token_env(api)))
    assert schema_clause(again) is None, again  # told once
    # the column stays with the values it had: history is not rewritten
    assert query(
        warehouse, "SELECT count(*) FROM devportal.subscriptions WHERE coupon IS NOT NULL"
    ) == [(3,)]


def synced_with_numbers(
    api: HostileApi, devportal: Cli, sync_args: Args, **plan: Any
) -> tuple[list[str], Path]:
    """The args and warehouse of a first sync of subscriptions 1 and 2, each with `plan`
    PLAN and a whole `plan.amount`, and of user 1001's settings, a whole youtube `subscribers`."""
    api.subscriptions = [subscription(i, plan={**plan, "amount": 999}) for i in (1, 2)]
    api.settings = [settings_entry(1001, youtube={"subscribers": 10})]
    args = sync_args("--resources", "subscriptions,user_settings")
    summary(devportal(*args, env=token_env(api)))
    return args, warehouse_of(args)


def numbers_become_text(api: HostileApi) -> None:
    """Subscription 2's `plan.amount` and user 1001's youtube `subscribers` turn into text."""
    api.subscriptions[1]["plan"]["amount"] = "9.99 USD"
    api.settings[0]["user"]["youtube"]["subscribers"] = "10k"


def test_a_value_whose_type_changed_is_told_with_the_column_it_lands_in(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    args, warehouse = synced_with_numbers(api, devportal, sync_args)

    numbers_become_text(api)
    line = summary(devportal(*args, env=token_env(api)))
    told = (
        "schema: subscriptions plan.amount bigint -> bigint/text (plan__amount__v_text) | "
        "user_settings user.youtube.subscribers bigint -> text "
        "(user__youtube__subscribers__v_text)"
    )
    assert schema_clause(line) == told, line
    changes = runs(warehouse)[-1]["schema_changes"]
    assert [(c["table"], c["field"], c["change"], c["from"], c["to"]) for c in changes] == [
        ("subscriptions", "plan.amount", "type", ["bigint"], ["bigint", "text"]),
        ("user_settings", "user.youtube.subscribers", "type", ["bigint"], ["text"]),
    ]
    # every value sent is in the warehouse: the new type in dlt's variant column
    assert query(
        warehouse,
        "SELECT id, plan__amount, plan__amount__v_text FROM devportal.subscriptions "
        "WHERE _dlt_valid_to IS NULL ORDER BY id",
    ) == [(1, 999, None), (2, None, "9.99 USD")]
    assert query(
        warehouse,
        "SELECT user__youtube__subscribers, user__youtube__subscribers__v_text "
        "FROM devportal.user_settings",
    ) == [(None, "10k")]

    # a list where the last run saw text: it fits no number column (the column's type is the
    # warehouse's, not the last run's), so it lands in the JSON variant
    api.settings[0]["user"]["youtube"]["subscribers"] = ["10k", "12k"]
    line = summary(devportal(*args, env=token_env(api)))
    assert schema_clause(line) == (
        "schema: user_settings user.youtube.subscribers text -> json "
        "(user__youtube__subscribers__v_json)"
    ), line
    stored = query(
        warehouse, "SELECT user__youtube__subscribers__v_json FROM devportal.user_settings"
    )
    assert [json.loads(v) for (v,) in stored] == [["10k", "12k"]]


def test_a_warehouse_whose_runs_recorded_no_fields_holds_none(
    api: HostileApi, devportal: Cli, sync_args: Args, tmp_path: Path
) -> None:
    """A warehouse written before runs recorded their fields: nothing held, no error."""
    import shutil

    import duckdb

    from devportal.extract.destination_state import Holdings
    from devportal.load.pipeline import begin_writing, open_pipeline
    from devportal.warehouse import Draft

    def holdings(warehouse: Path) -> Holdings:
        pipeline = open_pipeline(Target.of(warehouse))
        begin_writing(Target.of(warehouse))
        try:
            return Holdings.read(pipeline)
        finally:
            Draft(warehouse).discard()

    api.subscriptions = [subscription(i, plan={"name": "pro"}) for i in (1, 2)]
    args = sync_args(*SUBS)
    warehouse = warehouse_of(args)
    summary(devportal(*args, env=token_env(api)))
    older = tmp_path / "older" / "warehouse.duckdb"
    older.parent.mkdir()
    shutil.copyfile(warehouse, older)
    con = duckdb.connect(str(older))
    try:
        con.execute("ALTER TABLE devportal.sync_runs DROP COLUMN fields")
    finally:
        con.close()

    held = holdings(warehouse)
    assert held.known_fields["subscriptions"]["plan.name"]["column"] == "plan__name"
    assert held.known_fields["subscriptions"]["plan.name"]["column_type"] == "text"
    assert set(held.last_full_fields) == {"subscriptions"}
    held = holdings(older)
    assert (held.known_fields, held.last_full_fields) == ({}, {})
    assert sorted(held.current_ids(False).tolist()) == [1, 2]


def test_statuses_beyond_active_and_canceled_are_named_with_their_counts(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    statuses = ["active", "canceled", "trialing", "past_due", "trialing", "active", "paused\x1b[2J"]
    api.subscriptions = [subscription(i, status=s) for i, s in enumerate(statuses, 1)]
    args = sync_args(*SUBS)
    line = summary(devportal(*args, env=token_env(api)))
    told = "statuses beyond active/canceled: trialing 2, past_due 1, paused[2J 1"
    assert clause(line, "statuses beyond") == told + " (see [analytics] status_map)", line
    assert runs(warehouse_of(args))[-1]["statuses"] == {
        "active": 2,
        "canceled": 1,
        "trialing": 2,
        "past_due": 1,
        "paused\x1b[2J": 1,
    }
    # kept as sent
    stored = query(warehouse_of(args), "SELECT status FROM devportal.subscriptions ORDER BY id")
    assert [s for (s,) in stored] == statuses

    # the owner's map is shown; none unmapped: no pointer to it
    api.subscriptions[6]["status"] = "active"
    env = token_env(api)
    env["ANALYTICS__STATUS_MAP"] = '{"trialing": "active", "past_due": "canceled"}'
    line = summary(devportal(*args, env=env))
    assert clause(line, "statuses beyond") == (
        "statuses beyond active/canceled: trialing 2 as active, past_due 1 as canceled"
    ), line

    for row in api.subscriptions:
        row["status"] = "canceled" if row["status"] == "past_due" else "active"
    line = summary(devportal(*args, env=token_env(api)))
    assert clause(line, "statuses beyond") is None, line
    assert runs(warehouse_of(args))[-1]["statuses"] == {"active": 6, "canceled": 1}


# -- schema_contract ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resources", "table", "column", "change"),
    [
        # the Arrow path: refused while extracting
        ("subscriptions", "subscriptions", "plan__name", "subscription"),
        # dicts: refused while normalizing
        ("user_settings", "user_settings", "user__youtube__display_name", "settings"),
    ],
)
def test_freeze_refuses_a_new_field_loading_nothing_and_evolve_then_loads_it_once(
    api: HostileApi,
    devportal: Cli,
    sync_args: Args,
    resources: str,
    table: str,
    column: str,
    change: str,
) -> None:
    api.subscriptions = [subscription(i) for i in (1, 2, 3)]
    api.settings = [settings_entry(1001), settings_entry(1002)]
    args = sync_args("--resources", resources)
    warehouse = warehouse_of(args)
    summary(devportal(*args, env=token_env(api)))
    before = counts(warehouse)
    runs_before = runs(warehouse)

    if change == "subscription":
        for row in api.subscriptions:
            row["plan"] = {"name": "pro"}
    else:
        api.settings[1]["user"]["youtube"] = {"display_name": "Y1002"}
    refused = devportal(*args, env=token_env(api, schema_contract="freeze"))
    assert refused.code == 1, refused.out
    line = one_line_error(refused)
    assert line.startswith('devportal: error: schema_contract = "freeze" refused the sync'), line
    assert f"column {column}" in line and f"table {table}" in line, line
    assert "nothing was loaded" in line and 'set schema_contract = "evolve"' in line, line
    assert "sync ok" not in refused.out
    assert counts(warehouse) == before
    assert runs(warehouse) == runs_before
    assert column not in columns(warehouse, table)
    assert leftovers(warehouse) == []

    # the same sync with evolve: loads once, tells the change the refused run never recorded
    accepted = devportal(*args, env=token_env(api))
    line = summary(accepted)
    assert f"({column})" in (schema_clause(line) or ""), line
    assert "discard" not in accepted.err and "interrupted run" not in accepted.err, accepted.err
    assert column in columns(warehouse, table)
    after = runs(warehouse)
    assert after[:-1] == runs_before and len(after) == len(runs_before) + 1
    assert query(warehouse, "SELECT count(*) FROM devportal._dlt_loads") == [
        (before["_dlt_loads"] + 1,)
    ]
    if change == "subscription":
        history = query(
            warehouse,
            "SELECT id, count(*), count(*) FILTER (WHERE _dlt_valid_to IS NULL), "
            "max(plan__name) FROM devportal.subscriptions GROUP BY id ORDER BY id",
        )
        # one version before the plan, one with it: the refused run added none
        assert history == [(1, 2, 1, "pro"), (2, 2, 1, "pro"), (3, 2, 1, "pro")]
    else:
        assert query(
            warehouse, f"SELECT user_id, {column} FROM devportal.user_settings ORDER BY user_id"
        ) == [(1001, None), (1002, "Y1002")]


def test_a_contract_freezing_data_types_refuses_a_new_type_and_names_its_setting(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [subscription(i, plan={"amount": 999}) for i in (1, 2)]
    args = sync_args(*SUBS)
    warehouse = warehouse_of(args)
    summary(devportal(*args, env=token_env(api)))
    before = counts(warehouse)

    frozen = token_env(api, schema_contract='{"data_type": "freeze"}')
    api.subscriptions[0]["plan"]["name"] = "pro"  # a new column: `columns` still evolve
    line = summary(devportal(*args, env=frozen))
    assert "new plan.name (plan__name)" in line
    before = counts(warehouse)
    api.subscriptions[1]["plan"]["amount"] = "9.99 USD"
    refused = devportal(*args, env=frozen)
    assert refused.code == 1
    line = one_line_error(refused)
    assert 'schema_contract.data_type = "freeze" refused the sync' in line, line
    assert "plan__amount" in line and "table subscriptions" in line, line
    assert 'set schema_contract.data_type = "evolve"' in line, line
    assert counts(warehouse) == before
    assert "plan__amount__v_text" not in columns(warehouse, "subscriptions")
    assert leftovers(warehouse) == []


def test_freeze_accepts_what_the_warehouse_already_holds(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """A contract refuses changes, not what earlier syncs loaded: extra columns and a variant
    column the warehouse has already take new values under `freeze`."""
    args, warehouse = synced_with_numbers(api, devportal, sync_args, name="pro")
    numbers_become_text(api)
    summary(devportal(*args, env=token_env(api)))

    api.subscriptions[0]["plan"].update(name="team", amount="19.99 USD")
    api.settings[0]["user"]["youtube"]["subscribers"] = "11k"
    line = summary(devportal(*args, env=token_env(api, schema_contract="freeze")))
    assert schema_clause(line) is None, line
    assert query(
        warehouse,
        "SELECT id, plan__name, plan__amount, plan__amount__v_text FROM devportal.subscriptions "
        "WHERE _dlt_valid_to IS NULL ORDER BY id",
    ) == [(1, "team", None, "19.99 USD"), (2, "pro", None, "9.99 USD")]
    assert query(
        warehouse, "SELECT user__youtube__subscribers__v_text FROM devportal.user_settings"
    ) == [("11k",)]


def test_freeze_lets_the_first_sync_create_the_tables(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """As in dlt, a contract governs tables that exist: the first sync creates them."""
    api.subscriptions = [subscription(i, plan={"name": "pro"}) for i in (1, 2)]
    args = sync_args(*SUBS)
    summary(devportal(*args, env=token_env(api, schema_contract="freeze")))
    assert query(
        warehouse_of(args), "SELECT id, plan__name FROM devportal.subscriptions ORDER BY id"
    ) == [(1, "pro"), (2, "pro")]


def test_discard_value_loads_the_rows_without_the_new_column(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [subscription(i) for i in (1, 2, 3)]
    args = sync_args(*SUBS)
    warehouse = warehouse_of(args)
    summary(devportal(*args, env=token_env(api)))

    api.subscriptions[0]["status"] = "canceled"
    api.subscriptions[1]["plan"] = {"name": "pro"}
    line = summary(devportal(*args, env=token_env(api, schema_contract="discard_value")))
    assert schema_clause(line) == "schema: subscriptions new plan.name (dropped by schema_contract)"
    assert "plan__name" not in columns(warehouse, "subscriptions")
    assert query(
        warehouse,
        "SELECT id, status FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL ORDER BY id",
    ) == [(1, "canceled"), (2, "active"), (3, "active")]
    # a value never stored makes no version: 2 has the one it had
    assert query(warehouse, "SELECT count(*) FROM devportal.subscriptions WHERE id = 2") == [
        (1,)
    ], line


def test_discard_row_drops_the_rows_and_closes_none_of_their_subscriptions(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [subscription(i) for i in (1, 2, 3, 4)]
    args = sync_args(*SUBS)
    warehouse = warehouse_of(args)
    summary(devportal(*args, env=token_env(api)))
    first = query(
        warehouse,
        "SELECT id, status, _dlt_valid_from FROM devportal.subscriptions ORDER BY id",
    )

    api.subscriptions[0]["status"] = "canceled"
    api.subscriptions[1]["plan"] = {"name": "pro"}
    api.subscriptions[2]["plan"] = {"name": "pro"}
    api.subscriptions[2]["status"] = "canceled"  # dropped with its row: not loaded
    line = summary(devportal(*args, env=token_env(api, schema_contract="discard_row")))
    assert schema_clause(line) == "schema: subscriptions new plan.name (dropped by schema_contract)"
    assert "plan__name" not in columns(warehouse, "subscriptions")
    current = query(
        warehouse,
        "SELECT id, status, _dlt_valid_from FROM devportal.subscriptions "
        "WHERE _dlt_valid_to IS NULL ORDER BY id",
    )
    # 1's change loaded; 2 and 3 were dropped, still listed: current as they were, not closed
    assert [(r[0], r[1]) for r in current] == [
        (1, "canceled"),
        (2, "active"),
        (3, "active"),
        (4, "active"),
    ]
    assert [r for r in current if r[0] in (2, 3, 4)] == [r for r in first if r[0] in (2, 3, 4)]
    assert query(
        warehouse, "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NOT NULL"
    ) == [(1,)]  # only 1's first version


# -- PostgreSQL ---------------------------------------------------------------------------------


def test_on_postgres_a_new_field_is_told_and_a_frozen_one_loads_nothing(
    api: HostileApi, devportal: Cli, sync_args: Args, postgres: str
) -> None:
    from devportal.warehouse.engines import connect

    def pg(sql: str) -> list[tuple[Any, ...]]:
        with connect(Target.of("unused.duckdb", "postgres")) as engine:
            return engine.execute(sql)

    api.subscriptions = [subscription(i, plan={"amount": 999}) for i in (1, 2)]
    args = sync_args(*SUBS, "--destination", "postgres")
    summary(devportal(*args, env=token_env(api)))
    api.subscriptions[0]["plan"]["name"] = "pro"
    api.subscriptions[1]["plan"]["amount"] = "9.99 USD"
    line = summary(devportal(*args, env=token_env(api)))
    assert schema_clause(line) == (
        "schema: subscriptions new plan.name (plan__name), "
        "plan.amount bigint -> bigint/text (plan__amount__v_text)"
    ), line
    changes = pg("SELECT schema_changes FROM devportal.sync_runs ORDER BY observed_at")[-1][0]
    changes = json.loads(changes) if isinstance(changes, str) else changes
    assert [(c["field"], c["change"], c["column"]) for c in changes] == [
        ("plan.name", "new", "plan__name"),
        ("plan.amount", "type", "plan__amount__v_text"),
    ]
    assert pg(
        "SELECT id, plan__name, plan__amount, plan__amount__v_text FROM devportal.subscriptions "
        "WHERE _dlt_valid_to IS NULL ORDER BY id"
    ) == [(1, "pro", 999, None), (2, None, None, "9.99 USD")]
    # the warehouse's own types: a price stays a number where it was one
    assert pg(
        "SELECT data_type FROM information_schema.columns WHERE table_schema = 'devportal' "
        "AND table_name = 'subscriptions' AND column_name = 'plan__amount'"
    ) == [("bigint",)]

    api.subscriptions[1]["plan"]["amount"] = 1999
    summary(devportal(*args, env=token_env(api)))
    history = "SELECT count(*) FROM devportal.subscriptions"
    loads = "SELECT count(*) FROM devportal._dlt_loads"
    before = (pg(history), pg(loads))
    api.subscriptions[0]["plan"]["currency"] = "USD"
    refused = devportal(*args, env=token_env(api, schema_contract="freeze"))
    assert refused.code == 1
    line = one_line_error(refused)
    assert "column plan__currency" in line and "nothing was loaded" in line, line
    assert (pg(history), pg(loads)) == before
    assert leftovers(warehouse_of(args)) == []
    line = summary(devportal(*args, env=token_env(api)))
    assert schema_clause(line) == "schema: subscriptions new plan.currency (plan__currency)"
    assert pg(loads)[0][0] == before[1][0][0] + 1
