"""Shared fixtures: a real sandbox on 127.0.0.1 and a real DuckDB warehouse in a temp dir."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CliResult, OnEngine

# dlt reads `.dlt/` from the working directory; tests must not pick up a developer's config.
os.environ.setdefault("RUNTIME__LOG_LEVEL", "WARNING")
# no anonymous usage reports to dlt's servers from a test run (and no network beyond loopback)
os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
for _key in list(os.environ):
    if _key.startswith(("SOURCES__DEVPORTAL__", "ALERTS__")):
        del os.environ[_key]
# no alert leaves a test run for a developer's own webhook (in .dlt/secrets.toml or ~/.dlt: the
# environment wins over both); tests/operations points them at a receiver of its own
os.environ["ALERTS__WEBHOOK_URL"] = ""
os.environ["RUNTIME__SLACK_INCOMING_HOOK"] = ""


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "wh" / "warehouse.duckdb"


@pytest.fixture
def sandbox_factory() -> Iterator[Any]:
    """Start sandboxes with any world; all are stopped at the end of the test."""
    from devportal.sandbox import Sandbox

    started: list[Any] = []

    def make(**kwargs: Any) -> Any:
        kwargs.setdefault("start", "2026-11-01 00:00:00")
        sb = Sandbox(**kwargs).start()
        started.append(sb)
        return sb

    yield make
    for sb in started:
        sb.stop()


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Any]:
    """One throwaway PostgreSQL cluster for the session (see tests/postgres.py)."""
    from tests.postgres import cluster

    with cluster() as started:
        yield started


@pytest.fixture
def postgres(postgres_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh database on the cluster, set as dlt's `postgres` destination; its URI."""
    name = postgres_cluster.create_database()
    uri = postgres_cluster.uri(name)
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", uri)
    yield uri
    postgres_cluster.drop_database(name)


@pytest.fixture(params=["duckdb", "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> OnEngine:
    """The test once on DuckDB (a warehouse file in a temp dir) and once on PostgreSQL (a fresh
    database on the session's cluster, set as dlt's `postgres` destination): what it needs of
    either (`OnEngine`: --warehouse/--destination, the environment, a query function)."""
    warehouse = tmp_path / request.param / "warehouse.duckdb"
    if request.param == "duckdb":
        return OnEngine("duckdb", warehouse)
    uri: str = request.getfixturevalue("postgres")
    return OnEngine("postgres", warehouse, uri, request.getfixturevalue("postgres_cluster"))


@pytest.fixture
def api() -> Iterator[Any]:
    """The deliberately imperfect Developer API (tests/hostile/server.py) on 127.0.0.1."""
    from tests.hostile.server import HostileApi

    with HostileApi() as server:
        yield server


@pytest.fixture
def devportal(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """`devportal(*argv, env={...})`: the real CLI entry point in this process, its exit code
    and output (a CliResult)."""
    from devportal.cli import main

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
