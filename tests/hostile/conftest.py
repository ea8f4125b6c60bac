"""Fixtures: the hostile API on 127.0.0.1 and the real `devportal` CLI run in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devportal.cli import main
from tests.hostile.server import HostileApi


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def api() -> Iterator[HostileApi]:
    with HostileApi() as server:
        yield server


@pytest.fixture
def devportal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliResult]:
    """`devportal(*argv, env={...})`: the real CLI entry point, its exit code and output."""

    def run(*argv: str, env: dict[str, str] | None = None) -> CliResult:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        for key in env or {}:
            monkeypatch.delenv(key, raising=False)
        return CliResult(code, captured.out, captured.err)

    return run


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
