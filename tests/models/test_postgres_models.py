"""The models on PostgreSQL: one world synced into the DuckDB warehouse and into PostgreSQL
builds every model with identical rows on both engines and passes --check on both. (The
runner's rules on both engines: test_runner.py, through the `engine` fixture.)

The PostgreSQL server is the throwaway cluster of tests/postgres.py, a fresh database per test.
"""

from __future__ import annotations

import argparse
import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devportal import models
from devportal.base.errors import DevportalError
from devportal.cli import main, options
from devportal.load.sync import sync
from devportal.manifest.resource import load_manifest
from devportal.models.project import load_models
from devportal.warehouse import engines
from devportal.warehouse.target import Target
from tests.models.conftest import MANIFEST_FIXTURE

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
    with engines.connect(Target.of(warehouse, destination), read_only=True) as engine:
        for table in sorted(engine.relations("analytics")):
            names, rows = engine.columns(f"select * from {engine.qualify('analytics', table)}")
            kept = [i for i, name in enumerate(names) if name not in VOLATILE]
            values = [tuple(normalised(row[i]) for i in kept) for row in rows]
            found[table] = ([names[i] for i in kept], sorted(values, key=repr))
    return found


def sync_both(sb: Any, duck: Path, pg: Path, build_models: bool = False, **kwargs: Any) -> Any:
    """Sync the sandbox as it is now into DuckDB and into PostgreSQL (then build the models
    of both, as `devportal sync` does, when BUILD_MODELS); the PostgreSQL result."""
    common = {"base_url": sb.base_url, "access_token": sb.token, **kwargs}
    result = None
    for target in (Target.of(duck), Target.of(pg, "postgres")):
        result = sync(target, **common)
        if build_models:
            result.extra["models"] = models.build_after_load(target)
    return result


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
        load_manifest(MANIFEST_FIXTURE, Target.of(warehouse, destination))
    sb.advance(days=25)
    result = sync_both(sb, duck, pg, build_models=True)  # the models' build after a sync

    summary = result.extra["models"]
    assert summary["destination"] == "postgres" and summary["skipped"] == {}
    assert len(summary["built"]) == len(load_models())  # every model of sql/
    for warehouse, destination in ((duck, None), (pg, "postgres")):
        checked = models.build(Target.of(warehouse, destination), check=True)
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
    built = f"models ok: {len(load_models())} built on postgres in "
    assert out.startswith(built) and "data tests passed" in out


def test_after_a_load_the_models_follow_the_destination(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warehouse = tmp_path / "never.duckdb"
    # a destination the models do not run on: nothing is built, nothing is asked of it
    assert models.build_after_load(Target.of(warehouse, "bigquery")) is None
    # a dlt destination object
    assert models.build_after_load(Target.of(warehouse, object())) is None
    options.build_models(argparse.Namespace(), Target.of(warehouse, "bigquery"), after_sync=False)
    assert capsys.readouterr().out == (
        "models: skipped (they are built on DuckDB and PostgreSQL, not on bigquery; "
        "query the raw tables in the dataset devportal there)\n"
    )
    with pytest.raises(DevportalError, match="run on duckdb and postgres, not snowflake"):
        models.build(Target.of(warehouse, "snowflake"))
    assert not warehouse.exists()
