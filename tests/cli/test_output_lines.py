"""What `devportal` prints where no one watches: cron, a log file, a CI job (stdout and stderr
piped). A successful sync prints one line on stdout, naming the warehouse it wrote, and nothing
on stderr: no progress, no dlt blocks, no notice repeated on every run (a model skipped because
no manifest was ever recorded). Warnings go to stderr; `--quiet` prints nothing on success;
`--verbose` gives the detail back. Each test runs the real program (`python -m devportal`)
against the sandbox over HTTP, in an empty folder as a pip user would, and checks the warehouse
too: a silent run must still have done its work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devportal.models.project import load_models
from tests.helpers import REPO, CliResult, query, run_devportal, subscription
from tests.hostile.server import HostileApi


def run(sb: Any, folder: Path, *argv: str) -> CliResult:
    """`devportal ARGV` run from FOLDER (no .dlt/ there) with SB's token."""
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token, "MAKELEVEL": None}
    return run_devportal(*argv, env=env, cwd=folder, timeout=300)


def sync(sb: Any, warehouse: Path, *extra: str) -> CliResult:
    return run(
        sb, warehouse.parent, "sync", "--base-url", sb.base_url, "--warehouse", str(warehouse),
        *extra,
    )  # fmt: skip


def live_rows(sb: Any) -> int:
    return len([row for row in sb.truth() if not row.get("is_test")])


def test_a_scheduled_sync_logs_one_line_per_success(sandbox_factory: Any, tmp_path: Path) -> None:
    sb = sandbox_factory(subscriptions=300, users=30, seed=61)
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    warehouse.parent.mkdir()
    for n in (1, 2):
        if n == 2:
            sb.advance(days=3)
        done = sync(sb, warehouse)
        assert done.code == 0, done.err
        assert done.err == ""  # no progress, no dlt blocks, no notice
        [line] = done.out.splitlines()
        # the warehouse by its absolute path: a scheduler's folder is not the user's
        assert line.startswith(f"sync ok (sweep) into {warehouse.absolute()} in "), line
        assert "skipped" not in line
        # the models were built all the same, silently
        current = "select count(*) from analytics.subscriptions_current"
        assert query(warehouse, current) == [(live_rows(sb),)]
    assert query(warehouse, "select count(*) from devportal.sync_runs") == [(2,)]


def test_the_line_names_a_relative_warehouse_where_it_landed(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """`--warehouse warehouse/x.duckdb` from a scheduler's folder lands beside that folder: the
    line says where, so a second warehouse is noticed."""
    sb = sandbox_factory(subscriptions=60, users=10, seed=62)
    folder = tmp_path / "home"
    folder.mkdir()
    done = run(sb, folder, "sync", "--base-url", sb.base_url, "--warehouse", "warehouse/x.duckdb")
    assert done.code == 0, done.err
    assert done.out.startswith(f"sync ok (sweep) into {folder / 'warehouse' / 'x.duckdb'} in ")


def test_quiet_prints_nothing_on_success(sandbox_factory: Any, tmp_path: Path) -> None:
    sb = sandbox_factory(subscriptions=200, users=20, seed=63)
    warehouse = tmp_path / "warehouse.duckdb"
    done = sync(sb, warehouse, "--quiet")
    assert (done.code, done.out, done.err) == (0, "", "")
    assert query(warehouse, "select count(*) from analytics.subscriptions_current") == [
        (live_rows(sb),)
    ]
    models = run(sb, tmp_path, "models", "--warehouse", str(warehouse), "-q", "--check")
    assert (models.code, models.out, models.err) == (0, "", "")


def test_verbose_gives_the_detail_back(sandbox_factory: Any, tmp_path: Path) -> None:
    sb = sandbox_factory(subscriptions=200, users=20, seed=64)
    warehouse = tmp_path / "warehouse.duckdb"
    done = sync(sb, warehouse, "--verbose")
    assert done.code == 0, done.err
    sync_line, models_line = done.out.splitlines()
    assert sync_line.startswith("sync ok (sweep) into ")
    # the models' line: every model built (no manifest recorded: its stand-in is empty)
    every = f"models ok: {len(load_models())} built in "
    assert models_line.startswith(every) and "skipped" not in models_line
    # progress lines and dlt's own progress, on stderr only
    assert "progress: subscriptions page 1/" in done.err
    assert "Load devportal_sync" in done.err and "Jobs: " in done.err
    assert "progress" not in done.out


def test_progress_on_keeps_its_lines_without_a_terminal(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """`--progress on` (as before the bar): lines on stderr although it is not a terminal; the
    result line alone on stdout."""
    sb = sandbox_factory(subscriptions=200, users=20, seed=65)
    done = sync(sb, tmp_path / "warehouse.duckdb", "--progress", "on", "--no-models")
    assert done.code == 0, done.err
    assert len(done.out.splitlines()) == 1
    assert "progress: subscriptions page 1/" in done.err


def test_models_alone_prints_its_one_line(sandbox_factory: Any, tmp_path: Path) -> None:
    sb = sandbox_factory(subscriptions=150, users=15, seed=66)
    warehouse = tmp_path / "warehouse.duckdb"
    assert sync(sb, warehouse, "--no-models", "--quiet").code == 0
    built = run(sb, tmp_path, "models", "--warehouse", str(warehouse))
    assert built.code == 0 and built.err == "", built.err
    [line] = built.out.splitlines()
    assert line.startswith(f"models ok: {len(load_models())} built in ") and "skipped" not in line

    # a warehouse no sync wrote yet (a manifest recorded first): the skipped models counted,
    # not explained on every run; --verbose says why
    manifest_only = tmp_path / "manifest-only" / "warehouse.duckdb"
    demo = (
        Path(__file__).resolve().parents[2] / "pipelines/devportal/starter/demo_app/manifest.json"
    )
    recorded = run(sb, tmp_path, "manifest", "load", str(demo), "--warehouse", str(manifest_only))
    assert recorded.code == 0, recorded.err
    built = run(sb, tmp_path, "models", "--warehouse", str(manifest_only))
    [line] = built.out.splitlines()
    assert line.startswith("models ok: ") and line.endswith(" skipped (--verbose says why)")
    verbose = run(sb, tmp_path, "models", "--warehouse", str(manifest_only), "--verbose")
    assert "skipped stg_sync_runs (needs devportal.sync_runs" in verbose.out


def test_a_warning_goes_to_stderr_also_when_quiet(api: HostileApi, tmp_path: Path) -> None:
    """A sync that succeeds with something to look at (a list without a `total` cannot be
    verified, so nothing is closed): --quiet keeps stdout empty and the warning on stderr, one
    line, what cron mails."""
    api.simple_paginator = True
    api.subscriptions = [subscription(i) for i in range(1, 8)]
    warehouse = tmp_path / "warehouse.duckdb"
    argv = ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse)]
    argv += ["--resources", "subscriptions", "--no-models"]
    env = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": api.token}
    for flags, lines_out in ((["--quiet"], 0), ([], 1)):
        done = run_devportal(*argv, *flags, env=env, cwd=tmp_path)
        assert done.code == 0, done.err
        assert len(done.out.splitlines()) == lines_out
        [warning] = done.err.splitlines()
        assert warning.startswith("devportal: warning: ") and "no subscription is closed" in warning
    assert query(warehouse, "select count(distinct id) from devportal.subscriptions") == [(7,)]


def test_a_sync_into_postgres_names_database_and_dataset_never_the_password(
    sandbox_factory: Any, tmp_path: Path, postgres: str
) -> None:
    """The URI's password (a placeholder: the throwaway server trusts local connections) never
    shows; the database, where it is and the dataset do."""
    from urllib.parse import urlsplit

    sb = sandbox_factory(subscriptions=100, users=10, seed=67)
    done = sync(sb, tmp_path / "pg.duckdb", "--destination", "postgres")
    assert done.code == 0, done.err
    [line] = done.out.splitlines()
    uri = urlsplit(postgres)
    database = uri.path.lstrip("/")
    assert line.startswith(f"sync ok (sweep) into postgres (database {database} on "), line
    assert ", dataset devportal) in " in line
    assert uri.password and uri.password not in line and done.err == ""


def test_a_recorded_manifest_is_detail_unless_it_has_errors(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """The same manifest is recorded on every scheduled run: a valid one adds no line; one with
    errors is recorded, its findings go to stderr (what cron mails) and the sync exits 1."""
    sb = sandbox_factory(subscriptions=100, users=10, seed=68)
    warehouse = tmp_path / "warehouse.duckdb"
    demo_app = REPO / "examples" / "demo-app"
    done = sync(sb, warehouse, "--manifest", str(demo_app))
    assert done.code == 0 and done.err == "", done.err
    assert len(done.out.splitlines()) == 1
    verbose = sync(sb, warehouse, "--manifest", str(demo_app), "--verbose", "--no-models")
    assert "recorded Stream Widgets 1.4.0" in verbose.out

    broken = tmp_path / "broken" / "manifest.json"
    broken.parent.mkdir()
    broken.write_text(json.dumps({"name": "Broken Widgets", "version": "1.0.0"}), "utf-8")
    failed = sync(sb, warehouse, "--manifest", str(broken))
    assert failed.code == 1
    assert len(failed.out.splitlines()) == 1 and failed.out.startswith("sync ok")
    assert "recorded Broken Widgets 1.0.0" in failed.err and "error" in failed.err
    names = "select name from devportal.app_manifests order by name"
    # a manifest recorded again unchanged is kept once (by its content hash)
    assert query(warehouse, names) == [("Broken Widgets",), ("Stream Widgets",)]
