"""A sync killed with SIGKILL in extract, normalize or load, then re-run, ends with the truth."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from devportal.pipeline import PIPELINE_NAME
from devportal.warehouse import pipelines_dir
from tests.helpers import current_rows, query, truth_rows

REPO = Path(__file__).resolve().parents[2]


def start_sync(sb: Any, warehouse: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "devportal",
            "sync",
            "--base-url",
            sb.base_url,
            "--warehouse",
            str(warehouse),
            "--no-models",
            "--progress",
            "off",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def phase_reached(warehouse: Path, phase: str) -> bool:
    base = pipelines_dir(warehouse) / PIPELINE_NAME
    folder = {"normalize": base / "normalize" / "extracted", "load": base / "load" / "normalized"}[
        phase
    ]
    return folder.exists() and any(folder.iterdir())


def kill_during(
    sb: Any, warehouse: Path, phase: str, after_requests: int = 0, extra_delay: float = 0.0
) -> str:
    """Start a sync and SIGKILL it in `phase` (plus `extra_delay` s); returns where it was."""
    requests_before = sb.stats.get("requests", 0)
    proc = start_sync(sb, warehouse)
    deadline = time.monotonic() + 60
    where = "finished"
    while proc.poll() is None and time.monotonic() < deadline:
        if phase == "extract":
            if sb.stats.get("requests", 0) - requests_before >= after_requests:
                where = "extract"
                break
        elif phase_reached(warehouse, phase):
            where = phase
            break
        time.sleep(0.001)
    if extra_delay and proc.poll() is None:
        time.sleep(extra_delay)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
    else:
        where = "finished"
    return where


def check_killed_then_rerun(
    sb: Any, warehouse: Path, phase: str, after_requests: int = 0, extra_delay: float = 0.0
) -> str:
    # first a clean sync, then changes, so the killed run has history to get right
    first = start_sync(sb, warehouse)
    assert first.wait(timeout=120) == 0, first.stderr.read() if first.stderr else ""
    sb.advance(days=10)
    if phase == "extract":
        sb.set_latency(20)
    where = kill_during(sb, warehouse, phase, after_requests, extra_delay)
    sb.set_latency(0)
    # the next run finishes or discards what the killed one left, then syncs
    again = start_sync(sb, warehouse)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err.decode()
    assert current_rows(warehouse) == truth_rows(sb), f"killed in {where}"
    counts = Counter(r[0] for r in query(warehouse, "SELECT id FROM devportal.subscriptions"))
    assert max(counts.values()) <= 2  # one version before the advance, one after at most
    dupes = query(
        warehouse,
        "SELECT id, _dlt_valid_from, count(*) FROM devportal.subscriptions "
        "GROUP BY ALL HAVING count(*) > 1",
    )
    assert dupes == []
    if where in ("normalize", "load"):
        assert b"interrupted run" in err
    # history intervals are real: no version starts where it ends
    empty = query(
        warehouse,
        "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to <= _dlt_valid_from",
    )
    assert empty == [(0,)]
    return where


@pytest.mark.parametrize(
    ("phase", "after_requests"), [("extract", 6), ("normalize", 0), ("load", 0)]
)
def test_killed_sync_then_rerun_equals_truth(
    sandbox_factory: Any, warehouse: Path, phase: str, after_requests: int
) -> None:
    sb = sandbox_factory(subscriptions=6000, users=300, seed=21)
    check_killed_then_rerun(sb, warehouse, phase, after_requests)


# make soak: twelve kill points drawn at random (seeded, so a failure can be replayed)
_rng = random.Random(20261122)
SOAK_POINTS = [
    (_rng.choice(["extract", "normalize", "load"]), _rng.randint(1, 30), _rng.uniform(0, 0.08))
    for _ in range(12)
]


@pytest.mark.soak
@pytest.mark.parametrize(("phase", "after_requests", "extra_delay"), SOAK_POINTS)
def test_killed_at_random_points_then_rerun_equals_truth(
    sandbox_factory: Any, warehouse: Path, phase: str, after_requests: int, extra_delay: float
) -> None:
    sb = sandbox_factory(subscriptions=8000, users=400, seed=after_requests)
    check_killed_then_rerun(sb, warehouse, phase, after_requests, extra_delay)


def test_second_sync_process_refuses_while_one_runs(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=3000, users=50, seed=22)
    sb.set_latency(30)  # the first sync takes a few seconds
    first = start_sync(sb, warehouse)
    lock = warehouse.with_name(warehouse.name + ".lock")
    deadline = time.monotonic() + 30
    while not (lock.exists() and lock.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.01)
    second = start_sync(sb, warehouse)
    _, err = second.communicate(timeout=60)
    assert second.returncode == 3
    lines = err.decode().strip().splitlines()
    assert lines[-1].startswith("devportal: error: warehouse") and "busy" in lines[-1]
    assert f"pid {first.pid}" in lines[-1]
    sb.set_latency(0)
    assert first.wait(timeout=120) == 0
    assert current_rows(warehouse) == truth_rows(sb)


def test_the_warehouse_stays_readable_while_a_sync_reads_the_api(
    sandbox_factory: Any, warehouse: Path
) -> None:
    """A sync asks the warehouse what it holds in one short session, then pages the API with
    the DuckDB file closed: a report or notebook can open it meanwhile (DuckDB lets no other
    process open a file another holds for writing)."""
    import duckdb

    sb = sandbox_factory(subscriptions=6000, users=300, seed=23)
    first = start_sync(sb, warehouse)
    assert first.wait(timeout=120) == 0
    sb.set_latency(150)  # about 60 pages at 8 workers: over a second of paging
    before = sb.stats["api_requests"]
    second = start_sync(sb, warehouse)
    try:
        while sb.stats["api_requests"] - before < 4:
            assert second.poll() is None, "the sync ended before it was seen paging"
            time.sleep(0.01)
        with duckdb.connect(str(warehouse), read_only=True) as con:
            current = con.execute(
                "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL"
            ).fetchone()
        assert current == (len(sb.truth()),)
        assert not phase_reached(warehouse, "load")  # it was still reading the API
    finally:
        assert second.wait(timeout=120) == 0, second.stderr.read() if second.stderr else ""


HOLD_OPEN = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
print("open", flush=True)
time.sleep(30)
"""


def test_a_warehouse_held_open_elsewhere_stops_the_sync_before_it_reads_the_api(
    sandbox_factory: Any, warehouse: Path
) -> None:
    """What the warehouse holds decides the mass-close guard and the history clock: a sync that
    cannot read it must not go on as if it held nothing (half the list removed here would
    otherwise close half the history)."""
    sb = sandbox_factory(subscriptions=400, users=40, seed=26)
    assert start_sync(sb, warehouse).wait(timeout=120) == 0
    for row in sb.truth()[: len(sb.truth()) // 2]:
        sb.world.remove_subscription(row["id"])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(warehouse)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        before = sb.stats["api_requests"]
        second = start_sync(sb, warehouse)
        assert second.wait(timeout=120) == 3
        err = second.stderr.read().decode() if second.stderr else ""
        assert err.count("\n") == 1 and "open in another process" in err, err
        assert sb.stats["api_requests"] == before
    finally:
        holder.kill()
        holder.wait()
    closed = query(
        warehouse, "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NOT NULL"
    )
    assert closed == [(0,)]
