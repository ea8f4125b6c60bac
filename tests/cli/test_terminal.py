"""`devportal` at a terminal: a long sync draws a progress bar on stderr (each list's pages, the
accounts, dlt's steps, the models) with its percentage and time left, and erases it; the
result stays on stdout, without a byte of the bar. The report's JSON, CSV and Markdown are the
document alone, whatever is a terminal. Run through a pseudo-terminal (tests/cli/terminal.py)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from devportal.models.project import load_models
from tests.cli.terminal import run_on_terminal, strip_ansi
from tests.helpers import run_devportal

TIME_LEFT = re.compile(r"\d+:\d\d:\d\d")


def sync_argv(sb: Any, warehouse: Path, *extra: str) -> list[str]:
    return ["sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), *extra]


def bar_lines(screen: list[str], what: str) -> list[str]:
    """The states the bar of WHAT went through (its row, each time it was drawn)."""
    return [line for line in screen if line.startswith(what + " ")]


@pytest.fixture
def synced(sandbox_factory: Any, tmp_path: Path) -> Path:
    """A warehouse with the models built, from a small world (no terminal)."""
    sb = sandbox_factory(subscriptions=300, users=40, seed=71)
    warehouse = tmp_path / "warehouse.duckdb"
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
    done = run_devportal(*sync_argv(sb, warehouse), env=env, cwd=tmp_path)
    assert done.code == 0, done.err
    return warehouse


def test_a_sync_at_a_terminal_draws_a_bar_that_reaches_the_end(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    # 20 ms a request, on threads of its own: pages and accounts take a while, as over a network
    sb = sandbox_factory(subscriptions=1500, users=300, seed=72, latency_ms=20)
    warehouse = tmp_path / "warehouse.duckdb"
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
    done = run_on_terminal(*sync_argv(sb, warehouse), env=env, cwd=tmp_path)
    assert done.code == 0, done.terminal

    # stdout (piped) holds the one line and nothing of the bar
    [line] = done.piped.splitlines()
    assert line.startswith(f"sync ok (sweep) into {warehouse} in ") and "\x1b" not in line

    screen = done.screen_lines
    for what in ("subscriptions", "user settings", "user accounts", "load", "models"):
        drawn = bar_lines(screen, what)
        assert drawn, f"no bar for {what}: {screen[-12:]}"
        assert "100%" in drawn[-1], drawn[-1]  # each reached its end
        assert TIME_LEFT.search(drawn[-1]), drawn[-1]  # with its time
    pages = bar_lines(screen, "subscriptions")[-1]
    # every page of the list, counted (the sandbox serves 200 rows a page)
    rows = int(line.split("subscriptions ")[1].split(",")[0])
    last_page = -(-rows // 200)
    assert re.search(rf" {last_page}/{last_page}\s+pages, {rows:,} rows ", pages), pages
    accounts = bar_lines(screen, "user accounts")[-1]
    assert re.search(r"(\d+)/\1 requests", accounts), accounts
    # erased at the end: the last thing drawn on the terminal is no bar
    assert done.terminal.rstrip().endswith("\x1b[2K") or not strip_ansi(done.terminal).strip()


def test_stdout_on_the_terminal_too_gets_the_models_line(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """A person reads stdout: the models' line follows the sync's (every model built: the
    tables a sync did not fill, no manifest recorded, have empty stand-ins); the bar is erased
    before either is printed."""
    sb = sandbox_factory(subscriptions=200, users=20, seed=73)
    warehouse = tmp_path / "warehouse.duckdb"
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
    done = run_on_terminal(
        *sync_argv(sb, warehouse), env=env, cwd=tmp_path, stdout_on_terminal=True
    )
    assert done.code == 0, done.terminal
    text = [line for line in done.screen_lines if line.startswith(("sync ok", "models ok"))]
    assert [line.split()[0] for line in text] == ["sync", "models"], done.screen_lines
    every = f"models ok: {len(load_models())} built in "  # every model of sql/
    assert text[1].startswith(every) and "skipped" not in text[1], text[1]


def test_no_bar_when_stderr_is_not_a_terminal_even_if_stdout_is(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """`devportal sync 2>>errors.log` at a terminal: the log gets nothing."""
    sb = sandbox_factory(subscriptions=200, users=20, seed=74)
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
    argv = sync_argv(sb, tmp_path / "w.duckdb")
    done = run_on_terminal(
        *argv, env=env, cwd=tmp_path, stdout_on_terminal=True, stderr_on_terminal=False
    )
    assert done.code == 0, done.piped
    assert done.piped == ""  # stderr
    assert [line.split()[0] for line in done.screen_lines] == ["sync", "models"]


def test_quiet_at_a_terminal_draws_nothing(sandbox_factory: Any, tmp_path: Path) -> None:
    sb = sandbox_factory(subscriptions=200, users=20, seed=75)
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
    argv = sync_argv(sb, tmp_path / "w.duckdb", "--quiet")
    done = run_on_terminal(*argv, env=env, cwd=tmp_path, stdout_on_terminal=True)
    assert (done.code, done.terminal) == (0, "")


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown"])
def test_the_report_formats_are_the_document_alone_at_a_terminal(
    synced: Path, tmp_path: Path, fmt: str
) -> None:
    html = tmp_path / "report.html"
    argv = ["report", "--warehouse", str(synced), "--format", fmt]
    # stdout and stderr both on the terminal: whatever either carries shows up here
    both = run_on_terminal(*argv, cwd=tmp_path, stdout_on_terminal=True)
    assert both.code == 0, both.terminal
    document = both.terminal.replace("\r\n", "\n")
    assert "\x1b" not in document
    check_document(fmt, document)
    # with --html, the note saying where the page went is not part of the document
    alone = run_on_terminal(*argv, "--html", str(html), cwd=tmp_path)
    assert alone.code == 0, alone.terminal
    check_document(fmt, alone.piped)
    assert f"wrote {html}" in strip_ansi(alone.terminal) and html.is_file()


def check_document(fmt: str, text: str) -> None:
    """TEXT is one FMT document and nothing else."""
    if fmt == "json":
        figures = json.loads(text)
        assert isinstance(figures, dict) and "as_of" in figures
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0] == ["metric", "label", "value"]
        assert all(len(row) == 3 for row in rows), rows
    else:
        lines = text.strip("\n").splitlines()
        assert lines[0].startswith("## Subscriptions as of ")
        assert all(line == "" or line.startswith(("## ", "> ", "|")) for line in lines), lines


def test_a_warning_while_the_bar_is_drawn_stays_whole(api: Any, tmp_path: Path) -> None:
    """A warning logged while the bar is drawn is printed above it, one intact line."""
    from tests.helpers import subscription

    api.simple_paginator = True  # no total: the read cannot be verified, a warning says so
    api.subscriptions = [subscription(i) for i in range(1, 8)]
    argv = ["sync", "--base-url", api.base_url, "--warehouse", str(tmp_path / "w.duckdb")]
    argv += ["--resources", "subscriptions", "--no-models"]
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": api.token}
    done = run_on_terminal(*argv, env=env, cwd=tmp_path)
    assert done.code == 0, done.terminal
    warnings = [line for line in done.screen_lines if line.startswith("devportal: warning: ")]
    assert len(warnings) == 1 and warnings[0].endswith(
        "(only a list that adds up to its total may retire history)"
    ), warnings
    assert len(done.piped.splitlines()) == 1


def test_a_failed_sync_at_a_terminal_ends_in_its_one_line(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """The bar is erased; what stays on the terminal is the error, and stdout is empty."""
    sb = sandbox_factory(subscriptions=100, users=10, seed=76)
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": "not-the-token"}
    done = run_on_terminal(*sync_argv(sb, tmp_path / "w.duckdb"), env=env, cwd=tmp_path)
    assert done.code != 0 and done.piped == ""
    assert done.screen_lines[-1].startswith("devportal: error: "), done.screen_lines
