"""`devportal sync --destination postgres`: the same tables, SCD2 history, checks and
all-or-nothing load as DuckDB, on a real PostgreSQL server (tests/postgres.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from devportal.base.errors import DevportalError
from devportal.load.sync import sync
from devportal.warehouse.engines import connect
from devportal.warehouse.target import Target
from tests.helpers import HISTORY, query, sync_from

TABLES = ("subscriptions", "user_settings", "user_setting_values", "user_accounts", "sync_runs")


def on_postgres(sql: str) -> list[tuple[Any, ...]]:
    with connect(Target.of("unused.duckdb", "postgres")) as engine:
        return engine.execute(sql)


def both(sb: Any, duck: Path, pg_dir: Path, **options: Any) -> None:
    for warehouse, destination in ((duck, None), (pg_dir / "pg.duckdb", "postgres")):
        sync_from(sb, warehouse, destination=destination, **options)


def test_postgres_holds_the_same_history_as_duckdb(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=1500, users=200, seed=81, test_share=0.1)
    duck = tmp_path / "duck" / "warehouse.duckdb"
    both(sb, duck, tmp_path, include_test=True)
    changes = sb.advance(days=20)
    assert changes["canceled"] > 0 and changes["new"] > 0
    both(sb, duck, tmp_path)
    sb.world.remove_subscription(sb.truth()[3]["id"])
    both(sb, duck, tmp_path)
    pg_history = on_postgres(HISTORY)
    assert pg_history == query(duck, HISTORY)
    assert len(pg_history) > len(sb.truth(is_test=False)) + len(sb.truth(is_test=True))
    for table in TABLES[1:4]:
        count = f"SELECT count(*) FROM devportal.{table}"
        assert on_postgres(count) == query(duck, count), table
    values = (
        "SELECT user_id, key, value, value_type FROM devportal.user_setting_values ORDER BY 1, 2"
    )
    assert on_postgres(values) == query(duck, values)
    runs = "SELECT mode, rows_read::text, clock_source FROM devportal.sync_runs ORDER BY started_at"
    assert [r[0] for r in on_postgres(runs)] == ["sweep"] * 3


def dump() -> dict[str, list[tuple[Any, ...]]]:
    with connect(Target.of("unused.duckdb", "postgres")) as engine:
        tables = engine.relations("devportal")
        assert {*TABLES, "_dlt_loads", "_dlt_pipeline_state"} <= set(tables)
        return {
            table: sorted(map(repr, engine.execute(f"SELECT * FROM devportal.{table}")))
            for table in tables
        }


def test_a_load_that_fails_on_postgres_leaves_every_table_as_before(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=300, users=60, seed=83)
    warehouse = Target.of(tmp_path / "pg.duckdb", "postgres")
    args = {"base_url": sb.base_url, "access_token": sb.token}
    sync(warehouse, **args)
    # the database's owner adds a constraint the next run's rows break: that table's load fails,
    # after (or while) the other tables of the same run load
    on_postgres_commit(
        "ALTER TABLE devportal.sync_runs ADD CONSTRAINT before_the_5th "
        "CHECK (observed_at < '2026-11-05')"
    )
    sb.advance(days=10)
    before = dump()
    with pytest.raises(DevportalError, match="the warehouse is as it was before the run"):
        sync(warehouse, **args)
    assert dump() == before
    assert on_postgres(
        "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'devportal_snapshot'"
    ) == [(0,)]
    on_postgres_commit("ALTER TABLE devportal.sync_runs DROP CONSTRAINT before_the_5th")
    result = sync(warehouse, **args)
    assert result.new_versions > 0
    current = on_postgres(
        "SELECT id, status FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL ORDER BY id"
    )
    assert current == sorted((r["id"], r["status"]) for r in sb.truth())


def on_postgres_commit(sql: str) -> None:
    with connect(Target.of("unused.duckdb", "postgres")) as engine, engine.transaction():
        engine.execute(sql)


def loaded_formats(warehouse: Path, destination: str | None = None) -> dict[str, set[str]]:
    """Table -> the file formats of the last run's completed load jobs (e.g. `parquet`,
    `jsonl`), from dlt's trace of it (the job files themselves are pruned once loaded)."""
    import dlt

    from devportal.warehouse import pipelines_dir

    found: dict[str, set[str]] = {}
    name = Target.of(warehouse, destination).pipeline_name
    pipeline = dlt.attach(name, pipelines_dir=str(pipelines_dir(warehouse)))
    trace = pipeline.last_trace
    assert trace is not None and trace.last_load_info is not None
    for package in trace.last_load_info.load_packages:
        for job in package.jobs["completed_jobs"]:
            info = job.job_file_info
            if info.file_format != "sql":  # merge statements
                found.setdefault(info.table_name, set()).add(info.file_format)
    return found


def test_each_engine_loads_in_its_fast_formats(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    """DuckDB: Arrow as parquet, dicts as jsonl (its `insert_values` default costs several
    times the memory); PostgreSQL: Arrow as csv (COPY), dicts as `insert_values` (COPY reads ''
    as NULL). A regression here is a 7x slower sync that no result shows."""
    sb = sandbox_factory(subscriptions=300, users=40, seed=84)
    duck = tmp_path / "duck" / "warehouse.duckdb"
    both(sb, duck, tmp_path)
    data = ("subscriptions", "user_settings", "user_setting_values", "user_accounts", "sync_runs")
    on_duckdb = loaded_formats(duck)
    assert on_duckdb["subscriptions"] == {"parquet"}
    assert all(on_duckdb[t] == {"jsonl"} for t in data[1:]), on_duckdb
    on_pg = loaded_formats(tmp_path / "pg.duckdb", "postgres")
    assert on_pg["subscriptions"] == {"csv"}
    assert all(on_pg[t] == {"insert_values"} for t in data[1:]), on_pg


def test_duckdb_and_postgres_synced_from_one_folder_keep_their_own_window_cursor(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    """The README shows `sync` and `sync --destination postgres` with the same --warehouse:
    each destination's window starts from its own last run, not the other's."""
    sb = sandbox_factory(subscriptions=300, users=40, seed=85)
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    args = {"base_url": sb.base_url, "access_token": sb.token}
    sync(Target.of(warehouse, "postgres"), **args)
    postgres_observed_at = sb.now
    sync(warehouse, **args)
    sb.advance(days=5)
    sync(warehouse, window=True, **args)  # DuckDB's cursor moves to day 5
    sb.advance(hours=1)
    sync(Target.of(warehouse, "postgres"), window=True, **args)
    starts = on_postgres("SELECT window_start FROM devportal.sync_runs WHERE mode = 'window'")
    assert starts == [(postgres_observed_at - timedelta(hours=48),)]
    current = on_postgres(
        "SELECT id, status FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL ORDER BY id"
    )
    assert len(current) == len({r[0] for r in current})


def test_empty_strings_and_nulls_stay_apart_on_both_engines(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=50, users=10, seed=86)
    user = sb.truth_users()[0]["user"]["service"]["id"]
    sb.world.set_settings(user, {"nickname": "", "motto": None, "color": "teal"})
    duck = tmp_path / "duck" / "warehouse.duckdb"
    both(sb, duck, tmp_path)
    sql = (
        "SELECT key, value, value_type FROM devportal.user_setting_values "
        f"WHERE user_id = {user} ORDER BY key"
    )
    expected = [("/color", "teal", "string"), ("/motto", None, "null"), ("/nickname", "", "string")]
    assert query(duck, sql) == expected
    assert on_postgres(sql) == expected
