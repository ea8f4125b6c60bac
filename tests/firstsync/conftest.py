"""Fixtures of the first-real-sync tests: a project folder of one's own (its `.dlt/`), and
`devportal` run there in a process of its own, as a new user runs it from a shell.

dlt reads `.dlt/` from the folder it starts in, once per process: a test that writes a
`.dlt/config.toml` runs the CLI in a subprocess started in that folder (`in_folder`). Tests
of what needs no files use the in-process `devportal` fixture (tests/conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CliResult, run_devportal

# what a developer may have exported that would change what these tests see
OWN_PREFIXES = ("SOURCES__DEVPORTAL__", "ANALYTICS__", "ALERTS__", "DESTINATION__", "DLT_")


def write_settings(folder: Path, config: str = "", secrets: str = "") -> Path:
    """FOLDER/.dlt/config.toml and secrets.toml with these texts (none written when empty)."""
    dot_dlt = folder / ".dlt"
    dot_dlt.mkdir(parents=True, exist_ok=True)
    if config:
        (dot_dlt / "config.toml").write_text(config, "utf-8")
    if secrets:
        (dot_dlt / "secrets.toml").write_text(secrets, "utf-8")
    return dot_dlt


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh project folder, with no `.dlt/` until a test writes one."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def in_folder(project: Path) -> Callable[..., CliResult]:
    """`in_folder(*argv, env={...}, cwd=...)`: `python -m devportal ARGV` started in CWD
    (`project` by default) with ENV on top of this environment, without any setting of
    devportal's sections or dlt's folders a developer may have exported."""

    def run(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> CliResult:
        clean: dict[str, str | None] = {k: None for k in os.environ if k.startswith(OWN_PREFIXES)}
        return run_devportal(*argv, env={**clean, **(env or {})}, cwd=cwd or project)

    return run


@pytest.fixture
def database(postgres_cluster: Any) -> Iterator[str]:
    """A fresh database on the session's PostgreSQL cluster (tests/postgres.py); its name. The
    cluster trusts local connections: no password is asked for."""
    name: str = postgres_cluster.create_database()
    yield name
    postgres_cluster.drop_database(name)
