"""A token pasted with the header's scheme before it (`Bearer <token>`, `bearer <token>`,
`Authorization: Bearer <token>`, from the env or .dlt/secrets.toml) is not "a token with a
space": the prefix is stripped (devportal adds `Bearer ` itself) and named in one warning, and
the sync goes on. The token itself is never printed. In a process of its own: its stderr is
what a scheduler mails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import CliResult, run_devportal, subscription
from tests.hostile.server import HostileApi

ACCOUNTS_OFF = "subscriptions"


def sync_with(
    api: HostileApi, tmp_path: Path, token: str, in_file: bool = False
) -> tuple[CliResult, Path]:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    argv = ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse), "--no-models"]
    argv += ["--resources", ACCOUNTS_OFF]
    env: dict[str, str | None] = {"SOURCES__DEVPORTAL__MAX_ATTEMPTS": "2"}
    if in_file:
        dlt = tmp_path / ".dlt"
        dlt.mkdir()
        quoted = json.dumps(token)  # a JSON string is a TOML basic string
        (dlt / "secrets.toml").write_text(f"[sources.devportal]\naccess_token = {quoted}\n")
        env["SOURCES__DEVPORTAL__ACCESS_TOKEN"] = None
    else:
        env["SOURCES__DEVPORTAL__ACCESS_TOKEN"] = token
    result = run_devportal(*argv, env=env, cwd=tmp_path)
    return result, warehouse


@pytest.mark.parametrize(
    ("pasted", "named"),
    [
        ("Bearer {t}", "'Bearer '"),
        ("bearer   {t}", "'Bearer '"),
        ("Bearer:{t}", "'Bearer '"),
        (" Authorization: Bearer {t}\n", "'Authorization: Bearer '"),
    ],
)
@pytest.mark.parametrize("in_file", [False, True], ids=["env", "secrets.toml"])
def test_a_pasted_bearer_prefix_is_stripped_and_named_once(
    pasted: str, named: str, in_file: bool, api: HostileApi, tmp_path: Path
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 5)]
    result, _ = sync_with(api, tmp_path, pasted.format(t=api.token), in_file)
    assert result.code == 0, result.err
    warnings = [line for line in result.err.splitlines() if "access token starts with" in line]
    assert len(warnings) == 1, result.err
    assert named in warnings[0] and "devportal adds itself" in warnings[0]
    assert "sent without it" in warnings[0]
    assert api.token not in result.err + result.out
    assert api.hits("/api/v1/developer/subscriptions") >= 1
    assert all(
        r.headers.get("authorization") == f"Bearer {api.token}"
        for r in api.requests
        if r.path.startswith("/api/")
    )


def test_the_prefix_alone_is_no_token(api: HostileApi, tmp_path: Path) -> None:
    result, _ = sync_with(api, tmp_path, "Bearer ")
    assert result.code == 2, result.err
    assert "the access token is only the word 'Bearer'" in result.err
    assert api.hits("/api/v1/developer/subscriptions") == 0


def test_a_space_inside_the_token_itself_is_still_refused(api: HostileApi, tmp_path: Path) -> None:
    result, _ = sync_with(api, tmp_path, f"Bearer {api.token[:8]} {api.token[8:]}")
    assert result.code == 2, result.err
    assert "contains a space or tab inside it" in result.err
    assert api.token[8:] not in result.err
