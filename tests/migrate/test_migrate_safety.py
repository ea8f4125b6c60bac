"""`devportal migrate` never half-writes a target: it refuses a target holding data unless
`--replace`, waits for no running sync (it is refused like a second sync), refuses a source an
interrupted sync left mid-load, and a migration killed at any point leaves the target as it was
(the next one then completes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import psycopg2
import pytest

from devportal.warehouse.writer_lock import postgres_lock
from tests.helpers import REPO, run_devportal
from tests.migrate.helpers import Dataset, sync_argv, token_env

# Run as `python -c KILL_AT METHOD NTH ARGV...`: the real CLI (ARGV), killed by SIGKILL from
# inside the migration just before the NTH call of METHOD of `devportal.operations.migrate.sides` (`append`:
# one batch of one table appended to the copy; `commit`: on PostgreSQL the 1st clears what a
# killed migration left, the 2nd commits the copied rows, the 3rd publishes the copy).
KILL_AT = """
import os, signal, sys
from devportal.operations.migrate import sides as ends

method, nth = sys.argv[1], int(sys.argv[2])
calls = []

def wrap(cls):
    real = cls.__dict__[method]
    def wrapped(self, *args, **kwargs):
        calls.append(method)
        if len(calls) == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, *args, **kwargs)
    setattr(cls, method, wrapped)

for cls in (ends.End, ends.PostgresEnd, ends.DuckDbEnd):
    if method in cls.__dict__:
        wrap(cls)

from devportal.cli import main
sys.exit(main(sys.argv[3:]))
"""


def killed_at(method: str, nth: int, *argv: str) -> int:
    """Run the CLI with ARGV, killed before the NTH call of METHOD; its exit status."""
    done = subprocess.run(
        [sys.executable, "-c", KILL_AT, method, str(nth), *argv],
        cwd=REPO,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode


def snapshot(dataset: Dataset) -> dict[str, list[Any]]:
    return {table: dataset.rows(table) for table in dataset.tables()}


@pytest.fixture
def two(sandbox_factory: Any, devportal: Any, postgres: str, tmp_path: Path) -> Any:
    """PostgreSQL holding a sync of its own, and a DuckDB warehouse synced later (what a
    migration replaces it with)."""
    sb = sandbox_factory(subscriptions=150, users=30, seed=232)
    pg_dir = tmp_path / "pg" / "warehouse.duckdb"
    assert devportal(*sync_argv(sb, pg_dir, postgres=True), env=token_env(sb)).code == 0
    sb.advance(days=9)
    duck = tmp_path / "duck" / "warehouse.duckdb"
    assert devportal(*sync_argv(sb, duck), env=token_env(sb)).code == 0
    sb.advance(days=9)
    assert devportal(*sync_argv(sb, duck), env=token_env(sb)).code == 0
    return duck, pg_dir, Dataset(uri=postgres)


def test_a_target_holding_data_is_refused_unless_replace(two: Any, devportal: Any) -> None:
    duck, pg_dir, pg = two
    assert devportal("models", "--destination", "postgres", "--warehouse", str(pg_dir)).code == 0
    before = snapshot(pg)
    argv = ["migrate", "--from-warehouse", str(duck), "--destination", "postgres"]
    refused = devportal(*argv, "--warehouse", str(pg_dir))
    assert refused.code == 1
    assert "already holds data" in refused.err and "--replace" in refused.err
    assert "subscriptions" in refused.err
    assert snapshot(pg) == before
    replaced = devportal(*argv, "--warehouse", str(pg_dir), "--replace")
    assert replaced.code == 0, replaced.err
    assert "replaced what the target held" in replaced.out
    source = Dataset(duck)
    for table in source.tables():
        # dlt's state is re-addressed, its stored schemas carried less the file formats
        if table not in ("_dlt_pipeline_state", "_dlt_version"):
            assert pg.rows(table) == source.rows(table), table
    # the models built on what was replaced are rebuilt on the copy, and their tests pass
    checked = devportal(
        "models", "--destination", "postgres", "--warehouse", str(pg_dir), "--check"
    )
    assert checked.code == 0, checked.err


def test_a_duckdb_target_holding_data_is_refused_unless_replace(
    two: Any, devportal: Any, tmp_path: Path
) -> None:
    other = tmp_path / "other" / "warehouse.duckdb"
    argv = ["migrate", "--from-destination", "postgres", "--warehouse", str(other)]
    assert devportal(*argv).code == 0
    before = snapshot(Dataset(other))
    refused = devportal(*argv)
    assert refused.code == 1 and "already holds data" in refused.err
    assert "--replace" in refused.err
    assert snapshot(Dataset(other)) == before
    assert devportal(*argv, "--replace").code == 0


def test_a_migration_killed_midway_leaves_postgres_as_it_was(two: Any, devportal: Any) -> None:
    duck, pg_dir, pg = two
    before = snapshot(pg)
    argv = ["migrate", "--from-warehouse", str(duck), "--destination", "postgres"]
    argv += ["--warehouse", str(pg_dir), "--replace"]
    # killed while copying the third batch, and killed inside the transaction that publishes
    for method, nth in (("append", 3), ("commit", 3)):
        assert killed_at(method, nth, *argv) == -9, (method, nth)
        assert snapshot(pg) == before, (method, nth)
    # the copy a killed migration left is still there, never under the dataset's name
    assert "devportal_migrating" in {s for (s,) in pg._rows(
        "select schema_name from information_schema.schemata")[1]}  # fmt: skip
    done = devportal(*argv)
    assert done.code == 0, done.err
    source = Dataset(duck)
    for table in source.tables():
        # dlt's state is re-addressed, its stored schemas carried less the file formats
        if table not in ("_dlt_pipeline_state", "_dlt_version"):
            assert pg.rows(table) == source.rows(table), table
    schemas = {s for (s,) in pg._rows("select schema_name from information_schema.schemata")[1]}
    assert "devportal_migrating" not in schemas


def test_a_migration_killed_midway_leaves_the_duckdb_file_as_it_was(
    two: Any, devportal: Any, tmp_path: Path
) -> None:
    duck, _, _ = two
    argv = ["migrate", "--from-destination", "postgres", "--replace", "--warehouse", str(duck)]
    before = snapshot(Dataset(duck))
    assert killed_at("append", 2, *argv) == -9
    assert snapshot(Dataset(duck)) == before
    assert devportal(*argv).code == 0
    assert Dataset(duck).rows("subscriptions") != before["subscriptions"]


def test_a_running_sync_makes_migrate_refuse(two: Any, devportal: Any, tmp_path: Path) -> None:
    duck, _, _ = two
    argv = ["migrate", "--from-warehouse", str(duck), "--destination", "postgres", "--replace"]
    with postgres_lock():  # what a sync writing PostgreSQL holds, from another connection
        busy = devportal(*argv, "--warehouse", str(tmp_path / "elsewhere" / "w.duckdb"))
    assert busy.code == 3
    assert "busy" in busy.err


def test_a_source_an_interrupted_sync_left_mid_load_is_refused(
    sandbox_factory: Any, devportal: Any, postgres: str, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=100, users=20, seed=233)
    duck = tmp_path / "duck" / "warehouse.duckdb"
    assert devportal(*sync_argv(sb, duck), env=token_env(sb)).code == 0
    sb.advance(days=5)
    marker = tmp_path / "killed"
    killed = run_devportal(
        *sync_argv(sb, duck), env=token_env(sb), kill_in=("load", 1, marker), cwd=tmp_path
    )
    assert killed.code == -9 and marker.read_text() == "load"
    argv = ["migrate", "--from-warehouse", str(duck), "--destination", "postgres"]
    refused = devportal(*argv, "--warehouse", str(tmp_path / "pg" / "w.duckdb"))
    assert refused.code == 1 and "interrupted sync" in refused.err
    assert f"devportal sync --warehouse {duck}" in refused.err
    assert Dataset(uri=postgres).tables() == {}

    # PostgreSQL mid-load: the snapshot a sync takes before loading is still there
    pg_dir = tmp_path / "pg" / "warehouse.duckdb"
    assert devportal(*sync_argv(sb, pg_dir, postgres=True), env=token_env(sb)).code == 0
    con = psycopg2.connect(postgres)
    with con, con.cursor() as cursor:
        cursor.execute("create schema devportal_snapshot")
    con.close()
    out = tmp_path / "out" / "warehouse.duckdb"
    refused = devportal("migrate", "--from-destination", "postgres", "--warehouse", str(out))
    assert refused.code == 1 and "devportal_snapshot" in refused.err
    assert not out.exists()


def test_usage_errors(devportal: Any, tmp_path: Path) -> None:
    wh = str(tmp_path / "w.duckdb")
    same = devportal("migrate", "--from-warehouse", wh, "--warehouse", wh)
    assert same.code == 2 and "same warehouse" in same.err
    both = devportal("migrate", "--from-destination", "postgres", "--destination", "postgres")
    assert both.code == 2 and "same PostgreSQL database" in both.err
    other = devportal("migrate", "--from-warehouse", wh, "--destination", "bigquery")
    assert other.code == 2 and "between DuckDB and PostgreSQL" in other.err


def test_a_value_the_target_refuses_stops_the_migration_in_one_line(
    two: Any, devportal: Any, tmp_path: Path
) -> None:
    duck, _, pg = two
    # PostgreSQL text cannot hold U+0000; a DuckDB file written by another program may
    con = duckdb.connect(str(duck))
    con.execute(
        "update devportal.user_settings set twitch_name = 'a' || chr(0) || 'b' "
        "where user_id = (select min(user_id) from devportal.user_settings)"
    )
    con.close()
    before = snapshot(pg)
    argv = ["migrate", "--from-warehouse", str(duck), "--destination", "postgres", "--replace"]
    failed = devportal(*argv, "--warehouse", str(tmp_path / "pg" / "w.duckdb"))
    assert failed.code == 1
    assert failed.err.startswith("devportal: error: cannot copy table user_settings")
    assert "the target is as it was" in failed.err and len(failed.err.splitlines()) == 1
    assert snapshot(pg) == before
    schemas = {s for (s,) in pg._rows("select schema_name from information_schema.schemata")[1]}
    assert "devportal_migrating" not in schemas
