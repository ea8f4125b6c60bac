"""The sync pipeline against the sandbox over real HTTP into real DuckDB files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from devportal.base.errors import ApiError, WarehouseBusy
from devportal.cli import main
from devportal.load.sync import sync
from devportal.warehouse import warehouse_lock
from tests.helpers import FAST_RETRY, current_rows, query, sync_from, truth_rows


def run(sb: Any, warehouse: Path, **kwargs: Any) -> Any:
    return sync_from(sb, warehouse, **{**FAST_RETRY, **kwargs})


def versions_per_id(warehouse: Path) -> Counter[int]:
    return Counter(r[0] for r in query(warehouse, "SELECT id FROM devportal.subscriptions"))


def test_sweep_equals_truth_live_only(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=1500, users=300, seed=3, test_share=0.1)
    result = run(sb, warehouse)
    assert current_rows(warehouse) == truth_rows(sb)
    assert result.record.rows_read["subscriptions"] == len(sb.truth(is_test=False))
    # live by default: no test rows in the warehouse
    assert query(warehouse, "SELECT count(*) FROM devportal.subscriptions WHERE is_test")[0][0] == 0
    # a run record names what was read, stamped with the server's (simulated) clock
    runs = query(warehouse, "SELECT mode, observed_at FROM devportal.sync_runs")
    assert runs == [("sweep", sb.now.replace(microsecond=0))]


def test_include_test_marks_test_rows(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=800, users=100, seed=4, test_share=0.1)
    run(sb, warehouse, include_test=True)
    assert current_rows(warehouse) == truth_rows(sb, include_test=True)
    n_test = query(warehouse, "SELECT count(*) FROM devportal.subscriptions WHERE is_test")[0][0]
    assert n_test == len(sb.truth(is_test=True)) > 0
    # a later live-only sweep leaves the test partition alone
    run(sb, warehouse)
    assert current_rows(warehouse) == truth_rows(sb, include_test=True)


def test_history_one_version_per_change_and_idempotent(
    sandbox_factory: Any, warehouse: Path
) -> None:
    sb = sandbox_factory(subscriptions=1000, users=200, seed=5)
    run(sb, warehouse)
    before = {r["id"]: r for r in sb.truth()}
    changes = sb.advance(days=20)
    assert changes["canceled"] > 0 and changes["renewed"] > 0 and changes["new"] > 0
    after = {r["id"]: r for r in sb.truth()}
    changed = {
        i
        for i, r in after.items()
        if i in before
        and (r["status"], r["expires_at"]) != (before[i]["status"], before[i]["expires_at"])
    }
    new_ids = set(after) - set(before)
    result = run(sb, warehouse)
    assert current_rows(warehouse) == truth_rows(sb)
    assert result.new_versions == len(changed) + len(new_ids)
    counts = versions_per_id(warehouse)
    assert {i for i, n in counts.items() if n == 2} == changed
    assert all(counts[i] == 1 for i in new_ids)
    # the old version is closed exactly where the new one starts
    gaps = query(
        warehouse,
        "SELECT count(*) FROM devportal.subscriptions a JOIN devportal.subscriptions b "
        "ON a.id = b.id AND a._dlt_valid_to IS NOT NULL AND b._dlt_valid_from = a._dlt_valid_to",
    )[0][0]
    assert gaps == len(changed)

    # no server change: no new version, no duplicate
    total = sum(versions_per_id(warehouse).values())
    again = run(sb, warehouse)
    assert again.new_versions == 0 and again.closed_versions == 0
    assert sum(versions_per_id(warehouse).values()) == total
    assert current_rows(warehouse) == truth_rows(sb)


def test_removed_subscription_is_closed_by_a_sweep(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=300, users=50, seed=6)
    run(sb, warehouse)
    gone = sb.truth()[10]["id"]
    sb.world.remove_subscription(gone)
    result = run(sb, warehouse)
    assert result.closed_versions == 1
    assert current_rows(warehouse) == truth_rows(sb)
    closed = query(
        warehouse,
        "SELECT _dlt_valid_to IS NOT NULL FROM devportal.subscriptions WHERE id = ?",
        gone,
    )
    assert closed == [(True,)]


def test_window_mode_never_closes_rows_it_did_not_read(
    sandbox_factory: Any, warehouse: Path
) -> None:
    sb = sandbox_factory(subscriptions=600, users=100, seed=7)
    run(sb, warehouse)
    sb.advance(days=15)
    # a window that reads only the newest subscriptions
    result = run(sb, warehouse, since=sb.now.replace(hour=0, minute=0, second=0) - _days(15))
    assert result.record.mode == "window"
    window_ids = {r[0] for r in query(warehouse, "SELECT id FROM devportal.subscriptions")}
    truth = {r["id"]: r for r in sb.truth()}
    # every id from the first sweep is still current in some version: nothing was retired
    current = {r["id"] for r in current_rows(warehouse)}
    assert current == window_ids
    assert result.closed_versions <= result.new_versions
    # rows the window read are the truth
    for row in current_rows(warehouse):
        if row["id"] in truth and truth[row["id"]]["status"] != row["status"]:
            # an old subscription canceled outside the window: window mode cannot see it
            continue
    # a sweep converges to the truth
    run(sb, warehouse)
    assert current_rows(warehouse) == truth_rows(sb)


def _days(n: int) -> Any:
    from datetime import timedelta

    return timedelta(days=n)


def test_faults_ten_percent_still_equal_truth(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=2000, users=200, seed=8)
    sb.set_faults(rate=0.1, seed=11, retry_after=0)
    result = run(sb, warehouse)
    assert result.record.retries > 0
    sb.set_faults(None)
    assert current_rows(warehouse) == truth_rows(sb)
    faults = (
        sum(v for k, v in sb.stats.items() if k.startswith("fault"))
        if isinstance(sb.stats, dict)
        else 1
    )
    assert faults > 0


def test_bad_token_fails_fast_and_writes_nothing(
    sandbox_factory: Any, warehouse: Path, capsys: Any
) -> None:
    sb = sandbox_factory(subscriptions=50, users=10, seed=9)
    with pytest.raises(ApiError, match="access token rejected"):
        sync(warehouse, base_url=sb.base_url, access_token="wrong-token")
    assert not warehouse.exists() or not query(
        warehouse,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'devportal'",
    )
    code = main(["sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), "--no-models"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.strip().splitlines()[-1].startswith("devportal: error: ")
    assert "SOURCES__DEVPORTAL__ACCESS_TOKEN" in err
    assert "Traceback" not in err


def test_token_over_plain_http_to_remote_host_is_refused(warehouse: Path) -> None:
    code = main(
        [
            "sync",
            "--base-url",
            "http://api.example.com",
            "--warehouse",
            str(warehouse),
            "--no-models",
        ]
    )
    assert code == 2


def test_second_sync_refuses_while_one_runs(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=50, users=10, seed=10)
    with warehouse_lock(warehouse), pytest.raises(WarehouseBusy, match="busy"):
        run(sb, warehouse)


def test_bad_values_are_kept_null_and_counted(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=100, users=20, seed=12)
    ids = [r["id"] for r in sb.truth()[:4]]
    sb.world.set_raw(ids[0], expires_at="0000-00-00 00:00:00")
    sb.world.set_raw(ids[1], expires_at="")
    sb.world.set_raw(ids[2], expires_at="not a date")
    sb.world.set_raw(ids[3], status="paused")
    result = run(sb, warehouse)
    assert result.record.data_quality_problems == 4
    rows = dict(
        (r[0], r[1:])
        for r in query(
            warehouse,
            "SELECT id, expires_at, expires_at_raw, status, dq_flags FROM devportal.subscriptions",
        )
    )
    assert len(rows) == len(sb.truth())
    assert rows[ids[0]][:2] == (None, "0000-00-00 00:00:00")
    assert rows[ids[1]][0] is None and rows[ids[1]][3] == "missing_expires_at"
    assert rows[ids[2]][:2] == (None, "not a date")
    assert rows[ids[3]][2:] == ("paused", "unknown_status")
    dq = dict(
        query(warehouse, "SELECT problem, row_count FROM devportal.data_quality ORDER BY problem")
    )
    assert dq == {"invalid_expires_at": 2, "missing_expires_at": 1, "unknown_status": 1}


def test_user_settings_and_values(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=100, users=45, seed=13)
    run(sb, warehouse, resources=["user_settings"])
    truth = sb.truth_users()
    rows = query(
        warehouse,
        "SELECT user_id, twitch_name, twitch_id, settings_count FROM devportal.user_settings "
        "ORDER BY user_id",
    )
    assert [r[0] for r in rows] == sorted(u["user"]["service"]["id"] for u in truth)
    by_id = {u["user"]["service"]["id"]: u for u in truth}
    for user_id, name, twitch_id, n in rows:
        assert name == by_id[user_id]["user"]["twitch"]["name"]
        assert twitch_id == by_id[user_id]["user"]["twitch"]["twitch_id"]
        assert n == len(by_id[user_id]["settings"])
    # every scalar top-level setting is one row in the long table
    expected = sum(
        1 for u in truth for v in u["settings"].values() if not isinstance(v, dict) or not v
    )
    nested = sum(1 for u in truth for v in u["settings"].values() if isinstance(v, dict) and v)
    n_values = query(warehouse, "SELECT count(*) FROM devportal.user_setting_values")[0][0]
    assert n_values >= expected and (nested == 0 or n_values > expected)


def test_user_accounts_ttl_and_missing(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=200, users=60, seed=14)
    first = run(sb, warehouse)
    seen = {r["service_id"] for r in sb.truth()} | {
        u["user"]["service"]["id"] for u in sb.truth_users()
    }
    assert first.record.rows_read["user_accounts"] == len(seen)
    rows = dict(query(warehouse, "SELECT user_id, status FROM devportal.user_accounts"))
    assert set(rows) == seen
    for user_id, status in rows.items():
        assert status == ("found" if sb.profiles(user_id) is not None else "missing")
    assert "missing" in rows.values()  # the sandbox has deleted users behind some subscriptions
    primaries = query(
        warehouse,
        "SELECT count(*) FROM devportal.user_accounts WHERE status = 'found' "
        "AND primary_platform IS NULL",
    )
    assert primaries == [(0,)]
    # within the TTL nothing is fetched again
    second = run(sb, warehouse)
    assert second.record.rows_read.get("user_accounts", 0) == 0
    # past the TTL everyone is refreshed
    sb.advance(days=8)
    third = run(sb, warehouse)
    assert third.record.rows_read["user_accounts"] >= len(seen)


def test_window_cursor_reads_since_the_last_run_minus_lookback(
    sandbox_factory: Any, warehouse: Path
) -> None:
    from datetime import timedelta

    sb = sandbox_factory(subscriptions=400, users=50, seed=15)
    run(sb, warehouse)
    first_seen = sb.now
    known = {r["id"] for r in sb.truth()}
    sb.advance(days=3)
    result = run(sb, warehouse, window=True, lookback_hours=24)
    assert result.record.mode == "window"
    start, end = query(
        warehouse, "SELECT window_start, window_end FROM devportal.sync_runs WHERE mode = 'window'"
    )[0]
    assert start == first_seen - timedelta(hours=24)
    assert end > sb.now
    # every subscription created since the cursor arrived, older ones were left alone
    new_ids = {r["id"] for r in sb.truth()} - known
    assert new_ids and new_ids <= {r["id"] for r in current_rows(warehouse)}
    assert result.closed_versions <= result.record.rows_read["subscriptions"]


def test_sync_records_the_configured_manifest_before_models(
    sandbox_factory: Any, warehouse: Path, monkeypatch: Any, capsys: Any
) -> None:
    sb = sandbox_factory(subscriptions=120, users=20, seed=16)
    monkeypatch.setenv("SOURCES__DEVPORTAL__ACCESS_TOKEN", sb.token)
    app = Path(__file__).resolve().parents[2] / "examples" / "demo-app"
    argv = ["sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), "--manifest"]
    # --verbose: the models' line too, which a log does not get
    code = main([*argv, str(app), "--verbose"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "recorded Stream Widgets 1.4.0" in out and "models ok" in out
    assert query(warehouse, "SELECT name, version, error_count FROM devportal.app_manifests") == [
        ("Stream Widgets", "1.4.0", 0)
    ]
    # the models were built after the manifest: the release is already in analytics
    assert query(warehouse, "SELECT count(*) FROM analytics.app_releases") == [(1,)]


def test_destination_duckdb_is_the_warehouse_file(
    sandbox_factory: Any, warehouse: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    """`--destination duckdb` names the engine of --warehouse, not dlt's own DuckDB file in
    the working directory."""
    monkeypatch.chdir(tmp_path)
    sb = sandbox_factory(subscriptions=120, users=20, seed=24)
    result = run(sb, warehouse, destination="duckdb", build_models=True)
    assert current_rows(warehouse) == truth_rows(sb)
    assert result.extra["models"]["built"]
    assert not list(tmp_path.glob("*.duckdb"))


@pytest.mark.parametrize("before", ["window", "live sweep"])
def test_an_include_test_sweep_retires_in_both_partitions_after_any_other_run(
    sandbox_factory: Any, warehouse: Path, before: str
) -> None:
    """dlt keeps a write-disposition hint a later run does not set: a whole-table sweep must set
    its own scope, or a window's (ids read) or a live sweep's (is_test = false) stays in force
    and removed subscriptions are never closed."""
    sb = sandbox_factory(subscriptions=400, users=60, seed=25, test_share=0.2)
    run(sb, warehouse, include_test=True)
    if before == "window":
        run(sb, warehouse, window=True, include_test=True)
    else:
        run(sb, warehouse)
    live = next(r["id"] for r in sb.truth(is_test=False))
    test = next(r["id"] for r in sb.truth(is_test=True))
    sb.world.remove_subscription(live)
    sb.world.remove_subscription(test)
    result = run(sb, warehouse, include_test=True)
    assert result.closed_versions == 2
    assert current_rows(warehouse) == truth_rows(sb, include_test=True)
