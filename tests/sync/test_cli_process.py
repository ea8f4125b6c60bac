"""`devportal sync` as its own program: the models are built by a fresh process image.

Run as the console program (`python -m devportal`), a sync that builds the models hands that
work to `devportal models` in its own place (exec), so the sync's memory is gone before DuckDB
builds them. Called inside another process (`cli.main(argv)`, as the other tests do), it never
does: it builds them in place. Both give the same output and exit codes.

That exec is one of the sync's speed-ups (`cli.speedups`, with the early start and the pandas
block); `DEVPORTAL_SPEEDUPS=off` turns them all off and the warehouse comes out the same.
"""

from __future__ import annotations

import os
from datetime import date
from decimal import Decimal
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


def test_the_fresh_process_builds_with_the_syncs_settings_without_loading_dlt(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """The sync hands the settings it resolved (prices, status treatments: the seeds; whether a
    churn alert is configured) to the models' process it execs (`cli.speedups`), which then
    builds without importing dlt at all: the same seeds as a build that resolves them itself."""
    import json
    import subprocess
    import sys

    from devportal.models.seeds import HANDED_OVER, decode_seeds, encode_seeds, price_seeds

    settings = {
        "ANALYTICS__CURRENCY": "EUR",
        "ANALYTICS__PRICE_MONTHLY": "4.99",
        "ANALYTICS__PRICE_YEARLY": "49.99",
        "ANALYTICS__STATUS_MAP": json.dumps({"past_due": "canceled"}),
    }
    sb = sandbox_factory(subscriptions=200, users=20, seed=42)
    warehouse = tmp_path / "wh.duckdb"
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token, **settings}
    done = run_devportal(
        "--debug", "sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), env=env
    )
    assert done.code == 0, done.err
    assert "models: building them in a fresh process: exec" in done.err
    seeds_sql = (
        "select (select list(s order by s) from (select status || '=' || treated_as as s from "
        "analytics.status_map)), (select list(p order by p) from (select period || ' ' || "
        "amount || ' ' || mrr_amount as p from analytics.prices))"
    )
    handed = query(warehouse, seeds_sql)
    assert handed[0][0] == ["active=active", "canceled=canceled", "past_due=canceled"]
    assert len(handed[0][1]) == 3  # monthly, yearly, unknown (as monthly)
    resolved = run_devportal("models", "--warehouse", str(warehouse), env=settings)
    assert resolved.code == 0, resolved.err
    assert query(warehouse, seeds_sql) == handed

    # the handed-over seeds read back exactly (dates and decimals included)
    from devportal.settings.prices import Price, PriceBook

    book = PriceBook(
        "EUR", Decimal("0.7"), (Price("monthly", Decimal("4.99"), date(2026, 1, 1), None),), "t"
    )
    seeds = price_seeds(book)
    assert decode_seeds(encode_seeds(seeds)) == seeds
    # the process given them imports no dlt module
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "devportal", "models", "--after-sync",
         "--warehouse", str(warehouse)],
        env={**os.environ, HANDED_OVER: encode_seeds(seeds), "DEVPORTAL_CHURN_ALERTS": "off"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    imported = [line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()]
    assert "duckdb" in imported and not [m for m in imported if m.split(".")[0] == "dlt"]
