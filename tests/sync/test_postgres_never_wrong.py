"""Issue 22 on PostgreSQL: live and test subscriptions sharing ids never mix, and a child row
never outlives what the latest read of its parent says, through the real `devportal sync
--destination postgres` against the hostile API (tests/hostile/server.py) on a throwaway
cluster (tests/postgres.py). The DuckDB side is tests/hostile/test_never_wrong.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devportal.cli import main
from devportal.engines import connect
from tests.hostile import shared_ids
from tests.hostile.server import HostileApi

CREDENTIALS = "DESTINATION__POSTGRES__CREDENTIALS"


@pytest.fixture
def api() -> Iterator[HostileApi]:
    with HostileApi() as server:
        yield server


class Cli:
    """The real `devportal` CLI in this process, against one PostgreSQL database at a time."""

    def __init__(
        self, api: HostileApi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.api, self.monkeypatch, self.capsys = api, monkeypatch, capsys

    def __call__(self, uri: str, *argv: str, **settings: Any) -> str:
        self.monkeypatch.setenv(CREDENTIALS, uri)
        self.monkeypatch.setenv("SOURCES__DEVPORTAL__ACCESS_TOKEN", self.api.token)
        for key, value in settings.items():
            self.monkeypatch.setenv(f"SOURCES__DEVPORTAL__{key.upper()}", str(value))
        self.capsys.readouterr()
        code = main([*argv, "--destination", "postgres"])
        out = self.capsys.readouterr()
        for key in settings:
            self.monkeypatch.delenv(f"SOURCES__DEVPORTAL__{key.upper()}")
        assert code == 0, out.out + out.err
        return out.out

    def sync(self, uri: str, warehouse: Path, *extra: str, **settings: Any) -> str:
        args = ["sync", "--base-url", self.api.base_url, "--warehouse", str(warehouse)]
        return self(uri, *args, "--no-models", *extra, **settings)

    def query(self, uri: str, sql: str) -> list[tuple[Any, ...]]:
        self.monkeypatch.setenv(CREDENTIALS, uri)
        with connect("unused.duckdb", "postgres") as engine:
            return engine.execute(sql)


@pytest.fixture
def cli(
    api: HostileApi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Cli:
    return Cli(api, monkeypatch, capsys)


def current(cli: Cli, uri: str, is_test: bool) -> list[tuple[Any, ...]]:
    return cli.query(
        uri,
        "SELECT id, service_id, status, to_char(expires_at, 'YYYY-MM-DD HH24:MI:SS') "
        f"FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL AND is_test = {is_test} "
        "ORDER BY id",
    )


def listed(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["service_id"], r["status"], r["expires_at"]) for r in rows)


def test_live_figures_are_the_same_with_and_without_include_test_on_postgres(
    api: HostileApi, cli: Cli, postgres: str, postgres_cluster: Any, tmp_path: Path
) -> None:
    other = postgres_cluster.create_database()
    try:
        uris = {False: postgres, True: postgres_cluster.uri(other)}

        def run(include_test: bool, extra: list[str]) -> None:
            warehouse = tmp_path / str(include_test) / "pg.duckdb"
            cli.sync(uris[include_test], warehouse, *extra, **shared_ids.SETTINGS)

        shared_ids.scenario(api, run)
        for include_test, uri in uris.items():
            cli(uri, "models", "--warehouse", str(tmp_path / str(include_test) / "pg.duckdb"))
        live, both = uris[False], uris[True]
        assert current(cli, live, False) == current(cli, both, False) == listed(api.subscriptions)
        assert current(cli, both, True) == listed(api.test_subscriptions or [])
        for uri in uris.values():  # and one version per change, in both lists
            assert cli.query(uri, shared_ids.REPEATED_VERSIONS) == [(0,)]
        for name, sql in shared_ids.LIVE_MODELS.items():
            assert sorted(map(repr, cli.query(live, sql))) == sorted(
                map(repr, cli.query(both, sql))
            ), name
        usable = sum(r["expires_at"] > "2026-12-05 00:00:00" for r in api.subscriptions)
        figures = "SELECT usable_subscribers, last_full_month_churned FROM analytics.report_figures"
        assert cli.query(live, figures) == [(usable, 1)]
    finally:
        postgres_cluster.drop_database(other)


def test_children_follow_the_latest_read_of_their_parent_on_postgres(
    api: HostileApi, cli: Cli, postgres: str, tmp_path: Path
) -> None:
    api.subscriptions = [
        {"id": i, "service_id": 1000 + i, "status": "active", "expires_at": "2027-01-01 10:00:00"}
        for i in range(1, 4)
    ]
    api.settings = [
        {"user": {"service": {"id": 1001}}, "settings": {"a": "", "b": {"c": None}}},
        {"user": {"service": {"id": 1002}}, "settings": {"d": True}},
        {"user": {"service": {"id": 1003}}, "settings": {"e": "kept"}},
    ]
    api.accounts = {
        1001: {"primary": "twitch", "twitch": {"id": 1, "name": ""}, "youtube": {"id": "UC1"}},
        1002: {"primary": "mixer", "mixer": {"id": 2, "name": "b"}},
        1003: {"primary": "twitch", "twitch": {"id": 3, "name": "c"}},
    }
    warehouse = tmp_path / "pg.duckdb"
    values_sql = "SELECT user_id, key, value FROM devportal.user_setting_values ORDER BY 1, 2"
    profiles_sql = "SELECT user_id, platform FROM devportal.user_account_profiles ORDER BY 1, 2"
    cli.sync(postgres, warehouse, accounts_ttl_days=0)
    assert [v[0] for v in cli.query(postgres, values_sql)] == [1001, 1001, 1002, 1003]
    assert [p[0] for p in cli.query(postgres, profiles_sql)] == [1001, 1001, 1002, 1003]

    api.settings[0]["settings"] = {}
    api.settings[1]["settings"] = None
    del api.accounts[1001]  # 404 now
    api.accounts[1002] = {"primary": None}
    cli.sync(postgres, warehouse, accounts_ttl_days=0)
    assert cli.query(postgres, values_sql) == [(1003, "/e", "kept")]
    assert cli.query(postgres, profiles_sql) == [(1003, "twitch")]
    for table in ("user_setting_values", "user_account_profiles"):
        count = f"SELECT count(*) FROM devportal.{table} WHERE _tombstone"
        assert cli.query(postgres, count) == [(0,)]

    api.settings[0]["settings"] = {"z": ""}  # an empty string stays one on PostgreSQL
    api.accounts[1001] = {"primary": "youtube", "youtube": {"id": "UC9"}}
    cli.sync(postgres, warehouse, accounts_ttl_days=0)
    assert cli.query(postgres, values_sql) == [(1001, "/z", ""), (1003, "/e", "kept")]
    assert cli.query(postgres, profiles_sql) == [(1001, "youtube"), (1003, "twitch")]
