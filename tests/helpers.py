"""Helpers shared by tests: sync from a sandbox, read a warehouse, compare it with the truth."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

# spec 2.2: the pagination wrapper, in the order the API serves it
WRAPPER_FIELDS = [
    "current_page",
    "data",
    "first_page_url",
    "from",
    "last_page",
    "last_page_url",
    "next_page_url",
    "path",
    "per_page",
    "prev_page_url",
    "to",
    "total",
]

# Retries without the production pauses (0.2 s doubling to 10 s): sleeps of milliseconds, so a
# test that meets faults, 5xx answers or broken bodies spends its time on requests, not waiting.
# Keywords of `sync`, `sync_from` and `DevportalConfig`, or of `token_env` for the CLI.
FAST_RETRY: dict[str, float] = {"backoff_initial_s": 0.001, "backoff_max_s": 0.01}


# the SCD2 history of the subscriptions, in a stable order, and the ids with two current versions
# (there must be none): asked of any warehouse, DuckDB or PostgreSQL
HISTORY = (
    "SELECT id, service_id, status, expires_at, is_test, _dlt_valid_from, _dlt_valid_to "
    "FROM devportal.subscriptions ORDER BY id, _dlt_valid_from"
)
TWO_CURRENT = (
    "SELECT id FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL "
    "GROUP BY id HAVING count(*) > 1"
)


def sync_from(sb: Any, warehouse: Path, destination: Any = None, **kwargs: Any) -> Any:
    """`devportal.load.sync.sync` from sandbox SB into WAREHOUSE (on DESTINATION, as `--destination`
    takes it), its token and URL; the models are not built unless `build_models=True`. Other
    keywords go to `sync` (settings)."""
    from devportal import models
    from devportal.load.sync import sync
    from devportal.warehouse.target import Target

    build_models = kwargs.pop("build_models", False)
    target = Target.of(warehouse, destination)
    result = sync(target, base_url=sb.base_url, access_token=sb.token, **kwargs)
    if build_models:  # as `devportal sync` does after its load
        result.extra["models"] = models.build_after_load(target)
    return result


class StorySyncs:
    """A scripted story's syncs: `syncs(sb)` syncs sandbox SB into WAREHOUSE (on DESTINATION)
    and keeps the sandbox's clock of each sync in `clock`."""

    def __init__(self, warehouse: Path, destination: Any = None) -> None:
        self.warehouse, self.destination = warehouse, destination
        self.clock: list[Any] = []

    def __call__(self, sb: Any) -> None:
        self.clock.append(sb.now)
        sync_from(sb, self.warehouse, destination=self.destination)


def query(warehouse: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def one_row(warehouse: Path, table: str, names: list[str]) -> dict[str, Any]:
    """The one row of TABLE (e.g. `analytics.report_figures`) in WAREHOUSE, as {name: value}."""
    (got,) = query(warehouse, f"select {', '.join(names)} from {table}")
    return dict(zip(names, got, strict=True))


def current_rows(warehouse: Path, is_test: bool | None = None) -> list[dict[str, Any]]:
    """Current subscription versions as the API shape (expires_at formatted like the API)."""
    where = "" if is_test is None else f" AND is_test = {str(is_test).lower()}"
    rows = query(
        warehouse,
        "SELECT id, service_id, status, strftime(expires_at, '%Y-%m-%d %H:%M:%S'), is_test "
        f"FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL{where} ORDER BY id",
    )
    return [
        {"id": r[0], "service_id": r[1], "status": r[2], "expires_at": r[3], "is_test": r[4]}
        for r in rows
    ]


def truth_rows(sb: Any, include_test: bool = False) -> list[dict[str, Any]]:
    rows = list(sb.truth(is_test=False))
    if include_test:
        rows += list(sb.truth(is_test=True))
    keys = ("id", "service_id", "status", "expires_at", "is_test")
    return sorted(({k: r[k] for k in keys} for r in rows), key=lambda r: r["id"])


@dataclass
class CliResult:
    """What the `devportal` fixture (tests/conftest.py) returns: exit code and output."""

    code: int
    out: str
    err: str


def subscription(i: int, **changes: Any) -> dict[str, Any]:
    """A Subscription object as the API sends it: id I, its user 1000 + I, active; CHANGES on
    top."""
    row = {"id": i, "service_id": 1000 + i, "status": "active", "expires_at": "2027-01-01 10:00:00"}
    row.update(changes)
    return row


def warehouse_of(args: list[str]) -> Path:
    """The `--warehouse` of a `devportal` argv."""
    return Path(args[args.index("--warehouse") + 1])


def rows_if_loaded(
    warehouse: Path, sql: str, table: str = "subscriptions"
) -> list[tuple[Any, ...]]:
    """SQL's rows, or [] when the warehouse or its `devportal.<table>` table was never
    created (a run refused before it loaded anything)."""
    if not warehouse.exists():
        return []
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        found = con.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'devportal' AND table_name = ?",
            [table],
        ).fetchone()
        if not found or not found[0]:
            return []
        return con.execute(sql).fetchall()
    finally:
        con.close()


class FakeClock:
    """A monotonic clock only the test moves (`now`, `advance`): pass `clock.monotonic` where a
    clock is injected, or the whole object where a module's `time` is monkeypatched (`sleep`
    stays real). It notes which threads have read it, so a test can wait until each thread it
    started has reached the code that reads the time (`wait_for_readers`) before moving it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleep = time.sleep
        self._cond = threading.Condition()
        self._readers: set[int] = set()

    def monotonic(self) -> float:
        with self._cond:
            self._readers.add(threading.get_ident())
            self._cond.notify_all()
            return self.now

    def advance(self, seconds: float) -> None:
        with self._cond:
            self.now += seconds

    def forget_readers(self) -> None:
        with self._cond:
            self._readers.clear()

    def wait_for_readers(self, threads: list[threading.Thread], timeout: float = 20.0) -> None:
        """Until every one of THREADS has read the clock (since `forget_readers`)."""
        wanted = {t.ident for t in threads}
        with self._cond:
            assert self._cond.wait_for(lambda: wanted <= self._readers, timeout), (
                "a thread never read the clock"
            )


_HOLD_FOR_WRITING = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])  # read-write: a program writing the warehouse
print("open", flush=True)
sys.stdin.read()  # open until the test closes its stdin (or kills it): no time limit to outrun
"""


@contextmanager
def holding(script: str, ready: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """A Python process running SCRIPT with ARGS until the block ends (killed then); yields
    once it printed READY (the script then holds what it took until its stdin closes)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == ready
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=60)


def held_open_for_writing(warehouse: Path) -> AbstractContextManager[subprocess.Popen[str]]:
    """Another program holding WAREHOUSE open read-write (DuckDB's lock is per process) until
    the block ends; yields once it has the file open."""
    return holding(_HOLD_FOR_WRITING, "open", str(warehouse))


# -- `devportal` in a process of its own -------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]

# Run as `python -c KILL_IN PHASE NTH MARKER ARGV...`: the real CLI (ARGV), killed by SIGKILL
# from inside the phase it is meant to die in, at a point no outside watcher could time:
# - `normalize`: NTH odd, as dlt's normalize starts spooling the extracted files; NTH even,
#   once they are spooled into the new package, before it is committed;
# - `load`: once the NTH load job (a table's file, or a merge) has run, before the rest.
# Before the signal it writes PHASE to MARKER: a test then knows the process died there, and
# not after the run finished (a process that finishes never writes it).
KILL_IN = """
import os, signal, sys, threading
from pathlib import Path

phase, nth, marker = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
lock = threading.Lock()
calls = []

def die():
    marker.write_text(phase, encoding="utf-8")
    os.kill(os.getpid(), signal.SIGKILL)

def kill_in(cls, name, before):
    real = getattr(cls, name)
    def wrapped(*args, **kwargs):
        with lock:
            calls.append(name)
            mine = len(calls)
        if mine == nth and before:
            die()
        result = real(*args, **kwargs)
        if mine == nth:
            die()
        return result
    setattr(cls, name, wrapped)

if phase == "normalize":
    from dlt.normalize import Normalize
    before = nth % 2 == 1
    nth = 1  # one schema, one spool
    kill_in(Normalize, "spool_files", before)
elif phase == "load":
    from dlt.common.destination.client import RunnableLoadJob
    kill_in(RunnableLoadJob, "run_managed", before=False)
else:
    raise SystemExit(f"no kill point in {phase}")

from devportal.cli import main
sys.exit(main(sys.argv[4:]))
"""


def _command(argv: tuple[str, ...], kill_in: tuple[str, int, Path] | None) -> list[str]:
    if kill_in is None:
        return [sys.executable, "-m", "devportal", *argv]
    phase, nth, marker = kill_in
    return [sys.executable, "-c", KILL_IN, phase, str(nth), str(marker), *argv]


def default_signals() -> None:
    """In a child before it runs: SIGHUP and SIGINT as a program started from a terminal gets
    them, whatever this test run was started under (`nohup`, a background job of a script: both
    ignore one of them, and an ignored signal stays ignored in every child)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_devportal(
    *argv: str,
    env: dict[str, str | None] | None = None,
    cwd: Path | None = None,
    kill_in: tuple[str, int, Path] | None = None,
) -> subprocess.Popen[str]:
    """`python -m devportal ARGV` started in a process of its own (ENV on top of this one's, a
    key set to None left out; in CWD, the checkout by default), its output piped as text;
    KILL_IN (phase, nth, marker): the process kills itself in that phase (see `KILL_IN`)."""
    merged = {**os.environ, **(env or {})}
    return subprocess.Popen(
        _command(argv, kill_in),
        cwd=cwd or REPO,
        env={key: value for key, value in merged.items() if value is not None},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )


def finished(proc: subprocess.Popen[str], timeout: float = 120) -> CliResult:
    """Wait for PROC (from `start_devportal`); its exit code and output."""
    out, err = proc.communicate(timeout=timeout)
    return CliResult(proc.returncode, out, err)


def run_devportal(
    *argv: str,
    env: dict[str, str | None] | None = None,
    cwd: Path | None = None,
    kill_in: tuple[str, int, Path] | None = None,
    timeout: float = 120,
) -> CliResult:
    """`python -m devportal ARGV` in a process of its own, to the end: its exit code (negative:
    the signal that ended it) and output. See `start_devportal`."""
    return finished(start_devportal(*argv, env=env, cwd=cwd, kill_in=kill_in), timeout)


# -- one test, either engine -------------------------------------------------------------------

CREDENTIALS = "DESTINATION__POSTGRES__CREDENTIALS"


@dataclass
class OnEngine:
    """What a test parametrized by the `engine` fixture (tests/conftest.py) needs of the engine
    it runs on: `duckdb` (the warehouse file) or `postgres` (a fresh database on the session's
    throwaway cluster, tests/postgres.py; `warehouse` is then dlt's working folder and the
    lock's place)."""

    name: str
    warehouse: Path
    uri: str | None = None  # PostgreSQL's database
    cluster: Any = None  # PostgreSQL's cluster: `another()` makes a second database on it

    @property
    def destination(self) -> str | None:
        """`--destination`."""
        return None if self.name == "duckdb" else self.name

    @property
    def target(self) -> Any:
        """The `Target` of `sync`, `models.build`, `report`, `engines.connect`."""
        from devportal.warehouse.target import Target

        return Target.of(self.warehouse, self.destination)

    @property
    def env(self) -> dict[str, str]:
        """The environment a run on this engine needs: PostgreSQL's credentials."""
        return {} if self.uri is None else {CREDENTIALS: self.uri}

    def argv(self) -> list[str]:
        """`--warehouse` (and `--destination`) of a `devportal` command on this engine."""
        extra = [] if self.destination is None else ["--destination", self.destination]
        return ["--warehouse", str(self.warehouse), *extra]

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """SQL's rows (parameters written `?`), read with devportal's own connection."""
        from devportal.warehouse import engines

        with (
            _environ(self.env),
            engines.connect(self.target, read_only=True) as engine,
        ):
            return engine.execute(sql, params)

    def dump(self) -> dict[str, list[str]]:
        """Every row of every table of the `devportal` dataset, for before/after comparisons."""
        from devportal.warehouse import engines

        with (
            _environ(self.env),
            engines.connect(self.target, read_only=True) as engine,
        ):
            return {
                table: sorted(map(repr, engine.execute(f"SELECT * FROM devportal.{table}")))
                for table in sorted(engine.relations("devportal"))
            }

    def execute(self, *statements: str) -> None:
        """STATEMENTS run in one transaction (the warehouse file made if there is none)."""
        from devportal.warehouse import engines

        self.warehouse.parent.mkdir(parents=True, exist_ok=True)
        if self.destination is None and not self.warehouse.exists():
            duckdb.connect(str(self.warehouse)).close()
        with (
            _environ(self.env),
            engines.connect(self.target) as engine,
            engine.transaction(),
        ):
            for sql in statements:
                engine.execute(sql)

    def another(self, folder: Path) -> OnEngine:
        """A second, empty warehouse on the same engine (its own file, or its own database,
        dropped at the end of the session with the cluster)."""
        if self.cluster is None:
            return OnEngine(self.name, folder / "warehouse.duckdb")
        uri = self.cluster.uri(self.cluster.create_database())
        return OnEngine(self.name, folder / "warehouse.duckdb", uri, self.cluster)


@contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    before = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
