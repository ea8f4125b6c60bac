"""`devportal_source` in a user's own dlt pipeline, in-process: every resource loads in full."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dlt

from devportal.source import devportal_source
from tests.helpers import query


def test_devportal_source_in_a_users_own_pipeline(sandbox_factory: Any, tmp_path: Path) -> None:
    sb = sandbox_factory(subscriptions=500, users=40, seed=67)
    pipeline = dlt.pipeline(
        pipeline_name="mine",
        pipelines_dir=str(tmp_path / "dlt"),
        destination=dlt.destinations.duckdb(str(tmp_path / "mine.duckdb")),
        dataset_name="portal",
    )
    pipeline.run(devportal_source(base_url=sb.base_url, access_token=sb.token))
    rows = query(tmp_path / "mine.duckdb", "SELECT count(*) FROM portal.subscriptions")
    assert rows == [(len(sb.truth()),)]
    users = query(tmp_path / "mine.duckdb", "SELECT count(*) FROM portal.user_settings")
    assert users == [(len(sb.truth_users()),)]
