"""Readers never block a writer, killed writers leave the warehouse before or after, and disks
that fill or turn read-only give one line, through the real CLI.

Readers are real DuckDB connections in other processes (DuckDB's lock is per process), holding
the warehouse open read-only while `devportal sync`, `devportal models` and `devportal report`
run. Disks are real: a tmpfs mounted for the test (filled with a file, or remounted read-only);
the tests that need one skip, saying why, where mounting is not permitted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devportal.cli import main
from devportal.load.packages import set_aside_dir
from devportal.warehouse import pipelines_dir
from tests.helpers import CliResult, held_open_for_writing, query, run_devportal, subscription
from tests.hostile.conftest import token_env
from tests.hostile.server import HostileApi

Cli = Callable[..., CliResult]
REPO = Path(__file__).resolve().parents[2]
DEMO_APP = REPO / "examples" / "demo-app"
CURRENT = "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL"
RUNS = "SELECT count(*) FROM devportal.sync_runs"
MODELLED = "SELECT count(*) FROM analytics.subscriptions_current"


def sync_argv(api: HostileApi, warehouse: Path, *extra: str) -> list[str]:
    return ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse), *extra]


def one_line_error(result: CliResult) -> str:
    assert "Traceback" not in result.err, result.err
    lines = [line for line in result.err.strip().splitlines() if line.startswith("devportal:")]
    assert len(lines) == 1, result.err
    return lines[0]


def current_ids(warehouse: Path) -> list[int]:
    rows = query(
        warehouse, "SELECT id FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL ORDER BY 1"
    )
    return [r[0] for r in rows]


def dump(warehouse: Path) -> dict[str, list[str]]:
    """Every row of every table in both schemas, for before/after comparisons."""
    tables = query(
        warehouse,
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_schema IN ('devportal', 'analytics') ORDER BY 1, 2",
    )
    return {
        f"{schema}.{name}": sorted(map(repr, query(warehouse, f'SELECT * FROM {schema}."{name}"')))
        for schema, name in tables
    }


def no_draft_left(warehouse: Path) -> bool:
    return not any(p.name.startswith("next") for p in pipelines_dir(warehouse).iterdir())


# -- a reader in another process ---------------------------------------------------------------

READER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
print("open", flush=True)
for line in sys.stdin:
    print(con.execute(line).fetchone()[0], flush=True)
"""


class Reader:
    """A process holding one read-only DuckDB connection to the warehouse; `ask(sql)` runs SQL on
    that same connection."""

    def __init__(self, warehouse: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", READER, str(warehouse)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "open"

    def ask(self, sql: str) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(sql + "\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def reader() -> Iterator[Callable[[Path], Reader]]:
    started: list[Reader] = []

    def start(warehouse: Path) -> Reader:
        started.append(Reader(warehouse))
        return started[-1]

    yield start
    for one in started:
        one.close()


def synced(api: HostileApi, devportal: Cli, warehouse: Path, n: int = 5) -> None:
    """N subscriptions synced and modelled (in process)."""
    api.subscriptions = [subscription(i) for i in range(1, n + 1)]
    result = devportal(*sync_argv(api, warehouse), env=token_env(api))
    assert result.code == 0, result.err


def test_a_sync_and_the_models_land_while_a_reader_holds_the_warehouse(
    api: HostileApi, devportal: Cli, tmp_path: Path, reader: Callable[[Path], Reader]
) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    synced(api, devportal, warehouse)
    held = reader(warehouse)
    assert (held.ask(CURRENT), held.ask(RUNS), held.ask(MODELLED)) == (5, 1, 5)

    api.subscriptions += [subscription(i) for i in range(6, 9)]
    result = devportal(*sync_argv(api, warehouse, "--no-models"), env=token_env(api))
    assert result.code == 0, result.err
    # the open connection keeps the file it opened; a new one sees the sync
    assert (held.ask(CURRENT), held.ask(RUNS)) == (5, 1)
    assert query(warehouse, CURRENT) == [(8,)] and query(warehouse, RUNS) == [(2,)]
    assert query(warehouse, MODELLED) == [(5,)]  # raw tables and models publish apart

    result = devportal("models", "--warehouse", str(warehouse))
    assert result.code == 0, result.err
    assert held.ask(MODELLED) == 5
    assert query(warehouse, MODELLED) == [(8,)]

    # a sync with its models (built in process here) while a second reader holds the new file
    second = reader(warehouse)
    api.subscriptions.append(subscription(9))
    result = devportal(*sync_argv(api, warehouse), env=token_env(api))
    assert result.code == 0, result.err
    assert (second.ask(CURRENT), second.ask(MODELLED)) == (8, 8)
    assert (held.ask(CURRENT), held.ask(MODELLED)) == (5, 5)
    assert query(warehouse, CURRENT) == [(9,)] and query(warehouse, MODELLED) == [(9,)]
    assert no_draft_left(warehouse)


def test_the_report_works_while_a_sync_is_loading(
    api: HostileApi,
    devportal: Cli,
    tmp_path: Path,
    reader: Callable[[Path], Reader],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sync is held inside its load (after its first table loaded, before the next) until a
    report, run in its own process, and a new reader are done."""
    from devportal.warehouse.destination import ExactCopyJob

    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    synced(api, devportal, warehouse)
    report_before = run_devportal("report", "--warehouse", str(warehouse))
    assert report_before.code == 0, report_before.err

    loading, go = threading.Event(), threading.Event()
    real_run = ExactCopyJob.run

    def held_run(job: ExactCopyJob) -> None:
        real_run(job)
        loading.set()
        assert go.wait(timeout=120)

    monkeypatch.setattr(ExactCopyJob, "run", held_run)
    api.subscriptions += [subscription(i) for i in range(6, 9)]
    monkeypatch.setenv("SOURCES__DEVPORTAL__ACCESS_TOKEN", api.token)
    codes: list[int] = []
    argv = sync_argv(api, warehouse, "--no-models", "--progress", "off")
    syncing = threading.Thread(target=lambda: codes.append(main(argv)))
    syncing.start()
    try:
        assert loading.wait(timeout=120), "the sync never loaded"
        report = run_devportal("report", "--warehouse", str(warehouse))
        assert report.code == 0, report.err
        assert report.out == report_before.out  # the published state, whole
        assert reader(warehouse).ask(CURRENT) == 5
    finally:
        go.set()
        syncing.join(timeout=120)
    assert codes == [0]
    assert query(warehouse, CURRENT) == [(8,)]


def test_a_program_writing_the_warehouse_stops_every_writer_in_one_line(
    api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    synced(api, devportal, warehouse)
    before = dump(warehouse)
    with held_open_for_writing(warehouse) as writer:
        for argv in (
            sync_argv(api, warehouse, "--no-models"),
            ["models", "--warehouse", str(warehouse)],
            ["manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse)],
        ):
            result = devportal(*argv, env=token_env(api))
            # another program, not another devportal run: exit 4, a failure to be told of
            assert result.code == 4, (argv[0], result.err)
            line = one_line_error(result)
            assert "open for writing" in line and f"pid {writer.pid}" in line, line
            assert "not a devportal run" in line, line
            assert no_draft_left(warehouse)
            assert writer.poll() is None  # it held the file all along
    assert dump(warehouse) == before


# -- killed at every step of a write: the warehouse is before or after ---------------------------

KILL_AT = """
import os, sys
from pathlib import Path
import devportal.warehouse.destination as loader
import devportal.warehouse as warehouse
from devportal.cli import main

point = sys.argv[1]
target = Path(sys.argv[sys.argv.index("--warehouse") + 1]).resolve()

def die():
    os._exit(9)

def after(cls, name):
    real = getattr(cls, name)
    def wrapped(*a, **k):
        result = real(*a, **k)
        die()
    setattr(cls, name, wrapped)

def before(cls, name):
    def wrapped(*a, **k):
        die()
    setattr(cls, name, wrapped)

if point == "copied":  # the draft made, nothing read or loaded yet
    after(warehouse.Draft, "create")
elif point == "mid-load":  # a file committed into the draft, before dlt recorded it
    after(loader.ExactCopyJob, "run")
elif point == "next-job":  # a file loaded and recorded, the next one not started
    real_run = loader.ExactCopyJob.run
    ran = []
    def second_dies(*a, **k):
        if ran:
            die()
        ran.append(1)
        return real_run(*a, **k)
    loader.ExactCopyJob.run = second_dies
elif point == "committed":  # the load committed (`_dlt_loads`), dlt has not archived it
    from dlt.common.storages.load_storage import LoadStorage
    before(LoadStorage, "complete_load_package")
elif point == "loaded":  # every table loaded, not published
    before(warehouse.Draft, "publish")
elif point in ("renaming", "renamed"):
    real_replace = os.replace
    def replace(src, dst, *a, **k):
        if Path(dst) == target:
            if point == "renaming":
                die()
            real_replace(src, dst, *a, **k)
            die()
        return real_replace(src, dst, *a, **k)
    warehouse.draft.os.replace = replace
sys.exit(main(sys.argv[2:]))
"""


# make test kills at three steps (inside the load, after its commit, after the publish); make soak
# at every step
SOAK = pytest.mark.soak


@pytest.mark.parametrize(
    "point",
    [
        pytest.param("copied", marks=SOAK),
        "mid-load",
        pytest.param("next-job", marks=SOAK),
        "committed",
        pytest.param("loaded", marks=SOAK),
        pytest.param("renaming", marks=SOAK),
        "renamed",
    ],
)
def test_a_writer_killed_at_any_step_leaves_the_warehouse_before_or_after(
    api: HostileApi,
    devportal: Cli,
    tmp_path: Path,
    point: str,
    reader: Callable[[Path], Reader],
) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    synced(api, devportal, warehouse)
    before = dump(warehouse)
    held = reader(warehouse)
    api.subscriptions[0]["status"] = "canceled"
    api.subscriptions += [subscription(i) for i in range(6, 9)]
    argv = sync_argv(api, warehouse, "--no-models", "--progress", "off")
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AT, point, *argv],
        env={**os.environ, **token_env(api)},
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == 9, killed.stderr.decode()
    assert held.ask(CURRENT) == 5
    after_kill = dump(warehouse)  # a new reader opens it, whole
    if point != "renamed":
        assert after_kill == before
    else:
        assert query(warehouse, CURRENT) == [(8,)] and query(warehouse, RUNS) == [(2,)]

    # the next run recovers it and syncs: the truth, one version per change, nothing twice
    result = devportal(*sync_argv(api, warehouse), env=token_env(api))
    assert result.code == 0, result.err
    assert current_ids(warehouse) == list(range(1, 9))
    status = query(
        warehouse,
        "SELECT status FROM devportal.subscriptions WHERE id = 1 ORDER BY _dlt_valid_from",
    )
    assert status == [("active",), ("canceled",)]
    dupes = query(
        warehouse,
        "SELECT id, _dlt_valid_from FROM devportal.subscriptions GROUP BY ALL HAVING count(*) > 1",
    )
    assert dupes == []
    assert query(warehouse, MODELLED) == [(8,)]
    # each run recorded once (`sync_runs`, dlt's `_dlt_loads`): the data tests reconcile them
    checked = devportal("models", "--check", "--warehouse", str(warehouse))
    assert checked.code == 0, checked.err
    runs = query(warehouse, "SELECT count(*), count(DISTINCT run_id) FROM devportal.sync_runs")
    assert runs == [(2, 2)] if point == "copied" else [(3, 3)]
    assert no_draft_left(warehouse)
    assert not set_aside_dir(warehouse).exists() or not any(set_aside_dir(warehouse).iterdir())
    tables = query(warehouse, "SELECT DISTINCT schema_name FROM information_schema.schemata")
    assert ("_devportal_load",) not in tables  # the draft's ledger is never published


@pytest.mark.parametrize("writer", ["models", "manifest"])
def test_a_run_killed_mid_load_is_finished_by_the_next_writer_whatever_it_is(
    api: HostileApi, devportal: Cli, tmp_path: Path, writer: str
) -> None:
    """`devportal models` (or a manifest load) after a sync killed while loading: the killed
    run's package is finished into the draft it left and published first, so the models are
    built on it and no later run can load it in part."""
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    synced(api, devportal, warehouse)
    before = dump(warehouse)
    api.subscriptions += [subscription(i) for i in range(6, 9)]
    argv = sync_argv(api, warehouse, "--no-models", "--progress", "off")
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AT, "mid-load", *argv],
        env={**os.environ, **token_env(api)},
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == 9, killed.stderr.decode()
    assert dump(warehouse) == before
    if writer == "models":
        result = devportal("models", "--check", "--warehouse", str(warehouse))
    else:
        result = devportal("manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse))
    assert result.code == 0, result.err
    assert current_ids(warehouse) == list(range(1, 9)) and query(warehouse, RUNS) == [(2,)]
    if writer == "models":
        assert query(warehouse, MODELLED) == [(8,)]
    assert no_draft_left(warehouse)
    result = devportal(*sync_argv(api, warehouse), env=token_env(api))
    assert result.code == 0, result.err
    assert query(warehouse, RUNS) == [(3,)] and query(warehouse, CURRENT) == [(8,)]
    versions = "SELECT count(*) FROM devportal.subscriptions"
    assert query(warehouse, versions) == [(8,)]


# -- disks that fill or turn read-only -------------------------------------------------------------


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """`tmpfs(size="8m")`: a fresh tmpfs mounted for this test (unmounted at the end)."""
    mounted: list[Path] = []

    def mount(size: str = "64m") -> Path:
        point = tmp_path / f"disk{len(mounted)}"
        point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in reversed(mounted):
        if subprocess.run(["umount", str(point)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(point)], capture_output=True)


def remount(point: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(point)], check=True)


def fill(folder: Path, leave: int = 0) -> Path:
    """A file taking all the free space of FOLDER's file system but LEAVE bytes."""
    filler = folder / "filler"
    free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
    with filler.open("wb") as f:
        chunk = b"\0" * (1 << 20)
        remaining = max(0, free - leave)
        try:
            while remaining > 0:
                remaining -= f.write(chunk[: min(len(chunk), remaining)])
        except OSError:
            pass
    return filler


def test_a_read_only_file_system_is_one_line_for_every_writer(
    api: HostileApi, devportal: Cli, tmpfs: Callable[..., Path]
) -> None:
    disk = tmpfs()
    warehouse = disk / "wh" / "warehouse.duckdb"
    synced(api, devportal, warehouse)
    before = dump(warehouse)
    remount(disk, "ro")
    for argv in (
        sync_argv(api, warehouse),
        ["models", "--warehouse", str(warehouse)],
        ["manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse)],
    ):
        result = devportal(*argv, env=token_env(api))
        assert result.code == 2, (argv[0], result.err)
        line = one_line_error(result)
        assert "read-only file system" in line and str(warehouse.parent) in line, line
        assert "--warehouse" in line  # the fix
    assert dump(warehouse) == before
    report = devportal("report", "--warehouse", str(warehouse))  # readers still read
    assert report.code == 0, report.err


def test_a_disk_that_fills_while_the_list_is_spooled_is_one_line_and_loses_nothing(
    devportal: Cli, tmpfs: Callable[..., Path]
) -> None:
    disk = tmpfs()
    warehouse = disk / "wh" / "warehouse.duckdb"
    with HostileApi(per_page=1000) as api:
        synced(api, devportal, warehouse)
        before = dump(warehouse)
        # room for the copy of the warehouse a sync writes, not for the list it spools
        room = warehouse.stat().st_size + (256 << 10)
        api.subscriptions = [subscription(i, status="active" * 40) for i in range(1, 40_001)]
        filler = fill(disk, leave=room)
        argv = sync_argv(api, warehouse, "--resources", "subscriptions")
        result = devportal(*argv, env=token_env(api))
        assert result.code == 1, result.err
        line = one_line_error(result)
        assert "no space left" in line and str(warehouse.parent) in line, line
        assert "free disk space" in line
        assert dump(warehouse) == before
        assert no_draft_left(warehouse)

        filler.unlink()
        result = devportal(*argv, env=token_env(api))
        assert result.code == 0, result.err
        assert current_ids(warehouse) == list(range(1, 40_001))


def test_a_disk_that_fills_while_loading_is_one_line_and_discard_frees_everything(
    devportal: Cli, tmpfs: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while the sync loads (held after its first table until the disk is
    full): the warehouse stays as it was, the run is set aside, `packages discard --all`
    removes every file of it, and the next sync (with room again) loads everything."""
    from devportal.warehouse.destination import ExactCopyJob

    disk = tmpfs()
    warehouse = disk / "wh" / "warehouse.duckdb"
    with HostileApi(per_page=1000) as api:
        synced(api, devportal, warehouse)
        before = dump(warehouse)
        api.subscriptions = [subscription(i, status="canceled") for i in range(1, 3001)]
        api.settings = [
            {"user": {"service": {"id": 1000 + i}}, "settings": {"k": "v" * 200}}
            for i in range(1, 3001)
        ]
        fillers: list[Path] = []
        real_run = ExactCopyJob.run

        def run_then_fill(job: ExactCopyJob) -> None:
            real_run(job)
            if not fillers:
                fillers.append(fill(disk))

        monkeypatch.setattr(ExactCopyJob, "run", run_then_fill)
        argv = sync_argv(api, warehouse, "--resources", "subscriptions,user_settings")
        result = devportal(*argv, "--no-models", env=token_env(api))
        assert fillers, "the sync never loaded"
        assert result.code == 1, result.err
        line = one_line_error(result)
        assert "warehouse is as it was before the run" in line, line
        assert "free disk space" in line, line
        assert dump(warehouse) == before
        assert no_draft_left(warehouse)
        load_id = line.split("devportal packages discard ")[1].split("`")[0]
        assert load_id in devportal("packages", "--warehouse", str(warehouse)).out

        monkeypatch.setattr(ExactCopyJob, "run", real_run)
        fillers[0].unlink()
        discarded = devportal("packages", "discard", "--all", "--warehouse", str(warehouse))
        assert discarded.code == 0, discarded.err
        left = [p for p in pipelines_dir(warehouse).rglob("*") if load_id in p.name]
        assert left == []

        result = devportal(*argv, env=token_env(api))
        assert result.code == 0, result.err
        canceled = query(warehouse, f"{CURRENT} AND status = 'canceled'")
        assert canceled == [(3000,)]
        assert query(warehouse, "SELECT count(*) FROM devportal.user_settings") == [(3000,)]


@pytest.mark.parametrize("name", ["sales 100%", "my%20data", "it's 50% off"])
def test_a_warehouse_folder_with_percent_signs_works_for_every_command(
    api: HostileApi, devportal: Cli, tmp_path: Path, name: str
) -> None:
    warehouse = tmp_path / name / "warehouse.duckdb"
    synced(api, devportal, warehouse)
    assert current_ids(warehouse) == [1, 2, 3, 4, 5]
    for argv in (
        ["models", "--check", "--warehouse", str(warehouse)],
        ["report", "--warehouse", str(warehouse)],
        ["manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse)],
        ["packages", "--warehouse", str(warehouse)],
    ):
        result = devportal(*argv)
        assert result.code == 0, (argv[0], result.err)
    assert query(warehouse, "SELECT count(*) FROM devportal.app_manifests") == [(1,)]


@pytest.mark.parametrize(("name", "char"), [("back\\slash", "\\"), ("what?", "?")])
def test_a_folder_duckdb_cannot_open_is_refused_in_one_line_and_nothing_is_written_elsewhere(
    api: HostileApi, devportal: Cli, tmp_path: Path, name: str, char: str
) -> None:
    """DuckDB reads `\\` as a folder separator and `?` as options on every system: before this
    was refused, `back\\slash/w.duckdb` was written to `back/slash/w.duckdb` when that existed."""
    elsewhere = tmp_path / "back" / "slash"
    elsewhere.mkdir(parents=True)
    warehouse = tmp_path / name / "warehouse.duckdb"
    api.subscriptions = [subscription(1)]
    for argv in (
        sync_argv(api, warehouse),
        ["models", "--warehouse", str(warehouse)],
        ["report", "--warehouse", str(warehouse)],
        ["manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse)],
    ):
        result = devportal(*argv, env=token_env(api))
        assert result.code == 2, (argv[0], result.err)
        line = one_line_error(result)
        assert f"without {char}" in line and str(warehouse) in line, line
    assert devportal("packages", "--warehouse", str(warehouse)).code == 0
    assert list(elsewhere.iterdir()) == []
    assert not warehouse.exists()
    shutil.rmtree(tmp_path / name, ignore_errors=True)


# -- memory: the load fits its cap -------------------------------------------------------------


def test_the_load_fits_a_tight_memory_cap_and_one_that_cannot_fit_is_one_line(
    devportal: Cli, tmp_path: Path
) -> None:
    """DuckDB cannot spill the 32 MiB buffer each JSON-lines read holds: with a package's jobs
    loading side by side, four of them overflowed the 128 MB default cap (dlt then retried,
    printing tracebacks). One job at a time fits a 48 MB cap; a cap below one buffer is refused
    before the load starts, in one line naming the setting, the warehouse as it was."""
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    with HostileApi(per_page=5000) as api:
        api.subscriptions = [subscription(i) for i in range(1, 2001)]
        api.settings = [
            {"user": {"service": {"id": u}}, "settings": {f"key{k}": f"v{u}" for k in range(8)}}
            for u in range(1, 20_001)
        ]
        argv = sync_argv(api, warehouse, "--no-models", "--progress", "off")
        argv += ["--resources", "subscriptions,user_settings"]
        result = devportal(*argv, env=token_env(api, duckdb_memory_limit="48MB"))
        assert result.code == 0, result.err
        assert result.err == ""  # no retried job, no warning
        assert query(warehouse, "SELECT count(*) FROM devportal.user_setting_values") == [
            (160_000,)
        ]
        before = dump(warehouse)

        api.subscriptions[0]["status"] = "canceled"
        result = devportal(*argv, env=token_env(api, duckdb_memory_limit="16MB"))
        assert result.code == 1
        line = one_line_error(result)
        assert result.err.strip() == line
        # refused before it starts (`warehouse.fit`): the setting and a value that fits
        assert "was not loaded" in line and "duckdb_memory_limit" in line and "16MB" in line, line
        assert "Out of Memory" not in line
        assert "the warehouse is as it was" in line.lower()
        assert dump(warehouse) == before


def test_a_disk_without_room_for_the_copy_is_refused_before_loading(
    devportal: Cli, tmpfs: Callable[..., Path]
) -> None:
    """Every DuckDB writer changes a copy of the warehouse: with less free room than that copy,
    `sync`, `models` and `manifest load` refuse before they start, in one line with the room
    needed, the room free and where; nothing is loaded, and with room again the sync runs."""
    disk = tmpfs("32m")
    warehouse = disk / "wh" / "warehouse.duckdb"
    with HostileApi() as api:
        api.subscriptions = [subscription(i) for i in range(1, 200)]
        synced(api, devportal, warehouse)
        before = dump(warehouse)
        size = warehouse.stat().st_size
        filler = fill(disk, leave=size // 2)
        api.subscriptions = [subscription(i, status="canceled") for i in range(1, 200)]
        for argv in (
            sync_argv(api, warehouse),
            ["models", "--warehouse", str(warehouse)],
            ["manifest", "load", str(DEMO_APP), "--warehouse", str(warehouse)],
        ):
            result = devportal(*argv, env=token_env(api))
            assert result.code == 1, (argv[0], result.err)
            line = one_line_error(result)
            assert "not enough free disk space for the copy of warehouse" in line, line
            assert f"it needs {size / 10**6:,.1f} MB" in line or "it needs " in line, line
            assert " MB are free on the device of " in line and str(disk) in line, line
            assert "nothing was written" in line
            assert dump(warehouse) == before
            assert no_draft_left(warehouse)
        filler.unlink()
        result = devportal(*sync_argv(api, warehouse), env=token_env(api))
        assert result.code == 0, result.err
        assert query(warehouse, f"{CURRENT} AND status = 'canceled'") == [(199,)]
