"""`devportal ... | head`: a reader that stops reading ends the command quietly (no BrokenPipe
traceback), with 141 as the shell reports for `cat` or `grep` in its place; and what DuckDB
would draw on stdout for a long statement (its progress bar, terminal or not) never reaches a
document or a log."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, run_devportal

PROGRAM = f"{shlex.quote(sys.executable)} -m devportal"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse with the models built (a small sandbox world, synced once)."""
    from devportal.sandbox import Sandbox

    folder = tmp_path_factory.mktemp("pipes")
    path = folder / "warehouse.duckdb"
    with Sandbox(subscriptions=200, users=20, seed=81, start="2026-11-01 00:00:00") as sb:
        env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
        done = run_devportal("sync", "--base-url", sb.base_url, "--warehouse", str(path), env=env)
    assert done.code == 0, done.err
    return path


def shell(pipeline: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """PIPELINE run by bash with `pipefail` in FOLDER: its exit status the last failing
    command's."""
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", pipeline],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "argv",
    [
        "report --warehouse {warehouse}",
        "report --warehouse {warehouse} --format csv",
        "manifest schema",
        "sandbox --help",
        "--help",
    ],
)
def test_piped_into_head_no_traceback(warehouse: Path, tmp_path: Path, argv: str) -> None:
    command = f"cd {shlex.quote(str(REPO))} && {PROGRAM} "
    command += argv.format(warehouse=shlex.quote(str(warehouse)))
    whole = shell(command, tmp_path)
    assert whole.returncode == 0, whole.stderr
    # devportal's stderr kept apart from head's, then shown with the pipeline's status
    done = shell(
        f"({command}) 2>err.txt | head -1; status=$?; cat err.txt >&2; exit $status", tmp_path
    )
    # the reader may leave before or after devportal wrote everything: 0 or 141, never a trace
    assert done.stderr == ""
    assert done.returncode in (0, 141)
    assert done.stdout == whole.stdout.splitlines(keepends=True)[0]


def run_into_closed_pipe(*argv: str) -> tuple[int, str]:
    """`devportal ARGV` whose stdout is a pipe nobody reads any more (closed before it
    starts): its exit code and stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "devportal", *argv],
            cwd=REPO,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("argv", [["report"], ["manifest", "schema"]])
def test_a_closed_pipe_ends_the_command_with_141(warehouse: Path, argv: list[str]) -> None:
    if argv == ["report"]:
        argv = ["report", "--warehouse", str(warehouse), "--format", "json"]
    code, err = run_into_closed_pipe(*argv)
    assert (code, err) == (141, "")


@pytest.mark.parametrize("argv", [["--help"], ["sandbox", "--help"], ["--version"]])
def test_help_into_a_closed_pipe_says_nothing(argv: list[str]) -> None:
    """argparse ignores a failed write of its help and exits 0; nothing is left to fail later."""
    assert run_into_closed_pipe(*argv) == (0, "")


# A statement made slow enough for DuckDB's progress bar: with `progress_bar_time = 0` DuckDB
# draws it for any statement, on stdout, even when stdout is a pipe (what it does after 2 s).
SLOW_STATEMENT = """
import sys
from devportal.warehouse.target import Target
from devportal.load.transaction import writing
from devportal.warehouse import connect

sql = "select count(*) from range(5000000) t(i) where i % 7 = 3"
if sys.argv[1] == "own":
    with connect(sys.argv[2]) as con:
        con.execute("set progress_bar_time = 0")
        print(con.execute(sql).fetchall())
else:  # as a load does: the pipeline's client, on the warehouse's draft
    with writing(Target.of(sys.argv[2])) as run, run.pipeline.sql_client() as client:
        client.execute_sql("set progress_bar_time = 0")
        print(client.execute_sql(sql))
"""


@pytest.mark.parametrize("connection", ["own", "dlt"])
def test_duckdb_draws_no_progress_bar_on_stdout(warehouse: Path, connection: str) -> None:
    """devportal's own connections (models, report) and dlt's (the load) turn DuckDB's progress
    bar off: it would land in a report's JSON and in a scheduled sync's one line."""
    done = subprocess.run(
        [sys.executable, "-c", SLOW_STATEMENT, connection, str(warehouse)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[(714286,)]\n"


def test_without_the_setting_duckdb_would_draw_it() -> None:
    """What the test above guards against, shown on a bare DuckDB connection."""
    code = (
        "import duckdb; con = duckdb.connect(); con.execute('set progress_bar_time = 0'); "
        "print(con.execute('select count(*) from range(5000000) t(i) where i % 7 = 3').fetchall())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "%" in done.stdout and done.stdout.endswith("[(714286,)]\n")
