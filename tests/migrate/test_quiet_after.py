"""After `devportal migrate`, a sync on the new home is as quiet as one on a warehouse devportal
filled there from the start: stderr empty (issue 35). The migrated stored schema carried the
source's per-destination choices (`file_format` table hints: jsonl on DuckDB), which dlt warned
of on every PostgreSQL sync; migrate leaves them out, and a sync heals a database migrated
before that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import CREDENTIALS, run_devportal
from tests.migrate.helpers import Dataset, sync_argv, token_env


def _hints(dataset: Dataset) -> dict[str, str]:
    """Each table's `file_format` hint in the newest stored schema of DATASET."""
    import json

    _, rows = dataset._rows(
        'select "schema" from devportal._dlt_version order by inserted_at desc limit 1'
    )
    tables = json.loads(rows[0][0])["tables"]
    found = {name: t["file_format"] for name, t in tables.items() if "file_format" in t}
    return {name: hint for name, hint in found.items() if hint != "preferred"}  # dlt's own


def test_a_sync_after_migrating_to_postgres_and_back_says_nothing(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=120, users=30, seed=35, test_share=0.1)
    env: dict[str, str | None] = {**token_env(sb), CREDENTIALS: postgres}
    kept = tmp_path / "kept" / "warehouse.duckdb"
    first = run_devportal(*sync_argv(sb, kept), "--quiet", env=env)
    assert first.code == 0 and first.err == "", first.err
    assert _hints(Dataset(kept))  # DuckDB's own choice: rows as jsonl

    pg_dir = tmp_path / "pg" / "warehouse.duckdb"
    moved = run_devportal(
        "migrate", "--from-warehouse", str(kept), "--destination", "postgres",
        "--warehouse", str(pg_dir), "--no-models", "--quiet", env=env,
    )  # fmt: skip
    assert moved.code == 0, moved.err
    assert _hints(Dataset(uri=postgres)) == {}  # none of DuckDB's choices carried over

    sb.advance(days=3)
    synced = run_devportal(*sync_argv(sb, pg_dir, postgres=True), "--quiet", env=env)
    assert synced.code == 0, synced.err
    assert synced.err == ""

    back = tmp_path / "back" / "warehouse.duckdb"
    returned = run_devportal(
        "migrate", "--from-destination", "postgres", "--warehouse", str(back),
        "--no-models", "--quiet", env=env,
    )  # fmt: skip
    assert returned.code == 0, returned.err
    sb.advance(days=3)
    again = run_devportal(*sync_argv(sb, back), "--quiet", env=env)
    assert again.code == 0 and again.err == "", again.err


# `devportal migrate` as it was before it left the file formats out
OLD_MIGRATE = """
import sys
import devportal.operations.migrate.bookkeeping as bookkeeping
bookkeeping.without_source_choices = lambda stored: False
from devportal.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_database_migrated_before_is_healed_by_its_next_sync(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from tests.helpers import REPO

    sb = sandbox_factory(subscriptions=80, users=20, seed=36)
    env: dict[str, str | None] = {**token_env(sb), CREDENTIALS: postgres}
    kept = tmp_path / "kept" / "warehouse.duckdb"
    assert run_devportal(*sync_argv(sb, kept), "--quiet", env=env).code == 0
    pg_dir = tmp_path / "pg" / "warehouse.duckdb"
    argv = ["migrate", "--from-warehouse", str(kept), "--destination", "postgres"]
    old = subprocess.run(
        [sys.executable, "-c", OLD_MIGRATE, *argv, "--warehouse", str(pg_dir), "--no-models"],
        cwd=REPO, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert old.returncode == 0, old.stderr
    assert _hints(Dataset(uri=postgres))  # DuckDB's jsonl carried over, as before the fix

    for days in (2, 2):  # the first sync heals, the next one finds nothing to heal
        sb.advance(days=days)
        synced = run_devportal(*sync_argv(sb, pg_dir, postgres=True), "--quiet", env=env)
        assert synced.code == 0 and synced.err == "", synced.err
    assert set(_hints(Dataset(uri=postgres)).values()) <= {"insert_values", "csv"}
