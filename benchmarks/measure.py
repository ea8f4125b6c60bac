"""One contender as a measured subprocess, started through `launch.py` (see there why): wall
time fork to reap; peak RSS the larger of `os.wait4`'s `ru_maxrss` and a psutil sampler (the
contender every 50 ms, for the RSS timeline; its tree summed every 500 ms); the sandbox's CPU."""

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


@dataclass
class Measured:
    exit_code: int
    wall_s: float
    rss_wait4: int  # bytes
    rss_sampled_tree: int = 0  # bytes, the largest summed tree sampled
    max_processes: int = 1  # largest process tree seen (1 = no workers)
    server_cpu_s: float | None = None
    timeline: list[tuple[float, int]] = field(default_factory=list)  # (time.time(), rss)
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def peak_rss(self) -> int:
        return max(self.rss_wait4, self.rss_sampled_tree)

    def peak_between(self, start: float, end: float) -> int | None:
        """The highest sampled contender RSS within [start, end] (time.time() seconds)."""
        return max((rss for t, rss in self.timeline if start <= t <= end), default=None)


def _sample(launcher_pid: int, into: Measured, stop: threading.Event) -> None:
    """Sample the contender (the launcher's only child) until `stop`."""
    try:
        launcher = psutil.Process(launcher_pid)
        while not (children := launcher.children()):
            if stop.wait(0.005):
                return
        proc, next_tree = children[0], 0.0
        while not stop.is_set():
            rss = total = proc.memory_info().rss
            into.timeline.append((time.time(), rss))
            if time.monotonic() >= next_tree:
                next_tree = time.monotonic() + 0.5
                try:
                    tree = proc.children(recursive=True)
                except psutil.Error:
                    tree = []
                for child in tree:
                    try:
                        total += child.memory_info().rss
                    except psutil.Error:
                        continue
                into.max_processes = max(into.max_processes, 1 + len(tree))
            into.rss_sampled_tree = max(into.rss_sampled_tree, total)
            stop.wait(0.05)
    except psutil.Error:
        return  # the contender is gone


def _cpu_seconds(proc: psutil.Process | None) -> float | None:
    try:
        times = proc.cpu_times() if proc is not None else None
    except psutil.Error:
        return None
    return float(times.user + times.system) if times is not None else None


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        return path.read_bytes()[-limit:].decode(errors="replace")
    except OSError:
        return ""


def run_measured(
    cmd: Sequence[str], *, cwd: Path, env: Mapping[str, str], server: psutil.Process | None = None
) -> Measured:
    """Run `cmd` in `cwd` to completion (an hour at most); its output goes to files there."""
    cwd.mkdir(parents=True, exist_ok=True)
    out_path, err_path, usage_path = cwd / "stdout.txt", cwd / "stderr.txt", cwd / "usage.json"
    usage_path.unlink(missing_ok=True)
    server_before, timed_out = _cpu_seconds(server), False
    measured, stop = Measured(0, 0.0, 0), threading.Event()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        t0 = time.perf_counter()
        launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(usage_path), "--", *cmd]
        proc = subprocess.Popen(
            launcher, cwd=cwd, env=dict(env), stdout=out, stderr=err, start_new_session=True
        )
        sampler = threading.Thread(target=_sample, args=(proc.pid, measured, stop), daemon=True)
        sampler.start()
        try:
            proc.wait(3600)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher's session: it and the contender
            proc.wait()
        outer_wall = time.perf_counter() - t0
        stop.set()
        sampler.join()
    server_after = _cpu_seconds(server)
    try:
        usage = json.loads(usage_path.read_text())
    except (OSError, ValueError):
        usage = {"wall_s": outer_wall, "maxrss_kib": 0, "exit_code": proc.returncode}
    measured.exit_code, measured.wall_s = int(usage["exit_code"]), float(usage["wall_s"])
    measured.rss_wait4 = int(usage["maxrss_kib"]) * 1024  # Linux reports KiB
    if server_before is not None and server_after is not None:
        measured.server_cpu_s = server_after - server_before
    measured.stdout, measured.stderr = _tail(out_path), _tail(err_path)
    measured.timed_out = timed_out
    return measured
