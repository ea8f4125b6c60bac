"""A proxy between devportal and the API is named when it is what failed: a dead proxy, a
proxy host name not found, a proxy that refuses its credentials (407, on a plain-http request
and on an https CONNECT), a proxy that refuses the tunnel, a proxy URL that cannot be used. The
line names the proxy's host:port and the variable that set it, never the API's base_url as the
culprit, and never the user name's password. A 407 is sent once: a wrong password tried eight
times can lock a corporate account.

The real CLI in this process, against the hostile API (tests/hostile/server.py) and a proxy
that forwards nothing (`AnsweringProxy`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import CliResult, run_devportal
from tests.hostile.conftest import token_env
from tests.hostile.server import AnsweringProxy, HostileApi, closed_port

Cli = Callable[..., CliResult]
PASSWORD = "s3cret-proxy-pass"  # long enough to be a registered secret
VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
# an https API the proxy stands in front of: never resolved here, the proxy is asked instead
REMOTE = "https://api.example.com"


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the proxy each test sets (none from the machine running the tests)."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def sync(devportal: Cli, api: HostileApi, tmp_path: Path, base_url: str, **env: str) -> CliResult:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    argv = ["sync", "--base-url", base_url, "--warehouse", str(warehouse), "--no-models"]
    settings = token_env(api, max_attempts=8, backoff_initial_s=0.01, backoff_max_s=0.02)
    return devportal(*argv, env={**settings, **env})


def refusal(result: CliResult) -> str:
    """The run's one error line (it failed, with exit 1, and said nothing secret)."""
    assert result.code == 1, (result.out, result.err)
    line = result.err.strip().splitlines()[-1]
    assert line.startswith("devportal: error: "), result.err
    assert PASSWORD not in result.err + result.out
    return line


@pytest.mark.parametrize(
    ("variable", "base"), [("HTTP_PROXY", "api"), ("https_proxy", REMOTE), ("ALL_PROXY", "api")]
)
def test_a_dead_proxy_is_named_not_the_api(
    variable: str, base: str, api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    port = closed_port()
    base_url = api.base_url if base == "api" else base
    line = refusal(
        sync(
            devportal,
            api,
            tmp_path,
            base_url,
            **{variable: f"http://corp-user:{PASSWORD}@127.0.0.1:{port}"},
        )
    )
    assert f"connection refused by the proxy 127.0.0.1:{port} ({variable})" in line
    assert f"fix or unset {variable}" in line and "NO_PROXY=" in line
    assert "base_url" not in line and "corp-user" not in line
    assert api.hits("/api/v1/developer/subscriptions") == 0


def test_a_proxy_host_name_not_found_is_the_proxys(
    api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    proxy = f"http://corp-user:{PASSWORD}@proxy.invalid:3128"
    line = refusal(sync(devportal, api, tmp_path, REMOTE, HTTPS_PROXY=proxy))
    assert "the proxy's host name in HTTPS_PROXY not found (proxy.invalid:3128)" in line
    assert "api.example.com" in line and "base_url" not in line


@pytest.mark.parametrize("base", ["api", REMOTE], ids=["plain-http", "https-connect"])
def test_a_407_is_sent_once_and_names_the_variable_holding_the_credentials(
    base: str, api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    variable = "HTTP_PROXY" if base == "api" else "HTTPS_PROXY"
    with AnsweringProxy(407) as proxy:
        base_url = api.base_url if base == "api" else base
        result = sync(
            devportal, api, tmp_path, base_url, **{variable: proxy.url("corp-user", PASSWORD)}
        )
        sent = list(proxy.requests)
    line = refusal(result)
    assert len(sent) == 1, sent  # not retried
    assert sent[0][1], "the proxy's credentials were offered"
    assert sent[0][0].startswith("CONNECT " if base == REMOTE else "GET http://")
    assert f"the proxy {proxy.where} ({variable}) refused the user name and password" in line
    assert "407" in line and f"correct them in {variable}" in line and "not retried" in line
    assert "down or overloaded" not in line and "corp-user" not in line


def test_a_407_without_credentials_says_where_they_go(
    api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    with AnsweringProxy(407) as proxy:
        line = refusal(sync(devportal, api, tmp_path, REMOTE, https_proxy=proxy.url()))
        assert len(proxy.requests) == 1
    assert f"the proxy {proxy.where} (https_proxy) asks for a user name and password" in line
    assert "https_proxy holds none" in line


def test_a_407_with_no_proxy_set_is_a_proxy_in_the_way(
    api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    """A proxy nobody configured (a transparent one) answering 407 for the API: sent once."""
    from tests.hostile.server import Answer

    api.route("/api/v1/developer/subscriptions", lambda req: Answer(407, b"proxy auth"))
    line = refusal(sync(devportal, api, tmp_path, api.base_url))
    assert "asks for credentials (407 Proxy Authentication Required)" in line
    assert "no proxy is set" in line and "HTTP_PROXY" in line
    assert api.hits("/api/v1/developer/subscriptions") == 1


def test_a_proxy_refusing_the_tunnel_is_named_and_not_retried(
    api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    with AnsweringProxy(403, "Forbidden") as proxy:
        line = refusal(sync(devportal, api, tmp_path, REMOTE, HTTPS_PROXY=proxy.url()))
        assert len(proxy.requests) == 1
    assert f"the proxy {proxy.where} (HTTPS_PROXY) refused to open a connection" in line
    assert "api.example.com:443 (403)" in line


def test_a_proxy_that_cannot_reach_the_api_is_retried_and_named(
    api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    with AnsweringProxy(502, "Bad Gateway") as proxy:
        attempts = {"SOURCES__DEVPORTAL__MAX_ATTEMPTS": "3"}
        result = sync(devportal, api, tmp_path, REMOTE, HTTPS_PROXY=proxy.url(), **attempts)
        assert len(proxy.requests) == 3
    line = refusal(result)
    assert f"the proxy {proxy.where} (HTTPS_PROXY) could not open a connection" in line


def test_a_proxy_url_that_cannot_be_used_names_its_variable_not_its_value(
    api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    line = refusal(sync(devportal, api, tmp_path, REMOTE, HTTPS_PROXY=f"http://u:{PASSWORD}@:3128"))
    assert "HTTPS_PROXY holds a proxy URL requests cannot use" in line


def test_no_proxy_credentials_in_a_debug_run(api: HostileApi, tmp_path: Path) -> None:
    """--debug prints tracebacks and urllib3's own log lines: still no password, in a process
    of its own (what a scheduler would mail)."""
    with AnsweringProxy(407) as proxy:
        warehouse = tmp_path / "wh" / "warehouse.duckdb"
        result = run_devportal(
            "--debug",
            "sync",
            "--base-url",
            REMOTE,
            "--warehouse",
            str(warehouse),
            "--no-models",
            env={**token_env(api), "HTTPS_PROXY": proxy.url("corp-user", PASSWORD)},
        )
    assert result.code == 1, result.err
    assert "407" in result.err and PASSWORD not in result.err + result.out
