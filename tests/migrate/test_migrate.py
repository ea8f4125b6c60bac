"""`devportal migrate`: a DuckDB warehouse with history moves to PostgreSQL and back, and the
next sync on either continues the history exactly as a DuckDB warehouse that stayed put.

The story: a sandbox (simulated clock) is synced into a DuckDB warehouse three times over a
month, so the history holds closed versions, a data-quality problem, extra fields (a JSON one
among them) and the demo app's manifest. That warehouse (`kept`) goes on syncing after the
migration; the copies must hold what it holds, sync for sync."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.migrate.helpers import (
    LOAD_COLUMNS,
    Dataset,
    history_problems,
    sync_argv,
    token_env,
)

# what a sync records about itself that differs between two runs at the same moment: its id
# and load, its machine's clock and timings, its request statistics
RUN_FACTS = "select mode, observed_at, window_start, window_end from devportal.sync_runs"
STATE_COLUMNS = ("pipeline_name", "state", "version_hash")
# a stored schema is carried less the source's choice of file formats (a new version and hash)
VERSION_COLUMNS = ("version", "version_hash", "schema")


def make_history(sb: Any, devportal: Any, kept: Path) -> None:
    env = token_env(sb)
    assert devportal(*sync_argv(sb, kept), env=env).code == 0
    sb.advance(days=13)
    ids = [row["id"] for row in sb.truth()]
    sb.world.set_raw(ids[0], expires_at="0000-00-00 00:00:00")  # a data-quality problem
    # extra fields: an object (flattened to columns), a list (one JSON column), an empty text
    sb.world.set_raw(ids[1], tier={"name": "gold", "seats": 3}, tags=["a", {"b": 1.5}], note="")
    sb.world.set_raw(ids[2], price=4.99, note="late")
    assert devportal(*sync_argv(sb, kept), env=env).code == 0
    sb.advance(days=13)
    sb.world.remove_subscription(ids[3])
    assert devportal(*sync_argv(sb, kept), env=env).code == 0


def assert_copied(source: Dataset, copy: Dataset, pipelines: tuple[str, str]) -> None:
    """Every table of SOURCE is in COPY with the same columns and rows (dlt's state rows
    re-addressed from one pipeline to the other, their state otherwise the same)."""
    tables = source.tables()
    assert set(copy.tables()) == set(tables)
    for table in tables:
        assert copy.columns(table) == source.columns(table), table
        without = {"_dlt_pipeline_state": STATE_COLUMNS, "_dlt_version": VERSION_COLUMNS}
        left_out = without.get(table, ())
        assert copy.rows(table, left_out) == source.rows(table, left_out), table
    assert _schemas(copy) == _schemas(source)
    moved = [{**s, "pipeline_name": pipelines[1]} for s in source.states()]
    assert [_state(s) for s in copy.states()] == [_state(s) for s in moved]
    assert {s["pipeline_name"] for s in copy.states()} == {pipelines[1]}


def _schemas(dataset: Dataset) -> list[dict[str, Any]]:
    """The stored schemas of DATASET without their versions and tables' file formats (migrate
    leaves a format to the target's syncs; dlt's own `preferred` stays)."""
    _, rows = dataset._rows('select "schema" from devportal._dlt_version')
    found = []
    for (text,) in rows:
        stored = json.loads(text)
        for key in ("version", "version_hash", "previous_hashes"):
            stored.pop(key, None)
        for table in stored["tables"].values():
            if table.get("file_format") != "preferred":
                table.pop("file_format", None)
        found.append(stored)
    return sorted(found, key=lambda s: json.dumps(s, sort_keys=True))


def _state(state: dict[str, Any]) -> dict[str, Any]:
    ignored = ("destination_type", "destination_name", "_version_hash")
    return {k: v for k, v in state.items() if k not in ignored}


def assert_same_history(kept: Dataset, other: Dataset) -> None:
    """OTHER holds what KEPT holds after the same syncs: every subscription version with its
    validity and row hash, the per-user tables, the runs."""
    assert history_problems(other) == []
    assert other.rows("subscriptions", LOAD_COLUMNS) == kept.rows("subscriptions", LOAD_COLUMNS)
    for table in ("user_settings", "user_setting_values", "user_accounts", "app_manifests"):
        # a manifest's `loaded_at` is the recording machine's clock, not the API's
        without = (*LOAD_COLUMNS, "loaded_at")
        assert other.rows(table, without) == kept.rows(table, without), table
    assert sorted(other._rows(RUN_FACTS)[1]) == sorted(kept._rows(RUN_FACTS)[1])
    assert other.count("sync_runs") == kept.count("sync_runs")


def test_the_next_sync_continues_the_history_on_postgres_and_back(
    sandbox_factory: Any, postgres: str, devportal: Any, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=400, users=60, seed=231, test_share=0.1)
    kept = tmp_path / "kept" / "warehouse.duckdb"
    make_history(sb, devportal, kept)
    source = Dataset(kept)
    closed = source._rows(
        "select count(*) from devportal.subscriptions where _dlt_valid_to is not null"
    )[1][0][0]
    assert closed > 0 and source.count("data_quality") > 0
    assert "tags" in source.tables()["subscriptions"]  # the JSON extra field

    # --warehouse with --destination postgres: where dlt's folder and the lock go, as for sync
    pg_dir = tmp_path / "pg" / "warehouse.duckdb"
    moved = devportal(
        "migrate", "--from-warehouse", str(kept), "--destination", "postgres",
        "--warehouse", str(pg_dir),
    )  # fmt: skip
    assert moved.code == 0, moved.err
    pg = Dataset(uri=postgres)
    assert_copied(source, pg, ("devportal", "devportal_postgres"))
    lines = moved.out.splitlines()
    for table in source.tables():
        count = f"{source.count(table):,}"
        assert any(
            line.split()[:3] == [table, count, count] and "same on both" in line for line in lines
        ), (table, moved.out)
    assert "migrate ok" in moved.out
    checked = devportal(
        "models", "--destination", "postgres", "--warehouse", str(pg_dir), "--check"
    )
    assert checked.code == 0, checked.err

    # the next step of the world, synced into the warehouse that stayed and into PostgreSQL
    changes = sb.advance(days=10)
    assert changes["canceled"] or changes["new"]
    env = token_env(sb)
    # the file the warehouse left is marked moved: a sync into it is refused in one line that
    # names the mark; deleting the mark takes the file up again (here: a copy kept on purpose)
    refused = devportal(*sync_argv(sb, kept), env=env)
    assert refused.code == 2 and "was moved to PostgreSQL" in refused.err, refused.err
    mark = Path(refused.err.rsplit("delete ", 1)[1].split(")")[0])
    mark.unlink()
    assert devportal(*sync_argv(sb, kept), env=env).code == 0
    synced = devportal(*sync_argv(sb, pg_dir, postgres=True), env=env)
    assert synced.code == 0, synced.err
    assert_same_history(source, pg)

    # and back to a new DuckDB file, which goes on as well
    back = tmp_path / "back" / "warehouse.duckdb"
    returned = devportal("migrate", "--from-destination", "postgres", "--warehouse", str(back))
    assert returned.code == 0, returned.err
    again = Dataset(back)
    assert_copied(pg, again, ("devportal_postgres", "devportal"))
    assert devportal("models", "--warehouse", str(back), "--check").code == 0
    sb.advance(days=10)
    sb.world.remove_subscription(sb.truth()[5]["id"])
    assert devportal(*sync_argv(sb, kept), env=env).code == 0
    assert devportal(*sync_argv(sb, back), env=env).code == 0
    assert_same_history(source, again)

    # the access token is in no table, no state and no file of dlt's folders
    token = sb.token
    assert token not in pg.texts() and token not in again.texts()
    assert token not in repr(pg.states()) + repr(again.states())
    for folder in (pg_dir.parent, back.parent):
        for path in folder.rglob("*"):
            if path.is_file() and not path.name.endswith(".duckdb"):
                assert token.encode() not in path.read_bytes(), path
