"""Fixtures of the hostile tests: argv for a sync against the hostile API, and its settings.
(`api`, the hostile API on 127.0.0.1, and `devportal`, the real CLI run in this process, are in
tests/conftest.py: the reliability tests use them too.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CliResult, warehouse_of
from tests.hostile.server import HostileApi

__all__ = ["CliResult", "token_env"]  # CliResult: where the hostile tests have imported it


@pytest.fixture
def sync_args(api: HostileApi, tmp_path: Path) -> Callable[..., list[str]]:
    """argv for `devportal sync` against `api` into a fresh warehouse, fast retries."""

    def args(*extra: str, warehouse: Path | None = None) -> list[str]:
        wh = warehouse or tmp_path / "wh" / "warehouse.duckdb"
        return ["sync", "--base-url", api.base_url, "--warehouse", str(wh), "--no-models", *extra]

    return args


def token_env(api: HostileApi, **more: Any) -> dict[str, str]:
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": api.token, "SOURCES__DEVPORTAL__MAX_ATTEMPTS": "2"}
    env.update({f"SOURCES__DEVPORTAL__{k.upper()}": str(v) for k, v in more.items()})
    return env


def synced(
    devportal: Callable[..., CliResult], api: HostileApi, args: list[str], **settings: Any
) -> Path:
    """Run `devportal ARGS` against API with SETTINGS (`token_env`), which must succeed; the
    warehouse it wrote."""
    result = devportal(*args, env=token_env(api, **settings))
    assert result.code == 0, result.err
    return warehouse_of(args)
