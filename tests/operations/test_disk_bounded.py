"""Disk that does not grow with the number of runs (docs/operations.md, "What the folder beside
the warehouse keeps"): a run that succeeds leaves one loaded package's record in dlt's folder
beside the warehouse and no job files, any run leaves no spooled reads, packages set aside stay,
and the warehouse file keeps one stored schema per name instead of one per run.

Real syncs from the sandbox over HTTP into real DuckDB files, through the CLI where what is
checked is what a person or dlt's own CLI would see; the sandbox's clock is advanced between
runs as an hourly schedule would see it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devportal.warehouse import pipelines_dir
from tests.helpers import CliResult, query

Cli = Callable[..., CliResult]

# the bound docs/operations.md states: after 24 hourly runs and a sweep, dlt's folder beside the
# warehouse holds no more than after the first sweep plus this (measured: no more at all)
FOLDER_BOUND_BYTES = 250_000
FOLDER_BOUND_FILES = 5
BLOCK = 256 * 1024  # DuckDB's block: the unit a database file grows or shrinks by


def sync(devportal: Cli, sb: Any, warehouse: Path, *options: str) -> CliResult:
    result = devportal(
        "sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), *options,
        env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token},
    )  # fmt: skip
    return result


def synced(devportal: Cli, sb: Any, warehouse: Path, *options: str) -> None:
    result = sync(devportal, sb, warehouse, *options)
    assert result.code == 0, result.err


def footprint(folder: Path) -> tuple[int, int]:
    """Bytes and files under FOLDER."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def dlt_cli(folder: Path, command: str) -> subprocess.CompletedProcess[str]:
    """dlt's own CLI on the pipeline beside the warehouse, as `pipeline.dlt_command` prints it."""
    dlt = Path(sys.executable).with_name("dlt")
    return subprocess.run(
        [str(dlt), "pipeline", "--pipelines-dir", str(folder), "devportal", command],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder.parent,
    )


def loaded_packages(warehouse: Path) -> list[Path]:
    return sorted((pipelines_dir(warehouse) / "devportal" / "load" / "loaded").iterdir())


def spooled(warehouse: Path) -> list[Path]:
    spool = pipelines_dir(warehouse) / "devportal" / "spool"
    return list(spool.rglob("*")) if spool.exists() else []


def test_pruning_keeps_what_the_cli_and_dlts_cli_need(
    sandbox_factory: Any,
    warehouse: Path,
    devportal: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dlt.destinations.exceptions import DatabaseTerminalException

    from devportal.base.errors import DevportalError
    from devportal.load import transaction
    from devportal.warehouse.destination import ExactCopyJob

    sb = sandbox_factory(subscriptions=400, users=80, seed=31)
    synced(devportal, sb, warehouse, "--no-models")

    # a load the warehouse refuses: the package is set aside, the user's to inspect or discard
    def refused(job: ExactCopyJob) -> None:
        raise DatabaseTerminalException(ValueError("refused by the test"))

    sb.advance(hours=1)
    with monkeypatch.context() as patch:
        patch.setattr(ExactCopyJob, "run", refused)
        failed = sync(devportal, sb, warehouse, "--window", "--no-models")
    assert failed.code == 1 and "devportal packages discard" in failed.err, failed.err
    aside = failed.err.split("devportal packages discard ")[1].split("`")[0]

    # a run that fails after it read (and spooled) the lists: its spooled reads go with it
    def no_load(run: Any, data: Any, **_: Any) -> None:
        assert spooled(warehouse), "the run spooled nothing: nothing to check"
        raise DevportalError("stopped by the test after the read")

    with monkeypatch.context() as patch:
        patch.setattr(transaction.Transaction, "load", no_load)
        assert sync(devportal, sb, warehouse, "--no-models").code == 1
    assert [p for p in spooled(warehouse) if p.is_file()] == []

    for hour in range(3):
        sb.advance(hours=1)
        synced(devportal, sb, warehouse, "--window", *(("--no-models",) if hour < 2 else ()))

    # one loaded package left, the last run's, its record without its job files
    [(newest,)] = query(warehouse, "SELECT max(load_id) FROM devportal._dlt_loads")
    [package] = loaded_packages(warehouse)
    assert package.name == newest
    assert (package / "package_completed.json").read_text(encoding="utf-8").strip() == "loaded"
    assert not (package / "completed_jobs").exists()
    assert [p for p in spooled(warehouse) if p.is_file()] == []

    # the package set aside survives every pruning, with its files
    listed = devportal("packages", "list", "--warehouse", str(warehouse))
    assert listed.code == 0 and aside in listed.out, listed.out
    kept = pipelines_dir(warehouse) / "set_aside" / aside
    assert any(p.is_file() and p.name != "SET_ASIDE.txt" for p in kept.rglob("*"))

    status = devportal("status", "--warehouse", str(warehouse), "--format", "json")
    said = json.loads(status.out)
    assert status.code == 0 and said["state"] == "fresh", status.out
    assert said["successful_syncs"] == 4
    assert [p["load_id"] for p in said["set_aside"]] == [aside]

    folder = pipelines_dir(warehouse)
    info = dlt_cli(folder, "info")
    assert info.returncode == 0, info.stderr
    assert "Has 1 completed load packages" in info.stdout and newest in info.stdout
    assert "Pipeline has last run trace" in info.stdout
    trace = dlt_cli(folder, "trace")
    assert trace.returncode == 0, trace.stderr
    assert f"Load package {newest} is LOADED" in trace.stdout, trace.stdout
    package_info = dlt_cli(folder, "load-package")
    assert package_info.returncode == 0, package_info.stderr
    assert newest in package_info.stdout and "LOADED state" in package_info.stdout


def test_an_hourly_schedule_leaves_a_bounded_folder(
    sandbox_factory: Any, warehouse: Path, devportal: Cli
) -> None:
    """The cron lines of docs/operations.md for a day: a first sweep, 24 window runs an hour
    apart, and the nightly sweep (the sweeps build the models)."""
    sb = sandbox_factory(subscriptions=2_000, users=400, seed=32)
    folder = pipelines_dir(warehouse)
    synced(devportal, sb, warehouse)
    first_bytes, first_files = footprint(folder)
    sizes = []
    for _ in range(24):
        sb.advance(hours=1)
        synced(devportal, sb, warehouse, "--window", "--no-models")
        sizes.append(footprint(folder))
    sb.advance(hours=1)
    synced(devportal, sb, warehouse)
    after_bytes, after_files = footprint(folder)

    assert after_bytes <= first_bytes + FOLDER_BOUND_BYTES, (first_bytes, after_bytes)
    assert after_files <= first_files + FOLDER_BOUND_FILES, (first_files, after_files)
    # nothing piles up hour by hour either: the last window run's folder is the first one's
    assert sizes[-1][1] <= sizes[0][1] and sizes[-1][0] <= sizes[0][0] + 50_000, sizes
    assert len(loaded_packages(warehouse)) == 1
    assert query(warehouse, "SELECT count(*) FROM devportal._dlt_loads") == [(26,)]


def test_the_warehouse_does_not_grow_with_runs_that_change_nothing(
    sandbox_factory: Any, warehouse: Path, devportal: Cli
) -> None:
    """The sandbox's clock stands still: every run reads the same lists and loads no new
    version. Each still records itself (a `sync_runs` row, dlt's load and state rows: a few KB),
    which DuckDB packs into the blocks it has, so the file stays within one block of where it
    was after the first runs: a checkpoint writes the row groups a run changed into free blocks
    and frees the old ones, so the file ends a block either side from one run to the next."""
    sb = sandbox_factory(subscriptions=300, users=60, seed=33)
    synced(devportal, sb, warehouse, "--no-models")
    synced(devportal, sb, warehouse, "--window", "--no-models")
    steady = warehouse.stat().st_size
    sizes = []
    for _ in range(16):
        synced(devportal, sb, warehouse, "--window", "--no-models")
        sizes.append(warehouse.stat().st_size)
    assert max(sizes) <= steady + BLOCK, (steady, sizes)
    # what used to grow one row per run in each dataset: dlt's stored schema, whole, each run
    # a new version (the SCD2 boundary is the run's clock)
    for dataset in ("devportal", "devportal_staging"):
        versions = query(
            warehouse, f"SELECT schema_name, count(*) FROM {dataset}._dlt_version GROUP BY 1"
        )
        assert versions == [("devportal_sync", 1)], (dataset, versions)
    assert query(warehouse, "SELECT count(*) FROM devportal.sync_runs") == [(18,)]
