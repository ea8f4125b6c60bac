"""Odd answers from an imperfect API, through the real `devportal sync`: the warehouse holds
exactly what the server sent (no row lost, none invented, none moved), or the run fails in one
line having changed nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devportal.load.packages import set_aside_dir
from devportal.warehouse.target import Target
from tests.helpers import FAST_RETRY, OnEngine, query, subscription, warehouse_of
from tests.hostile.conftest import CliResult, synced, token_env
from tests.hostile.server import SETTINGS, Answer, HostileApi

Cli = Callable[..., CliResult]
Args = Callable[..., list[str]]


def one_line_error(result: CliResult) -> str:
    lines = [line for line in result.err.strip().splitlines() if line.startswith("devportal:")]
    assert lines, result.err
    assert "Traceback" not in result.err
    return lines[-1]


def current(warehouse: Path) -> list[tuple[Any, ...]]:
    return query(
        warehouse,
        "SELECT id, service_id, status, expires_at, expires_at_raw FROM devportal.subscriptions "
        "WHERE _dlt_valid_to IS NULL ORDER BY id",
    )


def dump(warehouse: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every devportal table, for before/after comparisons."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'devportal' ORDER BY 1"
            ).fetchall()
        ]
        return {
            t: sorted(map(repr, con.execute(f"SELECT * FROM devportal.{t}").fetchall()))
            for t in tables
        }  # type: ignore[misc]
    finally:
        con.close()


# -- settings and profiles, exactly --------------------------------------------------------


def deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"leaf": True}
    for i in range(levels):
        node = {f"level{i}": node}
    return node


ODD_SETTINGS: list[Any] = [
    {"Theme": "dark"},
    {"theme": "light", "THEME": None},  # explicit null, and a case variant of another user's key
    {"a.b": 1, "a": {"b": 2}},  # a dotted key and a nested path
    {"a/b": "slash", "a~b": "tilde", "": "empty key", "ключ": "ünïcode", "emoji 🎛": [1, {"x": []}]},
    deep(200),
    {"n": 1.5, "big": 2**80, "neg": -0.0, "t": True, "f": False, "o": {}, "l": [], "e": 1e300},
    {},
]


def pointers(value: Any, prefix: str = "") -> list[str]:
    """Leaf paths as RFC 6901 JSON Pointers, written independently of devportal."""
    out: list[str] = []
    for key, child in value.items():
        path = prefix + "/" + key.replace("~", "~0").replace("/", "~1")
        if isinstance(child, dict) and child:
            out.extend(pointers(child, path))
        else:
            out.append(path)
    return out


def test_settings_and_profiles_are_kept_exactly_in_a_folder_named_with_an_apostrophe(
    api: HostileApi, devportal: Cli, sync_args: Args, tmp_path: Path
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 4)]
    api.settings = [
        {"user": {"service": {"id": 2000 + n}}, "settings": value}
        for n, value in enumerate(ODD_SETTINGS)
    ]
    api.accounts = {
        1001: {"primary": "twitch", "twitch": {"id": "7", "name": "a", "Name": "b"}},
        1002: {"primary": "youtube", "youtube": {"channel_id": "UC1", "extra": {"k": None}}},
    }
    warehouse = tmp_path / "Bob's data (copy)" / "warehouse.duckdb"
    result = devportal(*sync_args(warehouse=warehouse), env=token_env(api))
    assert result.code == 0, result.err

    stored = dict(query(warehouse, "SELECT user_id, settings FROM devportal.user_settings"))
    for n, sent in enumerate(ODD_SETTINGS):
        text = stored[2000 + n]
        # same keys, same order, same values; absent stays absent, null stays null
        assert json.loads(text, object_pairs_hook=list) == json.loads(
            json.dumps(sent), object_pairs_hook=list
        )
    values = query(
        warehouse,
        "SELECT user_id, key, value_type FROM devportal.user_setting_values ORDER BY user_id",
    )
    for n, sent in enumerate(ODD_SETTINGS):
        keys = [k for uid, k, _ in values if uid == 2000 + n]
        assert sorted(keys) == sorted(pointers(sent))  # no collision, nothing invented
        assert len(set(keys)) == len(keys)
    # a key is a JSON Pointer: DuckDB's json_extract finds the value it names
    found = query(
        warehouse,
        "SELECT v.key, json_extract(s.settings, v.key)::varchar FROM devportal.user_setting_values v "
        "JOIN devportal.user_settings s USING (user_id) WHERE v.user_id = 2002 ORDER BY v.key",
    )
    assert found == [("/a.b", "1"), ("/a/b", "2")]
    profiles = dict(
        ((r[0], r[1]), r[2])
        for r in query(
            warehouse, "SELECT user_id, platform, profile FROM devportal.user_account_profiles"
        )
    )
    assert json.loads(profiles[(1001, "twitch")]) == {"id": "7", "name": "a", "Name": "b"}
    assert json.loads(profiles[(1002, "youtube")]) == {"channel_id": "UC1", "extra": {"k": None}}


def one_settings_page(settings: bytes, paging: bytes = b'"last_page": 1, "total": 1') -> bytes:
    """A page of user settings as raw bytes (what `json.dumps` cannot write): one entry, user
    1's, with the raw JSON object SETTINGS; PAGING, the page's other fields."""
    return (
        b'{"current_page": 1, "data": [{"user": {"service": {"id": 1}}, "settings": '
        + settings
        + b"}], "
        + paging
        + b"}"
    )


def test_big_integers_stay_exact_and_lone_surrogates_are_replaced_and_counted(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    page = one_settings_page(
        b'{"big": 123456789012345678901234567890, "pair": "\\ud83c\\udf9b", '
        b'"lone\\udc76": "x\\ud800y"}',
        paging=b'"last_page": 1, "total": 1, "per_page": 20, "next_page_url": null',
    )
    api.route(SETTINGS, lambda req: Answer(200, page))
    args = sync_args("--resources", "user_settings")
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    stored = query(warehouse_of(args), "SELECT settings FROM devportal.user_settings")[0][0]
    assert json.loads(stored) == {
        "big": 123456789012345678901234567890,  # not rounded through a float
        "pair": "\U0001f39b",  # a valid surrogate pair is one character
        "lone\ufffd": "x\ufffdy",
    }
    counted = query(
        warehouse_of(args),
        "SELECT row_count FROM devportal.data_quality WHERE problem = 'lone_surrogate_replaced'",
    )
    assert counted == [(2,)]


def test_nan_beside_a_big_integer_is_refused_as_not_json_in_one_line(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    page = one_settings_page(b'{"big": 123456789012345678901234567890, "x": NaN}')
    api.route(SETTINGS, lambda req: Answer(200, page))
    result = devportal(
        *sync_args("--resources", "user_settings"),
        env=token_env(api, **FAST_RETRY),
    )
    assert result.code == 1  # refused like any body that is not JSON, never a traceback
    line = one_line_error(result)
    assert "still failing after 2 attempts" in line and "JSON (" in line


# -- dates, ids ------------------------------------------------------------------------------


def test_impossible_dates_are_null_with_their_raw_text_and_counted(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    odd = {
        2: "2024-02-30 10:00:00",
        3: "2023-02-29 00:00:00",
        4: "2026-01-01 10:00:60",
        5: "0000-00-00 00:00:00",
        6: {"date": "2026-01-01 00:00:00"},
        7: "2026-1-5 3:04:05",  # unpadded, but a real time: parsed
    }
    api.subscriptions = [subscription(1)] + [
        subscription(i, expires_at=value) for i, value in odd.items()
    ]
    api.subscriptions.append(subscription(8, status={"state": True}))  # not a string
    args = sync_args("--resources", "subscriptions")
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    rows = {r[0]: r for r in current(warehouse_of(args))}
    assert rows[1][3] == datetime(2027, 1, 1, 10, 0)
    assert rows[7][3] == datetime(2026, 1, 5, 3, 4, 5)
    for i in (2, 3, 4, 5):
        assert rows[i][3] is None and rows[i][4] == odd[i]  # not moved to a neighbouring day
    assert rows[6][3] is None and json.loads(rows[6][4]) == odd[6]  # JSON, not a Python repr
    assert json.loads(rows[8][2]) == {"state": True}  # status kept as JSON text, flagged
    counted = query(
        warehouse_of(args),
        "SELECT row_count, sample_values FROM devportal.data_quality "
        "WHERE column_name = 'expires_at' AND problem = 'invalid_expires_at'",
    )
    assert counted[0][0] == 5
    assert "{'date'" not in counted[0][1]


def test_rows_without_a_usable_id_are_set_aside_counted_and_the_sync_succeeds(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [
        subscription(1),
        subscription(2, id=None),
        subscription(3),
        subscription(4, id="not-a-number"),
        subscription(5),
    ]
    args = sync_args("--resources", "subscriptions")
    for _ in range(2):  # the same list again: still fine, nothing changes
        result = devportal(*args, env=token_env(api))
        assert result.code == 0, result.err
    assert [r[0] for r in current(warehouse_of(args))] == [1, 3, 5]
    dq = query(
        warehouse_of(args),
        "SELECT row_count, sample_values FROM devportal.data_quality "
        "WHERE problem = 'missing_or_invalid_id_row_dropped' ORDER BY _dlt_load_id",
    )
    assert [r[0] for r in dq] == [2, 2]
    assert "not-a-number" in dq[0][1]  # the row is named
    sweeps = json.loads(query(warehouse_of(args), "SELECT sweeps FROM devportal.sync_runs")[0][0])
    assert sweeps[0]["dropped"] == 2 and sweeps[0]["verified"] is True


# -- sweeps that cannot prove they are complete ----------------------------------------------


def test_a_sweep_without_total_never_closes_history(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 8)]
    args = sync_args("--resources", "subscriptions")
    before = current(synced(devportal, api, args))
    assert len(before) == 7

    # Laravel's simple paginator (no total, no last_page) and page 2 empty with a next link
    api.simple_paginator = True
    api.empty_from_page = 2
    api.subscriptions[0]["status"] = "canceled"
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    assert "no subscription was closed" in result.out
    after = current(warehouse_of(args))
    assert [r[0] for r in after] == [r[0] for r in before]  # nothing retired
    assert after[0][2] == "canceled"  # what was read is loaded
    runs = query(warehouse_of(args), "SELECT sweeps FROM devportal.sync_runs ORDER BY observed_at")
    last = json.loads(runs[-1][0])[0]
    assert last["verified"] is False and "empty" in last["note"]

    # a one-row sweep without a total closes nothing either
    api.empty_from_page = None
    api.subscriptions = api.subscriptions[:1]
    assert devportal(*args, env=token_env(api)).code == 0
    assert len(current(warehouse_of(args))) == 7


def test_mass_close_is_refused_until_allowed(
    api: HostileApi, devportal: Cli, engine: OnEngine
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 11)]
    args = ["sync", "--base-url", api.base_url, *engine.argv(), "--no-models"]
    args += ["--resources", "subscriptions"]

    def env(**settings: Any) -> dict[str, str]:
        return {**token_env(api, **settings), **engine.env}

    def current_ids() -> list[int]:
        sql = "SELECT id FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL ORDER BY id"
        return [r[0] for r in engine.query(sql)]

    assert devportal(*args, env=env()).code == 0
    before = engine.dump()

    for shrunk in ([], api.subscriptions[:2]):  # an empty list, then 2 of 10 (both verified)
        api.subscriptions, full = shrunk, api.subscriptions
        result = devportal(*args, env=env())
        assert result.code == 1
        line = one_line_error(result)
        assert "--allow-mass-close" in line and "nothing was loaded" in line
        assert "would close" in line and "current subscriptions" in line, line
        assert engine.dump() == before
        api.subscriptions = full

    api.subscriptions = api.subscriptions[:2]
    result = devportal(*args, "--allow-mass-close", env=env())
    assert result.code == 0, result.err
    assert current_ids() == [1, 2]
    # a share below the guard needs no flag: 1 of 2 is 50%, so raise the guard for it
    api.subscriptions = api.subscriptions[:1]
    assert devportal(*args, env=env(mass_close_max_share=0.6)).code == 0
    assert current_ids() == [1]


# -- the server's clock ----------------------------------------------------------------------


def test_a_server_clock_far_off_is_ignored_and_never_poisons_later_runs(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [subscription(1)]
    args = sync_args("--resources", "subscriptions")
    # both runs' clocks lie between these two readings (the Date header counts whole seconds)
    before = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    api.date = "Fri, 01 Jan 2100 00:00:00 GMT"
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    assert "stamped with this machine's clock" in result.out
    api.date = None
    api.subscriptions[0]["status"] = "canceled"
    assert devportal(*args, env=token_env(api)).code == 0
    # and a run whose clock reads no later than the run before it is stamped 1 s after that one
    after = datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=1)
    runs = query(
        warehouse_of(args), "SELECT observed_at, clock_source FROM devportal.sync_runs ORDER BY 1"
    )
    assert [r[1] for r in runs] == ["machine", "server"]
    assert all(before <= r[0] <= after for r in runs), (before, runs, after)
    valid_from = query(
        warehouse_of(args), "SELECT max(_dlt_valid_from)::timestamp FROM devportal.subscriptions"
    )
    assert before <= valid_from[0][0] <= after


# -- loads that fail: all or nothing, set aside, next sync proceeds ------------------------


def first_sync(api: HostileApi, devportal: Cli, sync_args: Args) -> tuple[list[str], Path]:
    """Five subscriptions and one user's settings, synced once into a fresh warehouse."""
    api.subscriptions = [subscription(i) for i in range(1, 6)]
    api.settings = [{"user": {"service": {"id": 1001}}, "settings": {"a": 1}}]
    args = sync_args()
    assert devportal(*args, env=token_env(api)).code == 0
    return args, warehouse_of(args)


def test_a_load_that_fails_leaves_the_warehouse_as_before_and_sets_the_package_aside(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    args, warehouse = first_sync(api, devportal, sync_args)

    # the warehouse's owner added a constraint this run's settings break: that load fails,
    # after (or while) other tables of the same run load
    con = duckdb.connect(str(warehouse))
    con.execute("ALTER TABLE devportal.user_settings ALTER COLUMN settings SET NOT NULL")
    con.close()
    before = dump(warehouse)
    state_file = warehouse.parent / ".warehouse.dlt" / "devportal" / "state.json"
    cursor = json.loads(state_file.read_text())["sources"]["devportal_sync"]["window_cursor"]
    api.subscriptions[0]["status"] = "canceled"
    api.subscriptions.append(subscription(6))
    api.settings[0]["settings"] = None
    result = devportal(*args, env=token_env(api))
    assert result.code == 1
    line = one_line_error(result)
    assert "warehouse is as it was before the run" in line
    assert "devportal packages discard" in line
    assert dump(warehouse) == before  # subscriptions and sync_runs included: nothing partial
    # dlt's local state is rewound too: a later --window starts where the last loaded run did
    state = json.loads(state_file.read_text())
    assert state["sources"]["devportal_sync"]["window_cursor"] == cursor
    listed = devportal("packages", "--warehouse", str(warehouse))
    load_id = line.split("devportal packages discard ")[1].split("`")[0]
    assert load_id in listed.out and "NOT NULL" in listed.out
    kept = [f for f in (set_aside_dir(warehouse) / load_id).rglob("*") if f.is_file()]
    assert kept and not any(api.token.encode() in f.read_bytes() for f in kept)

    # fixed warehouse: the next sync proceeds and loads everything
    con = duckdb.connect(str(warehouse))
    con.execute("ALTER TABLE devportal.user_settings ALTER COLUMN settings DROP NOT NULL")
    con.close()
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    assert [(r[0], r[2]) for r in current(warehouse)] == [
        (1, "canceled"),
        (2, "active"),
        (3, "active"),
        (4, "active"),
        (5, "active"),
        (6, "active"),
    ]
    assert query(warehouse, "SELECT settings FROM devportal.user_settings") == [(None,)]
    assert devportal("packages", "discard", load_id, "--warehouse", str(warehouse)).code == 0
    assert not (set_aside_dir(warehouse) / load_id).exists()


KILL_AT_LOAD = """
import os, sys
import devportal.load.packages as s
from devportal.cli import main
real = s.DraftRollback.take
def take_then_die(*a, **k):
    real(*a, **k)
    os._exit(9)  # killed after the snapshot, before the load
s.DraftRollback.take = take_then_die
sys.exit(main(sys.argv[1:]))
"""


def test_an_interrupted_package_that_cannot_load_is_set_aside_and_the_sync_proceeds(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    args, warehouse = first_sync(api, devportal, sync_args)
    before = dump(warehouse)

    api.subscriptions[1]["status"] = "canceled"
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AT_LOAD, *args],
        env={**token_env(api), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == 9, killed.stderr.decode()
    # the package it left is damaged: its run record no longer parses (every run has one; the
    # settings, unchanged, are not in it)
    packages = list((warehouse.parent / ".warehouse.dlt").glob("devportal/load/normalized/*"))
    assert len(packages) == 1
    damaged = list(packages[0].glob("new_jobs/sync_runs.*"))
    assert damaged
    damaged[0].write_text('{"run_id": "x", "mode": \n')
    assert dump(warehouse) == before

    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    assert f"set aside ({packages[0].name}: see `devportal packages`)" in result.out
    assert [(r[0], r[2]) for r in current(warehouse)][:2] == [(1, "active"), (2, "canceled")]
    listed = devportal("packages", "--warehouse", str(warehouse))
    assert packages[0].name in listed.out


# -- configuration and paths: one line -------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [("TIMEOUT_S", "abc", "timeout_s = 'abc' is not a number"), ("WORKERS", "1.5", "workers")],
)
def test_a_config_value_that_does_not_parse_is_one_line(
    api: HostileApi, devportal: Cli, sync_args: Args, key: str, value: str, expected: str
) -> None:
    result = devportal(*sync_args(), env={**token_env(api), f"SOURCES__DEVPORTAL__{key}": value})
    assert result.code == 2
    assert expected in one_line_error(result)


def test_warehouse_paths_that_cannot_be_used_are_one_line(
    api: HostileApi, devportal: Cli, sync_args: Args, tmp_path: Path
) -> None:
    api.subscriptions = [subscription(1)]
    regular = tmp_path / "file.txt"
    regular.write_text("not a folder")
    result = devportal(*sync_args(warehouse=regular / "w.duckdb"), env=token_env(api))
    assert result.code == 2 and "is a file, not a folder" in one_line_error(result)

    import sqlite3

    lite = tmp_path / "lite.duckdb"
    sqlite3.connect(lite).execute("CREATE TABLE t (x)").connection.commit()
    result = devportal(*sync_args(warehouse=lite), env=token_env(api))
    assert result.code == 2 and "is not a DuckDB database" in one_line_error(result)


# -- NUL characters: valid JSON, fine in DuckDB, impossible in PostgreSQL text ----------------

NUL_SETTINGS = {"theme": "a\u0000b", "k\u0000": ["\u0000"]}  # sent as `\u0000` escapes
NUL_STORED = {"theme": "a\ufffdb", "k\ufffd": ["\ufffd"]}


def test_a_nul_character_is_replaced_and_the_same_on_duckdb(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.settings = [{"user": {"service": {"id": 1}}, "settings": NUL_SETTINGS}]
    assert b"\\u0000" in Answer(200, api.settings).payload()  # as JSON escapes
    args = sync_args("--resources", "user_settings")
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    stored = query(warehouse_of(args), "SELECT settings FROM devportal.user_settings")[0][0]
    assert json.loads(stored) == NUL_STORED
    values = query(
        warehouse_of(args),
        "SELECT key, value FROM devportal.user_setting_values WHERE user_id = 1 ORDER BY key",
    )
    assert values == [("/k\ufffd", '["\ufffd"]'), ("/theme", "a\ufffdb")]
    counted = "SELECT row_count FROM devportal.data_quality WHERE problem = 'nul_replaced'"
    assert query(warehouse_of(args), counted) == [(3,)]


def test_a_nul_character_no_longer_breaks_a_postgres_sync(
    api: HostileApi, postgres: str, tmp_path: Path
) -> None:
    from devportal.load.sync import sync
    from devportal.warehouse.engines import connect

    api.subscriptions = [subscription(1, status="act\u0000ive")]
    api.settings = [{"user": {"service": {"id": 1001}}, "settings": NUL_SETTINGS}]
    sync(
        Target.of(tmp_path / "pg" / "warehouse.duckdb", "postgres"),
        base_url=api.base_url,
        access_token=api.token,
        max_attempts=2,
    )
    with connect(Target.of("unused.duckdb", "postgres")) as engine:
        settings = engine.execute("SELECT settings FROM devportal.user_settings")
        statuses = engine.execute("SELECT status FROM devportal.subscriptions")
    assert [json.loads(row[0]) for row in settings] == [NUL_STORED]
    assert statuses == [("act\ufffdive",)]
