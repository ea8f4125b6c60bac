"""Every writer runs through one whole-or-nothing run (`transaction.writing`): a package a killed
sync left pending is loaded first by whichever writer comes next, a manifest load included, and
the new data is loaded after it, not dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devportal.extract.source import devportal_source
from devportal.load.pipeline import begin_writing, open_pipeline, publish
from devportal.warehouse import warehouse_lock
from devportal.warehouse.target import Target
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
        pipeline = open_pipeline(Target.of(warehouse))
        begin_writing(Target.of(warehouse))
        pipeline.extract(devportal_source(base_url=sb.base_url, access_token=sb.token))
        pipeline.normalize()
        assert pipeline.has_pending_data
    assert query(warehouse, "select count(*) from devportal.sync_runs") == [(1,)]

    done = devportal("manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse))
    assert done.code == 0, done.err
    runs = query(warehouse, "select run_id from devportal.sync_runs order by observed_at")
    assert len(runs) == 2 and runs[0] == (first.record.run_id,)  # the pending run loaded, once
    live = sorted(r["id"] for r in sb.truth() if not r.get("is_test"))
    current = query(
        warehouse,
        "select id from devportal.subscriptions where _dlt_valid_to is null and not is_test "
        "order by id",
    )
    assert [r[0] for r in current] == live  # the history as of the pending run
    assert query(warehouse, "select count(*) from devportal.app_manifests") == [(1,)]
    assert not open_pipeline(Target.of(warehouse)).has_pending_data


def test_a_second_source_leaves_the_first_ones_reads_alone(
    sandbox_factory: Any, warehouse: Path
) -> None:
    """A source spools its reads into a folder of its own: making a second source for the same
    pipeline deletes nothing of the first's, which still loads every subscription."""
    sb = sandbox_factory(subscriptions=300, users=30, seed=79)
    sync_from(sb, warehouse)
    sb.advance(days=10)
    with warehouse_lock(warehouse):
        pipeline = open_pipeline(Target.of(warehouse))
        begin_writing(Target.of(warehouse))
        first = devportal_source(
            base_url=sb.base_url, access_token=sb.token, resources=["subscriptions"]
        )
        devportal_source(base_url=sb.base_url, access_token=sb.token, resources=["subscriptions"])
        spool = Path(pipeline.working_dir) / "spool"
        assert not list(spool.rglob("*.arrow"))  # a source reads when extracted, not when made
        held = spool / "run-another" / "reads.arrow"  # another source's reads, spooled
        held.parent.mkdir(parents=True)
        held.write_bytes(b"not ours")
        pipeline.extract(first)
        assert held.read_bytes() == b"not ours"
        pipeline.normalize()
        pipeline.load()
        publish(Target.of(warehouse))
    live = sorted(r["id"] for r in sb.truth() if not r.get("is_test"))
    current = query(
        warehouse,
        "select id from devportal.subscriptions where _dlt_valid_to is null and not is_test "
        "order by id",
    )
    assert [r[0] for r in current] == live


def test_a_manifest_load_ignores_an_unrelated_bad_sync_setting(
    warehouse: Path, devportal: Any
) -> None:
    """`manifest load` reads only the settings it uses (the DuckDB load connection's): a
    misspelt HTTP setting is the sync's to refuse, not the manifest's."""
    done = devportal(
        "manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse),
        env={"SOURCES__DEVPORTAL__MAX_WORKERS": "many"},
    )  # fmt: skip
    assert done.code == 0, done.err
    assert query(warehouse, "select count(*) from devportal.app_manifests") == [(1,)]
    bad = devportal(
        "manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse),
        env={"SOURCES__DEVPORTAL__DUCKDB_THREADS": "many"},
    )  # fmt: skip
    assert bad.code == 2 and "duckdb_threads = 'many' is not a whole number" in bad.err
