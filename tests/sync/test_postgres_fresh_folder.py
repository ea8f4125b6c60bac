"""A CI runner syncing PostgreSQL from a fresh working folder every run
(examples/ci/devportal-sync.yml): nothing of dlt's folder beside `--warehouse` survives between
runs, so its local state and schemas are empty each time. The history must come out exactly as
from one folder kept between the runs: the same subscription versions, validity and closes, no
duplicate current rows, the window run reading the same window (its cursor is in the
database), the same run records and models.

Each run is `devportal sync` as its own program (as on a runner: a new process, a new folder),
against the sandbox at advancing simulated clocks, into two databases of one cluster: one synced
from one folder kept throughout, one from a brand-new empty folder each run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from devportal.warehouse.engines import connect
from devportal.warehouse.target import Target
from tests.helpers import HISTORY, TWO_CURRENT, run_devportal

# what a run records, without what differs between two runs of the same sync (ids, this
# machine's clock, request counts and timings)
RUNS = (
    "SELECT mode, requested_mode, include_test, resources, observed_at, window_start, "
    "window_end, rows_read::text, sweeps::text, data_quality_problems, clock_source, "
    "fields::text, statuses::text, schema_changes::text "
    "FROM devportal.sync_runs ORDER BY observed_at"
)
MODELS = (
    "SELECT id, status, expires_at, first_seen_at, canceled_at, is_usable, is_removed, "
    "removed_at, version_count FROM analytics.subscriptions_current ORDER BY id, is_test",
    "SELECT month, churned, cancellations, new, subscribers_at_start FROM analytics.monthly_churn "
    "ORDER BY month",
    "SELECT as_of, first_sync_at, successful_syncs, has_verified_sweep, last_verified_sweep_at, "
    "window_syncs_since_verified_sweep FROM analytics.as_of",
)

SCHEMAS = "SELECT schema_name, schema FROM devportal._dlt_version ORDER BY inserted_at"
STATES = "SELECT pipeline_name, version_hash FROM devportal._dlt_pipeline_state ORDER BY created_at"


@contextmanager
def _database(uri: str) -> Iterator[Any]:
    """A connection to the database URI, devportal's own."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DESTINATION__POSTGRES__CREDENTIALS", uri)
        with connect(Target.of("unused.duckdb", "postgres"), read_only=True) as engine:
            yield engine


def _schema(row: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    """A stored dlt schema without what only says how this folder's dlt got there: its version
    numbers and hashes, and per table whether this folder's normalizer has seen rows (with the
    row-key columns it adds then): a table a run loaded nothing into (settings that did not
    change) gets them only in a folder that once saw its rows; the destination's table has them
    either way."""
    schema = json.loads(row[1]) if isinstance(row[1], str) else dict(row[1])
    for key in ("version", "version_hash", "previous_hashes", "imported_version_hash"):
        schema.pop(key, None)
    for table in schema.get("tables", {}).values():
        table.pop("x-normalizer", None)
        for column in ("_dlt_id", "_dlt_load_id"):
            table.get("columns", {}).pop(column, None)
    return row[0], schema


def rows(uri: str, sql: str) -> list[tuple[Any, ...]]:
    with _database(uri) as engine:
        return [tuple(row) for row in engine.execute(sql)]


def sync_cli(sb: Any, uri: str, warehouse: Path, *options: str) -> str:
    """`devportal sync --destination postgres` as its own program; its output."""
    done = run_devportal(
        "sync", "--base-url", sb.base_url, "--warehouse", str(warehouse),
        "--destination", "postgres", *options,
        env={
            "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token,
            "DESTINATION__POSTGRES__CREDENTIALS": uri,
        },
        timeout=300,
    )  # fmt: skip
    assert done.code == 0, (done.out, done.err)
    return done.out + done.err


def test_fresh_folders_write_the_history_one_kept_folder_writes(
    sandbox_factory: Any, postgres_cluster: Any, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=400, users=80, seed=61)
    kept_db, fresh_db = (postgres_cluster.create_database() for _ in range(2))
    kept, fresh = postgres_cluster.uri(kept_db), postgres_cluster.uri(fresh_db)
    kept_folder = tmp_path / "kept" / "warehouse.duckdb"

    def both(run: int, *options: str) -> None:
        sync_cli(sb, kept, kept_folder, *options)
        folder = tmp_path / f"runner-{run}"  # a new, empty folder: nothing of the runs before
        assert not folder.exists()
        sync_cli(sb, fresh, folder / "warehouse.duckdb", *options)

    try:
        both(1)  # 2026-11-01: the first sweep
        changes = sb.advance(days=9)  # 11-10: cancellations, renewals, new subscriptions
        assert changes["canceled"] and changes["new"] and changes["renewed"]
        both(2, "--window")  # a window from the last run's clock, less the look-back
        removed = sb.truth()[5]["id"]
        sb.world.remove_subscription(removed)
        sb.advance(days=12)  # 11-22
        both(3)  # a sweep: closes the removed subscription

        history = rows(fresh, HISTORY)
        assert history == rows(kept, HISTORY)
        assert len(history) > len(sb.truth(is_test=False))  # versions, not one row per id
        assert rows(fresh, TWO_CURRENT) == []
        runs = rows(fresh, RUNS)
        assert runs == rows(kept, RUNS)
        # the removed subscription is closed at the third run's clock: no current version left
        versions = [r for r in history if r[0] == removed]
        assert versions and all(r[6] is not None for r in versions)
        assert versions[-1][6].replace(tzinfo=None) == runs[2][4]  # dlt's column is UTC
        assert [(r[0], r[1]) for r in runs] == [
            ("sweep", "sweep"),
            ("window", "window"),
            ("sweep", "sweep"),
        ]
        # the window run started from the first run's clock (the cursor), not from nothing
        assert runs[1][5] is not None and runs[1][5] < runs[0][4] <= runs[1][6]
        for sql in MODELS:
            assert rows(fresh, sql) == rows(kept, sql), sql
        # dlt's bookkeeping in the database, which a fresh folder's dlt starts from nothing
        # each run: the same states, run by run (content hashes), and the same stored schema,
        # the newest only (older versions are pruned), SCD2 hints and all
        assert rows(fresh, STATES) == rows(kept, STATES)
        assert len(rows(fresh, STATES)) == 3
        assert [_schema(r) for r in rows(fresh, SCHEMAS)] == [
            _schema(r) for r in rows(kept, SCHEMAS)
        ]
        assert len(rows(fresh, SCHEMAS)) == 1
        assert rows(fresh, "SELECT count(*) FROM devportal._dlt_loads WHERE status = 0") == [(3,)]
    finally:
        for name in (kept_db, fresh_db):
            postgres_cluster.drop_database(name)
