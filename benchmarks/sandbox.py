"""The Developer API sandbox as a separate process for the benchmark.

The contenders must not share a process with the server, or their RSS and CPU would include
it; so the sandbox runs as `devportal sandbox --port 0` and is reached over HTTP like the real
API. Latency, the serial server cost (`--server-ms`) and the per-token rate limit change through
its control endpoints, so one generated world serves every scenario of a size (the world and its
clock are untouched between runs); `throttled()` sets the last two for one scenario and always
clears them afterwards, so nothing leaks into the next scenario.
"""

from __future__ import annotations

import json
import re
import secrets
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

BANNER = re.compile(r"serving (http://\S+)")
START = "2026-11-01 00:00:00"


class SandboxProcess:
    """`devportal sandbox` in its own process; a context manager that always stops it."""

    def __init__(
        self,
        devportal: list[str],
        workdir: Path,
        subscriptions: int,
        users: int,
        seed: int = 7,
        start_timeout_s: float = 600.0,
    ) -> None:
        self.token = secrets.token_urlsafe(24)
        self.subscriptions = subscriptions
        self.users = users
        self.seed = seed
        self.workdir = workdir
        self.base_url = ""
        self.startup_s = 0.0
        self._cmd = [
            *devportal,
            "sandbox",
            "--port",
            "0",
            "--subscriptions",
            str(subscriptions),
            "--users",
            str(users),
            "--seed",
            str(seed),
            "--start",
            START,
            f"--token={self.token}",  # `=`: a token may start with "-"
        ]
        self._timeout = start_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self.process: psutil.Process | None = None

    def __enter__(self) -> SandboxProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = self.workdir / f"sandbox-{self.subscriptions}.log"
        t0 = time.perf_counter()
        with log.open("wb") as out:
            self._proc = subprocess.Popen(self._cmd, stdout=out, stderr=subprocess.STDOUT)
        self.process = psutil.Process(self._proc.pid)
        deadline = time.monotonic() + self._timeout
        while not self.base_url:
            if self._proc.poll() is not None:
                raise RuntimeError(f"sandbox exited: {log.read_text(errors='replace')[-500:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"sandbox did not start within {self._timeout:.0f}s")
            match = BANNER.search(log.read_text(errors="replace"))
            if match:
                self.base_url = match.group(1)
            else:
                time.sleep(0.1)
        self.state()  # the port answers
        self.startup_s = time.perf_counter() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base_url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            return json.loads(resp.read())

    def state(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/__sandbox/state")
        return result

    def set_latency(self, ms: float) -> None:
        self._call("POST", "/__sandbox/latency", {"ms": ms})
        if float(self.state()["latency_ms"]) != float(ms):
            raise RuntimeError(f"sandbox did not take latency {ms} ms")

    def stats(self) -> dict[str, Any]:
        """The sandbox's request counters (`requests`, `api_requests`, `rate_limited`, ...)."""
        result: dict[str, Any] = self.state()["stats"]
        return result

    def set_server_ms(self, ms: float) -> None:
        """Serial server time per API request (one global lock held `ms`); 0 clears."""
        self._call("POST", "/__sandbox/server-ms", {"ms": ms})
        if float(self.state()["server_ms"] or 0) != float(ms):
            raise RuntimeError(f"sandbox did not take server-ms {ms}")

    def set_rate_limit(self, per_second: float | None, burst: float | None = None) -> None:
        """Per-token token bucket of `per_second` requests/s, bursts of `burst`; None clears.
        Setting it (again) fills every bucket: each run starts with a full one."""
        body: dict[str, Any] = {}
        if per_second:
            body = {"per_second": per_second}
            if burst is not None:
                body["burst"] = burst
        self._call("POST", "/__sandbox/rate-limit", body)
        limit = self.state()["rate_limit"]
        if (limit is None) != (not per_second) or (
            limit is not None and float(limit["per_second"]) != float(per_second or 0)
        ):
            raise RuntimeError(f"sandbox did not take rate limit {per_second}/s: {limit}")

    @contextmanager
    def throttled(
        self, *, server_ms: float = 0.0, rate_limit: float | None = None, burst: float | None = None
    ) -> Iterator[SandboxProcess]:
        """The server cost and/or rate limit for one scenario; both cleared on the way out."""
        try:
            if server_ms:
                self.set_server_ms(server_ms)
            if rate_limit:
                self.set_rate_limit(rate_limit, burst)
            yield self
        finally:
            self.clear_throttles()

    def clear_throttles(self) -> None:
        """No serial server cost, no rate limit (what every other scenario runs against)."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self.set_server_ms(0)
        self.set_rate_limit(None)
