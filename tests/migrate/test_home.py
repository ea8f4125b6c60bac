"""PostgreSQL as the warehouse's home (issue 35), through the real CLI in a project folder of
its own: one setting (`warehouse_destination` under `[sources.devportal]`, or its environment
variable) makes every command use PostgreSQL with no flag; `--destination` and `--warehouse`
still win. After `devportal migrate` to PostgreSQL, the DuckDB file the warehouse left is
marked: a command reading it says in one line where the warehouse went and the setting, instead
of showing its figures as current; `status` shows it and exits 1; migrate's last line names the
setting; a migration back into the file takes it up again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg2

from tests.helpers import CliResult, run_devportal
from tests.migrate.helpers import MANIFEST

HOME_ENV = "SOURCES__DEVPORTAL__WAREHOUSE_DESTINATION"
SETTING = 'warehouse_destination = "postgres"'


def _project(folder: Path, sb: Any, *, home: bool) -> Path:
    """A project folder as `devportal init` leaves it, with the sandbox's address (and, HOME,
    PostgreSQL as the warehouse); the token is in the environment (`_run`)."""
    (folder / ".dlt").mkdir(parents=True)
    lines = ["[sources.devportal]", f'base_url = "{sb.base_url}"']
    if home:
        lines.append(SETTING)
    (folder / ".dlt" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _run(folder: Path, sb: Any, *argv: str, **env: str | None) -> CliResult:
    token: dict[str, str | None] = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token, HOME_ENV: None}
    return run_devportal(*argv, env={**token, **env}, cwd=folder, timeout=240)


def _runs(uri: str) -> int:
    con = psycopg2.connect(uri)
    try:
        with con.cursor() as cursor:
            cursor.execute("select count(*) from devportal.sync_runs")
            return int(cursor.fetchone()[0])
    finally:
        con.close()


def test_the_configured_home_is_used_by_every_command_with_no_flag(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=60, users=15, seed=351)
    folder = _project(tmp_path / "project", sb, home=True)
    duckdb_file = folder / "warehouse" / "warehouse.duckdb"

    synced = _run(folder, sb, "sync", "--quiet")
    assert synced.code == 0 and synced.err == "", synced.err
    assert _runs(postgres) == 1
    assert not duckdb_file.exists()  # --warehouse's default only places dlt's folder

    for argv in (
        ("models",),
        ("report", "--format", "json"),
        ("digest", "--no-post"),
        ("manifest", "load", str(MANIFEST)),
    ):
        done = _run(folder, sb, *argv)
        assert done.code == 0, (argv, done.err)
        assert "no warehouse" not in done.out + done.err, argv
    report = json.loads(_run(folder, sb, "report", "--format", "json").out)
    assert report  # figures read from PostgreSQL
    status = _run(folder, sb, "status", "--format", "json")
    assert status.code == 0, status.err
    assert json.loads(status.out)["destination"] == "postgres"

    # an explicit --warehouse names a DuckDB file, over the setting; --destination duckdb too
    for argv in (("--warehouse", str(duckdb_file)), ("--destination", "duckdb")):
        there = _run(folder, sb, "status", *argv)
        assert there.code == 1 and "no warehouse file there yet" in there.out, there.out
    # the environment variable alone does it too, and `duckdb` there undoes the file's setting
    plain = _project(tmp_path / "plain", sb, home=False)
    viaenv = _run(plain, sb, "status", "--format", "json", **{HOME_ENV: "postgres"})
    assert viaenv.code == 0 and json.loads(viaenv.out)["destination"] == "postgres"
    undone = _run(folder, sb, "status", **{HOME_ENV: "duckdb"})
    assert undone.code == 1 and "no warehouse file there yet" in undone.out
    bad = _run(folder, sb, "report", **{HOME_ENV: "post gres"})
    assert bad.code == 2 and bad.err.count("\n") == 1, bad.err
    assert "warehouse_destination = 'post gres'" in bad.err


def test_after_migrate_the_old_file_says_where_the_warehouse_went(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=60, users=15, seed=352)
    folder = _project(tmp_path / "project", sb, home=False)
    assert _run(folder, sb, "sync", "--quiet").code == 0
    old = Path("warehouse") / "warehouse.duckdb"

    moved = _run(folder, sb, "migrate", "--from-warehouse", str(old), "--destination", "postgres")
    assert moved.code == 0, moved.err
    last = moved.out.splitlines()[-1]
    assert SETTING in last and HOME_ENV + "=postgres" in last, moved.out
    assert "marked as moved" in last

    # the old file: every reader says where it went, in one line, and shows no figures
    for argv in (("report",), ("digest", "--no-post"), ("models",), ("sync",)):
        refused = _run(folder, sb, *argv)
        assert refused.code == 2 and refused.out == "", (argv, refused.out)
        assert refused.err.count("\n") == 1, refused.err
        said = refused.err
        assert f"warehouse {old} was moved to PostgreSQL dataset devportal" in said, said
        assert SETTING in said and "--destination postgres" in said
    status = _run(folder, sb, "status")
    assert status.code == 1 and status.out.startswith("status"), status.out
    assert "moved: warehouse" in status.out.splitlines()[0]
    as_json = json.loads(_run(folder, sb, "status", "--format", "json").out)
    assert as_json["state"] == "moved" and as_json["moved"]["to"] == "postgres"

    # with the setting, a plain report reads the new home, and a sync goes on there
    home = {HOME_ENV: "postgres"}
    report = _run(folder, sb, "report", **home)
    assert report.code == 0 and report.err == "", report.err
    sb.advance(days=2)
    assert _run(folder, sb, "sync", "--quiet", **home).code == 0
    assert _runs(postgres) == 2
    assert _run(folder, sb, "status", **home).code == 0

    # back: from the home, migrate's default target is the DuckDB file, taken up again
    again = _run(folder, sb, "migrate", "--from-destination", "postgres", "--replace", **home)
    assert again.code == 0, again.err
    assert "set it to duckdb" in again.out.splitlines()[-1], again.out
    fresh = _run(folder, sb, "status")
    assert fresh.code == 0, fresh.out
    assert _run(folder, sb, "report").code == 0
