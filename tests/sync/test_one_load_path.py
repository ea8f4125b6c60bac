"""Every writer runs through one whole-or-nothing run (`transaction.writing`): a package a killed
sync left pending is loaded first by whichever writer comes next, a manifest load included, and
the new data is loaded after it, not dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devportal.pipeline import begin_writing, open_pipeline
from devportal.source import devportal_source
from devportal.warehouse import warehouse_lock
from tests.helpers import query, sync_from

DEMO_APP = Path(__file__).resolve().parents[2] / "examples" / "demo-app"


def test_a_pending_sync_package_survives_a_manifest_load(
    sandbox_factory: Any, warehouse: Path, devportal: Any
) -> None:
    sb = sandbox_factory(subscriptions=300, users=30, seed=73)
    first = sync_from(sb, warehouse)
    sb.advance(days=30)
    # a sync killed between normalize and load: its package is complete and pending
    with warehouse_lock(warehouse):
        pipeline = open_pipeline(warehouse)
        begin_writing(warehouse, None)
        pipeline.extract(devportal_source(base_url=sb.base_url, access_token=sb.token))
        pipeline.normalize()
        assert pipeline.has_pending_data
    assert query(warehouse, "select count(*) from devportal.sync_runs") == [(1,)]

    done = devportal("manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse))
    assert done.code == 0, done.err
    runs = query(warehouse, "select run_id from devportal.sync_runs order by observed_at")
    assert len(runs) == 2 and runs[0] == (first.run_id,)  # the pending run loaded, once
    live = sorted(r["id"] for r in sb.truth() if not r.get("is_test"))
    current = query(
        warehouse,
        "select id from devportal.subscriptions where _dlt_valid_to is null and not is_test "
        "order by id",
    )
    assert [r[0] for r in current] == live  # the history as of the pending run
    assert query(warehouse, "select count(*) from devportal.app_manifests") == [(1,)]
    assert not open_pipeline(warehouse).has_pending_data
