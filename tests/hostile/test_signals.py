"""A signal that ends a run is a failure like any other. SIGTERM (what cron wrappers, systemd
and CI timeouts send) and SIGHUP (a closed terminal), at any step of `devportal sync`: while it
reads the API (the early read and the read inside the run), while it loads, while it builds
the models. Each run ends at once with 128 + the signal's number and one line; the failure is
recorded (`devportal status` says failed, not fresh) and posted to the alert webhook; the
warehouse lock is freed (the next sync runs); a read leaves no spooled file; a load is put back.
Ctrl-C stays "devportal: interrupted", 130.

Real processes, real signals from this one, each sent while the run is held at the step it is
meant to hit: the hostile API holds a page until released (`Gate`), and a load job, a model
build or the run before it reads waits on a named pipe the test opens once the signal is sent
(`HOLD_IN`). Nothing is timed: each signal is sent once the state it is meant to hit exists,
and each wait is bounded only against a hang. What runs before and after the stopped run (the
first sync, `status`, the next sync) runs in this process (`devportal`), so a case costs one
process of its own."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import (
    REPO,
    CliResult,
    OnEngine,
    default_signals,
    finished,
    start_devportal,
    subscription,
)
from tests.hostile.conftest import token_env
from tests.hostile.server import (
    SETTINGS,
    SUBSCRIPTIONS,
    Gate,
    HangupGate,
    HostileApi,
    held_at,
    held_watching,
)
from tests.operations.receiver import Receiver, receiving

ROWS = 30  # 10 pages of 3
# the page a read is stopped at: the reader has taken page 1 and waits for this one
HELD_PAGE = 2

# Run as `python -c HOLD_IN STEP READY RELEASE ARGV...`: the real CLI as its own program (its
# signal handling on), held inside STEP: it writes STEP to the named pipe READY (the test reads
# it: the process is there), then waits until the test has opened and closed the named pipe
# RELEASE (after the signal). `load`: in the first load job, on a thread of dlt's; `models`: in
# the first model built, on the main thread (the signal interrupts the wait); `sync`: on the
# main thread as `devportal sync` starts the sync proper (dlt imported, the early read running
# on its own). The wait is a `select` of 50 ms at a time on RELEASE (opened without blocking),
# not a blocking open: a signal the kernel hands to another thread of the process runs its
# Python handler only once the main thread runs Python again, never inside a blocked call.
HOLD_IN = """
import os
import select
import sys

step, ready, release = sys.argv[1], sys.argv[2], sys.argv[3]
held = []

def hold():
    if held:
        return
    held.append(step)
    fd = os.open(release, os.O_RDONLY | os.O_NONBLOCK)  # the test can open it from now on
    with open(ready, "w") as f:
        f.write(step)
    # readable once a writer has come and gone (a pipe no writer ever opened is not)
    while not select.select([fd], [], [], 0.05)[0]:
        pass
    os.close(fd)

def before(cls, name):
    real = getattr(cls, name)
    def wrapped(*args, **kwargs):
        hold()
        return real(*args, **kwargs)
    setattr(cls, name, wrapped)

if step == "load":
    from dlt.common.destination.client import RunnableLoadJob
    before(RunnableLoadJob, "run_managed")
elif step == "models":
    import devportal.models.build

    before(sys.modules["devportal.models.build"], "_build_model")  # `build` is also a function
elif step == "sync":
    import devportal.load.sync

    before(sys.modules["devportal.load.sync"], "sync")
else:
    raise SystemExit(f"no hold in {step}")

from devportal.cli import main

sys.argv = ["devportal", *sys.argv[4:]]
main()
"""


@pytest.fixture
def world(api: HostileApi) -> HostileApi:
    api.subscriptions = [subscription(i) for i in range(1, ROWS + 1)]
    api.settings = [{"user": {"service": {"id": 1000 + i}}, "settings": {"n": i}} for i in (1, 2)]
    return api


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiving() as receiver:
        yield receiver


def argv(api: HostileApi, warehouse: Path, *extra: str) -> list[str]:
    return ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse), *extra]


def environment(api: HostileApi, hook: Receiver, speedups: str = "on") -> dict[str, str | None]:
    # a held page is held for as long as the run takes to reach the state the test waits for
    # (minutes on a loaded machine): the client must not give up on it first (a retry's
    # warning would be a second line)
    return {
        **token_env(api, timeout_s=600, max_wait_s=1200),
        "ALERTS__WEBHOOK_URL": hook.url,
        "DEVPORTAL_SPEEDUPS": speedups,
    }


Devportal = Callable[..., CliResult]  # the `devportal` fixture: the CLI in this process


def first_sync(devportal: Devportal, api: HostileApi, warehouse: Path, hook: Receiver) -> None:
    """A successful sync first: `status` would say fresh if the stopped one left no trace."""
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    done = devportal(*argv(api, warehouse, "--no-models"), env=environment(api, hook))
    assert done.code == 0, done.err


def stopped(result: CliResult, signum: int) -> str:
    """The stopped run's one line: its exit code 128 + SIGNUM and nothing else on stderr (no
    thread of it printed anything as it ended)."""
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert result.code == 128 + signum, result.err
    assert len(lines) == 1, result.err
    name = signal.Signals(signum).name
    assert lines[0].startswith(f"devportal: error: stopped by {name}"), lines[0]
    return lines[0].removeprefix("devportal: error: ")


def interrupted(result: CliResult) -> None:
    """Ctrl-C's end: 130 and its one line, nothing else on stderr."""
    assert result.code == 130, result.err
    assert result.err.strip().splitlines() == ["devportal: interrupted"], result.err


def stopped_reading(result: CliResult, signum: int) -> str:
    """The one line of a run stopped while it read: the same wherever the read was (the early
    read, the read inside the run, the settings)."""
    cause = stopped(result, signum)
    assert cause == f"stopped by {signal.Signals(signum).name} while reading: nothing was loaded"
    return cause


def assert_recorded(
    devportal: Devportal,
    api: HostileApi,
    warehouse: Path,
    hook: Receiver,
    signum: int,
    cause: str,
) -> None:
    """The failure is on record (`status` fails, naming it), posted, and the lock is free."""
    dlt_folder = warehouse.parent / f".{warehouse.stem}.dlt"
    recorded = json.loads((dlt_folder / "devportal.last_failure.json").read_text())
    assert recorded["exit_code"] == 128 + signum and recorded["cause"] == cause
    status = devportal("status", "--warehouse", str(warehouse), "--format", "json")
    assert status.code == 1, status.out + status.err
    assert json.loads(status.out)["state"] == "failed"
    hook.wait_for(1)
    assert any(cause in text for text in hook.texts()), hook.texts()
    assert not [p for p in dlt_folder.glob("*/spool/**/*") if p.is_file()], "a spool was left"
    again = devportal(*argv(api, warehouse, "--no-models"), env=environment(api, hook))
    assert again.code == 0, again.err  # the lock was freed, nothing left in the way


@contextmanager
def gated(api: HostileApi, path: str, page: int) -> Iterator[Gate]:
    gate = Gate()
    held_at(api, path, gate, page)
    try:
        yield gate
    finally:
        gate.release()


def signal_when_held(proc: subprocess.Popen[str], gate: Gate, signum: int) -> CliResult:
    """Send SIGNUM once PROC waits for the held answer; the run must end while it is still
    held (released only afterwards, by `gated`)."""
    if not gate.reached.wait(120):
        proc.kill()
        raise AssertionError(f"the run never asked for the held page: {finished(proc).err}")
    proc.send_signal(signum)
    return finished(proc, timeout=60)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
@pytest.mark.parametrize(
    ("speedups", "path"),
    [
        ("on", SUBSCRIPTIONS),  # the early read, while dlt imports or the run takes it
        ("off", SUBSCRIPTIONS),  # the read inside the run, on the main thread's pool
        ("off", SETTINGS),  # subscriptions already spooled
    ],
    ids=["early-read", "read", "settings-read"],
)
def test_a_signal_while_reading_is_a_recorded_failure(
    signum: int,
    speedups: str,
    path: str,
    world: HostileApi,
    hook: Receiver,
    devportal: Devportal,
    tmp_path: Path,
) -> None:
    """Wherever the main thread is when the early read is signalled (importing dlt, setting up
    the load, or already taking the pages), the run ends the same way as one stopped in the
    read inside the run."""
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    first_sync(devportal, world, warehouse, hook)
    if path == SETTINGS:
        world.per_page = 1
    with gated(world, path, HELD_PAGE) as gate:
        proc = start_devportal(
            *argv(world, warehouse, "--no-models"), env=environment(world, hook, speedups)
        )
        result = signal_when_held(proc, gate, signum)
    cause = stopped_reading(result, signum)
    assert_recorded(devportal, world, warehouse, hook, signum, cause)


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"]
)
def test_a_signal_while_the_early_read_runs_ahead_ends_it_at_once(
    signum: int, world: HostileApi, hook: Receiver, devportal: Devportal, tmp_path: Path
) -> None:
    """The early read runs on threads of its own while the run imports dlt and sets up its
    load: here the run is held just before its sync starts, the early read waits for a held
    page, and the signal comes. The early read ends at once on its own (it hangs up on the
    held page while the run is still held), and once let go the run ends where its read waits
    first: the read's one line and exit code (Ctrl-C's for SIGINT), recorded."""
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    first_sync(devportal, world, warehouse, hook)
    ready, release = hold_pipes(tmp_path)
    gate = HangupGate()
    held_watching(world, SUBSCRIPTIONS, gate, HELD_PAGE)
    try:
        args = argv(world, warehouse, "--no-models")
        proc = start_held("sync", ready, release, args, environment(world, hook))
        wait_ready(proc, ready, "sync")
        if not gate.reached.wait(120):
            proc.kill()
            raise AssertionError(f"the early read never asked for the held page: {finished(proc)}")
        proc.send_signal(signum)
        assert gate.hung_up.wait(60), "the early read went on waiting for its page"
        assert proc.poll() is None, "the run ended before it was let go"
        result = let_go(proc, release)
    finally:
        gate.release()
    if signum == signal.SIGINT:
        interrupted(result)
        return
    cause = stopped_reading(result, signum)
    assert_recorded(devportal, world, warehouse, hook, signum, cause)


def hold_pipes(tmp_path: Path) -> tuple[Path, Path]:
    ready, release = tmp_path / "ready", tmp_path / "release"
    os.mkfifo(ready)
    os.mkfifo(release)
    return ready, release


def start_held(
    step: str, ready: Path, release: Path, argv: list[str], env: dict[str, str | None]
) -> subprocess.Popen[str]:
    merged = {**os.environ, **env}
    return subprocess.Popen(
        [sys.executable, "-c", HOLD_IN, step, str(ready), str(release), *argv],
        cwd=REPO,
        env={k: v for k, v in merged.items() if v is not None},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )


def wait_ready(proc: subprocess.Popen[str], ready: Path, step: str) -> None:
    """Until PROC writes STEP to READY (it is held there); fails if it ends first."""
    fd = os.open(ready, os.O_RDONLY | os.O_NONBLOCK)
    try:
        said = b""
        while proc.poll() is None and said != step.encode():
            readable, _, _ = select.select([fd], [], [], 0.2)
            if readable:
                said += os.read(fd, 64)
        assert said == step.encode(), f"never held in {step}: {finished(proc).err}"
    finally:
        os.close(fd)


def signal_and_release(proc: subprocess.Popen[str], release: Path, signum: int) -> CliResult:
    """Send SIGNUM to PROC held on RELEASE, then let the held thread go on (a load job finishes
    its table: dlt stops after it) unless the signal ended the wait itself (a model build)."""
    proc.send_signal(signum)
    return let_go(proc, release)


def let_go(proc: subprocess.Popen[str], release: Path) -> CliResult:
    """Let PROC's thread held on RELEASE go on (unless the wait has ended already); its end."""
    while proc.poll() is None:
        try:
            os.close(os.open(release, os.O_WRONLY | os.O_NONBLOCK))
            break  # the held thread has the pipe open: it sees it opened and closed now
        except OSError:  # ENXIO: not waiting on it (yet, or any more)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(0.05)
    return finished(proc, timeout=120)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_signal_while_loading_puts_the_load_back_and_is_recorded(
    signum: int,
    engine: OnEngine,
    world: HostileApi,
    hook: Receiver,
    devportal: Devportal,
    tmp_path: Path,
) -> None:
    """On both engines: the DuckDB copy is dropped, the PostgreSQL snapshot put back and its
    advisory lock released (the next sync runs)."""
    warehouse = engine.warehouse
    env = {**environment(world, hook), **engine.env}
    args = ["sync", "--base-url", world.base_url, *engine.argv(), "--no-models"]
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    assert devportal(*args, env=in_process(env)).code == 0
    world.subscriptions = [subscription(i, status="expired") for i in range(1, ROWS + 1)]
    ready, release = hold_pipes(tmp_path)
    proc = start_held("load", ready, release, args, env)
    wait_ready(proc, ready, "load")
    cause = stopped(signal_and_release(proc, release, signum), signum)
    assert "while loading" in cause and "as it was before the run" in cause
    statuses = engine.query(
        "select distinct status from devportal.subscriptions where _dlt_valid_to is null"
    )
    assert statuses == [("active",)]  # the stopped run's rows never landed
    dlt_folder = warehouse.parent / f".{warehouse.stem}.dlt"
    recorded = json.loads(next(dlt_folder.glob("*.last_failure.json")).read_text())
    assert recorded["exit_code"] == 128 + signum and recorded["cause"] == cause
    hook.wait_for(1)
    assert any(cause in text for text in hook.texts())
    status = devportal("status", *engine.argv(), "--format", "json", env=in_process(env))
    assert json.loads(status.out)["state"] == "failed", status.out + status.err
    assert not [p for p in dlt_folder.glob("*/spool/**/*") if p.is_file()]
    again = devportal(*args, env=in_process(env))
    assert again.code == 0, again.err  # both locks freed
    assert engine.query(
        "select distinct status from devportal.subscriptions where _dlt_valid_to is null"
    ) == [("expired",)]


@pytest.mark.parametrize("command", ["sync", "models"])
def test_a_signal_while_building_the_models_is_recorded(
    command: str, world: HostileApi, hook: Receiver, devportal: Devportal, tmp_path: Path
) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    first_sync(devportal, world, warehouse, hook)
    ready, release = hold_pipes(tmp_path)
    args = (
        argv(world, warehouse) if command == "sync" else ["models", "--warehouse", str(warehouse)]
    )
    # models built in the sync's own process (not exec'd), where the hold is
    env = environment(world, hook, speedups="early,no-pandas")
    proc = start_held("models", ready, release, args, env)
    wait_ready(proc, ready, "models")
    cause = stopped(signal_and_release(proc, release, signal.SIGTERM), signal.SIGTERM)
    assert_recorded(devportal, world, warehouse, hook, signal.SIGTERM, cause)
    built = devportal("models", "--warehouse", str(warehouse), env=environment(world, hook))
    assert built.code == 0, built.err  # the models' lock is free too


@pytest.mark.parametrize("speedups", ["on", "off"], ids=["early-read", "read"])
def test_ctrl_c_while_reading_stays_an_interruption(
    speedups: str, world: HostileApi, hook: Receiver, tmp_path: Path
) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    warehouse.parent.mkdir(parents=True)
    with gated(world, SUBSCRIPTIONS, HELD_PAGE) as gate:
        proc = start_devportal(
            *argv(world, warehouse, "--no-models"), env=environment(world, hook, speedups)
        )
        result = signal_when_held(proc, gate, signal.SIGINT)
    interrupted(result)


def in_process(env: dict[str, str | None]) -> dict[str, str]:
    """ENV for the `devportal` fixture, which sets each key (none is to be left out here)."""
    assert all(value is not None for value in env.values()), env
    return {key: str(value) for key, value in env.items()}
