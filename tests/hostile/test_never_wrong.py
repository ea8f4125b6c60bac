"""Never wrong, never stuck (issue 22), through the real `devportal sync` against the hostile
API: a busy list that shifts under a sweep never makes it close a subscription the API still
has; live and test subscriptions sharing ids never mix and a child row never outlives what the
latest read of its parent says (both on DuckDB and on PostgreSQL: the `engine` fixture); a
window run on a warehouse without a verified sweep sweeps. Each test compares the warehouse
with what the server holds and sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import OnEngine, query, subscription, warehouse_of
from tests.hostile import shared_ids
from tests.hostile.conftest import CliResult, synced, token_env
from tests.hostile.server import SUBSCRIPTIONS, Answer, HostileApi, Request

Cli = Callable[..., CliResult]
Args = Callable[..., list[str]]


def current(where: Path | OnEngine, is_test: bool = False) -> list[tuple[Any, ...]]:
    """(id, service_id, status, expires_at as the API writes it) of the current versions, in a
    DuckDB warehouse file or on an engine."""
    target = where if isinstance(where, OnEngine) else OnEngine("duckdb", where)
    rows = target.query(
        "SELECT id, service_id, status, expires_at FROM devportal.subscriptions "
        "WHERE _dlt_valid_to IS NULL AND is_test = ? ORDER BY id",
        is_test,
    )
    return [(*row[:3], row[3].strftime("%Y-%m-%d %H:%M:%S")) for row in rows]


def listed(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What the server lists, shaped as `current`."""
    return sorted((r["id"], r["service_id"], r["status"], r["expires_at"]) for r in rows)


def last_sweeps(warehouse: Path) -> list[dict[str, Any]]:
    rows = query(warehouse, "SELECT sweeps FROM devportal.sync_runs ORDER BY observed_at")
    return [s for s in json.loads(rows[-1][0]) if s["endpoint"].endswith("/subscriptions")]


def id_lookups(api: HostileApi) -> list[Request]:
    return [r for r in api.requests if r.path == SUBSCRIPTIONS and "id" in r.query]


class Shifter:
    """A busy API: during a read of the list (after its page 1, before any later page is
    built) one subscription is removed from the front and one created at the end, so `total`
    stays and the row that slides from page 2 onto page 1 is never read. `reads`: how many
    reads it disturbs (None: every one). The server builds pages under one lock with this hook,
    so every later page of the read sees the change, whatever order they are asked in."""

    def __init__(
        self, api: HostileApi, next_id: int, reads: int | None = 1, change: Any = None
    ) -> None:
        self.api, self.next_id, self.left, self.change = api, next_id, reads, change
        self.armed = False
        self.removed: list[int] = []
        self.slid: list[int] = []  # the rows that crossed the boundary, unread
        api.on_subscriptions_page = self

    def __call__(self, req: Request) -> None:
        if req.query.get("is_test"):
            return
        page = int(req.query.get("page", "1") or 1)
        if page == 1:
            self.armed = self.left is None or self.left > 0
            return
        if not self.armed:
            return
        self.armed = False
        if self.left is not None:
            self.left -= 1
        rows = self.api.subscriptions
        self.slid.append(rows[self.api.per_page]["id"])
        self.removed.append(rows.pop(0)["id"])
        if self.change is not None:
            self.change(rows)
        rows.append(subscription(self.next_id))
        self.next_id += 1


# -- 1. a busy API shifts offset pages during a sweep ------------------------------------------


def test_a_row_sliding_across_a_page_boundary_is_confirmed_and_never_closed(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 10)]  # 3 pages of 3
    args = sync_args("--resources", "subscriptions")
    warehouse = synced(devportal, api, args)
    assert current(warehouse) == listed(api.subscriptions)

    # while the sweep pages: 1 removed, 10 created; 4 slides onto page 1 unread (and is
    # canceled meanwhile: the sweep must load what the API says of it now)
    def cancel_4(rows: list[dict[str, Any]]) -> None:
        next(r for r in rows if r["id"] == 4)["status"] = "canceled"

    shifter = Shifter(api, next_id=10, change=cancel_4)
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    assert shifter.slid == [4] and shifter.removed == [1]
    # the slide is noticed (page 1 read again at the end no longer holds its rows) and the list
    # read again: the warehouse is the list as the API ended it, 4 canceled and never closed
    assert current(warehouse) == listed(api.subscriptions)
    assert dict((r[0], r[2]) for r in current(warehouse))[4] == "canceled"
    sweep = last_sweeps(warehouse)[0]
    assert sweep["verified"] is True

    # 1, gone from the list, is closed (by this sweep's second read, or the next quiet one)
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    assert current(warehouse) == listed(api.subscriptions)
    assert query(
        warehouse,
        "SELECT count(*) FROM devportal.subscriptions WHERE id = 1 AND _dlt_valid_to IS NOT NULL",
    ) == [(1,)]


def test_more_missing_than_the_confirm_bound_are_decided_by_reading_until_two_reads_agree(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 25)]
    args = sync_args("--resources", "subscriptions")
    env = token_env(api, confirm_closes_max=1)
    assert devportal(*args, env=env).code == 0
    warehouse = warehouse_of(args)

    del api.subscriptions[-2:]  # 23 and 24 really go
    shifter = Shifter(api, next_id=25)  # and the first read misses 4, as above
    before = len(id_lookups(api))
    result = devportal(*args, env=env)
    assert result.code == 0, result.err
    assert shifter.slid == [4]
    # the still-listed subscription stays current; the removed ones are closed
    assert current(warehouse) == listed(api.subscriptions)
    closed = query(
        warehouse,
        "SELECT id FROM devportal.subscriptions WHERE _dlt_valid_to IS NOT NULL ORDER BY id",
    )
    assert closed == [(1,), (23,), (24,)]
    closing = last_sweeps(warehouse)[0]["closing"]
    assert closing["missing"] == 3 and closing["asked"] == 0  # 3 > 1: no id asked
    assert (closing["agreed"], closing["closes"]) == (True, 3)  # the reads agreed: 3 closed
    assert len(id_lookups(api)) == before


def test_a_list_that_never_holds_still_closes_only_what_the_api_confirms_gone(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 31)]
    args = sync_args("--resources", "subscriptions")
    warehouse = synced(devportal, api, args)

    del api.subscriptions[-1]  # 30 really goes
    shifter = Shifter(api, next_id=31, reads=None)  # every read shifts: no two reads agree
    env = token_env(api, confirm_closes_max=0)  # and nothing is asked one by one
    before = current(warehouse)
    result = devportal(*args, env=env)
    # a row slides past the reader in every read: no read is a consistent read of a moment, so
    # the sync is refused in one line and nothing is loaded, nothing closed
    assert result.code == 1 and "kept changing while it was read" in result.err, result.err
    assert len(shifter.slid) >= 1 and current(warehouse) == before
    assert query(
        warehouse, "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NOT NULL"
    ) == [(0,)]

    # the API calms down, ids may be asked again: every leftover is confirmed gone and closed
    api.on_subscriptions_page = None
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    assert current(warehouse) == listed(api.subscriptions)


def test_an_answer_that_cannot_say_which_partition_closes_nothing(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Test and live subscriptions share ids. A test id the list no longer shows is asked
    `?id=N&is_test=true`; an API whose id lookup ignores `is_test` answers with the live one
    (no `is_test` in it): unclear, so neither closed nor overwritten with live data."""
    api.subscriptions = [subscription(i) for i in range(1, 5)]
    api.test_subscriptions = [subscription(i, service_id=9000 + i) for i in range(1, 5)]
    args = sync_args("--resources", "subscriptions", "--include-test")
    env = token_env(api, sweep_attempts=1)  # no re-read either: the answer is all there is
    assert devportal(*args, env=env).code == 0
    warehouse = warehouse_of(args)

    del api.test_subscriptions[1]  # test 2 goes; live 2 stays
    api.id_lookup_ignores_is_test = True
    result = devportal(*args, env=env)
    assert result.code == 0, result.err
    assert [r.query for r in id_lookups(api)] == [{"is_test": "true", "id": "2"}]
    assert current(warehouse, is_test=True) == listed(
        [*api.test_subscriptions, subscription(2, service_id=9002)]
    )
    assert current(warehouse) == listed(api.subscriptions)
    closing = last_sweeps(warehouse)[1]["closing"]
    assert (closing["unclear"], closing["kept"], closing["closes"]) == ([2], 1, 0)

    # an API that answers the test lookup itself: 404, closed; live 2 untouched
    api.id_lookup_ignores_is_test = False
    assert devportal(*args, env=env).code == 0
    assert current(warehouse, is_test=True) == listed(api.test_subscriptions)
    assert current(warehouse) == listed(api.subscriptions)


def test_a_verified_live_list_beside_an_unverifiable_test_list_still_meets_the_guard(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Each partition closes on its own read: the live list (with `total`) may close, the
    test list (without) may not; the mass-close guard still counts what the live one closes."""
    api.subscriptions = [subscription(i) for i in range(1, 11)]
    api.test_subscriptions = [subscription(i) for i in range(1, 4)]

    def answer(req: Request) -> Answer:
        if req.query.get("is_test") == "true" and "id" not in req.query:
            body = api.page(req, api.test_subscriptions or [])
            for key in ("total", "last_page", "last_page_url"):  # a simple paginator
                body.pop(key, None)
            return Answer(200, body)
        return api.subscriptions_answer(req)

    api.route(SUBSCRIPTIONS, answer)
    args = sync_args("--resources", "subscriptions", "--include-test")
    warehouse = synced(devportal, api, args)

    full = api.subscriptions
    api.subscriptions = full[:2]  # 8 of 13 current would close
    result = devportal(*args, env=token_env(api))
    assert result.code == 1 and "--allow-mass-close" in result.err
    assert current(warehouse) == listed(full)

    api.subscriptions = full[1:]  # 1 goes: closed; test 3 goes: kept (its list is unverified)
    api.test_subscriptions = api.test_subscriptions[:2]
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    assert "the test subscription list could not be verified" in result.out
    assert current(warehouse) == listed(api.subscriptions)
    assert current(warehouse, is_test=True) == listed([subscription(i) for i in range(1, 4)])


# -- 3. live and test subscriptions sharing ids ------------------------------------------------


def test_live_figures_are_the_same_with_and_without_include_test(
    api: HostileApi, devportal: Cli, engine: OnEngine, tmp_path: Path
) -> None:
    targets = {False: engine, True: engine.another(tmp_path / "with-test")}

    def run(include_test: bool, extra: list[str]) -> None:
        target = targets[include_test]
        args = ["sync", "--base-url", api.base_url, *target.argv(), "--no-models", *extra]
        result = devportal(*args, env={**token_env(api, **shared_ids.SETTINGS), **target.env})
        assert result.code == 0, result.err

    shared_ids.scenario(api, run)
    for target in targets.values():
        result = devportal("models", *target.argv(), env=target.env)
        assert result.code == 0, result.out + result.err
    live, both = targets[False], targets[True]
    # each list as the server holds it, side by side where ids are shared
    assert current(live) == current(both) == listed(api.subscriptions)
    assert current(both, is_test=True) == listed(api.test_subscriptions or [])
    assert {r[0] for r in current(both)} & {r[0] for r in current(both, is_test=True)}
    for target in targets.values():  # and one version per change, in both lists
        assert target.query(shared_ids.REPEATED_VERSIONS) == [(0,)]
    for name, sql in shared_ids.LIVE_MODELS.items():
        assert sorted(map(repr, live.query(sql))) == sorted(map(repr, both.query(sql))), name
    figures = live.query(
        "SELECT usable_subscribers, last_full_month_churned FROM analytics.report_figures"
    )
    # the figures are the server's: usable at the last clock, 3 churned in November
    usable = sum(r["expires_at"] > "2026-12-05 00:00:00" for r in api.subscriptions)
    assert figures == [(usable, 1)]


# -- 4. child rows follow their parent ---------------------------------------------------------


def children(engine: OnEngine) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    values = engine.query(
        "SELECT user_id, key, value FROM devportal.user_setting_values ORDER BY user_id, key"
    )
    profiles = engine.query(
        "SELECT user_id, platform FROM devportal.user_account_profiles ORDER BY user_id, platform"
    )
    return values, profiles


def test_children_equal_what_the_latest_read_of_their_parent_implies(
    api: HostileApi, devportal: Cli, engine: OnEngine
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 4)]  # users 1001..1003
    api.settings = [  # empty strings and nulls too: they stay apart (an empty string is no null)
        {"user": {"service": {"id": 1001}}, "settings": {"a": "", "b": {"c": None}}},
        {"user": {"service": {"id": 1002}}, "settings": {"d": True}},
        {"user": {"service": {"id": 1003}}, "settings": {"e": "kept"}},
    ]
    api.accounts = {
        1001: {"primary": "twitch", "twitch": {"id": 1, "name": ""}, "youtube": {"id": "UC1"}},
        1002: {"primary": "mixer", "mixer": {"id": 2, "name": "b"}},
        1003: {"primary": "twitch", "twitch": {"id": 3, "name": "c"}},
    }
    args = ["sync", "--base-url", api.base_url, *engine.argv(), "--no-models"]
    # every account is fetched on every run
    env = {**token_env(api, accounts_ttl_days=0), **engine.env}
    assert devportal(*args, env=env).code == 0
    values, profiles = children(engine)
    assert [v[0] for v in values] == [1001, 1001, 1002, 1003]
    assert [p[0] for p in profiles] == [1001, 1001, 1002, 1003]

    api.settings[0]["settings"] = {}  # 1001: no settings left
    api.settings[1]["settings"] = None  # 1002: none at all
    del api.accounts[1001]  # 1001's account now answers 404
    api.accounts[1002] = {"primary": None}  # 1002: found, no platform linked
    result = devportal(*args, env=env)
    assert result.code == 0, result.err
    values, profiles = children(engine)
    assert values == [(1003, "/e", "kept")]
    assert profiles == [(1003, "twitch")]
    assert engine.query("SELECT user_id, status FROM devportal.user_accounts ORDER BY user_id") == [
        (1001, "missing"),
        (1002, "found"),
        (1003, "found"),
    ]
    # the tombstones that removed them are never stored
    for table in ("user_setting_values", "user_account_profiles"):
        count = f"SELECT count(*) FROM devportal.{table} WHERE _tombstone"
        assert engine.query(count) == [(0,)]

    # and children come back when the parent has some again
    api.settings[0]["settings"] = {"y": "", "z": 0}
    api.accounts[1001] = {"primary": "youtube", "youtube": {"id": "UC9"}}
    assert devportal(*args, env=env).code == 0
    values, profiles = children(engine)
    assert values == [(1001, "/y", ""), (1001, "/z", "0"), (1003, "/e", "kept")]
    assert profiles == [(1001, "youtube"), (1003, "twitch")]


# -- 15. a window run on a warehouse without a verified sweep --------------------------------


def windowed(api: HostileApi) -> None:
    """A window (`start`) lists only subscriptions 8 and up, as a real API's filter would."""

    def answer(req: Request) -> Answer:
        if "start" in req.query:
            rows = [r for r in api.subscriptions if r["id"] >= 8]
            return Answer(200, api.page(req, rows))
        return api.subscriptions_answer(req)

    api.route(SUBSCRIPTIONS, answer)


@pytest.mark.parametrize("window", [["--window"], ["--since", "2026-01-01"]])
def test_a_window_run_on_a_fresh_warehouse_sweeps_and_says_so(
    api: HostileApi, devportal: Cli, sync_args: Args, window: list[str]
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 11)]
    windowed(api)
    args = sync_args("--resources", "subscriptions", *window)
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    warehouse = warehouse_of(args)
    assert result.out.startswith("sync ok (sweep)")
    assert "swept the whole subscription list instead of a window" in result.out
    assert current(warehouse) == listed(api.subscriptions)  # all 10, not the window's 3
    run = query(
        warehouse, "SELECT mode, requested_mode, window_start, sweeps FROM devportal.sync_runs"
    )
    assert run[0][:3] == ("sweep", "window", None)
    assert [(s["params"], s["verified"]) for s in json.loads(run[0][3])] == [({}, True)]

    # now that a verified sweep is held, a window is a window
    api.subscriptions[-1]["status"] = "canceled"
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    assert result.out.startswith("sync ok (window)")
    assert "instead of a window" not in result.out
    assert current(warehouse) == listed(api.subscriptions)
    modes = query(warehouse, "SELECT mode, requested_mode FROM devportal.sync_runs ORDER BY 1")
    assert modes == [("sweep", "window"), ("window", "window")]


def test_a_window_after_only_unverifiable_sweeps_sweeps_again(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """A sweep whose pages carry no `total` proves nothing: the next window sweeps too."""
    api.subscriptions = [subscription(i) for i in range(1, 11)]
    api.simple_paginator = True
    windowed(api)
    args = sync_args("--resources", "subscriptions")
    synced(devportal, api, args)
    result = devportal(*args, "--window", env=token_env(api))
    assert result.code == 0, result.err
    assert "instead of a window" in result.out
    api.simple_paginator = False
    assert devportal(*args, env=token_env(api)).code == 0  # a verified sweep
    result = devportal(*args, "--window", env=token_env(api))
    assert result.out.startswith("sync ok (window)")
