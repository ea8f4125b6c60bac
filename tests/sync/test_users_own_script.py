"""`pipeline.run(devportal_source())` from a user's own dlt script: settings from the
environment as dlt resolves them, the user's pipeline and dataset, history across runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.helpers import query

SCRIPT = """
import json, sys
import dlt
from devportal.extract.source import devportal_source

pipeline = dlt.pipeline(
    pipeline_name="my_portal",
    pipelines_dir=sys.argv[1],
    destination=dlt.destinations.duckdb(sys.argv[2]),
    dataset_name="portal",
)
window = sys.argv[3:] == ["window"]
info = pipeline.run(devportal_source(window=window))
print(json.dumps({"loads": len(info.loads_ids), "failed": info.has_failed_jobs}))
"""


def run_script(tmp_path: Path, sb: Any, *args: str, **env: str) -> dict[str, Any]:
    script = tmp_path / "my_pipeline.py"
    script.write_text(SCRIPT)
    environ = {
        **os.environ,
        "SOURCES__DEVPORTAL__BASE_URL": sb.base_url,
        "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token,
        **env,
    }
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "dlt"), str(tmp_path / "mine.duckdb"), *args],
        env=environ,
        cwd=tmp_path,  # no .dlt/ of this repository: the environment is all it has
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert sb.token not in done.stdout + done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_users_own_script_runs_the_source_with_settings_from_the_environment(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=600, users=60, seed=68)
    db = tmp_path / "mine.duckdb"
    assert run_script(tmp_path, sb, SOURCES__DEVPORTAL__WORKERS="3") == {
        "loads": 1,
        "failed": False,
    }
    truth = {(r["id"], r["status"]) for r in sb.truth()}
    loaded = query(db, "SELECT id, status FROM portal.subscriptions WHERE _dlt_valid_to IS NULL")
    assert set(loaded) == truth
    assert query(db, "SELECT count(*) FROM portal.user_settings") == [(len(sb.truth_users()),)]
    accounts = query(db, "SELECT count(*) FROM portal.user_accounts")[0][0]
    users = {u["user"]["service"]["id"] for u in sb.truth_users()}
    assert accounts == len({r["service_id"] for r in sb.truth()} | users)

    # a second run in the same script keeps history in the user's dataset
    changes = sb.advance(days=20)
    assert changes["canceled"] > 0
    run_script(tmp_path, sb)
    current = query(db, "SELECT id, status FROM portal.subscriptions WHERE _dlt_valid_to IS NULL")
    assert set(current) == {(r["id"], r["status"]) for r in sb.truth()}
    closed = query(db, "SELECT count(*) FROM portal.subscriptions WHERE _dlt_valid_to IS NOT NULL")
    assert closed[0][0] >= changes["canceled"]

    # and a window run reads from the last run's clock (the cursor in the user's pipeline state)
    known = {r["id"] for r in sb.truth()}
    sb.advance(days=1)
    run_script(tmp_path, sb, "window")
    new_ids = {r["id"] for r in sb.truth()} - known
    current = query(db, "SELECT id FROM portal.subscriptions WHERE _dlt_valid_to IS NULL")
    assert new_ids and new_ids <= {r[0] for r in current}
    runs = query(
        db,
        "SELECT mode, clock_source, requests > 0, window_start FROM portal.sync_runs "
        "ORDER BY started_at",
    )
    assert [r[:3] for r in runs] == [("sweep", "server", True)] * 2 + [("window", "server", True)]
    observed = query(db, "SELECT observed_at FROM portal.sync_runs ORDER BY started_at")
    second_observed_at = observed[1][0]
    assert runs[2][3] == second_observed_at - timedelta(hours=48)


def test_a_users_own_script_without_a_token_fails_with_one_clear_line(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=10, users=5, seed=69)
    script = tmp_path / "my_pipeline.py"
    script.write_text(SCRIPT)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__DEVPORTAL__")}
    environ["SOURCES__DEVPORTAL__BASE_URL"] = sb.base_url
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "dlt"), str(tmp_path / "mine.duckdb")],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "no access token: set SOURCES__DEVPORTAL__ACCESS_TOKEN" in done.stderr
    assert not (tmp_path / "mine.duckdb").exists()
