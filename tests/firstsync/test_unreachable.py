"""A wrong port or host name fails fast, in one line naming `host:port`: nothing answered, so a
refused connection or an unknown name gets one quick attempt more (an API starting this very
second), not the whole retry budget (it was 7 warnings over 15 s that never named the host).
Once the API has answered, a refusal is a restart: the full budget, each retry naming the
host. Attempts are counted from what is printed, never timed."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.firstsync.conftest import write_settings
from tests.helpers import FAST_RETRY, CliResult, subscription
from tests.hostile.conftest import token_env
from tests.hostile.server import SUBSCRIPTIONS, Answer, HostileApi, Request

TOKEN = "first-sync-token-0123456789"


def closed_port() -> int:
    """A port nothing listens on: bound, noted, closed (connecting to it is refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def retry_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The client's retry warnings of an in-process run (pytest's log capture holds them)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "devportal.client" and r.levelno >= logging.WARNING
    ]


@pytest.mark.parametrize("speedups", ["on", "off"])  # with and without the early start
def test_a_refused_connection_fails_at_once_naming_host_and_port(
    devportal: Callable[..., CliResult],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    speedups: str,
) -> None:
    port = closed_port()
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    result = devportal(
        "sync",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--warehouse",
        str(warehouse),
        env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": TOKEN, "DEVPORTAL_SPEEDUPS": speedups},
    )
    assert result.code == 1, result.err
    assert retry_warnings(caplog) == []  # the quick second attempt says nothing
    lines = result.err.strip().splitlines()
    assert lines == [
        f"devportal: error: cannot reach the API: connection refused by 127.0.0.1:{port} "
        "(2 attempts): nothing is listening there: check the host and port in base_url, or "
        "start the API"
    ], result.err


def test_a_host_name_that_does_not_resolve_fails_at_once_naming_it(
    devportal: Callable[..., CliResult], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """`.invalid` never resolves (RFC 2606)."""
    result = devportal(
        "sync",
        "--base-url",
        "https://devportal-first-sync.invalid:8443",
        "--warehouse",
        str(tmp_path / "wh" / "warehouse.duckdb"),
        env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": TOKEN},
    )
    assert result.code == 1, result.err
    assert retry_warnings(caplog) == []
    lines = result.err.strip().splitlines()
    assert lines == [
        "devportal: error: cannot reach the API: host name devportal-first-sync.invalid not "
        "found (for devportal-first-sync.invalid:8443) (2 attempts): check the host name in "
        "base_url (and this machine's DNS)"
    ], result.err


def test_max_attempts_1_is_one_attempt(devportal: Callable[..., CliResult], tmp_path: Path) -> None:
    port = closed_port()
    result = devportal(
        "sync",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--warehouse",
        str(tmp_path / "wh" / "warehouse.duckdb"),
        env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": TOKEN, "SOURCES__DEVPORTAL__MAX_ATTEMPTS": "1"},
    )
    assert result.code == 1, result.err
    assert f"connection refused by 127.0.0.1:{port} (1 attempt):" in result.err, result.err


def test_once_the_api_has_answered_a_refusal_is_a_restart_and_gets_every_attempt(
    devportal: Callable[..., CliResult], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """The API answers the first page, then goes down (its port closed): every later page
    is retried up to max_attempts, each retry naming host:port, and the run ends in one line
    saying how many attempts were made."""
    with HostileApi(per_page=2) as api:
        api.subscriptions = [subscription(i) for i in range(1, 7)]
        host = api.base_url.removeprefix("http://")

        def first_page_then_down(req: Request) -> Answer:
            if not api.requests[:-1]:  # the first request of the run: page 1
                api.stop_listening()
            answer = api.subscriptions_answer(req)
            answer.headers["Connection"] = "close"  # no connection left open to reuse
            return answer

        api.route(SUBSCRIPTIONS, first_page_then_down)
        result = devportal(
            "sync",
            "--base-url",
            api.base_url,
            "--warehouse",
            str(tmp_path / "wh" / "warehouse.duckdb"),
            "--no-models",
            env=token_env(api, max_attempts=3, **FAST_RETRY),
        )
    assert result.code == 1, result.err
    assert len(api.requests) == 1  # page 1 only: everything after was refused
    last = result.err.strip().splitlines()[-1]
    assert last.startswith("devportal: error: GET /api/v1/developer/subscriptions?page="), last
    assert "still failing after 3 attempts in " in last, last
    assert f"last: connection refused by {host}; the API may be down" in last, last
    # the page that ended the run warned before each of its two retries, naming host:port
    page = last.split("?page=")[1].split()[0]
    retries = retry_warnings(caplog)
    ended = [r.split(" for GET")[0] for r in retries if f"subscriptions?page={page} " in r]
    assert ended == ["retry 1/3", "retry 2/3"], retries
    assert all(r.endswith(f": connection refused by {host}") for r in retries), retries


def test_from_a_shell_a_wrong_port_in_config_toml_is_one_line_on_stderr(
    in_folder: Callable[..., CliResult], project: Path
) -> None:
    """The whole output of a first sync with a wrong port, as a shell (or cron) gets it."""
    port = closed_port()
    write_settings(project, f'[sources.devportal]\nbase_url = "http://localhost:{port}"\n')
    result = in_folder("sync", env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": TOKEN})
    assert result.code == 1, result.err
    assert result.out == ""
    assert result.err.splitlines() == [
        f"devportal: error: cannot reach the API: connection refused by localhost:{port} "
        "(2 attempts): nothing is listening there: check the host and port in base_url, or "
        "start the API"
    ], result.err


def test_a_reset_and_a_cut_are_retried_each_warning_naming_host_and_port(
    devportal: Callable[..., CliResult],
    caplog: pytest.LogCaptureFixture,
    sandbox_factory: Callable[..., Any],
    tmp_path: Path,
) -> None:
    """A connection dropped without an answer (RST) and one cut mid-body are transient: retried
    under the budget, the sync succeeds, and each retry's warning says which host:port."""
    sb = sandbox_factory(subscriptions=40, users=8, seed=3)
    sb.queue_faults("reset", "cut")
    settings = {f"SOURCES__DEVPORTAL__{k.upper()}": str(v) for k, v in FAST_RETRY.items()}
    result = devportal(
        "sync",
        "--base-url",
        sb.base_url,
        "--warehouse",
        str(tmp_path / "wh" / "warehouse.duckdb"),
        "--no-models",
        env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token, **settings},
    )
    assert result.code == 0, result.err
    retries = retry_warnings(caplog)
    assert len(retries) == 2, retries
    assert all(f"127.0.0.1:{sb.port}" in r for r in retries), retries
