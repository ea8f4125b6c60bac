"""dlt users reach devportal's pipeline with dlt's own CLI (`dlt pipeline <name> info`,
`trace`). The pipeline lives beside its warehouse (`<dir>/.<stem>.dlt/`: each warehouse its own
state and packages), not in dlt's default folder, so the one flag `--pipelines-dir` is needed:
`devportal sync --verbose` prints the whole command line, which is run here as printed, with
the real `dlt` program. Its output, and every file of the pipeline's folder, hold no token."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.firstsync.conftest import write_settings
from tests.helpers import CliResult

DLT = str(Path(sys.executable).parent / "dlt")
PASSWORD = "pg-password-5f1d2c9e"  # the trusting cluster ignores it: it must show nowhere


def dlt_cli(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """COMMAND (`dlt pipeline ...` as devportal printed it) run with this venv's `dlt`."""
    argv = shlex.split(command)
    assert argv[0] == "dlt", command
    return subprocess.run(
        [DLT, *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def printed_command(err: str) -> str:
    (line,) = [line for line in err.splitlines() if "dlt's own CLI reaches this pipeline" in line]
    return line.split("dlt's own CLI reaches this pipeline with: ", 1)[1]


def test_dlt_pipeline_info_and_trace_reach_the_pipeline_of_a_sync(
    in_folder: Callable[..., CliResult],
    project: Path,
    sandbox_factory: Callable[..., Any],
    tmp_path: Path,
) -> None:
    sb = sandbox_factory(subscriptions=40, users=8, seed=13)
    write_settings(
        project,
        f'[sources.devportal]\nbase_url = "{sb.base_url}"\n',
        f'[sources.devportal]\naccess_token = "{sb.token}"\n',
    )
    synced = in_folder("sync", "--no-models", "--verbose")
    assert synced.code == 0, synced.err
    folder = project / "warehouse" / ".warehouse.dlt"
    command = printed_command(synced.err)
    assert command == f"dlt pipeline --pipelines-dir {folder} devportal info", command

    elsewhere = tmp_path / "elsewhere"  # the absolute path works from any folder
    elsewhere.mkdir()
    info = dlt_cli(command, elsewhere)
    assert info.returncode == 0, info.stderr
    assert f"Found pipeline devportal in {folder}" in info.stdout, info.stdout
    assert "dataset_name: devportal" in info.stdout, info.stdout
    assert "Resources in schema: devportal_sync" in info.stdout, info.stdout
    assert "subscriptions with 1 table(s)" in info.stdout, info.stdout
    assert "Has 1 completed load packages" in info.stdout, info.stdout

    trace = dlt_cli(command.removesuffix(" info") + " trace -vv", elsewhere)
    assert trace.returncode == 0, trace.stderr
    assert "Step load COMPLETED" in trace.stdout, trace.stdout
    assert f"- subscriptions: {len(sb.truth(is_test=False))} row(s)" in trace.stdout

    # the token is in secrets.toml, and nowhere in dlt's view of the pipeline
    for shown in (info.stdout, info.stderr, trace.stdout, trace.stderr):
        assert sb.token not in shown
    for path in folder.rglob("*"):
        if path.is_file():
            assert sb.token.encode() not in path.read_bytes(), path


def test_the_postgres_pipeline_is_named_the_same_way_and_keeps_no_password(
    devportal: Callable[..., CliResult],
    sandbox_factory: Callable[..., Any],
    postgres_cluster: Any,
    database: str,
    tmp_path: Path,
) -> None:
    """On PostgreSQL the pipeline is `devportal_postgres`, its folder beside `--warehouse`; the
    password of the credentials (the trusting cluster ignores it) is in none of its files, nor
    in what dlt's CLI shows of it."""
    from devportal.load.pipeline import dlt_command
    from devportal.warehouse.target import Target

    folder = postgres_cluster.local.folder
    uri = f"postgresql://postgres:{PASSWORD}@localhost/{database}?host={folder}"
    sb = sandbox_factory(subscriptions=30, users=5, seed=17)
    warehouse = tmp_path / "wh" / "w.duckdb"
    where = ["--destination", "postgres", "--warehouse", str(warehouse)]
    synced = devportal(
        "sync", "--base-url", sb.base_url, "--no-models", *where,
        env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token,
             "DESTINATION__POSTGRES__CREDENTIALS": uri},
    )  # fmt: skip
    assert synced.code == 0, synced.err
    command = dlt_command(Target.of(warehouse, "postgres"))
    assert (
        command
        == f"dlt pipeline --pipelines-dir {tmp_path / 'wh' / '.w.dlt'} devportal_postgres info"
    )
    info = dlt_cli(command, tmp_path)
    assert info.returncode == 0, info.stderr
    assert "destination_type: dlt.destinations.postgres" in info.stdout, info.stdout
    assert "Has 1 completed load packages" in info.stdout, info.stdout
    trace = dlt_cli(command.removesuffix(" info") + " trace -vv", tmp_path)
    assert trace.returncode == 0, trace.stderr
    assert "Step load COMPLETED" in trace.stdout, trace.stdout
    for shown in (synced.out, synced.err, info.stdout, trace.stdout, trace.stderr):
        assert PASSWORD not in shown and sb.token not in shown
    for path in (tmp_path / "wh").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert PASSWORD.encode() not in data and sb.token.encode() not in data, path
