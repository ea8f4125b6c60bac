"""What the report's figures rest on: the last verified full read of the live subscription list,
the partial reads since, or none at all.

Through the real CLI (`devportal sync`, `devportal report`, in this process) against real
servers: the sandbox for verified sweeps and window syncs, the hostile server for an API whose
pages carry no `total` (a sweep that cannot be verified). `analytics.as_of` holds the facts
(`has_verified_sweep`, `last_verified_sweep_at`, `window_syncs_since_verified_sweep`,
`unverified_sweeps_since_verified_sweep`), and every report format says them in one line.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devportal import models
from devportal.cli import main
from tests.helpers import query
from tests.hostile.server import HostileApi

Cli = Callable[..., str]
BASED = "Based on the full subscription list read and verified at "
PARTIAL = "Partial: no complete, verified read of the subscription list yet"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """`cli(*argv, token=...)`: the real `devportal` entry point; asserts exit 0, returns
    stdout."""

    def run(*argv: str, token: str | None = None) -> str:
        if token is not None:
            monkeypatch.setenv("SOURCES__DEVPORTAL__ACCESS_TOKEN", token)
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    return run


def as_of(warehouse: Path) -> dict[str, Any]:
    names = (
        "has_verified_sweep",
        "last_verified_sweep_at",
        "window_syncs_since_verified_sweep",
        "unverified_sweeps_since_verified_sweep",
    )
    [row] = query(warehouse, f"select {', '.join(names)} from analytics.as_of")
    return dict(zip(names, row, strict=True))


def live_ids(warehouse: Path) -> int:
    [(n,)] = query(
        warehouse, "select count(distinct id) from devportal.subscriptions where not is_test"
    )
    return int(n)


def every_format(cli: Cli, warehouse: Path, tmp_path: Path) -> dict[str, str]:
    """The basis line as each format prints it (text: the line itself)."""
    wh = ["--warehouse", str(warehouse)]
    figures = json.loads(cli("report", *wh, "--format", "json"))
    rows = list(csv.DictReader(io.StringIO(cli("report", *wh, "--format", "csv"))))
    table = cli("report", *wh, "--format", "table").splitlines()
    markdown = cli("report", *wh, "--format", "markdown").splitlines()
    page = tmp_path / "report.html"
    cli("report", *wh, "--html", str(page))
    text = page.read_text(encoding="utf-8")
    start = text.index('<p class="basis')
    paragraph = text[text.index(">", start) + 1 : text.index("</p>", start)]
    return {
        "json": figures["data_basis"],
        "csv": next(r["value"] for r in rows if r["metric"] == "data_basis"),
        "table": table[1],
        "markdown": markdown[2],
        "html": html.unescape(paragraph.replace("<strong>", "").replace("</strong>", "")),
    }


def assert_said_everywhere(said: dict[str, str], line: str) -> None:
    assert said["json"] == said["csv"] == said["table"] == said["html"] == line
    # Markdown: a quote, its characters escaped (a partial line opens in bold)
    unescaped = said["markdown"].replace("\\", "").replace("**", "")
    assert unescaped == "> " + line


def test_window_syncs_after_a_verified_sweep_are_counted_on_top_of_it(
    sandbox_factory: Any, cli: Cli, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=300, users=40, seed=5)
    warehouse = tmp_path / "warehouse.duckdb"
    sync = ["sync", "--base-url", sb.base_url, "--warehouse", str(warehouse)]
    cli(*sync, token=sb.token)  # a full sweep, verified
    swept_at = sb.now
    for _ in range(3):
        sb.advance(hours=1)
        cli(*sync, "--since", "2026-10-01", token=sb.token)
    assert as_of(warehouse) == {
        "has_verified_sweep": True,
        "last_verified_sweep_at": swept_at,
        "window_syncs_since_verified_sweep": 3,
        "unverified_sweeps_since_verified_sweep": 0,
    }
    line = f"{BASED}{swept_at:%Y-%m-%d %H:%M:%S} (+3 window syncs since)"
    assert_said_everywhere(every_format(cli, warehouse, tmp_path), line)

    sb.advance(hours=1)
    cli(*sync, token=sb.token)  # the nightly sweep: the figures rest on it alone again
    assert as_of(warehouse)["window_syncs_since_verified_sweep"] == 0
    line = f"{BASED}{sb.now:%Y-%m-%d %H:%M:%S}"
    assert_said_everywhere(every_format(cli, warehouse, tmp_path), line)


def hostile_rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "service_id": 500 + i % 7,
            "status": "active",
            "expires_at": "2099-01-01 00:00:00",
        }
        for i in range(1, n + 1)
    ]


def test_sweeps_that_cannot_be_verified_leave_the_figures_partial(
    api: HostileApi, cli: Cli, tmp_path: Path
) -> None:
    """Pages without `total` (Laravel's simple paginator): the sweep loads what it read but
    cannot prove it is the whole list; nor can a window sync after it."""
    api.simple_paginator = True
    api.subscriptions = hostile_rows(7)
    warehouse = tmp_path / "warehouse.duckdb"
    sync = ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse)]
    sync += ["--resources", "subscriptions"]
    cli(*sync, token=api.token)
    api.subscriptions = hostile_rows(9)
    cli(*sync, "--since", "2020-01-01", token=api.token)
    facts = as_of(warehouse)
    assert not facts["has_verified_sweep"] and facts["last_verified_sweep_at"] is None
    # the window sync is a window or, where devportal turns a window without a verified sweep
    # into a sweep, one more unverified sweep: the two counts hold both runs either way
    assert facts["window_syncs_since_verified_sweep"] >= 0
    unverified = facts["unverified_sweeps_since_verified_sweep"]
    assert facts["window_syncs_since_verified_sweep"] + unverified == 2
    assert live_ids(warehouse) == 9
    said = every_format(cli, warehouse, tmp_path)
    line = said["json"]
    assert line.startswith(PARTIAL)
    assert (
        f"({unverified} sweep{'s' if unverified > 1 else ''} read it, none verified against "
        "the API's total: see sync_runs.sweeps)" in line
    )
    assert line.endswith(
        "; counts cover only the 9 subscriptions read so far. Run `devportal sync` (a full sweep)."
    )
    assert_said_everywhere(said, line)
    figures = json.loads(cli("report", "--warehouse", str(warehouse), "--format", "json"))
    assert (figures["has_verified_sweep"], figures["subscriptions_read"]) == (False, 9)

    api.simple_paginator = False  # the API says its total again: the next sweep is verified
    cli(*sync, token=api.token)
    assert as_of(warehouse)["has_verified_sweep"]
    assert every_format(cli, warehouse, tmp_path)["table"].startswith(BASED)


def test_a_warehouse_of_an_older_devportal_has_no_verified_sweep(
    sandbox_factory: Any, cli: Cli, tmp_path: Path
) -> None:
    """Runs recorded before devportal verified its sweeps (no `verified` in `sweeps`) cannot
    say the list was whole."""
    sb = sandbox_factory(subscriptions=120, users=20, seed=8)
    warehouse = tmp_path / "warehouse.duckdb"
    cli("sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), token=sb.token)
    con = duckdb.connect(str(warehouse))
    try:
        con.execute(
            "update devportal.sync_runs set sweeps = "
            "replace(cast(sweeps as varchar), '\"verified\":true,', '')"
        )
        [(left,)] = con.execute(
            "select count(*) from devportal.sync_runs where cast(sweeps as varchar) like "
            "'%verified%'"
        ).fetchall()
    finally:
        con.close()
    assert left == 0
    models.build(warehouse, check=True)
    read = live_ids(warehouse)
    assert as_of(warehouse) == {
        "has_verified_sweep": False,
        "last_verified_sweep_at": None,
        "window_syncs_since_verified_sweep": 0,
        "unverified_sweeps_since_verified_sweep": 1,
    }
    line = (
        f"{PARTIAL} (1 sweep read it, none verified against the API's total: see "
        f"sync_runs.sweeps); counts cover only the {read} subscriptions read so far. Run "
        "`devportal sync` (a full sweep)."
    )
    assert_said_everywhere(every_format(cli, warehouse, tmp_path), line)


def test_the_first_sync_of_a_window_never_passes_for_the_whole_list(
    sandbox_factory: Any, cli: Cli, tmp_path: Path
) -> None:
    """The README's hourly cron line on a new warehouse: whatever the run did (a window, or a
    full sweep in its place), the report says what its figures rest on."""
    sb = sandbox_factory(subscriptions=400, users=40, seed=9)
    warehouse = tmp_path / "warehouse.duckdb"
    since = datetime(2026, 10, 25)  # the sandbox's window filters on creation time
    cli(
        "sync",
        *("--base-url", sb.base_url, "--warehouse", str(warehouse)),
        *("--since", f"{since:%Y-%m-%d}"),
        token=sb.token,
    )
    [(mode,)] = query(warehouse, "select mode from devportal.sync_runs")
    read = live_ids(warehouse)
    figures = json.loads(cli("report", "--warehouse", str(warehouse), "--format", "json"))
    if mode == "window":
        assert 0 < read < len(list(sb.truth(is_test=False)))  # a window: part of the list
        assert figures["has_verified_sweep"] is False
        assert figures["data_basis"] == (
            f"{PARTIAL}; counts cover only the {read} subscriptions read so far. Run "
            "`devportal sync` (a full sweep)."
        )
    else:  # the sync swept the whole list instead, and verified it
        assert mode == "sweep" and read == len(list(sb.truth(is_test=False)))
        assert figures["data_basis"] == f"{BASED}{sb.now:%Y-%m-%d %H:%M:%S}"
