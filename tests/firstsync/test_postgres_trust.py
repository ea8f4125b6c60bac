"""PostgreSQL credentials without a password (a server that trusts the connection, or libpq's
`~/.pgpass` / `PGPASSWORD`) work in every command: `sync`, `models`, `report`, `status` and
`demo --destination postgres`, as a URI and as dlt's separate fields. dlt's own credentials
require a password ("Missing 1 field(s)"); devportal resolves them once, one way
(`config.postgres_login`), the password optional. What is really missing (a user name) is the
same one line in every command.

The session's pgserver cluster trusts local connections (tests/postgres.py): no password is
asked, none is sent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CliResult

CREDENTIALS = "DESTINATION__POSTGRES__CREDENTIALS"


def trust_uri(cluster: Any, database: str) -> str:
    """The database's URI without a password (the socket folder in `host=`, libpq's form)."""
    return f"postgresql://postgres@localhost/{database}?host={cluster.local.folder}"


def fields(cluster: Any, database: str) -> dict[str, str]:
    """The same as dlt's separate fields, no PASSWORD among them."""
    return {
        f"{CREDENTIALS}__USERNAME": "postgres",
        f"{CREDENTIALS}__HOST": "localhost",
        f"{CREDENTIALS}__DATABASE": database,
        f"{CREDENTIALS}__QUERY": f'{{"host": "{cluster.local.folder}"}}',
    }


def psql_count(cluster: Any, database: str, sql: str) -> int:
    """The one number SQL counts in DATABASE, read with psql (not devportal's connection)."""
    out = cluster.local.server.psql(f"\\c {database}\n\\pset tuples_only on\n{sql};")
    (number,) = [line.strip() for line in out.splitlines() if line.strip().isdigit()]
    return int(number)


@pytest.mark.parametrize("form", ["uri", "fields"])
def test_every_command_runs_on_credentials_without_a_password(
    devportal: Callable[..., CliResult],
    sandbox_factory: Callable[..., Any],
    postgres_cluster: Any,
    database: str,
    tmp_path: Path,
    form: str,
) -> None:
    sb = sandbox_factory(subscriptions=60, users=10, seed=11)
    env = (
        {CREDENTIALS: trust_uri(postgres_cluster, database)}
        if form == "uri"
        else fields(postgres_cluster, database)
    )
    env["SOURCES__DEVPORTAL__ACCESS_TOKEN"] = sb.token
    where = ["--destination", "postgres", "--warehouse", str(tmp_path / "wh" / "w.duckdb")]
    synced = devportal("sync", "--base-url", sb.base_url, *where, env=env)
    assert synced.code == 0, synced.err
    assert f"database {database} on localhost" in synced.out, synced.out
    for command in (["models", "--check"], ["report", "--format", "json"], ["status"]):
        result = devportal(*command, *where, env=env)
        assert result.code == 0, (command, result.err)
    # what the sync loaded is there, read with the same credentials
    current = "select count(*) from devportal.subscriptions where _dlt_valid_to is null"
    assert psql_count(postgres_cluster, database, current) == len(sb.truth(is_test=False))


def test_the_demo_runs_on_a_server_given_without_a_password(
    devportal: Callable[..., CliResult], postgres_cluster: Any, database: str, tmp_path: Path
) -> None:
    result = devportal(
        "demo",
        "--destination",
        "postgres",
        "--warehouse",
        str(tmp_path / "demo" / "w.duckdb"),
        "--subscriptions",
        "200",
        "--users",
        "30",
        "--syncs",
        "2",
        "--quiet",
        env={CREDENTIALS: trust_uri(postgres_cluster, database)},
    )
    assert result.code == 0, result.err
    assert psql_count(postgres_cluster, database, "select count(*) from devportal.sync_runs") == 2


def test_what_is_really_missing_is_the_same_line_in_every_command(
    devportal: Callable[..., CliResult], postgres_cluster: Any, database: str, tmp_path: Path
) -> None:
    """A URI without a user name: each command says so, in the same words, and no password is
    asked for (it is optional)."""
    env = {
        CREDENTIALS: f"postgresql://localhost/{database}?host={postgres_cluster.local.folder}",
        "SOURCES__DEVPORTAL__ACCESS_TOKEN": "first-sync-token-0123456789",
    }
    where = ["--destination", "postgres", "--warehouse", str(tmp_path / "wh" / "w.duckdb")]
    commands = [
        ["sync", "--base-url", "http://127.0.0.1:9"],
        ["models"],
        ["report"],
        ["status"],
    ]
    lines = set()
    for command in commands:
        result = devportal(*command, *where, env=env)
        assert result.code == 2, (command, result.err)
        lines.add(result.err.strip().splitlines()[-1])
    (line,) = lines
    assert line.startswith(
        "devportal: error: PostgreSQL credentials lack username (a password is optional): set "
        "DESTINATION__POSTGRES__CREDENTIALS (or [destination.postgres.credentials] in "
        ".dlt/secrets.toml) to postgresql://user[:password]@host:5432/database; "
    ), line
