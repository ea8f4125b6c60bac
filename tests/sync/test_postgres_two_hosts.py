"""Two syncs into one PostgreSQL database at once (two cron hosts, a laptop and a server).

Each run is its own `devportal` program with its own working folder, as on two machines: the
lock file of one cannot stop the other, so only the database's advisory lock can. The second
run exits 3 with one line; the history keeps one current version per id and exactly the
versions a serial run would write.
"""

from __future__ import annotations

import threading
from pathlib import Path
from subprocess import Popen
from typing import Any

from devportal.sandbox.app import ENDPOINT_SETTINGS
from devportal.warehouse.engines import connect
from devportal.warehouse.target import Target
from tests.helpers import HISTORY, TWO_CURRENT, finished, query, start_devportal, sync_from


def on_postgres(sql: str) -> list[tuple[Any, ...]]:
    with connect(Target.of("unused.duckdb", "postgres")) as engine:
        return engine.execute(sql)


def start_host(sb: Any, folder: Path, postgres: str) -> Popen[str]:
    """`devportal sync --destination postgres` as its own program, working folder FOLDER."""
    env = {
        "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token,
        "DESTINATION__POSTGRES__CREDENTIALS": postgres,
    }
    return start_devportal(
        "sync", "--base-url", sb.base_url, "--warehouse", str(folder / "warehouse.duckdb"),
        "--destination", "postgres", "--no-models", "--progress", "off", env=env,
    )  # fmt: skip


def finish(proc: Popen[str]) -> tuple[int, str, str]:
    done = finished(proc, timeout=300)
    return done.code, done.out, done.err


def assert_busy(code: int, out: str, err: str) -> None:
    assert code == 3, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "busy" in lines[0], err
    assert "Traceback" not in err and "nspname" not in err


def test_a_second_host_waits_out_the_first_with_exit_3(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=900, users=60, seed=23)
    holding, release = threading.Event(), threading.Event()
    held = []

    def hold_settings(world: Any, endpoint: str, page: int) -> None:
        # the first run reads settings only once it holds its locks: hold it there
        if endpoint == ENDPOINT_SETTINGS and not held:
            held.append(page)
            holding.set()
            release.wait(120)

    sb.set_page_hook(hold_settings)
    first = start_host(sb, tmp_path / "host-a", postgres)
    try:
        assert holding.wait(120), "the first run never reached the settings list"
        code, out, err = finish(start_host(sb, tmp_path / "host-b", postgres))
        assert_busy(code, out, err)
        assert "devportal run (pid" in err  # names the holder
    finally:
        release.set()
    code, out, err = finish(first)
    assert code == 0, err
    assert out.startswith("sync ok (sweep)")
    # the lock went with the first run: a third run goes through
    sb.set_page_hook(None)
    code, out, err = finish(start_host(sb, tmp_path / "host-b", postgres))
    assert code == 0, err
    current = on_postgres(
        "SELECT id, status FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL ORDER BY id"
    )
    assert current == [(r["id"], r["status"]) for r in sorted(sb.truth(), key=lambda r: r["id"])]
    assert on_postgres(TWO_CURRENT) == []


def test_racing_hosts_over_several_rounds_write_exactly_the_serial_history(
    sandbox_factory: Any, postgres: str, tmp_path: Path
) -> None:
    """Both hosts start together every round; whichever runs, the history is the one a single
    host syncing once per round writes (the sandbox's clock stands still within a round)."""
    sb = sandbox_factory(subscriptions=1200, users=80, seed=29)
    serial = tmp_path / "serial" / "warehouse.duckdb"
    outcomes: list[int] = []
    for round_ in range(4):
        if round_:
            changes = sb.advance(days=12)
            assert changes["canceled"] or changes["new"]
        hosts = [start_host(sb, tmp_path / f"host-{n}", postgres) for n in "ab"]
        for code, out, err in map(finish, hosts):
            outcomes.append(code)
            if code != 0:
                assert_busy(code, out, err)
        assert 0 in outcomes[-2:], "neither host synced this round"
        sync_from(sb, serial)
    assert on_postgres(TWO_CURRENT) == []
    pg_history = on_postgres(HISTORY)
    duck_history = query(serial, HISTORY)
    # versions are stamped with the server clock, the same for both hosts of a round; a host
    # that ran second in a round (no change) adds nothing
    assert pg_history == duck_history
    assert len(pg_history) > len(sb.truth())
