"""`make bench`: devportal vs dlt's `rest_api` peer vs the HTTP floor, side by side in one run.

For each size (default 100,000 subscriptions, 2,000 users) one sandbox process serves the world;
at each latency (0 and 50 ms per request) the three contenders run interleaved, each as its own
process with a fresh DuckDB file and a fresh dlt working folder, round after round:

    devportal, peer, floor, devportal second sweep, devportal window    (x rounds)

devportal and the floor run with their defaults (adaptive concurrency) unless `--workers` pins
them. At latencies above 0, devportal pinned at `--pinned-workers` (8, the old fixed default)
also runs each round (informational). At 0 ms, each round also has:

- devportal into PostgreSQL right after the DuckDB sweep (`sweep_postgres`: a fresh database of
  a throwaway local server per round, see `benchmarks/postgres.py`);
- `sync_models`: a plain `devportal sync` (every resource, the models built after the load) on
  a fresh warehouse, for the peak-RSS target;
- `slow_server`: devportal, then the floor, against the sandbox with `--server-ms` (8 ms of
  serial server time per request: a single-worker backend);
- in the first `--rate-rounds` rounds, `rate_limited`: devportal (adaptive), then pinned at
  `--workers 8` (`rate_limited_workers8`), against a per-token rate limit of `--rate-limit`
  requests/s (burst `--rate-burst`), set afresh before each run (a full bucket).
The server cost and the rate limit are cleared after their scenario (`SandboxProcess.throttled`).

Then user_accounts for the size's users at 50 ms (after syncing subscriptions and settings) and
`devportal models` on that warehouse, and the same on PostgreSQL (`models_setup_postgres`: the
three resources at 0 ms into a fresh database, then `models_postgres`). Then one devportal sweep
of 1,000,000 subscriptions (peak RSS must stay flat), the floor for the same list, and
`devportal models` on that warehouse.

Every devportal run records its requests, retries and concurrency (mode, settled, peak, cuts,
429s, Retry-After pauses) from its `sync_runs` row (the summary line for PostgreSQL), and every
run the sandbox's own count of API requests and rate-limit 429s during it.

Results: `benchmarks/results/latest.json` and `latest.md` (`quick.*` for `--quick`), with the
machine description; the Markdown is printed at the end. `--render FILE.json` re-renders one.
See `benchmarks/measure.py` for how wall time and peak RSS are taken.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from benchmarks.measure import Measured, run_measured
from benchmarks.postgres import PostgresServer, ServerCost
from benchmarks.report import (
    MODELS_SCENARIOS,
    evaluate_targets,
    pair_ratios,
    postgres_pairs,
    render_markdown,
    summarise,
)
from benchmarks.sandbox import START, SandboxProcess
from devportal.destination import CONCURRENCY_FIELDS

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
WORK = HERE / "work"  # git-ignored scratch space
WINDOW_SINCE = "2026-10-01"  # 30 days before the sandbox clock (START)
WAREHOUSE = "bench.duckdb"  # not devportal.duckdb: the catalog would clash with the dataset
MB = 1024 * 1024
POSTGRES_ENV = "DESTINATION__POSTGRES__CREDENTIALS"

# Inherited settings that would change what a contender does; each run gets only ours.
SCRUB_PREFIXES = (
    "SOURCES__",
    "DESTINATION__",
    "NORMALIZE__",
    "LOAD__",
    "EXTRACT__",
    "DATA_WRITER__",
    "RUNTIME__",
    "PIPELINES__",
    "DLT_",
)


def devportal_command() -> list[str]:
    script = Path(sys.executable).with_name("devportal")
    return [str(script)] if script.exists() else [sys.executable, "-m", "devportal"]


@dataclass
class Run:
    """One measured process run, as saved in the JSON."""

    contender: str  # devportal | peer | floor
    scenario: str  # sweep | second_sweep | window | accounts_setup | user_accounts | models | ...
    size: int
    latency_ms: float
    round: int
    ok: bool
    exit_code: int
    wall_s: float
    peak_rss_bytes: int
    rss_wait4_bytes: int
    rss_sampled_tree_bytes: int
    max_processes: int
    server_cpu_s: float | None
    load_avg_1m: float
    work_s: float | None = None  # the contender's own timing, after interpreter start + imports
    rows: int | None = None
    rows_check: str | None = None  # "ok" or what disagreed
    requests: int | None = None
    steps: dict[str, dict[str, float | None]] = field(default_factory=dict)
    error: str | None = None
    note: str | None = None
    destination: str = "duckdb"  # duckdb | postgres
    db_cpu_s: float | None = None  # the PostgreSQL server's CPU during the run (not in RSS)
    db_peak_pss_bytes: int | None = None  # the server tree's peak summed PSS during the run
    db_idle_pss_bytes: int | None = None  # the same just before the run
    # what the command asked for: None = devportal's default (adaptive), N = `--workers N`
    workers: int | None = None
    # the sandbox's load settings during the run (0 / None: none)
    server_ms: float = 0.0
    rate_limit_per_s: float | None = None
    rate_burst: float | None = None
    # the run's own record (`sync_runs`, else the summary line): requests in flight
    retries: int | None = None
    concurrency_mode: str | None = None  # adaptive | pinned
    concurrency_settled: int | None = None
    concurrency_peak: int | None = None
    concurrency_cuts: int | None = None
    rate_limited: int | None = None  # 429s the client counted
    paused_s: float | None = None  # every worker waiting out a Retry-After
    # the sandbox's counters, after minus before the run (nothing else talks to it meanwhile)
    server_requests: int | None = None  # API requests (429s included)
    server_rate_limited: int | None = None  # the rate limit's 429s

    @property
    def rows_per_s(self) -> float | None:
        return self.rows / self.wall_s if self.rows and self.wall_s > 0 else None

    @property
    def sent(self) -> int | None:
        """Requests the server saw (its counter), else the client's own count."""
        return self.server_requests if self.server_requests is not None else self.requests

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["rows_per_s"] = self.rows_per_s
        sent = self.sent
        # average request rates: over the sync's own seconds, and over the process wall time
        data["request_rate_per_s"] = sent / self.work_s if sent and self.work_s else None
        data["request_rate_wall_per_s"] = sent / self.wall_s if sent and self.wall_s > 0 else None
        return data


# -- what each contender printed ------------------------------------------------------------

SUMMARY = re.compile(r"sync ok \((\w+)\) in ([\d.]+)s: (.*)")


CONCURRENCY_PATTERNS = {
    "retries": r"(\d+) retries",
    "pinned": r"(\d+) in flight \(pinned\)",
    "adaptive": r"concurrency settled at (\d+) \(adaptive, peak (\d+)\)",
    "rate_limited": r"(\d+) rate-limited \(429\)",
    "paused_s": r"paused ([\d.]+)s on Retry-After",
}


def parse_devportal(stdout: str) -> dict[str, Any]:
    """Seconds, rows per table, requests and concurrency from the `sync ok ...` summary line."""
    match = SUMMARY.search(stdout)
    if not match:
        return {}
    rest = match.group(3)
    rows = {name: int(n) for name, n in re.findall(r"(\w+) (\d+)", rest.split(";")[0])}
    requests = re.search(r"(\d+) requests", rest)
    out: dict[str, Any] = {
        "work_s": float(match.group(2)),
        "rows": rows,
        "requests": int(requests.group(1)) if requests else None,
    }
    found = {k: re.search(p, rest) for k, p in CONCURRENCY_PATTERNS.items()}
    if found["retries"]:
        out["retries"] = int(found["retries"].group(1))
    if found["pinned"]:
        n = int(found["pinned"].group(1))
        out.update(concurrency_mode="pinned", concurrency_settled=n, concurrency_peak=n)
    elif found["adaptive"]:
        out.update(
            concurrency_mode="adaptive",
            concurrency_settled=int(found["adaptive"].group(1)),
            concurrency_peak=int(found["adaptive"].group(2)),
        )
    if out.get("concurrency_mode"):  # the summary leaves out zeros
        out["rate_limited"] = int(found["rate_limited"].group(1)) if found["rate_limited"] else 0
        out["paused_s"] = float(found["paused_s"].group(1)) if found["paused_s"] else 0.0
    return out


# the sync_runs columns a run's record is read from: what devportal itself reports
SYNC_RUN_FIELDS = ("requests", "retries", *CONCURRENCY_FIELDS)


def read_sync_run(warehouse: Path) -> dict[str, Any]:
    """The last `sync_runs` row of a devportal DuckDB warehouse (read-only, after the run):
    requests and concurrency as the run recorded them; {} when it cannot be read."""
    try:
        import duckdb

        with duckdb.connect(str(warehouse), read_only=True) as con:
            present = {
                r[0]
                for r in con.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = 'devportal' AND table_name = 'sync_runs'"
                ).fetchall()
            }
            names = [n for n in SYNC_RUN_FIELDS if n in present]
            if not names:
                return {}
            row = con.execute(
                f"SELECT {', '.join(names)} FROM devportal.sync_runs "
                "ORDER BY _dlt_load_id DESC LIMIT 1"
            ).fetchone()
    except Exception:
        return {}
    return {k: v for k, v in zip(names, row or (), strict=False) if v is not None}


def parse_json_line(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                result: dict[str, Any] = json.loads(line)
                return result
            except json.JSONDecodeError:
                return {}
    return {}


def first_error_line(measured: Measured) -> str:
    lines = [ln.strip() for ln in measured.stderr.splitlines() if ln.strip()]
    text = lines[-1] if lines else f"exit code {measured.exit_code}"
    return ("timed out; " if measured.timed_out else "") + text[:300]


def dlt_steps(pipeline_name: str, pipelines_dir: Path, measured: Measured) -> dict[str, Any]:
    """Seconds and peak sampled RSS of each step of the pipeline's last dlt trace."""
    try:
        import dlt  # the harness only reads the trace; imported late to keep --help fast

        trace = dlt.attach(pipeline_name, pipelines_dir=str(pipelines_dir)).last_trace
    except Exception:
        return {}
    if trace is None:
        return {}
    steps: dict[str, Any] = {}
    for step in trace.steps:
        if step.finished_at is None:
            continue
        start, end = step.started_at.timestamp(), step.finished_at.timestamp()
        peak = measured.peak_between(start, end)
        steps[step.step] = {"seconds": end - start, "peak_rss_bytes": peak}
    return steps


def count_current(warehouse: Path) -> int | None:
    """Current subscription rows in a devportal warehouse (read-only, after the run)."""
    try:
        import duckdb

        with duckdb.connect(str(warehouse), read_only=True) as con:
            row = con.execute(
                "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL"
            ).fetchone()
    except Exception:
        return None
    return int(row[0]) if row else None


# -- the bench ------------------------------------------------------------------------------


@dataclass
class Settings:
    sizes: list[int]
    users: int
    rounds: int
    latencies: list[float]
    big_size: int | None
    accounts_latency: float
    window_since: str
    workers: int | None  # None: devportal's and the floor's default (adaptive concurrency)
    pinned_workers: int  # the pinned comparison (`--workers N`): 50 ms variant, rate-limited
    keep: bool
    quick: bool
    postgres: bool = True
    server_ms: float = 8.0  # the slow-server scenario's serial cost per request (0: skip)
    rate_limit: float = 50.0  # the rate-limited scenario's requests/s per token (0: skip)
    rate_burst: float = 50.0
    rate_rounds: int = 2  # rounds (of the 0 ms rounds) that include the rate-limited pair
    models_rss: bool = True  # `devportal sync` with models, fresh warehouse, each 0 ms round


class Bench:
    """Runs the scenarios and collects `Run`s; one instance per invocation."""

    def __init__(self, settings: Settings, workdir: Path) -> None:
        self.settings = settings
        self.workdir = workdir
        self.devportal = devportal_command()
        self.runs: list[Run] = []
        self.sandboxes: list[dict[str, Any]] = []
        self.pg: PostgresServer | None = None
        self.postgres: dict[str, Any] = {"enabled": settings.postgres}
        self._started = time.perf_counter()

    # -- plumbing ---------------------------------------------------------------------------

    def env(self, sandbox: SandboxProcess, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB_PREFIXES)}
        env["SOURCES__DEVPORTAL__ACCESS_TOKEN"] = sandbox.token
        env["RUNTIME__DLTHUB_TELEMETRY"] = "false"
        env["PYTHONUNBUFFERED"] = "1"
        env.update(extra or {})
        return env

    def measure(
        self,
        sandbox: SandboxProcess,
        cmd: list[str],
        cwd: Path,
        *,
        contender: str,
        scenario: str,
        latency: float,
        round_no: int,
        finish: Callable[[Run, Measured], None] | None = None,
        pg_database: str | None = None,
        workers: int | None = None,
    ) -> Run:
        """Run `cmd` measured; with `pg_database`, against that database of `self.pg`."""
        load = os.getloadavg()[0]
        throttle = self.throttle_state(sandbox)
        before = self.sandbox_stats(sandbox)
        extra: dict[str, str] = {}
        cost: ServerCost | None = None
        if pg_database is not None:
            assert self.pg is not None
            extra[POSTGRES_ENV] = self.pg.uri(pg_database)
            cost = self.pg.watch()
        env = self.env(sandbox, extra)
        if cost is not None:
            with cost:
                measured = run_measured(cmd, cwd=cwd, env=env, server=sandbox.process)
        else:
            measured = run_measured(cmd, cwd=cwd, env=env, server=sandbox.process)
        run = Run(
            contender=contender,
            scenario=scenario,
            size=sandbox.subscriptions,
            latency_ms=latency,
            round=round_no,
            ok=measured.exit_code == 0,
            exit_code=measured.exit_code,
            wall_s=measured.wall_s,
            peak_rss_bytes=measured.peak_rss,
            rss_wait4_bytes=measured.rss_wait4,
            rss_sampled_tree_bytes=measured.rss_sampled_tree,
            max_processes=measured.max_processes,
            server_cpu_s=measured.server_cpu_s,
            load_avg_1m=load,
            workers=workers,
            **throttle,
        )
        after = self.sandbox_stats(sandbox)
        if before is not None and after is not None:
            run.server_requests = int(after["api_requests"]) - int(before["api_requests"])
            run.server_rate_limited = int(after["rate_limited"]) - int(before["rate_limited"])
        if cost is not None:
            run.destination = "postgres"
            run.db_cpu_s = cost.cpu_s
            run.db_peak_pss_bytes = cost.peak_pss
            run.db_idle_pss_bytes = cost.idle_pss
        if not run.ok:
            run.error = first_error_line(measured)
        elif finish is not None:
            finish(run, measured)
        self.runs.append(run)
        self.progress(run)
        return run

    @staticmethod
    def sandbox_stats(sandbox: SandboxProcess) -> dict[str, Any] | None:
        try:
            return sandbox.stats()
        except Exception:  # a run that killed the server is reported by the run itself
            return None

    @staticmethod
    def throttle_state(sandbox: SandboxProcess) -> dict[str, Any]:
        """The server cost and rate limit in force, as `Run` fields."""
        try:
            state = sandbox.state()
        except Exception:
            return {}
        limit = state.get("rate_limit") or {}
        return {
            "server_ms": float(state.get("server_ms") or 0.0),
            "rate_limit_per_s": limit.get("per_second"),
            "rate_burst": limit.get("burst"),
        }

    def progress(self, run: Run) -> None:
        elapsed = time.perf_counter() - self._started
        concurrency = ""
        if run.concurrency_mode:
            concurrency = f" [{run.concurrency_mode} {run.concurrency_settled}"
            if run.concurrency_mode == "adaptive":
                concurrency += f", peak {run.concurrency_peak}"
            concurrency += "]"
        if run.server_rate_limited:
            concurrency += f" {run.server_rate_limited} x 429"
        what = (
            f"{run.wall_s:7.2f} s {run.peak_rss_bytes / MB:7.0f} MB"
            + (f" {run.rows} rows" if run.rows is not None else "")
            + concurrency
            + (f" (postgres CPU {run.db_cpu_s:.2f} s)" if run.db_cpu_s is not None else "")
            + (f" [{run.rows_check}]" if run.rows_check not in (None, "ok") else "")
            + (f" FAILED: {run.error}" if run.error else "")
        )
        print(
            f"[{elapsed:6.0f}s] {run.size:>8} {run.latency_ms:>3.0f} ms r{run.round} "
            f"{run.contender:<9} {run.scenario:<21} {what}",
            file=sys.stderr,
            flush=True,
        )

    def sync_cmd(
        self,
        sandbox: SandboxProcess,
        warehouse: Path,
        *extra: str,
        workers: int | None = None,
        models: bool = False,
    ) -> list[str]:
        """`devportal sync`; `--workers` only when pinned (`workers`, else `--workers` of the
        bench), otherwise devportal's default: adaptive concurrency."""
        return [
            *self.devportal,
            "sync",
            "--base-url",
            sandbox.base_url,
            "--warehouse",
            str(warehouse),
            *([] if models else ["--no-models"]),
            "--progress",
            "off",
            *(["--workers", str(workers)] if workers else []),
            *extra,
        ]

    # -- contenders -------------------------------------------------------------------------

    def run_devportal(
        self,
        sandbox: SandboxProcess,
        warehouse: Path,
        cwd: Path,
        *,
        scenario: str,
        latency: float,
        round_no: int,
        resources: str | None = "subscriptions",
        extra: tuple[str, ...] = (),
        expected: int | None = None,
        count_table: str = "subscriptions",
        workers: int | None = None,
        pg_database: str | None = None,
        models: bool = False,
    ) -> Run:
        """`devportal sync` into DuckDB at `warehouse`, or into `pg_database` on `self.pg`
        (`warehouse` then only places dlt's working folder and the lock file). `resources`
        None reads them all; `models` lets the sync build the models (no `--no-models`);
        `workers` pins the concurrency (else `--workers` of the bench, else adaptive)."""
        workers = workers or self.settings.workers

        def finish(run: Run, measured: Measured) -> None:
            parsed = parse_devportal(measured.stdout)
            # the run's own record (`sync_runs`), cuts included
            if pg_database is None:
                parsed.update(read_sync_run(warehouse))
            elif self.pg is not None:
                parsed.update(self.pg.last_row(pg_database, "sync_runs", SYNC_RUN_FIELDS))
            run.work_s = parsed.get("work_s")
            run.requests = parsed.get("requests")
            run.rows = parsed.get("rows", {}).get(count_table)
            run.retries = parsed.get("retries")
            for name in CONCURRENCY_FIELDS:
                setattr(run, name, parsed.get(name))
            # the pipeline of each destination has its own name (devportal.pipeline_name)
            name = "devportal" if pg_database is None else "devportal_postgres"
            run.steps = dlt_steps(name, warehouse.parent / f".{warehouse.stem}.dlt", measured)
            if expected is not None:
                if pg_database is not None:
                    assert self.pg is not None
                    current = self.pg.count_current(pg_database)
                else:
                    current = count_current(warehouse)
                run.rows_check = (
                    "ok"
                    if current == expected and run.rows == expected
                    else f"read {run.rows}, warehouse holds {current} current, API has {expected}"
                )

        if pg_database is not None:
            extra = ("--destination", "postgres", *extra)
        if resources:
            extra = ("--resources", resources, *extra)
        cmd = self.sync_cmd(sandbox, warehouse, *extra, workers=workers, models=models)
        return self.measure(
            sandbox,
            cmd,
            cwd,
            contender="devportal",
            scenario=scenario,
            latency=latency,
            round_no=round_no,
            finish=finish,
            pg_database=pg_database,
            workers=workers,
        )

    def run_peer(
        self, sandbox: SandboxProcess, cwd: Path, *, latency: float, round_no: int, expected: int
    ) -> Run:
        pipelines_dir = cwd / "dlt"

        def finish(run: Run, measured: Measured) -> None:
            parsed = parse_json_line(measured.stdout)
            run.work_s = parsed.get("seconds")
            run.rows = parsed.get("rows")
            run.steps = dlt_steps("peer_rest_api", pipelines_dir, measured)
            run.rows_check = "ok" if run.rows == expected else f"loaded {run.rows}, API {expected}"

        cmd = [
            sys.executable,
            str(HERE / "peer_rest_api.py"),
            "--base-url",
            sandbox.base_url,
            "--warehouse",
            str(cwd / "peer.duckdb"),
            "--pipelines-dir",
            str(pipelines_dir),
        ]
        return self.measure(
            sandbox,
            cmd,
            cwd,
            contender="peer",
            scenario="sweep",
            latency=latency,
            round_no=round_no,
            finish=finish,
        )

    def run_floor(
        self,
        sandbox: SandboxProcess,
        cwd: Path,
        *,
        latency: float,
        round_no: int,
        expected: int,
        scenario: str = "sweep",
    ) -> Run:
        def finish(run: Run, measured: Measured) -> None:
            parsed = parse_json_line(measured.stdout)
            run.work_s = parsed.get("seconds")
            run.rows = parsed.get("rows")
            c = parsed.get("concurrency") or {}
            run.requests = c.get("requests", parsed.get("pages"))
            run.concurrency_mode = c.get("mode")
            run.concurrency_settled = c.get("settled")
            run.concurrency_peak = c.get("peak")
            run.concurrency_cuts = c.get("cuts")
            run.rate_limited = c.get("throttled")
            run.paused_s = c.get("paused_s")
            run.rows_check = "ok" if run.rows == expected else f"read {run.rows}, API {expected}"

        cmd = [
            sys.executable,
            str(HERE / "floor.py"),
            "--base-url",
            sandbox.base_url,
            *(["--workers", str(self.settings.workers)] if self.settings.workers else []),
        ]
        return self.measure(
            sandbox,
            cmd,
            cwd,
            contender="floor",
            scenario=scenario,
            latency=latency,
            round_no=round_no,
            finish=finish,
            workers=self.settings.workers,
        )

    def run_models(
        self, sandbox: SandboxProcess, warehouse: Path, cwd: Path, pg_database: str | None = None
    ) -> Run:
        cmd = [*self.devportal, "models", "--warehouse", str(warehouse)]
        scenario, what = "models", "`devportal models`"
        if pg_database is not None:
            cmd += ["--destination", "postgres"]
            scenario, what = "models_postgres", "`devportal models --destination postgres`"
        run = self.measure(
            sandbox,
            cmd,
            cwd,
            contender="devportal",
            scenario=scenario,
            latency=0,
            round_no=1,
            pg_database=pg_database,
        )
        if not run.ok:
            run.note = f"skipped: {what} failed or is not available yet"
        return run

    def pg_database(self, name: str) -> str | None:
        """A fresh, empty database on the throwaway server, or None without one."""
        if self.pg is None:
            return None
        try:
            self.pg.create_database(name)
        except Exception as err:
            print(f"could not create database {name}: {err}", file=sys.stderr)
            self.postgres.setdefault("errors", []).append(f"create {name}: {err}"[:300])
            return None
        return name

    def drop_pg_database(self, name: str | None) -> None:
        if self.pg is not None and name is not None:
            try:
                self.pg.drop_database(name)
            except Exception as err:  # a leftover database dies with the server anyway
                print(f"could not drop database {name}: {err}", file=sys.stderr)

    # -- scenarios --------------------------------------------------------------------------

    def side_by_side(self, sandbox: SandboxProcess, base: Path) -> None:
        expected = int(sandbox.state()["counts"]["live"])
        for latency in self.settings.latencies:
            sandbox.set_latency(latency)
            for round_no in range(1, self.settings.rounds + 1):
                rdir = base / f"{latency:g}ms" / f"r{round_no}"
                dp_dir = rdir / "devportal"
                warehouse = dp_dir / WAREHOUSE
                self.run_devportal(
                    sandbox,
                    warehouse,
                    dp_dir,
                    scenario="sweep",
                    expected=expected,
                    latency=latency,
                    round_no=round_no,
                )
                if latency == 0:
                    # the same first sweep into PostgreSQL, seconds after DuckDB's
                    database = self.pg_database(f"bench_{sandbox.subscriptions}_r{round_no}")
                    if database is not None:
                        pg_dir = rdir / "devportal_postgres"
                        self.run_devportal(
                            sandbox,
                            pg_dir / WAREHOUSE,
                            pg_dir,
                            scenario="sweep_postgres",
                            expected=expected,
                            latency=latency,
                            round_no=round_no,
                            pg_database=database,
                        )
                        self.drop_pg_database(database)
                self.run_peer(
                    sandbox, rdir / "peer", expected=expected, latency=latency, round_no=round_no
                )
                self.run_floor(
                    sandbox, rdir / "floor", expected=expected, latency=latency, round_no=round_no
                )
                variant = self.settings.pinned_workers
                if latency > 0 and variant and variant != self.settings.workers:
                    # not a contender: what the old fixed default (`--workers 8`) gives here
                    vdir = rdir / "devportal_variant"
                    self.run_devportal(
                        sandbox,
                        vdir / WAREHOUSE,
                        vdir,
                        scenario=f"sweep_workers{variant}",
                        expected=expected,
                        workers=variant,
                        latency=latency,
                        round_no=round_no,
                    )
                self.run_devportal(
                    sandbox,
                    warehouse,
                    dp_dir / "second_sweep",
                    scenario="second_sweep",
                    expected=expected,
                    latency=latency,
                    round_no=round_no,
                )
                self.run_devportal(
                    sandbox,
                    warehouse,
                    dp_dir / "window",
                    scenario="window",
                    extra=("--since", self.settings.window_since),
                    latency=latency,
                    round_no=round_no,
                )
                if latency == 0:
                    self.round_extras(sandbox, rdir, round_no=round_no, expected=expected)
                self.cleanup(rdir)

    def round_extras(
        self, sandbox: SandboxProcess, rdir: Path, *, round_no: int, expected: int
    ) -> None:
        """The 0 ms round's other scenarios: sync with models (peak RSS), the slow server
        (devportal, then the floor), the rate-limited sandbox (adaptive, then pinned)."""
        if self.settings.models_rss:
            # what a user's plain `devportal sync` costs: every resource, then the models
            mdir = rdir / "sync_models"
            self.run_devportal(
                sandbox,
                mdir / WAREHOUSE,
                mdir,
                scenario="sync_models",
                expected=expected,
                latency=0,
                round_no=round_no,
                resources=None,
                models=True,
            )
        if self.settings.server_ms:
            with sandbox.throttled(server_ms=self.settings.server_ms):
                sdir = rdir / "slow_server"
                self.run_devportal(
                    sandbox,
                    sdir / "devportal" / WAREHOUSE,
                    sdir / "devportal",
                    scenario="slow_server",
                    expected=expected,
                    latency=0,
                    round_no=round_no,
                )
                self.run_floor(
                    sandbox,
                    sdir / "floor",
                    scenario="slow_server",
                    expected=expected,
                    latency=0,
                    round_no=round_no,
                )
        if self.settings.rate_limit and round_no <= self.settings.rate_rounds:
            pinned = self.settings.pinned_workers
            variants: list[tuple[str, int | None]] = [("rate_limited", None)]
            if pinned and pinned != self.settings.workers:
                variants.append((f"rate_limited_workers{pinned}", pinned))
            for scenario, workers in variants:
                # set again before each run: every bucket starts full, no run inherits a debt
                with sandbox.throttled(
                    rate_limit=self.settings.rate_limit, burst=self.settings.rate_burst
                ):
                    vdir = rdir / scenario
                    self.run_devportal(
                        sandbox,
                        vdir / WAREHOUSE,
                        vdir,
                        scenario=scenario,
                        expected=expected,
                        latency=0,
                        round_no=round_no,
                        workers=workers,
                    )

    def accounts_and_models(self, sandbox: SandboxProcess, base: Path) -> None:
        latency = self.settings.accounts_latency
        sandbox.set_latency(latency)
        adir = base / "accounts"
        setup_dir = adir / "setup"
        setup = self.run_devportal(
            sandbox,
            setup_dir / WAREHOUSE,
            adir / "setup_run",
            scenario="accounts_setup",
            latency=latency,
            round_no=1,
            resources="subscriptions,user_settings",
        )
        if setup.ok:
            # every round fetches all the accounts into its own copy of the set-up warehouse
            # (the file and dlt's folder), so the target is a median like the others
            warehouse = setup_dir / WAREHOUSE
            accounts = None
            for round_no in range(1, self.settings.rounds + 1):
                round_dir = adir / f"round{round_no}"
                shutil.copytree(setup_dir, round_dir)
                warehouse = round_dir / WAREHOUSE
                accounts = self.run_devportal(
                    sandbox,
                    warehouse,
                    adir / f"user_accounts_r{round_no}",
                    scenario="user_accounts",
                    latency=latency,
                    round_no=round_no,
                    resources="user_accounts",
                    count_table="user_accounts",
                )
            sandbox.set_latency(0)
            if accounts is not None and accounts.ok:
                self.run_models(sandbox, warehouse, adir / "models")
        sandbox.set_latency(0)
        database = self.pg_database(f"bench_{sandbox.subscriptions}_models")
        if database is not None:
            # the same three resources (the world does not change), at 0 ms in one run
            pdir = adir / "postgres"
            setup = self.run_devportal(
                sandbox,
                pdir / WAREHOUSE,
                pdir / "setup",
                scenario="models_setup_postgres",
                latency=0,
                round_no=1,
                resources="subscriptions,user_settings,user_accounts",
                pg_database=database,
            )
            if setup.ok:
                self.run_models(sandbox, pdir / WAREHOUSE, pdir / "models", pg_database=database)
            self.drop_pg_database(database)
        self.cleanup(adir)

    def big(self, sandbox: SandboxProcess, base: Path) -> None:
        sandbox.set_latency(0)
        expected = int(sandbox.state()["counts"]["live"])
        bdir = base / "big"
        warehouse = bdir / WAREHOUSE
        sweep = self.run_devportal(
            sandbox, warehouse, bdir, scenario="sweep", latency=0, round_no=1, expected=expected
        )
        self.run_floor(sandbox, bdir / "floor", latency=0, round_no=1, expected=expected)
        if sweep.ok:
            setup = self.run_devportal(
                sandbox,
                warehouse,
                bdir / "setup",
                scenario="models_setup",
                latency=0,
                round_no=1,
                resources="user_settings,user_accounts",
                count_table="user_accounts",
            )
            if setup.ok:
                self.run_models(sandbox, warehouse, bdir / "models")
        self.cleanup(bdir)

    def cleanup(self, path: Path) -> None:
        if not self.settings.keep:
            shutil.rmtree(path, ignore_errors=True)

    def sandbox(self, subscriptions: int) -> SandboxProcess:
        return SandboxProcess(
            self.devportal, self.workdir, subscriptions=subscriptions, users=self.settings.users
        )

    def note_sandbox(self, sandbox: SandboxProcess) -> None:
        counts = sandbox.state()["counts"]
        self.sandboxes.append(
            {
                "subscriptions": sandbox.subscriptions,
                "users": sandbox.users,
                "seed": sandbox.seed,
                "clock": START,
                "live_subscriptions": counts.get("live"),
                "startup_s": round(sandbox.startup_s, 2),
            }
        )

    def start_postgres(self) -> None:
        """The throwaway server for the Postgres scenarios; without it they are not run."""
        if not self.settings.postgres:
            self.postgres["skipped"] = "--skip-postgres"
            return
        server = PostgresServer()
        try:
            server.__enter__()
        except Exception as err:
            self.postgres["skipped"] = f"cannot start a throwaway PostgreSQL: {err}"[:300]
            print(self.postgres["skipped"], file=sys.stderr)
            return
        self.pg = server
        self.postgres.update(
            {
                "server": f"PostgreSQL {server.version} (pgserver {_version('pgserver')}), "
                "local Unix socket, default settings",
                "version": server.version,
                "startup_s": round(server.startup_s, 2),
            }
        )

    def stop_postgres(self) -> None:
        if self.pg is not None:
            self.pg.stop()
            self.pg = None

    def run_all(self) -> None:
        self.start_postgres()
        try:
            self._run_all()
        finally:
            self.stop_postgres()

    def _run_all(self) -> None:
        for size in self.settings.sizes:
            with self.sandbox(size) as sandbox:
                self.note_sandbox(sandbox)
                base = self.workdir / f"s{size}"
                self.side_by_side(sandbox, base)
                self.accounts_and_models(sandbox, base)
        if self.settings.big_size:
            with self.sandbox(self.settings.big_size) as sandbox:
                self.note_sandbox(sandbox)
                self.big(sandbox, self.workdir / f"s{self.settings.big_size}")


# -- machine description --------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def machine() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    status = _git("status", "--porcelain", "--", "pipelines")
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "cores_usable": len(os.sched_getaffinity(0)),
        "ram_bytes": psutil.virtual_memory().total,
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            name: _version(name)
            for name in (
                "dlt",
                "duckdb",
                "pyarrow",
                "requests",
                "orjson",
                "psutil",
                "psycopg2-binary",
                "pgserver",
                "devportal",
            )
        },
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "pipelines_dirty": bool(status) if status is not None else None,
        "load_avg_at_start": list(os.getloadavg()),
    }


# -- entry point ----------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description="devportal vs dlt rest_api vs the HTTP floor, interleaved in one run; "
        "writes benchmarks/results/*.json and *.md",
    )
    p.add_argument("--quick", action="store_true", help="smoke test: 10k rows, 1 round, no 1M")
    p.add_argument("--sizes", help="comma list of subscription counts (default 100000)")
    p.add_argument("--users", type=int, help="users in each world (default 2000)")
    p.add_argument("--rounds", type=int, help="interleaved rounds per latency (default 3)")
    p.add_argument("--latencies", help="comma list of ms per request (default 0,50)")
    p.add_argument("--big-size", type=int, default=1_000_000, help="the flat-RSS run's size")
    p.add_argument("--skip-1m", action="store_true", help="skip the big (1M) run")
    p.add_argument(
        "--skip-postgres",
        action="store_true",
        help="skip the PostgreSQL scenarios (sweep_postgres, models_postgres)",
    )
    p.add_argument("--accounts-latency", type=float, default=50.0, help="ms for user_accounts")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="pin devportal's and the floor's requests in flight (default: their own default, "
        "adaptive concurrency)",
    )
    p.add_argument(
        "--pinned-workers",
        "--variant-workers",
        dest="pinned_workers",
        type=int,
        default=8,
        help="the pinned comparison, `devportal sync --workers N`: a variant at latencies > 0 "
        "and the rate-limited scenario's second contender (default 8, the old fixed default; "
        "0: neither)",
    )
    p.add_argument(
        "--server-ms",
        type=float,
        default=8.0,
        help="the slow-server scenario's serial sandbox cost per request, ms (default 8: the "
        "floor takes about 4 s at 100k; 0: skip the scenario)",
    )
    p.add_argument(
        "--rate-limit",
        type=float,
        default=None,
        help="the rate-limited scenario's requests/s per token (default 50, 20 with --quick; "
        "0: skip the scenario)",
    )
    p.add_argument(
        "--rate-burst",
        type=float,
        default=None,
        help="its token bucket's burst (default 50, 10 with --quick)",
    )
    p.add_argument(
        "--rate-rounds",
        type=int,
        default=2,
        help="how many of the 0 ms rounds include the rate-limited pair (default 2)",
    )
    p.add_argument(
        "--skip-models-rss",
        action="store_true",
        help="skip `devportal sync` with models (the peak-RSS target) in the 0 ms rounds",
    )
    p.add_argument("--name", help="results file stem (default latest, quick with --quick)")
    p.add_argument("--keep", action="store_true", help="keep the warehouses under work/")
    p.add_argument("--render", metavar="JSON", help="only re-render a saved result as Markdown")
    return p.parse_args(argv)


def settings_from(args: argparse.Namespace) -> Settings:
    sizes = [int(s) for s in (args.sizes or ("10000" if args.quick else "100000")).split(",")]
    return Settings(
        sizes=sizes,
        users=args.users or (200 if args.quick else 2000),
        rounds=args.rounds or (1 if args.quick else 3),
        latencies=[float(x) for x in (args.latencies or "0,50").split(",")],
        big_size=None if (args.skip_1m or args.quick) else args.big_size,
        accounts_latency=args.accounts_latency,
        window_since=WINDOW_SINCE,
        workers=args.workers,
        pinned_workers=args.pinned_workers,
        keep=args.keep,
        quick=args.quick,
        postgres=not args.skip_postgres,
        server_ms=args.server_ms,
        rate_limit=args.rate_limit if args.rate_limit is not None else (20 if args.quick else 50),
        rate_burst=args.rate_burst if args.rate_burst is not None else (10 if args.quick else 50),
        rate_rounds=args.rate_rounds,
        models_rss=not args.skip_models_rss,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        print(render_markdown(json.loads(Path(args.render).read_text())))
        return 0
    settings = settings_from(args)
    name = args.name or ("quick" if settings.quick else "latest")
    started_at = datetime.now(UTC)
    workdir = WORK / started_at.strftime("%Y%m%dT%H%M%S")
    description = machine()
    bench = Bench(settings, workdir)
    t0 = time.perf_counter()
    interrupted = False
    try:
        bench.run_all()
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: saving what was measured", file=sys.stderr)
    total = time.perf_counter() - t0
    description["load_avg_at_end"] = list(os.getloadavg())
    runs = [r.as_dict() for r in bench.runs]
    result: dict[str, Any] = {
        "schema": 2,
        "command": "python -m benchmarks.run " + " ".join(sys.argv[1:] if argv is None else argv),
        "started_at": started_at.isoformat(timespec="seconds"),
        "total_wall_s": round(total, 1),
        "interrupted": interrupted,
        "machine": description,
        "settings": asdict(settings),
        "sandboxes": bench.sandboxes,
        "postgres": bench.postgres,
        "runs": runs,
    }
    result["summary"] = summarise(runs)
    result["pairs"] = pair_ratios(runs)
    result["postgres_pairs"] = postgres_pairs(runs)
    result["targets"] = evaluate_targets(result)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    markdown = render_markdown(result)
    (RESULTS / f"{name}.md").write_text(markdown)
    print(markdown)
    if not settings.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    failed = [r for r in bench.runs if not r.ok and r.scenario not in MODELS_SCENARIOS]
    return 1 if failed or interrupted else 0


if __name__ == "__main__":
    raise SystemExit(main())
