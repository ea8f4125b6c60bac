"""The standalone process: `python -m devportal sandbox` prints a banner, serves, stops on SIGTERM."""

from __future__ import annotations

import math
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import requests
from tests.helpers import run_devportal, start_devportal

from devportal.sandbox.testing import SUBSCRIPTIONS


def _read_lines(proc: subprocess.Popen[str], count: int, timeout: float) -> list[str]:
    """The first `count` stdout lines, or fail after `timeout` seconds (no busy waiting)."""
    lines: list[str] = []
    done = threading.Event()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if len(lines) >= count:
                break
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    if not done.wait(timeout):
        proc.kill()
        pytest.fail(f"no banner within {timeout}s; got {lines!r}")
    return lines


@contextmanager
def _started(*options: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """`devportal sandbox --port 0 --token cli-token-123 OPTIONS...` and its 3 banner lines."""
    argv = ("sandbox", "--port", "0", "--token", "cli-token-123", *options)
    proc = start_devportal(*argv, env={"PYTHONUNBUFFERED": "1"})
    try:
        yield proc, _read_lines(proc, 3, timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


@pytest.fixture
def standalone() -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    with _started("--subscriptions", "500", "--users", "40", "--seed", "3") as started:
        yield started


def test_banner_then_serves_then_stops_cleanly(
    standalone: tuple[subprocess.Popen[str], list[str]],
) -> None:
    proc, banner = standalone
    match = re.search(r"http://127\.0\.0\.1:(\d+)", banner[0])
    assert match, banner
    base = match.group(0)
    # the variable `devportal sync` reads the token from, so the banner's lines work as pasted
    assert banner[1] == "export SOURCES__DEVPORTAL__ACCESS_TOKEN=cli-token-123"
    assert "curl" in banner[2] and "cli-token-123" not in banner[2]  # the token is printed once

    headers = {"Authorization": "Bearer cli-token-123"}
    body = requests.get(base + SUBSCRIPTIONS, headers=headers, timeout=10).json()
    assert body["per_page"] == 200 and body["total"] > 400 and len(body["data"]) == 200
    assert requests.get(base + SUBSCRIPTIONS, timeout=10).status_code == 401

    curl = shutil.which("curl")
    if curl is not None:  # the banner's own lines, pasted into a shell as a person would
        command = f"{banner[1]} && {banner[2]}"
        out = subprocess.run(
            command, shell=True, capture_output=True, text=True, timeout=10, check=True
        )
        assert out.stdout.startswith('{"current_page":1,"data":[{"id":')

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    assert proc.stderr is not None
    assert "cli-token-123" not in proc.stderr.read()


def test_bad_arguments_fail_with_one_line_and_exit_2() -> None:
    out = run_devportal(
        "sandbox", "--port", "0", "--fault-rate", "0.5", "--fault-kinds", "429,teapot"
    )
    assert out.code == 2
    assert out.err.strip().count("\n") == 0
    assert "teapot" in out.err and "Traceback" not in out.err


def test_rate_limit_and_server_cost_options_reach_the_sandbox() -> None:
    options = ("--subscriptions", "0", "--users", "10")
    # one token every 100 s: none comes back in the moments the three requests below take
    load = ("--rate-limit", "0.01", "--rate-burst", "2", "--server-ms", "30")
    with _started(*options, *load) as (proc, banner):
        assert "rate limit 0.01/s burst 2" in banner[0] and "server 30 ms serial" in banner[0]
        match = re.search(r"http://127\.0\.0\.1:\d+", banner[0])
        assert match, banner
        base = match.group(0)
        headers = {"Authorization": "Bearer cli-token-123"}
        state = requests.get(base + "/__sandbox/state", headers=headers, timeout=10).json()
        assert state["rate_limit"] == {"per_second": 0.01, "burst": 2.0}
        assert state["server_ms"] == 30.0
        started = time.monotonic()
        answers = [
            requests.get(base + SUBSCRIPTIONS, headers=headers, timeout=10) for _ in range(3)
        ]
        took = time.monotonic() - started  # the server's first and third take lie within it
        assert [r.status_code for r in answers] == [200, 200, 429]
        assert [r.headers["X-RateLimit-Remaining"] for r in answers] == ["1", "0", "0"]
        assert answers[0].headers["X-RateLimit-Limit"] == "0.01"
        # the 100 s until 1 token at 0.01/s, less the seconds between the first take and the
        # third (at most what the test saw the three take): bounds from this run, not a guess
        retry_after = int(answers[2].headers["Retry-After"])
        assert max(1, math.ceil(100 - took)) <= retry_after <= 100, (retry_after, took)
        state = requests.get(base + "/__sandbox/state", headers=headers, timeout=10).json()
        assert state["stats"]["rate_limited"] == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0


def test_bad_rate_limit_fails_with_one_line_and_exit_2() -> None:
    for bad in (["--rate-limit", "-1"], ["--rate-burst", "3"], ["--server-ms", "-1"]):
        out = run_devportal("sandbox", "--port", "0", *bad)
        assert out.code == 2, (bad, out.err)
        assert out.err.strip().count("\n") == 0 and "Traceback" not in out.err


def test_help_documents_the_window_assumption() -> None:
    out = run_devportal("sandbox", "--help")
    assert out.code == 0
    assert "creation time" in out.out and "/__sandbox/advance" in out.out
    # the two ways of being slow, told apart
    assert "--server-ms" in out.out and "--latency-ms" in out.out
    assert "overlap" in out.out and "single-worker" in out.out
    assert "--rate-limit" in out.out and "/__sandbox/rate-limit" in out.out


def test_signups_option_reaches_the_sandbox() -> None:
    """`--signups-per-s R`: a busy app's list, growing while it is read (the sandbox's rate,
    shown in the banner and its state)."""
    with _started("--subscriptions", "50", "--users", "10", "--signups-per-s", "4") as started:
        proc, banner = started
        assert "4 signups/s while read" in banner[0]
        match = re.search(r"http://127\.0\.0\.1:\d+", banner[0])
        assert match, banner
        headers = {"Authorization": "Bearer cli-token-123"}
        state = requests.get(match.group(0) + "/__sandbox/state", headers=headers, timeout=10)
        assert state.json()["signups_per_s"] == 4.0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
