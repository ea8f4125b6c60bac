"""Alerts on a failed sync, through the real CLI against the hostile API, to a real webhook
receiver on 127.0.0.1: the JSON both Slack and Discord accept, the run's one-line cause and
never the token (here echoed by the server in its error body); dlt's own `[runtime]
slack_incoming_hook` gets the same; and a webhook that fails (an error, a refused connection,
no answer) is one warning line while the run keeps its own exit code and error line."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from devportal.base.api import SUBSCRIPTIONS_PATH
from tests.helpers import CliResult, run_devportal, subscription
from tests.hostile.conftest import token_env
from tests.hostile.server import Answer, HostileApi, Request
from tests.operations.receiver import HOOK_PATH, Receiver, receiving, refusing

Cli = Callable[..., CliResult]
# what the server's error body says: the token (as a header echo and bare), and mentions a
# chat service would turn into a ping of everyone
ECHO = "rejected: Authorization: Bearer {token} (token={token}) <!channel> @everyone"


@pytest.fixture
def refusing_api(api: HostileApi) -> Iterator[HostileApi]:
    """The hostile API, whose subscription list answers 422 echoing the token."""
    api.subscriptions = [subscription(i) for i in range(1, 4)]

    def refuse(req: Request) -> Answer:
        return Answer(422, {"message": ECHO.format(token=api.token)})

    api.route(SUBSCRIPTIONS_PATH, refuse)
    yield api


def failed_sync(devportal: Cli, api: HostileApi, warehouse: Path) -> CliResult:
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    argv = ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse), "--no-models"]
    return devportal(*argv, env=token_env(api))


def test_a_failed_sync_posts_its_cause_and_never_the_token(
    refusing_api: HostileApi, devportal: Cli, hook: Receiver, tmp_path: Path
) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    result = failed_sync(devportal, refusing_api, warehouse)
    assert result.code == 1
    error = result.err.strip().splitlines()[-1]
    assert error.startswith("devportal: error: ") and "422" in error
    cause = error.removeprefix("devportal: error: ")
    hook.wait_for(1)
    [body] = hook.posts
    assert hook.paths == [HOOK_PATH]
    # the exact shape: Slack reads `text`, Discord reads `content`; no mention pings on Discord
    assert set(body) == {"text", "content", "allowed_mentions"}
    assert body["allowed_mentions"] == {"parse": []}
    assert body["content"].startswith(f"devportal sync failed ({warehouse} on ")
    assert body["content"].endswith(f": {cause}")
    assert "<!channel> @everyone" in body["content"]
    # Slack's copy with its control characters escaped: no `<!channel>` notification
    assert body["text"] == body["content"].replace("<", "&lt;").replace(">", "&gt;")
    token = refusing_api.token
    assert "[redacted]" in body["content"]
    for said in (hook.raw[0].decode(), result.out, result.err):
        assert token not in said
    dlt_folder = warehouse.parent / ".warehouse.dlt"
    recorded = json.loads((dlt_folder / "devportal.last_failure.json").read_text())
    assert recorded["cause"] == cause and token not in json.dumps(recorded)


def test_dlt_slack_incoming_hook_gets_the_same_post(
    refusing_api: HostileApi,
    devportal: Cli,
    hook: Receiver,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with receiving() as slack:
        monkeypatch.setenv("RUNTIME__SLACK_INCOMING_HOOK", slack.url)
        result = failed_sync(devportal, refusing_api, tmp_path / "wh" / "warehouse.duckdb")
        assert result.code == 1
        slack.wait_for(1)
        hook.wait_for(1)
        assert slack.raw == hook.raw
    # the same URL in both settings is posted to once
    monkeypatch.setenv("RUNTIME__SLACK_INCOMING_HOOK", hook.url)
    failed_sync(devportal, refusing_api, tmp_path / "wh" / "warehouse.duckdb")
    hook.wait_for(2)
    assert len(hook.posts) == 2


def sync_process(api: HostileApi, warehouse: Path, **env: str | None) -> CliResult:
    """A failing `devportal sync` in a process of its own: its stderr is exactly what cron
    would mail (in this process, pytest's log capture would take the warnings)."""
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    argv = ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse), "--no-models"]
    return run_devportal(*argv, env={**token_env(api), **env})


@contextmanager
def failing_webhook(kind: str) -> Iterator[str]:
    """The URL of a webhook that answers 500, refuses the connection, or takes the post and
    never answers."""
    if kind == "refused":
        with refusing() as url:
            yield url
        return
    with receiving(status=500, hang=kind == "no answer") as receiver:
        yield receiver.url


@pytest.mark.parametrize("webhook", ["500", "refused", "no answer"])
def test_a_failing_webhook_is_one_warning_and_the_run_keeps_its_own_result(
    webhook: str, refusing_api: HostileApi, tmp_path: Path
) -> None:
    with failing_webhook(webhook) as url:
        result = sync_process(
            refusing_api,
            tmp_path / "wh" / "warehouse.duckdb",
            ALERTS__WEBHOOK_URL=url,
            ALERTS__TIMEOUT_S="0.5",
        )
    lines = result.err.strip().splitlines()
    assert result.code == 1 and len(lines) == 2, result.err
    host = url.split("/")[2]
    why = {"500": "HTTP 500 (internal_error)", "refused": "connection refused"}
    why["no answer"] = "no answer within 0.5s"
    assert lines[0].endswith(
        f"alert not posted to the webhook at {host}: {why[webhook]} (the run goes on)"
    )
    assert lines[1].startswith("devportal: error: ") and "422" in lines[1]
    assert HOOK_PATH not in result.err  # the URL's path is the webhook's secret


def test_a_bad_alert_setting_stops_the_sync_before_its_first_request(
    refusing_api: HostileApi, tmp_path: Path
) -> None:
    """Every setting a sync will use is checked before the first request (issue 35), [alerts]
    included: one line naming the key, exit 2, nothing read or loaded, nothing posted."""
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    result = sync_process(
        refusing_api,
        warehouse,
        ALERTS__WEBHOOK_URL="https://hooks.example.com/services/T0/B0/secret-part",
        ALERTS__CHURN_RATE_ABOVE="5",
    )
    assert result.code == 2, result.err
    assert result.err == (
        "devportal: error: configuration [alerts] churn_rate_above = 5.0 is a share between 0 "
        "and 1 (0.05 is 5%): fix it in .dlt/config.toml or ALERTS__CHURN_RATE_ABOVE\n"
    )
    assert not warehouse.exists()


def test_a_webhook_url_in_config_toml_is_refused_as_a_secret(tmp_path: Path) -> None:
    """dlt refuses a secret in config.toml (often committed): one line saying where it goes.
    In a process started in a folder whose .dlt/config.toml sets it (dlt reads the .dlt/ of the
    folder a process starts in), without the test suite's empty ALERTS__WEBHOOK_URL."""
    (tmp_path / ".dlt").mkdir()
    (tmp_path / ".dlt" / "config.toml").write_text(
        '[alerts]\nwebhook_url = "https://hooks.example.com/services/T0/B0/secret-part"\n'
    )
    argv = ["status", "--warehouse", "wh/warehouse.duckdb"]
    result = run_devportal(*argv, env={"ALERTS__WEBHOOK_URL": None}, cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "devportal: error: [alerts] webhook_url is a secret (whoever has the URL may post): "
        "move it from .dlt/config.toml to .dlt/secrets.toml, or set ALERTS__WEBHOOK_URL\n"
    )


def test_a_run_that_finds_the_warehouse_busy_is_no_failure(
    api: HostileApi, devportal: Cli, hook: Receiver, tmp_path: Path
) -> None:
    """Overlapping cron runs: the second exits 3 and is neither recorded nor posted (the run
    holding the warehouse is the one whose outcome counts)."""
    from devportal.warehouse import warehouse_lock

    api.subscriptions = [subscription(i) for i in range(1, 4)]
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    argv = ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse), "--no-models"]
    assert devportal(*argv, env=token_env(api)).code == 0
    with warehouse_lock(warehouse):
        assert devportal(*argv, env=token_env(api)).code == 3
    result = devportal("status", "--warehouse", str(warehouse), "--format", "json")
    said = json.loads(result.out)
    assert (result.code, said["state"], said["last_failure"]) == (0, "fresh", None)
    assert hook.posts == []


def test_another_program_writing_the_warehouse_is_a_failure_recorded_and_posted(
    api: HostileApi, devportal: Cli, hook: Receiver, tmp_path: Path
) -> None:
    """A `duckdb` shell or a GUI holding the warehouse open for writing stops every run until
    someone closes it: exit 4, recorded for `status` and posted, unlike another devportal run
    (exit 3, above)."""
    from tests.helpers import held_open_for_writing

    api.subscriptions = [subscription(i) for i in range(1, 4)]
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    argv = ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse), "--no-models"]
    assert devportal(*argv, env=token_env(api)).code == 0
    with held_open_for_writing(warehouse) as holder:
        refused = devportal(*argv, env=token_env(api))
    assert refused.code == 4, refused.err
    result = devportal("status", "--warehouse", str(warehouse), "--format", "json")
    said = json.loads(result.out)
    assert said["state"] == "failed" and result.code != 0, said
    assert "not a devportal run" in said["last_failure"]["cause"], said
    assert len(hook.posts) == 1 and f"pid {holder.pid}" in json.dumps(hook.posts[0])
