"""Running one contender as a subprocess and measuring its wall time and peak memory.

Each contender starts through `benchmarks/launch.py` (see there why), in its own session.

Wall time: from fork to reap of the contender, measured by the launcher; it includes the
interpreter start and imports, which is what a user waits for.

Peak RSS, two sources, the larger wins:
- `os.wait4`'s `ru_maxrss` of the contender, taken by the launcher: the kernel's exact
  high-water mark of the process, into which Linux also folds the high-water marks of the
  descendants it reaped (as a max, not a sum);
- a sampler thread reading RSS with psutil: the contender every 50 ms, the contender plus all
  its descendants summed every 500 ms, which catches worker processes alive at the same time.
The 50 ms samples form an RSS timeline, so a peak can be placed in a pipeline step.

The sandbox's CPU time during the run is recorded too: on a 2-core machine the server competes
with the contender, and at 0 ms latency it can be the bottleneck.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

LAUNCHER = Path(__file__).resolve().with_name("launch.py")
CHILD_POLL_S = 0.05
TREE_POLL_S = 0.5


@dataclass
class Measured:
    """What one process run cost."""

    exit_code: int
    wall_s: float
    started_at: float  # time.time() at spawn
    rss_wait4: int  # bytes
    rss_sampled_tree: int  # bytes, max over samples of the summed tree
    max_processes: int  # largest process tree seen (1 = no workers)
    server_cpu_s: float | None
    timeline: list[tuple[float, int]] = field(default_factory=list)  # (time.time(), rss)
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def peak_rss(self) -> int:
        return max(self.rss_wait4, self.rss_sampled_tree)

    def peak_between(self, start: float, end: float) -> int | None:
        """Highest sampled contender RSS within [start, end] (time.time() seconds)."""
        values = [rss for t, rss in self.timeline if start <= t <= end]
        return max(values) if values else None


class _Sampler(threading.Thread):
    """Samples the contender: the launcher's only child."""

    def __init__(self, launcher_pid: int) -> None:
        super().__init__(name=f"rss-sampler-{launcher_pid}", daemon=True)
        self.launcher_pid = launcher_pid
        self.stop = threading.Event()
        self.peak_tree = 0
        self.max_processes = 1
        self.timeline: list[tuple[float, int]] = []

    def _contender(self) -> psutil.Process | None:
        try:
            launcher = psutil.Process(self.launcher_pid)
        except psutil.Error:
            return None
        while not self.stop.is_set():
            try:
                children = launcher.children()
            except psutil.Error:
                return None
            if children:
                return children[0]
            self.stop.wait(0.005)
        return None

    def run(self) -> None:
        proc = self._contender()
        if proc is None:
            return
        next_tree = 0.0
        while not self.stop.is_set():
            now = time.monotonic()
            try:
                rss = proc.memory_info().rss
            except psutil.Error:
                return
            self.timeline.append((time.time(), rss))
            total = rss
            if now >= next_tree:
                next_tree = now + TREE_POLL_S
                try:
                    children = proc.children(recursive=True)
                except psutil.Error:
                    children = []
                for child in children:
                    try:
                        total += child.memory_info().rss
                    except psutil.Error:
                        continue
                self.max_processes = max(self.max_processes, 1 + len(children))
            self.peak_tree = max(self.peak_tree, total)
            self.stop.wait(CHILD_POLL_S)


def _cpu_seconds(proc: psutil.Process | None) -> float | None:
    if proc is None:
        return None
    try:
        times = proc.cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode(errors="replace")


def run_measured(
    cmd: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    server: psutil.Process | None = None,
    timeout_s: float = 3600.0,
) -> Measured:
    """Run `cmd` in `cwd` to completion; stdout/stderr go to files there (no pipe stalls)."""
    cwd.mkdir(parents=True, exist_ok=True)
    out_path, err_path, usage_path = cwd / "stdout.txt", cwd / "stderr.txt", cwd / "usage.json"
    usage_path.unlink(missing_ok=True)
    launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(usage_path), "--", *cmd]
    server_before = _cpu_seconds(server)
    timed_out = False
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started_at = time.time()
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            launcher, cwd=cwd, env=dict(env), stdout=out, stderr=err, start_new_session=True
        )
        sampler = _Sampler(proc.pid)
        sampler.start()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher's session: it and the contender
            proc.wait()
        outer_wall = time.perf_counter() - t0
        sampler.stop.set()
        sampler.join()
    server_after = _cpu_seconds(server)
    try:
        usage = json.loads(usage_path.read_text())
    except (OSError, ValueError):
        usage = {"wall_s": outer_wall, "maxrss_kib": 0, "exit_code": proc.returncode}
    return Measured(
        exit_code=int(usage["exit_code"]),
        wall_s=float(usage["wall_s"]),
        started_at=started_at,
        rss_wait4=int(usage["maxrss_kib"]) * 1024,  # Linux reports KiB
        rss_sampled_tree=sampler.peak_tree,
        max_processes=sampler.max_processes,
        server_cpu_s=(
            server_after - server_before
            if server_before is not None and server_after is not None
            else None
        ),
        timeline=sampler.timeline,
        stdout=_tail(out_path),
        stderr=_tail(err_path),
        timed_out=timed_out,
    )
