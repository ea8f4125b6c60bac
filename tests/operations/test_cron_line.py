"""The cron line docs/operations.md gives, run as cron runs it (`sh -c`, output captured as
cron would mail it): a success logs one line and prints nothing, a failure prints the end of
the log with its one-line error, and a run that finds the warehouse busy (exit 3) prints
nothing."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import REPO

DOCS = REPO / "docs" / "operations.md"


def nightly_line() -> str:
    """The command of the documented nightly sweep (`40 3 * * *`)."""
    [line] = [x for x in DOCS.read_text("utf-8").splitlines() if x.startswith("40 3 * * *")]
    return line.split(None, 5)[5]


def as_cron(command: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """COMMAND with its project folder and installed `devportal` made this test's, run by
    /bin/sh as cron does; what it prints is what cron would mail."""
    command = command.replace("cd /srv/devportal", f"cd {shlex.quote(str(folder))}")
    devportal = f"{shlex.quote(sys.executable)} -m devportal"
    command = re.sub(r"\.venv/bin/devportal", devportal, command)
    return subprocess.run(
        ["/bin/sh", "-c", command],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_documented_cron_line_mails_only_a_failure(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    from devportal.warehouse import warehouse_lock

    sb = sandbox_factory(subscriptions=100, users=20, seed=27)
    (tmp_path / "warehouse").mkdir()  # made by the first sync, before scheduling
    log = tmp_path / "warehouse" / "sync.log"
    env = {
        "SOURCES__DEVPORTAL__BASE_URL": sb.base_url,
        "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token,
    }
    ok = as_cron(nightly_line(), tmp_path, env)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    [line] = log.read_text().splitlines()
    assert line.startswith("sync ok (sweep) into ") and "warehouse/warehouse.duckdb" in line

    failed = as_cron(
        nightly_line(), tmp_path, {**env, "SOURCES__DEVPORTAL__ACCESS_TOKEN": "wrong-token-0042"}
    )
    assert failed.stderr == ""
    mailed = failed.stdout.splitlines()
    assert mailed[-1].startswith("devportal: error: access token rejected (401)")

    with warehouse_lock(tmp_path / "warehouse" / "warehouse.duckdb"):
        busy = as_cron(nightly_line(), tmp_path, env)
    assert (busy.stdout, busy.stderr) == ("", "")
    assert "busy" in log.read_text().splitlines()[-1]


def hourly_line() -> str:
    """The command of the documented hourly window sync (`15 * * * *`)."""
    [line] = [x for x in DOCS.read_text("utf-8").splitlines() if x.startswith("15 * * * *")]
    return line.split(None, 5)[5]


def test_the_cron_lines_on_a_postgres_home_log_one_line_per_success(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    """With `warehouse_destination = "postgres"` (its environment variable) the documented lines
    run unchanged on PostgreSQL: each success adds one line to the log and prints nothing (no dlt
    warning, no second line), a failure is mailed, a busy warehouse is quiet."""
    from devportal.warehouse import warehouse_lock

    sb = sandbox_factory(subscriptions=100, users=20, seed=28)
    (tmp_path / "warehouse").mkdir()
    log = tmp_path / "warehouse" / "sync.log"
    env = {
        "SOURCES__DEVPORTAL__BASE_URL": sb.base_url,
        "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token,
        "SOURCES__DEVPORTAL__WAREHOUSE_DESTINATION": "postgres",
    }
    for line in (nightly_line(), hourly_line(), hourly_line(), nightly_line()):
        sb.advance(hours=1)
        ok = as_cron(line, tmp_path, env)
        assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    logged = log.read_text().splitlines()
    assert len(logged) == 4, logged
    assert all(x.startswith("sync ok (") and "postgres (database " in x for x in logged), logged
    assert [x.split()[2] for x in logged] == ["(sweep)", "(window)", "(window)", "(sweep)"]

    failed = as_cron(
        hourly_line(), tmp_path, {**env, "SOURCES__DEVPORTAL__ACCESS_TOKEN": "wrong-token-0042"}
    )
    assert failed.stdout.splitlines()[-1].startswith("devportal: error: access token rejected")

    with warehouse_lock(tmp_path / "warehouse" / "warehouse.duckdb"):
        busy = as_cron(nightly_line(), tmp_path, env)
    assert (busy.stdout, busy.stderr) == ("", "")
    assert "busy" in log.read_text().splitlines()[-1]
