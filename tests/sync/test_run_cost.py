"""A run costs what changed, not what is stored (issue 31): a run that changed nothing adds no
rows to any raw table; a window run reads the lists without a time filter (the settings list,
the accounts due by their TTL) only when they are due; the settings list loads only the users
whose entry changed, and says who left it. Real sandbox over HTTP, real DuckDB files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import query, sync_from

# the run's own records: one row per run by design (`sync_runs`), problems per run
RUN_RECORDS = {"sync_runs", "data_quality"}


def _raw_tables(warehouse: Path) -> list[str]:
    rows = query(
        warehouse,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'devportal' "
        "AND table_name NOT LIKE '\\_dlt%' ESCAPE '\\'",
    )
    return sorted(str(r[0]) for r in rows if r[0] not in RUN_RECORDS)


def _counts(warehouse: Path) -> dict[str, tuple[Any, ...]]:
    """Per raw table: its rows, and what a rewrite would change: the loads its rows came in
    (`_dlt_load_id`), or for the SCD2 history (Arrow, no load id) the newest version's start."""
    counts = {}
    for table in _raw_tables(warehouse):
        columns = {
            r[0]
            for r in query(
                warehouse,
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'devportal' AND table_name = ?",
                table,
            )
        }
        marker = (
            "count(DISTINCT _dlt_load_id)" if "_dlt_load_id" in columns else "max(_dlt_valid_from)"
        )
        counts[table] = query(warehouse, f"SELECT count(*), {marker} FROM devportal.{table}")[0]
    return counts


def _settings_requests(record: Any) -> int:
    return sum(
        int(r.get("pages") or 0) for r in record.sweeps if r["endpoint"].endswith("/settings")
    )


def test_a_run_that_changed_nothing_adds_no_rows(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=600, users=120, seed=31)
    first = sync_from(sb, warehouse)
    assert first.record.refreshed == ["user_accounts", "user_settings"]
    before = _counts(warehouse)
    assert {"subscriptions", "user_settings", "user_setting_values", "user_accounts"} <= set(before)
    # the same world read again, whole: every list read, nothing loaded
    again = sync_from(sb, warehouse)
    assert again.record.rows_read["user_settings"] == len(sb.truth_users())
    settings_read = next(r for r in again.record.sweeps if r["endpoint"].endswith("/settings"))
    assert settings_read["verified"] and settings_read["changed"] == 0
    assert _counts(warehouse) == before
    assert again.new_versions == 0 and again.closed_versions == 0
    # and a window run of the same moment
    window = sync_from(sb, warehouse, window=True)
    assert window.record.mode == "window"
    assert _counts(warehouse) == before


def test_a_window_reads_the_settings_list_and_the_accounts_only_when_due(
    sandbox_factory: Any, warehouse: Path
) -> None:
    sb = sandbox_factory(subscriptions=800, users=200, seed=32)
    sync_from(sb, warehouse)
    hourly = []
    for _ in range(3):
        sb.advance(hours=1)
        hourly.append(sync_from(sb, warehouse, window=True))
    for run in hourly:
        assert run.record.mode == "window"
        assert run.record.refreshed == []
        assert _settings_requests(run.record) == 0
        assert "user_settings" not in run.record.rows_read
    # a day after the sweep, the next window run reads the settings list and refreshes accounts
    sb.advance(hours=22)
    due = sync_from(sb, warehouse, window=True)
    assert due.record.refreshed == ["user_accounts", "user_settings"]
    assert due.record.rows_read["user_settings"] == len(sb.truth_users())
    # 0 hours: every window run reads them (the behaviour before issue 31)
    sb.advance(hours=1)
    always = sync_from(sb, warehouse, window=True, settings_refresh_hours=0)
    assert always.record.refreshed == ["user_settings"]


def test_a_window_fetches_the_accounts_of_new_users(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=2000, users=400, seed=33)
    sync_from(sb, warehouse)
    fetched = {r[0] for r in query(warehouse, "SELECT user_id FROM devportal.user_accounts")}
    sb.advance(hours=20)
    newcomer = max(sb.user_ids()) + 1000
    sb.world.add_user(newcomer, "newcomer", settings={"theme": "dark"})
    sb.world.add_subscription(newcomer)
    run = sync_from(sb, warehouse, window=True)
    assert run.record.refreshed == []
    seen_now = {r["service_id"] for r in sb.truth()} - fetched
    assert newcomer in seen_now
    accounts = {r[0] for r in query(warehouse, "SELECT user_id FROM devportal.user_accounts")}
    # every user a subscription of the window brought is fetched; nobody else is refreshed
    assert seen_now <= accounts
    assert run.record.rows_read.get("user_accounts", 0) == len(accounts - fetched)


def test_only_changed_users_are_loaded_and_who_left_the_list_is_said(
    sandbox_factory: Any, warehouse: Path
) -> None:
    sb = sandbox_factory(subscriptions=200, users=60, seed=34)
    sync_from(sb, warehouse)
    users = sorted(u["user"]["service"]["id"] for u in sb.truth_users())
    changed, emptied, leaving = users[0], users[1], users[2]
    sb.world.set_settings(changed, {"theme": "neon", "audio": {"volume": 7}})
    sb.world.set_settings(emptied, {})
    sb.world.remove_user(leaving)
    second = sync_from(sb, warehouse)
    report = next(r for r in second.record.sweeps if r["endpoint"].endswith("/settings"))
    assert report["changed"] == 2
    load_id = second.record.load_id
    written = query(
        warehouse,
        "SELECT user_id FROM devportal.user_settings WHERE _dlt_load_id = ? ORDER BY user_id",
        load_id,
    )
    assert [r[0] for r in written] == sorted([changed, emptied])
    values = query(
        warehouse,
        "SELECT key, value FROM devportal.user_setting_values WHERE user_id = ? ORDER BY key",
        changed,
    )
    assert values == [("/audio/volume", "7"), ("/theme", "neon")]
    assert query(
        warehouse, "SELECT count(*) FROM devportal.user_setting_values WHERE user_id = ?", emptied
    ) == [(0,)]
    # the user who left keeps their row, marked unlisted; the models say so
    from devportal import models

    models.build(warehouse, check=True)
    listed = dict(query(warehouse, "SELECT user_id, in_settings_list FROM analytics.users"))
    assert listed[leaving] is False
    assert listed[changed] is True and listed[emptied] is True
    assert sum(1 for v in listed.values() if v) == len(users) - 1
    # listed again: no longer marked unlisted, and the only user written
    sb.world.add_user(leaving, "back again", settings={"theme": "dark"})
    third = sync_from(sb, warehouse)
    assert query(warehouse, "SELECT count(*) FROM devportal.user_settings_unlisted") == [(0,)]
    assert third.record.rows_read["user_settings"] == len(users)
    assert query(
        warehouse,
        "SELECT user_id FROM devportal.user_settings WHERE _dlt_load_id = ?",
        third.record.load_id,
    ) == [(leaving,)]
