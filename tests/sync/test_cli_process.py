"""`devportal sync` as its own program: the models are built by a fresh process image.

Run as the console program (`python -m devportal`), a sync that builds the models hands that
work to `devportal models` in its own place (exec), so the sync's memory is gone before DuckDB
builds them. Called inside another process (`cli.main(argv)`, as the other tests do), it never
does: it builds them in place. Both give the same output and exit codes.

That exec is one of the sync's speed-ups (`cli.speedups`, with the early start and the pandas
block); `DEVPORTAL_SPEEDUPS=off` turns them all off and the warehouse comes out the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import CliResult, query, run_devportal


def run_program(sb: Any, warehouse: Path, *extra: str, speedups: str = "on") -> CliResult:
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token, "DEVPORTAL_SPEEDUPS": speedups}
    return run_devportal(
        "--debug", "sync", "--base-url", sb.base_url, "--warehouse", str(warehouse),
        "--progress", "off", "--verbose", *extra, env=env, timeout=300,
    )  # fmt: skip


def test_the_program_builds_the_models_in_a_fresh_process(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=300, users=30, seed=41)
    warehouse = tmp_path / "wh.duckdb"
    done = run_program(sb, warehouse)
    assert done.code == 0, done.err
    assert "models: building them in a fresh process: exec" in done.err
    lines = done.out.splitlines()
    assert lines[0].startswith("sync ok (sweep)") and lines[-1].startswith("models ok: ")
    live = len([row for row in sb.truth() if not row.get("is_test")])
    assert query(warehouse, "select count(*) from analytics.subscriptions_current") == [(live,)]


def test_a_sync_inside_another_process_builds_them_in_place(
    sandbox_factory: Any, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    from devportal.cli import main

    sb = sandbox_factory(subscriptions=300, users=30, seed=41)
    monkeypatch.setenv("SOURCES__DEVPORTAL__ACCESS_TOKEN", sb.token)
    warehouse = tmp_path / "wh.duckdb"
    code = main(["sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), "--verbose"])
    out = capsys.readouterr().out
    assert code == 0 and out.splitlines()[-1].startswith("models ok: ")
    assert query(warehouse, "select count(*) from analytics.as_of") == [(1,)]


def analytics(warehouse: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every analytics table's rows, sorted; without the run's own ids and clocks."""
    columns = query(
        warehouse,
        "select table_name, list(column_name order by ordinal_position) "
        "from information_schema.columns where table_schema = 'analytics' "
        "and column_name not in ('run_id', 'load_id', 'last_run_id') group by table_name",
    )
    return {
        name: query(warehouse, f"select {', '.join(cols)} from analytics.{name} order by all")
        for name, cols in columns
        if name != "stg_sync_runs"  # the runs' clocks and durations differ in any two runs
    }


def test_without_the_speedups_the_warehouse_is_the_same(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """`DEVPORTAL_SPEEDUPS=off`: no early client, no pandas block, the models built in place
    (no exec); every analytics table holds the same rows as with them on."""
    sb = sandbox_factory(subscriptions=400, users=40, seed=43)
    fast, plain = tmp_path / "fast.duckdb", tmp_path / "plain.duckdb"
    on = run_program(sb, fast)
    off = run_program(sb, plain, speedups="off")
    assert on.code == 0 and off.code == 0, (on.err, off.err)
    assert "fresh process: exec" in on.err and "fresh process: exec" not in off.err
    assert off.out.splitlines()[-1].startswith("models ok: ")
    fast_rows, plain_rows = analytics(fast), analytics(plain)
    assert len(fast_rows) > 20 and fast_rows["subscriptions_current"]
    assert fast_rows == plain_rows
