"""`devportal status` through the real CLI, on DuckDB and PostgreSQL: exit 0 fresh, 1 stale,
failed or no sync yet, 2 on a usage error; what it says of the last sync is what `sync_runs`
holds; a failed sync (which leaves no row in `sync_runs`) is shown with its cause until a later
sync succeeds; stale data is posted to the webhook once.

Staleness without waiting: `--max-age-hours 0` (or `[alerts] max_age_hours = 0`) makes any
sync stale; the clock is never patched."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CliResult, OnEngine
from tests.operations.receiver import Receiver

Cli = Callable[..., CliResult]
WRONG_TOKEN = "not-the-token-5f2a9c71"


def status(devportal: Cli, engine: OnEngine, *extra: str, **env: str) -> tuple[int, dict[str, Any]]:
    result = devportal(
        "status", *engine.argv(), "--format", "json", *extra, env={**engine.env, **env}
    )
    return result.code, json.loads(result.out)


def sync(devportal: Cli, engine: OnEngine, sb: Any, token: str | None = None) -> CliResult:
    env = {**engine.env, "SOURCES__DEVPORTAL__ACCESS_TOKEN": token or sb.token}
    return devportal("sync", "--base-url", sb.base_url, *engine.argv(), env=env)


def test_status_exit_codes_on_fresh_stale_and_failed_warehouses(
    engine: OnEngine, sandbox_factory: Any, devportal: Cli, hook: Receiver
) -> None:
    sb = sandbox_factory(subscriptions=200, users=40, seed=23)
    code, said = status(devportal, engine)
    assert (code, said["state"], said["last_sync"]) == (1, "no sync", None)
    assert said["problems"] == ["no successful sync yet"]

    assert sync(devportal, engine, sb).code == 0
    code, said = status(devportal, engine)
    assert (code, said["state"], said["stale"], said["failed"]) == (0, "fresh", False, False)
    [(run_id, rows_read, observed_at)] = engine.query(
        "select run_id, cast(rows_read as varchar), observed_at from devportal.sync_runs"
    )
    last = said["last_sync"]
    assert last["run_id"] == run_id
    assert last["rows"] == json.loads(rows_read) and last["rows"]["subscriptions"] > 0
    assert last["observed_at"] == f"{observed_at:%Y-%m-%dT%H:%M:%S}Z"  # the sandbox's clock
    assert last["mode"] == "sweep" and last["loaded_at"] is not None
    assert said["successful_syncs"] == 1 and said["last_failure"] is None
    assert said["models"]["current"] is True and said["models"]["built_at"] is not None
    assert said["destination"] == engine.name

    # stale: by the option, and by the setting
    code, said = status(devportal, engine, "--max-age-hours", "0")
    assert (code, said["state"], said["stale"]) == (1, "stale", True)
    assert said["max_age_hours"] == 0
    code, said = status(devportal, engine, ALERTS__MAX_AGE_HOURS="0")
    assert (code, said["state"]) == (1, "stale")

    failed = sync(devportal, engine, sb, token=WRONG_TOKEN)
    assert failed.code == 1
    cause = failed.err.strip().splitlines()[-1].removeprefix("devportal: error: ")
    code, said = status(devportal, engine)
    assert (code, said["state"], said["failed"]) == (1, "failed", True)
    assert said["last_failure"]["cause"] == cause and said["last_failure"]["command"] == "sync"
    assert said["last_failure"]["exit_code"] == 1 and said["last_failure"]["current"] is True
    assert said["last_sync"]["run_id"] == run_id  # the failed run left no row

    sb.advance(days=1)
    assert sync(devportal, engine, sb).code == 0
    code, said = status(devportal, engine)
    assert (code, said["state"], said["successful_syncs"]) == (0, "fresh", 2)
    assert said["last_failure"]["cause"] == cause and said["last_failure"]["current"] is False

    # what reached the webhook: "no sync yet" and "stale" once each (the status runs above
    # found the same stale sync twice), and the failure with its cause
    texts = hook.texts()
    assert len(texts) == 3, texts
    assert texts[0].startswith("devportal: the data is stale: no successful sync yet")
    assert texts[1].startswith("devportal: the data is stale: the last successful sync is")
    assert texts[2].startswith("devportal sync failed (") and texts[2].endswith(f": {cause}")


def test_the_table_says_the_same(engine: OnEngine, sandbox_factory: Any, devportal: Cli) -> None:
    sb = sandbox_factory(subscriptions=100, users=20, seed=24)
    assert sync(devportal, engine, sb).code == 0
    result = devportal("status", *engine.argv(), env=engine.env)
    assert result.code == 0, result.err
    labels = [line[:12].strip() for line in result.out.splitlines()]
    assert labels == [
        "status",
        "warehouse",
        "last sync",
        "rows read",
        "last failure",
        "set aside",
        "models",
        "disk",
    ], result.out
    assert result.out.startswith("status        fresh")
    assert "as of 2026-11-01 00:00:00 (server clock), sweep" in result.out
    assert "(1 successful sync)" in result.out
    quiet = devportal("status", *engine.argv(), "--quiet", "--max-age-hours", "0", env=engine.env)
    assert (quiet.code, quiet.out) == (1, "")


def test_a_failure_before_any_success_is_shown(
    engine: OnEngine, sandbox_factory: Any, devportal: Cli
) -> None:
    sb = sandbox_factory(subscriptions=50, users=10, seed=25)
    engine.warehouse.parent.mkdir(parents=True)  # the folder cron runs in exists
    assert sync(devportal, engine, sb, token=WRONG_TOKEN).code == 1
    code, said = status(devportal, engine)
    assert (code, said["state"]) == (1, "no sync")
    assert "access token rejected (401)" in said["last_failure"]["cause"]
    assert said["problems"][1].startswith("the last sync failed: access token rejected")


def test_usage_errors_exit_2(devportal: Cli, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    for argv in (
        ["--max-age-hours", "-1"],
        ["--max-age-hours", "soon"],
        ["--format", "xml"],
        ["--max-age-hours", "nan"],
    ):
        with pytest.raises(SystemExit) as exited:
            devportal("status", "--warehouse", str(warehouse), *argv)
        assert exited.value.code == 2, argv
    for value, said in (("-3", "must be 0 or more"), ("soon", "is not a number")):
        result = devportal(
            "status", "--warehouse", str(warehouse), env={"ALERTS__MAX_AGE_HOURS": value}
        )
        assert result.code == 2
        assert result.err.startswith("devportal: error: configuration [alerts] max_age_hours = ")
        assert said in result.err and "ALERTS__MAX_AGE_HOURS" in result.err
    folder = tmp_path / "a-folder"
    folder.mkdir()
    result = devportal("status", "--warehouse", str(folder))
    assert result.code == 2 and "is a directory" in result.err


def test_a_missing_warehouse_is_no_sync_yet_and_creates_nothing(
    devportal: Cli, tmp_path: Path
) -> None:
    warehouse = tmp_path / "nowhere" / "warehouse.duckdb"
    result = devportal("status", "--warehouse", str(warehouse))
    assert result.code == 1
    assert result.out.startswith("status        no sync: no successful sync yet")
    assert f"{warehouse} (no warehouse file there yet)" in result.out
    assert not (tmp_path / "nowhere").exists()


def test_a_load_set_aside_on_postgres_is_a_failure_and_listed(
    sandbox_factory: Any, postgres: str, tmp_path: Path, devportal: Cli
) -> None:
    """The load fails after the run read everything: PostgreSQL is put back (no row in
    sync_runs), the package is set aside, and `status` says both."""
    from tests.helpers import OnEngine as On

    engine = On("postgres", tmp_path / "pg" / "warehouse.duckdb", postgres)
    sb = sandbox_factory(subscriptions=100, users=20, seed=26)
    assert sync(devportal, engine, sb).code == 0
    engine.execute(
        "ALTER TABLE devportal.sync_runs ADD CONSTRAINT before_the_5th "
        "CHECK (observed_at < '2026-11-05')"
    )
    sb.advance(days=10)
    failed = sync(devportal, engine, sb)
    assert failed.code == 1 and "the warehouse is as it was before the run" in failed.err
    code, said = status(devportal, engine)
    assert (code, said["state"], said["successful_syncs"]) == (1, "failed", 1)
    [aside] = said["set_aside"]
    assert aside["load_id"] in said["last_failure"]["cause"]
    table = devportal("status", *engine.argv(), env=engine.env)
    assert f"1 package(s): {aside['load_id']} (see `devportal packages`)" in table.out


def test_status_shows_what_the_warehouse_and_its_folder_take_on_disk(
    sandbox_factory: Any, devportal: Cli, tmp_path: Path
) -> None:
    """The warehouse's size, dlt's folder beside it and the room free (a writer needs room for
    a copy of the warehouse: issue 35), in the table and in JSON."""
    from tests.helpers import sync_from

    sb = sandbox_factory(subscriptions=120, users=12, seed=35)
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    sync_from(sb, warehouse)
    result = devportal("status", "--warehouse", str(warehouse), "--format", "json")
    disk = json.loads(result.out)["disk"]
    assert disk["warehouse_bytes"] == warehouse.stat().st_size
    folder = warehouse.parent / ".warehouse.dlt"
    on_disk = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert disk["dlt_folder_bytes"] == on_disk > 0
    assert disk["free_bytes"] > 0
    table = devportal("status", "--warehouse", str(warehouse)).out
    [line] = [row for row in table.splitlines() if row.startswith("disk")]
    assert f"warehouse {warehouse.stat().st_size / 10**6:,.1f} MB" in line and " free " in line
