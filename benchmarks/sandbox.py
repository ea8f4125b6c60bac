"""`devportal sandbox` in its own process (so its RSS and CPU are not the contenders'), reached
over HTTP; latency, the serial server cost, the rate limit and the clock change through its
control endpoints, so one world serves every scenario of a size."""

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
    """A context manager that starts the sandbox and always stops it."""

    def __init__(
        self, devportal: list[str], workdir: Path, subscriptions: int, users: int, seed: int = 7
    ) -> None:
        self.token = secrets.token_urlsafe(24)
        self.subscriptions, self.users, self.seed = subscriptions, users, seed
        self.workdir = workdir
        self.base_url, self.startup_s = "", 0.0
        self._cmd = [*devportal, "sandbox", "--port", "0", "--subscriptions", str(subscriptions)]
        self._cmd += ["--users", str(users), "--seed", str(seed), "--start", START]
        self._cmd += [f"--token={self.token}"]  # `=`: a token may start with "-"
        self._proc: subprocess.Popen[bytes] | None = None
        self.process: psutil.Process | None = None

    def __enter__(self) -> SandboxProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = self.workdir / f"sandbox-{self.subscriptions}.log"
        t0 = time.perf_counter()
        with log.open("wb") as out:
            self._proc = subprocess.Popen(self._cmd, stdout=out, stderr=subprocess.STDOUT)
        self.process = psutil.Process(self._proc.pid)
        while not (match := BANNER.search(log.read_text(errors="replace"))):
            if self._proc.poll() is not None:
                raise RuntimeError(f"sandbox exited: {log.read_text(errors='replace')[-500:]}")
            if time.perf_counter() - t0 > 600:
                self.stop()
                raise RuntimeError("sandbox did not start within 600s")
            time.sleep(0.1)
        self.base_url = match.group(1)
        self.state()  # the port answers
        self.startup_s = time.perf_counter() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 30
    ) -> Any:
        request = urllib.request.Request(
            self.base_url + path,
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return json.loads(resp.read())

    def state(self) -> dict[str, Any]:
        return dict(self._call("GET", "/__sandbox/state"))

    def _set(self, path: str, body: dict[str, Any], key: str, wanted: float | None) -> None:
        self._call("POST", f"/__sandbox/{path}", body)
        found = self.state()[key]
        if isinstance(found, dict):
            found = found["per_second"]
        if float(found or 0) != float(wanted or 0):
            raise RuntimeError(f"sandbox did not take {path} {wanted}: {found}")

    def advance(self, *, days: float = 0, hours: float = 0) -> dict[str, Any]:
        """Move the simulated clock forward: `{"now": ..., "changes": {"new": n, ...}}`."""
        body = {"days": days, "hours": hours}
        return dict(self._call("POST", "/__sandbox/advance", body, timeout=600))  # O(rows)

    def set_latency(self, ms: float) -> None:
        self._set("latency", {"ms": ms}, "latency_ms", ms)

    def set_server_ms(self, ms: float) -> None:
        """Serial server time per API request (one global lock held `ms`); 0 clears."""
        self._set("server-ms", {"ms": ms}, "server_ms", ms)

    def set_rate_limit(self, per_second: float | None, burst: float | None = None) -> None:
        """A per-token bucket of `per_second` requests/s, bursts of `burst`; None clears.
        Setting it (again) fills every bucket."""
        body = {"per_second": per_second, **({"burst": burst} if burst is not None else {})}
        self._set("rate-limit", body if per_second else {}, "rate_limit", per_second)

    @contextmanager
    def throttled(
        self, *, server_ms: float = 0.0, rate_limit: float | None = None, burst: float | None = None
    ) -> Iterator[SandboxProcess]:
        """The server cost and/or rate limit for one scenario, both cleared on the way out."""
        try:
            if server_ms:
                self.set_server_ms(server_ms)
            if rate_limit:
                self.set_rate_limit(rate_limit, burst)
            yield self
        finally:
            if self._proc is not None and self._proc.poll() is None:
                self.set_server_ms(0)
                self.set_rate_limit(None)
