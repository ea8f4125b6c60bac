"""A sync killed with SIGKILL in extract, normalize or load, then re-run, ends with the truth.

No test here relies on a sync still running after some time: a sync that must be running while
the test acts is held at the sandbox (`Hold`: its page hook blocks list pages in the server's
request thread until the test releases them), and what a kill left behind is read from the
working folder after the kill, not guessed from when it was sent.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from devportal.pipeline import PIPELINE_NAME
from devportal.sandbox.app import ENDPOINT_SETTINGS
from devportal.warehouse import pipelines_dir
from tests.helpers import current_rows, held_open_for_writing, query, truth_rows

REPO = Path(__file__).resolve().parents[2]


# for a run the test holds at the sandbox: a held request neither times out nor spends the retry
# budget before the test releases it (the pytest timeout ends a test that never does)
PATIENT = {"SOURCES__DEVPORTAL__TIMEOUT_S": "600", "SOURCES__DEVPORTAL__MAX_WAIT_S": "1200"}


class Hold:
    """`with Hold(sb, endpoint, nth) as held:` blocks every list page request of ENDPOINT (None:
    any list) from the NTH one on, in the sandbox's request thread, until `release()` or the
    end of the block. `held.reached()` waits until one is blocked: the sync asking for it is
    running, and stays at that point, whatever the machine's speed."""

    def __init__(self, sb: Any, endpoint: str | None = None, nth: int = 1) -> None:
        self.sb, self.endpoint, self.nth = sb, endpoint, max(1, nth)
        self.seen = 0
        self._lock = threading.Lock()
        self._holding, self._released = threading.Event(), threading.Event()

    def __call__(self, world: Any, endpoint: str, page: int) -> None:
        if self.endpoint is not None and endpoint != self.endpoint:
            return
        with self._lock:
            self.seen += 1
            if self.seen < self.nth:
                return
        self._holding.set()
        self._released.wait(300)  # a limit on a hang only: the test releases it

    def reached(self) -> None:
        assert self._holding.wait(120), f"no request for {self.endpoint or 'a list'} was held"

    def release(self) -> None:
        self._released.set()

    def __enter__(self) -> Hold:
        self.sb.set_page_hook(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
        self.sb.set_page_hook(None)


def start_sync(
    sb: Any, warehouse: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token, **(env or {})}
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


def killed(proc: subprocess.Popen[bytes]) -> bool:
    """SIGKILL PROC; whether the signal ended it (False: it had exited on its own first)."""
    proc.send_signal(signal.SIGKILL)  # nothing, if it has already exited
    proc.wait(timeout=60)
    return proc.returncode == -signal.SIGKILL


def kill_during(
    sb: Any, warehouse: Path, phase: str, after_requests: int = 0, extra_delay: float = 0.0
) -> str:
    """Start a sync and SIGKILL it in `phase`; returns where it was ("finished" if it was not).

    In extract the sync is held at its AFTER_REQUESTS-th list page and killed there: that kill
    point is exact. Normalize and load are seen from outside (their folder), so the kill lands
    in that phase or a little after it (plus EXTRA_DELAY s, for the soak's spread): the caller
    judges by what the kill left, not by this label."""
    if phase == "extract":
        with Hold(sb, nth=after_requests) as held:
            proc = start_sync(sb, warehouse, PATIENT)
            held.reached()
            return "extract" if killed(proc) else "finished"
    proc = start_sync(sb, warehouse)
    deadline = time.monotonic() + 120  # a limit on a hang, not a measure
    while proc.poll() is None and time.monotonic() < deadline:
        if phase_reached(warehouse, phase):
            break
        time.sleep(0.001)
    if extra_delay and proc.poll() is None:
        time.sleep(extra_delay)
    return phase if killed(proc) else "finished"


def check_killed_then_rerun(
    sb: Any, warehouse: Path, phase: str, after_requests: int = 0, extra_delay: float = 0.0
) -> str:
    # first a clean sync, then changes, so the killed run has history to get right
    first = start_sync(sb, warehouse)
    assert first.wait(timeout=120) == 0, first.stderr.read() if first.stderr else ""
    sb.advance(days=10)
    where = kill_during(sb, warehouse, phase, after_requests, extra_delay)
    if phase == "extract":
        assert where == "extract"  # held at that page, it cannot have finished first
    # a package the kill left (extracted, or normalized and maybe partly loaded): the next run
    # must say it settled an interrupted run; read from the folder, after the kill
    left_a_package = phase_reached(warehouse, "normalize") or phase_reached(warehouse, "load")
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
    if left_a_package:
        assert b"interrupted run" in err, err.decode()
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
    # the first run reads the settings list only once it holds the warehouse lock: held there
    # until the second run has been refused, it is running (and holding it) all that time
    with Hold(sb, ENDPOINT_SETTINGS) as held:
        first = start_sync(sb, warehouse, PATIENT)
        held.reached()
        second = start_sync(sb, warehouse)
        _, err = second.communicate(timeout=120)
        assert second.returncode == 3, err.decode()
        lines = err.decode().strip().splitlines()
        assert lines[-1].startswith("devportal: error: warehouse") and "busy" in lines[-1]
        assert f"pid {first.pid}" in lines[-1]
        assert first.poll() is None  # the holder is still there, still held
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err.decode()
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
    # held at the settings list, which it reads after its look at the warehouse, in its extract
    with Hold(sb, ENDPOINT_SETTINGS) as held:
        second = start_sync(sb, warehouse, PATIENT)
        try:
            held.reached()
            with duckdb.connect(str(warehouse), read_only=True) as con:
                current = con.execute(
                    "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL"
                ).fetchone()
            assert current == (len(sb.truth()),)
            assert second.poll() is None and not phase_reached(warehouse, "load")  # still reading
        except BaseException:
            held.release()
            second.communicate(timeout=120)
            raise
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err.decode()


def test_a_warehouse_held_open_for_writing_elsewhere_stops_the_sync_before_it_reads_the_api(
    sandbox_factory: Any, warehouse: Path
) -> None:
    """A sync writes a copy of the warehouse and a copy of a file being written is not
    consistent: a program holding it open for writing stops the sync (exit 3, one line naming
    it) before any request. What the warehouse holds also decides the mass-close guard and the
    history clock: a sync must never go on as if it held nothing (half the list removed here
    would otherwise close half the history). Readers do not stop it
    (tests/reliability/test_readers_and_disks.py)."""
    sb = sandbox_factory(subscriptions=400, users=40, seed=26)
    assert start_sync(sb, warehouse).wait(timeout=120) == 0
    for row in sb.truth()[: len(sb.truth()) // 2]:
        sb.world.remove_subscription(row["id"])
    with held_open_for_writing(warehouse) as holder:
        before = sb.stats["api_requests"]
        second = start_sync(sb, warehouse)
        assert second.wait(timeout=120) == 3
        err = second.stderr.read().decode() if second.stderr else ""
        assert err.count("\n") == 1 and "open for writing" in err, err
        assert f"pid {holder.pid}" in err, err
        assert sb.stats["api_requests"] == before
        assert holder.poll() is None  # it held the file all along
    closed = query(
        warehouse, "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NOT NULL"
    )
    assert closed == [(0,)]
    assert not (pipelines_dir(warehouse) / "next").exists()  # no copy left behind
