"""Where settings are read from, said the way dlt 1.31 really reads them, and keys nobody reads.

- Run from a folder without `.dlt/`, "no base_url" names the absolute folder dlt looked at (the
  current folder's `.dlt/`) and dlt's global folder, with what each holds.
- A key under `[sources.devportal]`, `[analytics]` or `[alerts]` that no setting reads (a
  misspelt `max_worker = 64`), in config.toml, secrets.toml or the environment, is one warning
  naming the closest key, once per run (the models `devportal sync` execs included), in every
  command that reads settings."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.firstsync.conftest import write_settings
from tests.helpers import CliResult

TOKEN = "first-sync-token-0123456789"


def global_folder() -> Path:
    """dlt's global settings folder for this user (`~/.dlt`; `/var/dlt` as root)."""
    import dlt

    return Path(os.path.abspath(dlt.current.run_context().global_dir))


def warnings_of(err: str) -> list[str]:
    """The unknown-key warnings of a run's stderr (`devportal: warning: ...`, devportal's one
    form for every message), without that prefix."""
    prefix = "devportal: warning: unknown "
    return [
        line.removeprefix("devportal: warning: ")
        for line in err.splitlines()
        if line.startswith(prefix)
    ]


def test_no_base_url_names_the_folders_dlt_read(
    in_folder: Callable[..., CliResult], project: Path
) -> None:
    result = in_folder("sync", env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": TOKEN})
    assert result.code == 2, result.err
    (line,) = result.err.strip().splitlines()
    assert line.startswith(
        "devportal: error: no base_url: set base_url under [sources.devportal] in "
        ".dlt/config.toml, SOURCES__DEVPORTAL__BASE_URL, or pass --base-url; dlt reads .dlt/ "
        "from the current folder, then its global folder: "
    ), line
    here = f"{project / '.dlt'} (the current folder's: no config.toml or secrets.toml)"
    assert here in line, line
    assert f"{global_folder()} (dlt's global folder: " in line, line
    assert not (project / "warehouse").exists()


def test_a_config_toml_without_base_url_is_named_as_read(
    in_folder: Callable[..., CliResult], project: Path
) -> None:
    write_settings(project, "[sources.devportal]\nmax_workers = 4\n", "[sources]\n")
    result = in_folder("sync", env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": TOKEN})
    assert result.code == 2, result.err
    held = f"{project / '.dlt'} (the current folder's: config.toml, secrets.toml)"
    assert held in result.err, result.err


def test_no_token_names_the_folders_too(in_folder: Callable[..., CliResult], project: Path) -> None:
    write_settings(project, '[sources.devportal]\nbase_url = "http://127.0.0.1:9"\n')
    result = in_folder("sync")
    assert result.code == 2, result.err
    (line,) = result.err.strip().splitlines()
    assert line.startswith("devportal: error: no access token: set SOURCES__DEVPORTAL__ACCESS"), (
        line
    )
    assert f"{project / '.dlt'} (the current folder's: config.toml)" in line, line


CONFIG = """\
[sources.devportal]
base_url = "{base_url}"
max_worker = 64
max_workers = 8
timeout = 3

[analytics]
curency = "EUR"
base_url = "http://elsewhere"

[alerts]
webhook = "http://127.0.0.1:9/hook"
max_age_hours = 30
"""
SECRETS = """\
[sources.devportal]
access_token = "{token}"
acces_token = "not-read"
"""
ENV = {
    "SOURCES__DEVPORTAL__MAX_WORKER": "3",
    "ANALYTICS__STATUSMAP": '{"trialing": "active"}',
    "ALERTS__CHURN_RATE": "0.5",
    "SOURCES__DEVPORTAL__NOTHING_LIKE_IT": "1",
}


def expected(project: Path) -> list[str]:
    config = project / ".dlt" / "config.toml"
    secrets = project / ".dlt" / "secrets.toml"
    return [
        f"unknown key max_worker under [sources.devportal] in {config} is ignored: did you mean "
        "max_workers?",
        f"unknown key timeout under [sources.devportal] in {config} is ignored: did you mean "
        "timeout_s?",
        f"unknown key acces_token under [sources.devportal] in {secrets} is ignored: did you "
        "mean access_token?",
        "unknown environment variable SOURCES__DEVPORTAL__MAX_WORKER is ignored: did you mean "
        "SOURCES__DEVPORTAL__MAX_WORKERS?",
        "unknown environment variable SOURCES__DEVPORTAL__NOTHING_LIKE_IT is ignored: "
        "[sources.devportal] has no such key (docs/configuration.md lists them)",
        f"unknown key curency under [analytics] in {config} is ignored: did you mean currency?",
        f"unknown key base_url under [analytics] in {config} is ignored: base_url belongs under "
        "[sources.devportal]",
        "unknown environment variable ANALYTICS__STATUSMAP is ignored: did you mean "
        "ANALYTICS__STATUS_MAP?",
        f"unknown key webhook under [alerts] in {config} is ignored: did you mean webhook_url?",
        "unknown environment variable ALERTS__CHURN_RATE is ignored: did you mean "
        "ALERTS__CHURN_RATE_ABOVE?",
    ]


def test_unknown_keys_warn_once_per_sync_naming_the_closest_key(
    in_folder: Callable[..., CliResult], project: Path, sandbox_factory: Callable[..., Any]
) -> None:
    """One sync with its models (built by `devportal models` exec'd in the sync's place): each
    unknown key once, from config.toml, secrets.toml and the environment; known keys (and the
    token's value) never."""
    sb = sandbox_factory(subscriptions=30, users=6, seed=5)
    write_settings(project, CONFIG.format(base_url=sb.base_url), SECRETS.format(token=sb.token))
    result = in_folder("sync", "--verbose", env=ENV)
    assert result.code == 0, result.err
    assert "models ok" in result.out, result.out  # the models were built: settings read again
    assert sorted(warnings_of(result.err)) == sorted(expected(project)), result.err
    assert sb.token not in result.err + result.out and "not-read" not in result.err


@pytest.mark.parametrize("command", [["models"], ["status", "--max-age-hours", "1000000"]])
def test_every_command_that_reads_settings_warns_the_same_once(
    in_folder: Callable[..., CliResult],
    project: Path,
    sandbox_factory: Callable[..., Any],
    command: list[str],
) -> None:
    sb = sandbox_factory(subscriptions=30, users=6, seed=5)
    write_settings(project, CONFIG.format(base_url=sb.base_url), SECRETS.format(token=sb.token))
    synced = in_folder("sync", "--no-models")
    assert synced.code == 0, synced.err
    result = in_folder(*command, env=ENV)
    assert result.code == 0, result.err
    assert sorted(warnings_of(result.err)) == sorted(expected(project)), result.err


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="as root dlt's global folder is /var/dlt, this machine's: a test does not write it",
)
def test_the_global_folder_is_read_and_checked_too(
    in_folder: Callable[..., CliResult], project: Path, tmp_path: Path
) -> None:
    """`~/.dlt/config.toml` (HOME moved to a temp folder): its base_url is used (the message
    says dlt read it) and its misspelt key is warned of, naming that file."""
    home = tmp_path / "home"
    dot_dlt = write_settings(
        home, '[sources.devportal]\nbase_url = "http://127.0.0.1:9/api/v1"\nmax_worker = 2\n'
    )
    result = in_folder("sync", env={"HOME": str(home), "SOURCES__DEVPORTAL__ACCESS_TOKEN": TOKEN})
    assert result.code == 2, result.err
    assert "set base_url to http://127.0.0.1:9 " in result.err, result.err  # read from ~/.dlt
    assert warnings_of(result.err) == [
        f"unknown key max_worker under [sources.devportal] in {dot_dlt / 'config.toml'} is "
        "ignored: did you mean max_workers?"
    ], result.err
