"""The models on PostgreSQL: one world synced into the DuckDB warehouse and into PostgreSQL
builds every model with identical rows on both engines and passes --check on both; and the
runner's rules (skips, optional stand-ins, one transaction, failures that name themselves) hold
on PostgreSQL as on DuckDB (test_runner.py).

The PostgreSQL server is the throwaway cluster of tests/postgres.py, a fresh database per test.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devportal import engines, models
from devportal.cli import main, options
from devportal.errors import DevportalError
from devportal.manifest.resource import load_manifest
from devportal.sync import sync
from tests.models.conftest import MANIFEST_FIXTURE
from tests.models.test_runner import write_models

# what differs between two loads of the same data: run and load ids, the machine's clock when a
# run started or a manifest was recorded, the manifest's path
VOLATILE = {"run_id", "last_run_id", "load_id", "started_at", "loaded_at", "manifest_path"}


def normalised(value: Any) -> Any:
    """One form per value whatever the driver: numbers as floats (PostgreSQL's sums and
    divisions are numeric), timestamps naive."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float | Decimal):
        return round(float(value), 9)
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    return value


def model_rows(warehouse: Path, destination: str | None) -> dict[str, Any]:
    """Every analytics table: its column names and its rows (volatile columns left out), sorted."""
    found = {}
    with engines.connect(warehouse, destination, read_only=True) as engine:
        for table in sorted(engine.relations("analytics")):
            names, rows = engine.columns(f"select * from {engine.qualify('analytics', table)}")
            kept = [i for i, name in enumerate(names) if name not in VOLATILE]
            values = [tuple(normalised(row[i]) for i in kept) for row in rows]
            found[table] = ([names[i] for i in kept], sorted(values, key=repr))
    return found


def sync_both(sb: Any, duck: Path, pg: Path, **kwargs: Any) -> Any:
    """Sync the sandbox as it is now into DuckDB and into PostgreSQL; the PostgreSQL result."""
    common = {"base_url": sb.base_url, "access_token": sb.token, **kwargs}
    sync(duck, **{"build_models": False, **common})
    return sync(pg, destination="postgres", **{"build_models": False, **common})


def test_a_synced_world_builds_identical_models_on_both_engines(
    sandbox_factory: Any, postgres: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sb = sandbox_factory(subscriptions=2000, users=200, seed=29, test_share=0.05)
    duck = tmp_path / "duck" / "warehouse.duckdb"
    pg = tmp_path / "pg" / "warehouse.duckdb"  # dlt's folder and the lock for PostgreSQL
    sync_both(sb, duck, pg, include_test=True)  # test rows too: the models stay live-only
    sb.advance(days=20)
    sync_both(sb, duck, pg)
    for warehouse, destination in ((duck, None), (pg, "postgres")):
        load_manifest(MANIFEST_FIXTURE, warehouse, destination)
    sb.advance(days=25)
    result = sync_both(sb, duck, pg, build_models=True)  # the sync's own call into the models

    summary = result.extra["models"]
    assert summary["destination"] == "postgres" and summary["skipped"] == {}
    assert len(summary["built"]) == 26
    for warehouse, destination in ((duck, None), (pg, "postgres")):
        checked = models.build(warehouse, check=True, destination=destination)
        assert checked["built"] == summary["built"] and checked["tests"] > 90

    duck_rows, pg_rows = model_rows(duck, None), model_rows(pg, "postgres")
    # the models, and the seed the runner writes from settings (analytics.status_map)
    assert sorted(pg_rows) == sorted(duck_rows) == sorted(summary["built"] + summary["seeds"])
    for table, (names, rows) in duck_rows.items():
        assert pg_rows[table][0] == names, table
        assert pg_rows[table][1] == rows, table
    assert len(duck_rows["subscriptions_current"][1]) > 2000
    assert len(duck_rows["subscription_events"][1]) > len(duck_rows["subscriptions_current"][1])

    # the CLI builds there too, and says where
    assert main(["models", "--destination", "postgres", "--warehouse", str(pg), "--check"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("models ok: 26 built on postgres in ") and "data tests passed" in out


def test_the_runner_on_postgres_skips_stands_in_and_rolls_back(
    tmp_path: Path, postgres: str
) -> None:
    sql_dir = write_models(
        tmp_path,
        {
            "marts/a_totals.sql": "-- a_totals: one row\nselect sum(n) as n from analytics.z_base",
            "marts/b_needs_missing.sql": "-- b: x\nselect * from analytics.c_missing_raw",
            "marts/c_missing_raw.sql": "-- c: x\nselect * from devportal.never_loaded",
            "staging/z_base.sql": (
                "-- z_base: one row per raw row\n"
                "-- @optional devportal.extra(k bigint, label varchar, seen timestamp)\n"
                "select raw.n, extra.label, extra.seen\n"
                "from devportal.numbers as raw\n"
                "left join devportal.extra on extra.k = raw.n"
            ),
        },
    )
    warehouse = tmp_path / "wh" / "unused.duckdb"
    with engines.connect(warehouse, "postgres") as engine, engine.transaction():
        engine.execute("create schema devportal")
        engine.execute("create table devportal.numbers as select * from (values (1), (2)) t(n)")

    def rows(sql: str) -> list[tuple[Any, ...]]:
        with engines.connect(warehouse, "postgres") as engine:
            return engine.execute(sql)

    summary = models.build(warehouse, sql_dir=sql_dir, destination="postgres")
    assert summary["built"] == ["z_base", "a_totals"]
    assert summary["skipped"] == {
        "c_missing_raw": "needs devportal.never_loaded, which nothing has been loaded into yet",
        "b_needs_missing": "needs analytics.c_missing_raw, which was skipped",
    }
    assert rows("select n, label, seen from analytics.z_base order by n") == [
        (1, None, None),
        (2, None, None),
    ]
    # the optional table, once loaded, is read for real
    with engines.connect(warehouse, "postgres") as engine, engine.transaction():
        engine.execute("create table devportal.extra (k bigint, label text, seen timestamp)")
        engine.execute("insert into devportal.extra values (2, 'two', '2026-01-02 03:04:05')")
    models.build(warehouse, sql_dir=sql_dir, destination="postgres")
    assert rows("select label, seen from analytics.z_base where n = 2") == [
        ("two", dt.datetime(2026, 1, 2, 3, 4, 5))
    ]

    # a failing model names itself; the whole build rolls back (DDL is transactional there)
    (sql_dir / "staging" / "z_base.sql").write_text("-- z_base: one row\nselect 10 as n")
    (sql_dir / "marts" / "zz_broken.sql").write_text("-- broken: x\nselect no_such_column")
    with pytest.raises(DevportalError, match=r"model analytics\.zz_broken \(sql/marts/zz_broken"):
        models.build(warehouse, sql_dir=sql_dir, destination="postgres")
    assert rows("select sum(n) from analytics.z_base") == [(3,)]
    assert rows("select n from analytics.a_totals") == [(3,)]


def test_failing_data_tests_are_each_named_on_postgres(tmp_path: Path, postgres: str) -> None:
    sql_dir = write_models(
        tmp_path,
        {
            "marts/m.sql": (
                "-- m: one row per k\n"
                "-- @test unique(k)\n"
                "-- @test not_null(k, status)\n"
                "-- @test accepted_values(status: active, canceled)\n"
                "select * from (values (1, 'active'), (1, 'paused'), (2, null)) t(k, status)"
            )
        },
    )
    with pytest.raises(DevportalError) as caught:
        models.build(
            tmp_path / "unused.duckdb", sql_dir=sql_dir, check=True, destination="postgres"
        )
    text = str(caught.value)
    assert text.startswith("3 of 4 data tests failed: ")
    assert "unique(analytics.m: k): 1 failing row(s), e.g. (1, 2)" in text
    assert "not_null(analytics.m.status): 1 failing row(s)" in text
    assert "accepted_values(analytics.m.status: active, canceled): 1 failing row(s)" in text


def test_after_a_load_the_models_follow_the_destination(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warehouse = tmp_path / "never.duckdb"
    # a destination the models do not run on: nothing is built, nothing is asked of it
    assert models.build_after_load(warehouse, "bigquery") is None
    assert models.build_after_load(warehouse, object()) is None  # a dlt destination object
    options.build_models(str(warehouse), "bigquery")
    assert capsys.readouterr().out == (
        "models: skipped (they are built on DuckDB and PostgreSQL, not on bigquery; "
        "query the raw tables in the dataset devportal there)\n"
    )
    with pytest.raises(DevportalError, match="run on duckdb and postgres, not snowflake"):
        models.build(warehouse, destination="snowflake")
    assert not warehouse.exists()
