"""`devportal_source` in a user's own dlt pipeline, in-process: every resource loads in full."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dlt

from devportal.extract.source import devportal_source
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


def test_the_run_record_is_one_definition_and_names_its_load(
    sandbox_factory: Any, warehouse: Path
) -> None:
    """`sync_runs` has exactly the columns of `SyncRecord` (plus dlt's own), its `load_id` is the
    package's (dlt's `_dlt_load_id`, complete in `_dlt_loads`), and the summary the sync prints
    comes from the same record: its figures are the row's."""
    from devportal.extract.sync_record import SyncRecord
    from tests.helpers import sync_from

    sb = sandbox_factory(subscriptions=300, users=30, seed=71)
    first = sync_from(sb, warehouse)
    sb.advance(days=20)
    second = sync_from(sb, warehouse)
    columns = [
        name
        for (name,) in query(
            warehouse,
            "select column_name from information_schema.columns where table_schema = "
            "'devportal' and table_name = 'sync_runs' order by ordinal_position",
        )
        if not name.startswith("_dlt_")
    ]
    assert columns == list(SyncRecord.columns())
    rows = query(
        warehouse,
        "select r.run_id, r.load_id, r._dlt_load_id, l.status, r.requests, r.mode "
        "from devportal.sync_runs r join devportal._dlt_loads l on l.load_id = r._dlt_load_id "
        "order by r.observed_at",
    )
    assert [(r[0], r[1]) for r in rows] == [
        (first.record.run_id, first.record.load_id),
        (second.record.run_id, second.record.load_id),
    ]
    for _run_id, load_id, dlt_load_id, status, _requests, mode in rows:
        assert load_id == dlt_load_id and status == 0 and mode == "sweep"
    assert [r[4] for r in rows] == [first.record.requests, second.record.requests]
