"""Text from the API reaches the report's formats made safe for each, through the real CLI.

A sandbox world whose only churned subscriber's platform is named like an attack: a spreadsheet
formula, HTML, a line break, Markdown (emphasis, code, a link, a pipe, a backslash), an ESC
colour sequence, BEL, a right-to-left override and a matplotlib formula that does not parse;
another subscription's status is a formula with a terminal title sequence. Two syncs a month
apart make that platform the report's highest-churn platform, then `devportal report` prints
every format. Expected cells are written out by hand here, not computed with the code under
test: JSON keeps the name exactly (it is data, and its escapes are terminal-safe); CSV cells
start with no formula character unless they are numbers; the Markdown table keeps two columns
and shows the name literally; the terminal table holds no control character; the HTML page
escapes it, and its charts (which draw platform names) render.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import unicodedata
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from devportal.cli import main
from devportal.reporting.charts.registry import TITLES
from devportal.reporting.report.figures import _KINDS, report_from_row
from devportal.reporting.report.formats import TOP_CHURN_MIN_BASE, format_csv
from devportal.sandbox import Sandbox

EVIL = (
    '=HYPERLINK("http://x.example/?a","go")|<img src=x onerror=alert(1)>\r\n'
    "**x** `c` [l](http://x.example) \x1b[31mred\x07 \u202ertl $\\frac{$ \\|"
)
EVIL_STATUS = "@SUM(1+1)*cmd|' /C calc'!A0\x1b]0;pwned\x07"
# one line, no control characters (the line break is two spaces now)
TERMINAL = (
    r'=HYPERLINK("http://x.example/?a","go")|<img src=x onerror=alert(1)>  '
    r"**x** `c` [l](http://x.example) [31mred rtl $\frac{$ \|"
)
CSV_CELL = "'" + TERMINAL  # a formula to a spreadsheet: quoted (OWASP)
MARKDOWN_CELL = (
    r'=HYPERLINK("http://x.example/?a","go")\|\<img src=x onerror=alert(1)\>  '
    r"\*\*x\*\* \`c\` \[l\](http://x.example) \[31mred rtl \$\\frac{\$ \\\|"
)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def controls(text: str) -> list[str]:
    """The control and bidirectional characters of TEXT, line breaks apart."""
    return [c for c in text if c != "\n" and (unicodedata.category(c) == "Cc" or c in BIDI)]


@pytest.fixture(scope="module")
def hostile_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    warehouse = tmp_path_factory.mktemp("hostile") / "warehouse.duckdb"
    # the first sync before January: its churn is measured, not estimated; Eve's platform has
    # the minimum base (20 subscriptions at January's start: sql/marts/report_figures.sql)
    with Sandbox(subscriptions=0, users=0, seed=3, start="2025-12-31 00:00:00") as sb:
        world = sb.world
        world.add_user(101, "Eve", platforms=(EVIL,))
        world.add_user(102, "Bob", platforms=("twitch",))
        for _ in range(TOP_CHURN_MIN_BASE):
            world.add_subscription(101, "canceled", "2026-01-25 00:00:00")  # churn in January
        world.add_subscription(102, "active", "2026-03-01 00:00:00")
        odd = world.add_subscription(102, "active", "2026-03-02 00:00:00")
        world.set_raw(odd, status=EVIL_STATUS)
        sync = ["sync", "--base-url", sb.base_url, "--warehouse", str(warehouse)]
        with pytest.MonkeyPatch.context() as env:
            env.setenv("SOURCES__DEVPORTAL__ACCESS_TOKEN", sb.token)
            assert main(sync) == 0
            sb.advance(days=41)  # 2026-02-10: January is the last full month
            assert main(sync) == 0
    yield warehouse


def run_report(warehouse: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(["report", "--warehouse", str(warehouse), *argv]) == 0
    out, err = capsys.readouterr()
    assert not controls(out) and not controls(err)
    return out


def test_json_keeps_the_name_exactly(
    hostile_warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = json.loads(run_report(hostile_warehouse, capsys, "--format", "json"))
    assert figures["top_churn_platform"] == EVIL
    assert figures["top_churn_platform_churn_rate"] == 1.0
    assert figures["last_full_month"] == "2026-01"


def test_csv_cells_start_no_formula(
    hostile_warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_report(hostile_warehouse, capsys, "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["metric", "label", "value"]
    assert all(len(row) == 3 for row in rows)
    for cell in (cell for row in rows for cell in row):
        if cell.startswith(FORMULA_STARTS):
            float(cell)  # only a number may start so
    values = {row[0]: row[2] for row in rows[1:]}
    assert values["top_churn_platform"] == CSV_CELL
    assert values["top_churn_platform_churn_rate"] == "1.0"  # numbers stay numbers


def cells(row: str) -> list[str]:
    """The cells of a Markdown table row: split at pipes no backslash escapes."""
    found, cell, escaped = [], "", False
    for char in row.strip()[1:-1]:
        if escaped:
            cell, escaped = cell + "\\" + char, False
        elif char == "\\":
            escaped = True
        elif char == "|":
            found, cell = [*found, cell.strip()], ""
        else:
            cell += char
    return [*found, cell.strip()]


def test_markdown_keeps_two_columns_and_shows_the_name_literally(
    hostile_warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_report(hostile_warehouse, capsys, "--format", "markdown")
    rows = [line for line in out.splitlines() if line.startswith("|")]
    assert rows and all(len(cells(row)) == 2 for row in rows)
    assert "| highest-churn platform | " + MARKDOWN_CELL + " |" in rows
    assert "<" not in out.replace("\\<", "") and "\r" not in out  # no HTML tag left


def test_the_terminal_table_has_no_control_characters(
    hostile_warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_report(hostile_warehouse, capsys, "--format", "table")
    [line] = [line for line in out.splitlines() if line.startswith("  highest-churn platform")]
    assert line.endswith(" " + TERMINAL)
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out


def test_the_page_escapes_the_name_and_draws_its_charts(
    hostile_warehouse: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    run_report(hostile_warehouse, capsys, "--html", str(page))
    text = page.read_text(encoding="utf-8")
    # the platforms chart labels its bars with the name: matplotlib would read `$...$`
    drawn = re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,', text)
    assert TITLES["users_by_platform"] in drawn
    assert f'<td class="value">{html.escape(TERMINAL)}</td>' in text
    assert "onerror=alert(1)>" not in text and not controls(text)


@pytest.mark.parametrize(
    ("name", "csv_cell"),
    [
        ("=1+1", "'=1+1"),
        ("+1+1", "'+1+1"),
        ("-1+1", "'-1+1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1+1", "' =1+1"),
        ("\r=1+1", "' =1+1"),
        (" =1+1", "' =1+1"),
        ("\x1b=1+1", "'=1+1"),
        ("-3", "-3"),  # a number is no formula
        ("twitch", "twitch"),
    ],
)
def test_every_formula_start_is_neutralised(name: str, csv_cell: str) -> None:
    """The report's CSV of a platform named NAME: the figures as `report.collect` makes them,
    with the name where the warehouse would put it."""
    row: dict[str, Any] = dict.fromkeys(_KINDS)
    row |= {
        "as_of": datetime(2026, 2, 10),
        "has_verified_sweep": True,
        "last_verified_sweep_at": datetime(2026, 2, 10),
        "top_churn_platform": name,
        "last_full_month": date(2026, 1, 1),  # a measured month: the platform is shown
        "last_full_month_is_estimate": False,
    }
    figures = report_from_row(row)
    values = {r[0]: r[2] for r in csv.reader(io.StringIO(format_csv(figures)))}
    assert values["top_churn_platform"] == csv_cell
