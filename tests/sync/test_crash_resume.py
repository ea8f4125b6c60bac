"""A sync killed with SIGKILL in extract, normalize or load, then re-run, ends with the truth.

No test here relies on a sync still running after some time: a sync that must be running while
the test acts is held at the sandbox (`Hold`: its page hook blocks list pages in the server's
request thread until the test releases them), a sync killed in normalize or load kills itself
from inside that phase (`tests.helpers.KILL_IN`), and every kill is checked to have landed where
it was meant to: the signal ended the process, before its `sync ok` line, in that phase.
"""

from __future__ import annotations

import random
import signal
import threading
from collections import Counter
from pathlib import Path
from subprocess import Popen
from types import TracebackType
from typing import Any

import pytest

from devportal.sandbox.app import ENDPOINT_SETTINGS
from devportal.warehouse import pipelines_dir
from tests.helpers import (
    CliResult,
    current_rows,
    finished,
    held_open_for_writing,
    query,
    run_devportal,
    start_devportal,
    truth_rows,
)

# dlt's working folder of the DuckDB warehouse's pipeline (under `pipelines_dir`)
PIPELINE_NAME = "devportal"
# the load jobs of the killed run (a second sync, ten simulated days after the first): a table's
# file each, and the merges; the settings, unchanged, load nothing
LOAD_JOBS = 8


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


def sync_argv(sb: Any, warehouse: Path) -> list[str]:
    return [
        "sync", "--base-url", sb.base_url, "--warehouse", str(warehouse),
        "--no-models", "--progress", "off",
    ]  # fmt: skip


def start_sync(sb: Any, warehouse: Path, env: dict[str, str] | None = None) -> Popen[str]:
    token = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
    return start_devportal(*sync_argv(sb, warehouse), env={**token, **(env or {})})


def phase_reached(warehouse: Path, phase: str) -> bool:
    base = pipelines_dir(warehouse) / PIPELINE_NAME
    folder = {"normalize": base / "normalize" / "extracted", "load": base / "load" / "normalized"}[
        phase
    ]
    return folder.exists() and any(folder.iterdir())


def kill_during(sb: Any, warehouse: Path, phase: str, nth: int) -> CliResult:
    """Run a sync and SIGKILL it in PHASE; asserts it died there, before the run finished.

    In extract the sync is held at its NTH list page and killed there by the test. In normalize
    and load it kills itself from inside the phase (`tests.helpers.KILL_IN`: NTH picks the
    point), writing the phase's name first: the marker proves the phase was reached, the
    signal's exit status that the process did not finish first."""
    if phase == "extract":
        with Hold(sb, nth=nth) as held:
            proc = start_sync(sb, warehouse, PATIENT)
            held.reached()
            proc.send_signal(signal.SIGKILL)  # held at that page: it cannot have finished
            result = finished(proc)
    else:
        marker = warehouse.parent / f"killed-in-{phase}-{nth}"
        token = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
        argv = sync_argv(sb, warehouse)
        result = run_devportal(*argv, env=token, kill_in=(phase, nth, marker))
        assert marker.read_text(encoding="utf-8") == phase, result.err
    assert result.code == -signal.SIGKILL, result.err
    assert "sync ok" not in result.out  # killed before the run's one line
    return result


def check_killed_then_rerun(sb: Any, warehouse: Path, phase: str, nth: int) -> None:
    # first a clean sync, then changes, so the killed run has history to get right
    first = finished(start_sync(sb, warehouse))
    assert first.code == 0, first.err
    sb.advance(days=10)
    kill_during(sb, warehouse, phase, nth)
    # a package the kill left (extracted, or normalized and maybe partly loaded): the next run
    # must say it recovered an interrupted run; read from the folder, after the kill
    left_a_package = phase_reached(warehouse, "normalize") or phase_reached(warehouse, "load")
    # the next run finishes or discards what the killed one left, then syncs
    again = finished(start_sync(sb, warehouse))
    assert again.code == 0, again.err
    assert current_rows(warehouse) == truth_rows(sb), f"killed in {phase} ({nth})"
    counts = Counter(r[0] for r in query(warehouse, "SELECT id FROM devportal.subscriptions"))
    assert max(counts.values()) <= 2  # one version before the advance, one after at most
    dupes = query(
        warehouse,
        "SELECT id, _dlt_valid_from, count(*) FROM devportal.subscriptions "
        "GROUP BY ALL HAVING count(*) > 1",
    )
    assert dupes == []
    if left_a_package:
        assert "interrupted run" in again.err, again.err
    # history intervals are real: no version starts where it ends
    empty = query(
        warehouse,
        "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to <= _dlt_valid_from",
    )
    assert empty == [(0,)]


# extract: held at its 6th list page; normalize: as its spool begins (1) and once the files are
# spooled, before the package is committed (2); load: after its first load job, and after the
# third (some tables loaded, the rest not)
@pytest.mark.parametrize(
    ("phase", "nth"), [("extract", 6), ("normalize", 1), ("normalize", 2), ("load", 1), ("load", 3)]
)
def test_killed_sync_then_rerun_equals_truth(
    sandbox_factory: Any, warehouse: Path, phase: str, nth: int
) -> None:
    sb = sandbox_factory(subscriptions=6000, users=300, seed=21)
    check_killed_then_rerun(sb, warehouse, phase, nth)


# make soak: twelve kill points drawn at random (seeded, so a failure can be replayed): the list
# page of extract, the point of normalize, the load job after which the load dies
_rng = random.Random(20261122)
SOAK_POINTS = [
    (phase, _rng.randint(1, {"extract": 30, "normalize": 2, "load": LOAD_JOBS - 1}[phase]))
    for phase in (_rng.choice(["extract", "normalize", "load"]) for _ in range(12))
]


@pytest.mark.soak
@pytest.mark.parametrize(("phase", "nth"), SOAK_POINTS)
def test_killed_at_random_points_then_rerun_equals_truth(
    sandbox_factory: Any, warehouse: Path, phase: str, nth: int
) -> None:
    sb = sandbox_factory(subscriptions=8000, users=400, seed=nth)
    check_killed_then_rerun(sb, warehouse, phase, nth)


def test_second_sync_process_refuses_while_one_runs(sandbox_factory: Any, warehouse: Path) -> None:
    sb = sandbox_factory(subscriptions=3000, users=50, seed=22)
    # the first run reads the settings list only once it holds the warehouse lock: held there
    # until the second run has been refused, it is running (and holding it) all that time
    with Hold(sb, ENDPOINT_SETTINGS) as held:
        first = start_sync(sb, warehouse, PATIENT)
        held.reached()
        second = start_sync(sb, warehouse)
        refused = finished(second)
        assert refused.code == 3, refused.err
        lines = refused.err.strip().splitlines()
        assert lines[-1].startswith("devportal: error: warehouse") and "busy" in lines[-1]
        assert f"pid {first.pid}" in lines[-1]
        assert first.poll() is None  # the holder is still there, still held
    done = finished(first)
    assert done.code == 0, done.err
    assert current_rows(warehouse) == truth_rows(sb)


def test_the_warehouse_stays_readable_while_a_sync_reads_the_api(
    sandbox_factory: Any, warehouse: Path
) -> None:
    """A sync asks the warehouse what it holds in one short session, then pages the API with
    the DuckDB file closed: a report or notebook can open it meanwhile (DuckDB lets no other
    process open a file another holds for writing)."""
    import duckdb

    sb = sandbox_factory(subscriptions=6000, users=300, seed=23)
    assert finished(start_sync(sb, warehouse)).code == 0
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
            finished(second)
            raise
    done = finished(second)
    assert done.code == 0, done.err


def test_a_warehouse_held_open_for_writing_elsewhere_stops_the_sync_before_it_reads_the_api(
    sandbox_factory: Any, warehouse: Path
) -> None:
    """A sync writes a copy of the warehouse and a copy of a file being written is not
    consistent: a program holding it open for writing stops the sync (exit 4, one line naming
    it) before any request. What the warehouse holds also decides the mass-close guard and the
    history clock: a sync must never go on as if it held nothing (half the list removed here
    would otherwise close half the history). Readers do not stop it
    (tests/reliability/test_readers_and_disks.py)."""
    sb = sandbox_factory(subscriptions=400, users=40, seed=26)
    assert finished(start_sync(sb, warehouse)).code == 0
    for row in sb.truth()[: len(sb.truth()) // 2]:
        sb.world.remove_subscription(row["id"])
    with held_open_for_writing(warehouse) as holder:
        before = sb.stats["api_requests"]
        refused = finished(start_sync(sb, warehouse))
        assert refused.code == 4  # another program, not a devportal run: a failure to tell
        err = refused.err
        assert err.count("\n") == 1 and "open for writing" in err, err
        assert f"pid {holder.pid}" in err, err
        assert sb.stats["api_requests"] == before
        assert holder.poll() is None  # it held the file all along
    closed = query(
        warehouse, "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NOT NULL"
    )
    assert closed == [(0,)]
    assert not (pipelines_dir(warehouse) / "next").exists()  # no copy left behind
