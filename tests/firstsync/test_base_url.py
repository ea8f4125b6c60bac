"""`base_url` is the API's address without its path (the spec's `{base_url}`): one that already
holds `/api/v1` (or goes further) is refused before any request, naming the value to set, from
`--base-url` and from `.dlt/config.toml` alike; a 404 names base_url.

Refused rather than mended: base_url keeps one meaning wherever it is read, and a user fixes it
once, at setup, instead of reading a warning in every cron mail."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.firstsync.conftest import write_settings
from tests.helpers import CliResult, subscription
from tests.hostile.server import HostileApi

SUFFIXES = ["/api/v1", "/api/v1/", "/api/v1/developer", "/api/v1/developer/subscriptions"]


def _refusal(result: CliResult, given: str, fix: str) -> None:
    """RESULT is the one-line refusal of base_url GIVEN, telling to set FIX."""
    assert result.code == 2, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(f"devportal: error: base_url {given.rstrip('/')}"), lines[0]
    assert f"set base_url to {fix} " in lines[0], lines[0]
    assert "devportal adds /api/v1/developer/... itself" in lines[0], lines[0]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_base_url_holding_the_api_path_is_refused_before_any_request(
    devportal: Callable[..., CliResult], api: HostileApi, tmp_path: Path, suffix: str
) -> None:
    api.subscriptions = [subscription(1)]
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    result = devportal(
        "sync",
        "--base-url",
        api.base_url + suffix,
        "--warehouse",
        str(warehouse),
        env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": api.token},
    )
    _refusal(result, api.base_url + suffix, api.base_url)
    assert api.requests == []  # nothing was sent, not even by the early start
    assert not warehouse.exists()


@pytest.mark.parametrize(
    ("path", "fix"), [("/api/v1/", ""), ("/gateway/api/v1/developer", "/gateway")]
)
def test_the_same_from_config_toml_in_the_folder_devportal_runs_from(
    in_folder: Callable[..., CliResult], project: Path, api: HostileApi, path: str, fix: str
) -> None:
    write_settings(project, f'[sources.devportal]\nbase_url = "{api.base_url}{path}"\n')
    result = in_folder("sync", env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": api.token})
    _refusal(result, api.base_url + path, api.base_url + fix)
    assert api.requests == []
    assert not (project / "warehouse").exists()


def test_a_path_that_is_not_the_apis_own_is_kept_and_a_404_names_base_url(
    devportal: Callable[..., CliResult], api: HostileApi, tmp_path: Path
) -> None:
    """`https://gateway/api` may be where a gateway mounts the API: kept as given; when the API
    is not there, the 404 says which base_url the paths were added to."""
    result = devportal(
        "sync",
        "--base-url",
        api.base_url + "/api",
        "--warehouse",
        str(tmp_path / "wh" / "warehouse.duckdb"),
        "--no-models",
        env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": api.token},
    )
    assert result.code == 1, result.err
    assert [r.path for r in api.requests][:1] == ["/api/api/v1/developer/subscriptions"]
    line = result.err.strip().splitlines()[-1]
    assert "not found (404): /api/api/v1/developer/subscriptions" in line, line
    assert f"check base_url ({api.base_url}/api)" in line, line
