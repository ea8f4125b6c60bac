"""`make bench`: plays `scenarios.SCENARIOS` (each contender a measured process with a fresh
warehouse), summarises the runs (`records`), judges `targets.TARGETS` and writes
`results/<name>.json` and `.md` (`report`). `--render FILE.json` re-renders a saved result;
`--only growth` plays the growth scenario alone (`results/growth.*`)."""

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
import tempfile
import time
from collections.abc import Callable
from contextlib import closing, nullcontext
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil

from benchmarks.measure import Measured, run_measured
from benchmarks.postgres import PostgresServer
from benchmarks.records import (
    MB,
    Machine,
    PostgresInfo,
    Result,
    Run,
    Settings,
    load_result,
    pair_ratios,
    postgres_pairs,
    summarise,
)
from benchmarks.report import render_markdown
from benchmarks.sandbox import START, SandboxProcess
from benchmarks.scenarios import (
    NIGHTLY_AT,
    SCENARIOS,
    WORLD_MIGRATE,
    WORLD_MODELS,
    WORLD_SYNC,
    WORLD_SYNC_POSTGRES,
    Scenario,
)
from benchmarks.targets import evaluate
from devportal.extract.sync_record import CONCURRENCY_FIELDS

HERE = Path(__file__).resolve().parent
RESULTS, WORK = HERE / "results", HERE / "work"  # work/: git-ignored scratch space
WINDOW_SINCE = "2026-10-01"  # 30 days before the sandbox clock (START)
WAREHOUSE = "bench.duckdb"  # not devportal.duckdb: the catalog would clash with the dataset
MODELS_SCENARIOS = ("models", "models_postgres")  # may fail while a backend lacks models
CLOCK_FORMAT = "%Y-%m-%d %H:%M:%S"  # the sandbox's `now`
GROWTH_WORLD = re.compile(r"(\d+)(?:/(\d+))?(?::(\d+))?")  # SIZE[/USERS][:HOURS]
# a models world: SIZE[/USERS]:SYNCSxDAYS[+2y][+migrate]
MODELS_WORLD = re.compile(r"(\d+)(?:/(\d+))?:(\d+)x(\d+)((?:\+(?:2y|migrate))*)")
# `devportal models --verbose`: a model's time; the build's own time
MODEL_LINE = re.compile(r"built analytics\.(\w+) in ([\d.]+)s")
BUILD_LINE = re.compile(r"built \d+ models on \w+ in ([\d.]+)s")
# the world's expiries moved up to two years out (+2y): every tenth current version's, a year
# on, identically in the warehouse and the database (the sandbox sells monthly and yearly plans)
TWO_YEARS = (
    "update devportal.subscriptions set expires_at = expires_at + interval '1 year' "
    "where _dlt_valid_to is null and expires_at is not null and id % 10 = 0"
)
# Inherited settings that would change what a contender does; each run gets only ours.
SCRUB_PREFIXES = (
    *("SOURCES__", "DESTINATION__", "NORMALIZE__", "LOAD__", "EXTRACT__", "DATA_WRITER__"),
    *("RUNTIME__", "PIPELINES__", "DLT_", "DEVPORTAL_SPEEDUPS"),
)
SYNC_RUN_FIELDS = ("requests", "retries", *CONCURRENCY_FIELDS)  # read from `sync_runs`
RUN_EXTRAS = ("mode", "rows_read")  # the same row: sweep or window, {table: rows read}
SUMMARY = re.compile(r"sync ok \((\w+)\)(?: into .+?)? in ([\d.]+)s: (.*)")  # into: the warehouse
SUMMARY_FIELDS = {  # the summary line's concurrency, when `sync_runs` cannot be read
    "retries": r"(\d+) retries",
    "rate_limited": r"(\d+) rate-limited \(429\)",
    "paused_s": r"paused ([\d.]+)s on Retry-After",
}
CONCURRENCY = re.compile(
    r"(\d+) in flight \(pinned\)|concurrency settled at (\d+) \(adaptive, peak (\d+)\)"
)


def devportal_command() -> list[str]:
    script = Path(sys.executable).with_name("devportal")
    return [str(script)] if script.exists() else [sys.executable, "-m", "devportal"]


def parse_devportal(stdout: str) -> dict[str, Any]:
    """Seconds, rows per table, requests and concurrency from the `sync ok ...` summary line."""
    if not (match := SUMMARY.search(stdout)):
        return {}
    rest = match.group(3)
    requests = re.search(r"(\d+) requests", rest)
    out: dict[str, Any] = {
        "work_s": float(match.group(2)),
        "rows": {name: int(n) for name, n in re.findall(r"(\w+) (\d+)", rest.split(";")[0])},
        "requests": int(requests.group(1)) if requests else None,
    }
    found = {k: re.search(p, rest) for k, p in SUMMARY_FIELDS.items()}
    if found["retries"]:
        out["retries"] = int(found["retries"].group(1))
    if c := CONCURRENCY.search(rest):
        pinned, settled, peak = c.groups()
        mode = "pinned" if pinned else "adaptive"
        settled, peak = (int(pinned), int(pinned)) if pinned else (int(settled), int(peak))
        out |= {"concurrency_mode": mode, "concurrency_settled": settled, "concurrency_peak": peak}
        out["rate_limited"] = int(found["rate_limited"].group(1)) if found["rate_limited"] else 0
        out["paused_s"] = float(found["paused_s"].group(1)) if found["paused_s"] else 0.0
    return out


def _fetch(cur: Any, sql: str) -> list[Any] | None:
    try:
        cur.execute(sql)
        return list(cur.fetchall())
    except Exception:
        return None


def read_back(connect: Callable[[], Any]) -> tuple[dict[str, Any], int | None]:
    """After a devportal run, from its warehouse or database: its last `sync_runs` row (the
    fields it has) and the current subscriptions; ({}, None) for what cannot be read."""
    try:
        with closing(connect()) as con:
            cur = con.cursor()
            columns = _fetch(
                cur,
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'devportal' AND table_name = 'sync_runs'",
            )
            names = [n for n in (*SYNC_RUN_FIELDS, *RUN_EXTRAS) if (n,) in (columns or [])]
            sql = f"SELECT {', '.join(names)} FROM devportal.sync_runs ORDER BY _dlt_load_id DESC LIMIT 1"
            row = (_fetch(cur, sql) or [()])[0] if names else ()
            sql = "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL"
            count = _fetch(cur, sql)
    except Exception:
        return {}, None
    record = {k: v for k, v in zip(names, row, strict=False) if v is not None}
    if isinstance(record.get("rows_read"), str):
        try:
            record["rows_read"] = json.loads(record["rows_read"])
        except ValueError:
            del record["rows_read"]
    return record, int(count[0][0]) if count else None


def folder_size(folder: Path) -> tuple[int, int] | None:
    """(bytes, files) of every regular file under FOLDER; None when it does not exist."""
    if not folder.is_dir():
        return None
    size = files = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue  # removed while walking
            size, files = size + info.st_size, files + 1
    return size, files


def file_size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def next_night(clock: str) -> datetime:
    """The first NIGHTLY_AT strictly after the sandbox clock CLOCK."""
    now = datetime.strptime(clock, CLOCK_FORMAT)
    night = now.replace(hour=NIGHTLY_AT[0], minute=NIGHTLY_AT[1], second=0)
    return night if night > now else night + timedelta(days=1)


def parse_json_line(stdout: str) -> dict[str, Any]:
    lines = [ln for ln in stdout.strip().splitlines() if ln.startswith("{")]
    try:
        return dict(json.loads(lines[-1])) if lines else {}
    except json.JSONDecodeError:
        return {}


def dlt_steps(pipeline_name: str, pipelines_dir: Path, measured: Measured) -> dict[str, Any]:
    """Seconds and peak sampled RSS of each step of the pipeline's last dlt trace."""
    try:
        import dlt  # imported late to keep --help fast

        trace = dlt.attach(pipeline_name, pipelines_dir=str(pipelines_dir)).last_trace
    except Exception:
        return {}
    steps: dict[str, Any] = {}
    for step in trace.steps if trace is not None else []:
        if step.finished_at is not None:
            start, end = step.started_at.timestamp(), step.finished_at.timestamp()
            steps[step.step] = {
                "seconds": end - start,
                "peak_rss_bytes": measured.peak_between(start, end),
            }
    return steps


Done = tuple[Run, Path, str | None]  # a scenario's last run, its warehouse and database


class Bench:
    """Plays `SCENARIOS` phase by phase and collects the `Run`s."""

    def __init__(self, settings: Settings, workdir: Path) -> None:
        self.settings, self.workdir = settings, workdir
        self.devportal = devportal_command()
        self.runs: list[Run] = []
        self.sandboxes: list[dict[str, Any]] = []
        self.pg: PostgresServer | None = None
        self.postgres = PostgresInfo(enabled=settings.postgres)
        self._latency: float | None = None
        self.world: SandboxProcess  # the phase's sandbox and its live subscriptions
        self.expected = 0
        self.hours = 1  # the growth phase's hourly runs in this world
        self.clock: str | None = None  # the sandbox clock (growth phase)
        self.changes: dict[str, int] | None = None  # what the last advance changed
        self.source: Path | None = None  # the warehouse `devportal migrate` copies (models worlds)
        self._started = time.perf_counter()

    def run_all(self) -> None:
        s = self.settings
        if s.only == "growth":
            self.run_growth()
            return
        self.start_postgres()
        if s.only == "models-worlds":
            try:
                self.run_models_worlds()
            finally:
                if self.pg is not None:
                    self.pg.stop()
                    self.pg = None
            return
        try:
            for size in s.sizes:
                with self.sandbox(size) as sandbox:
                    self.note_sandbox(sandbox)
                    base = self.workdir / f"s{size}"
                    for latency in s.latencies:
                        for round_no in range(1, s.rounds + 1):
                            rdir = base / f"{latency:g}ms" / f"r{round_no}"
                            self.phase("round", sandbox, rdir, latency, round_no)
                    self.phase("accounts", sandbox, base / "accounts", s.accounts_latency)
            if s.big_size:
                with self.sandbox(s.big_size) as sandbox:
                    self.note_sandbox(sandbox)
                    self.phase("big", sandbox, self.workdir / f"s{s.big_size}" / "big", 0.0)
            self.run_models_worlds()
        finally:
            if self.pg is not None:
                self.pg.stop()
                self.pg = None
        self.run_growth()

    def run_growth(self) -> None:
        """The growth phase once per world of `--growth-sizes`, each with its own sandbox."""
        for size, users, hours in self.settings.growth_worlds:
            t0 = time.perf_counter()
            with self.sandbox(size, users) as sandbox:
                self.note_sandbox(sandbox)
                self.hours, self.clock, self.changes = hours, sandbox.state()["now"], None
                self.phase("growth", sandbox, self.workdir / f"s{size}" / "growth", 0.0)
            # the whole sequence, the sandbox's start and the clock's advances included
            self.sandboxes[-1]["growth_s"] = round(time.perf_counter() - t0, 1)

    def run_models_worlds(self) -> None:
        """Issue 35: `devportal models` on PostgreSQL beside DuckDB on the same data, once per
        `--models-worlds` world, each with its own sandbox (scenarios.WORLD_*)."""
        if self.pg is None:
            return
        for size, users, syncs, days, two_years, migrated in self.settings.models_worlds:
            t0 = time.perf_counter()
            with self.sandbox(size, users) as sandbox:
                self.note_sandbox(sandbox)
                self.world, self.expected = sandbox, int(sandbox.state()["counts"]["live"])
                if self._latency != 0.0:
                    sandbox.set_latency(0.0)
                    self._latency = 0.0
                wdir = self.workdir / f"s{size}" / "models_world"
                try:
                    self.models_world(wdir, size, syncs, days, bool(two_years), bool(migrated))
                finally:
                    for name in ("synced", "migrated"):
                        self.drop_database(f"bench_{size}_world_{name}")
                    if not self.settings.keep:
                        shutil.rmtree(wdir, ignore_errors=True)
            self.sandboxes[-1]["models_world_s"] = round(time.perf_counter() - t0, 1)

    def models_world(
        self, wdir: Path, size: int, syncs: int, days: int, two_years: bool, migrated: bool
    ) -> None:
        """Sync the world into a warehouse and a database in lockstep (SYNCS syncs, DAYS apart),
        move its expiries out (TWO_YEARS), carry the warehouse over by `devportal migrate`
        (MIGRATED), then build the models on each engine from nothing, round after round."""
        duck, pg_wh = wdir / "duckdb" / WAREHOUSE, wdir / "postgres" / WAREHOUSE
        pg = self.pg
        synced = self.create_database(f"bench_{size}_world_synced")
        if synced is None or pg is None:
            return
        for i in range(1, syncs + 1):
            if i > 1:
                answer = self.world.advance(days=days)
                self.clock, self.changes = answer["now"], dict(answer["changes"])
                self.expected = int(self.world.state()["counts"]["live"])
            for sc, database, warehouse in (
                (WORLD_SYNC, None, duck),
                (WORLD_SYNC_POSTGRES, synced, pg_wh),
            ):
                run = self.contender(sc, warehouse.parent, warehouse, database)
                run.scenario, run.latency_ms, run.round = sc.name, 0.0, i
                self.record(run)
                if not run.ok:
                    return
        if two_years:
            with closing(_duckdb(duck, read_only=False)) as con:
                con.execute(TWO_YEARS)
            with closing(pg.connect(synced)) as pg_con, pg_con.cursor() as cur:
                cur.execute(TWO_YEARS)
        databases = {"world_models": None, "world_models_postgres": synced}
        if migrated and (carried := self.create_database(f"bench_{size}_world_migrated")):
            self.source = duck
            mig_wh = wdir / "migrated" / WAREHOUSE
            run = self.contender(WORLD_MIGRATE, mig_wh.parent, mig_wh, carried)
            run.scenario, run.latency_ms, run.round = WORLD_MIGRATE.name, 0.0, 1
            self.record(run)
            if run.ok:
                databases["world_models_migrated"] = carried
        for round_no in range(1, self.settings.rounds + 1):
            for sc in WORLD_MODELS:
                if sc.name not in databases:
                    continue
                database = databases[sc.name]
                if database is None:  # a fresh copy of the synced warehouse, no models yet
                    warehouse = wdir / f"r{round_no}" / WAREHOUSE
                    warehouse.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(duck, warehouse)
                else:  # the same database, its models dropped: built from nothing
                    warehouse = (pg_wh if database == synced else wdir / "migrated") / WAREHOUSE
                    with closing(pg.connect(database)) as pg_con, pg_con.cursor() as cur:
                        cur.execute("drop schema if exists analytics cascade")
                run = self.contender(sc, warehouse.parent, warehouse, database)
                run.scenario, run.latency_ms, run.round = sc.name, 0.0, round_no
                self.record(run)

    def sandbox(self, size: int, users: int | None = None) -> SandboxProcess:
        self._latency = None
        return SandboxProcess(self.devportal, self.workdir, size, users or self.settings.users)

    def note_sandbox(self, sandbox: SandboxProcess) -> None:
        live, startup = sandbox.state()["counts"].get("live"), round(sandbox.startup_s, 2)
        world: dict[str, Any] = {"subscriptions": sandbox.subscriptions, "users": sandbox.users}
        world |= {"seed": sandbox.seed, "clock": START, "live_subscriptions": live}
        self.sandboxes.append(world | {"startup_s": startup})

    def phase(
        self, phase: str, sandbox: SandboxProcess, pdir: Path, latency: float, round_no: int = 1
    ) -> None:
        self.world, self.expected = sandbox, int(sandbox.state()["counts"]["live"])
        done: dict[str, Done] = {}
        for sc in SCENARIOS:
            if sc.phase == phase and sc.when(self.settings, latency, round_no):
                repeats = self.settings.rounds if sc.repeat else self.hours if sc.hourly else 0
                for r in range(1, repeats + 1) if repeats else [round_no]:
                    at = latency if sc.latency is None else sc.latency
                    self.scenario(sc, pdir, at, r, done)
        for _, _, database in done.values():
            self.drop_database(database)
        if not self.settings.keep:
            shutil.rmtree(pdir, ignore_errors=True)

    def scenario(
        self, sc: Scenario, pdir: Path, latency: float, round_no: int, done: dict[str, Done]
    ) -> None:
        s, sandbox = self.settings, self.world
        name = sc.name.format(pinned=s.pinned_workers)
        base = done.get(sc.after or sc.on)
        if (sc.after or sc.on) and (base is None or (sc.after and not base[0].ok)):
            return
        if sc.postgres and self.pg is None:
            return
        numbered = sc.repeat or sc.hourly
        cwd = pdir / (f"{sc.contender}_{name}" + (f"_r{round_no}" if numbered else ""))
        warehouse, database = (base[1], base[2]) if base else (cwd / WAREHOUSE, None)
        if sc.copy:
            shutil.copytree(warehouse.parent, cwd / "copy")
            warehouse = cwd / "copy" / WAREHOUSE
        db_name = f"bench_{sandbox.subscriptions}_{name}_r{round_no}"
        if sc.postgres and database is None and (database := self.create_database(db_name)) is None:
            return
        if self._latency != latency:
            sandbox.set_latency(latency)
            self._latency = latency
        if sc.advance:
            self.advance(sc.advance)
        throttles: dict[str, dict[str, Any]] = {
            "server_ms": {"server_ms": s.server_ms},
            "rate_limit": {"rate_limit": s.rate_limit, "burst": s.rate_burst},
        }
        with sandbox.throttled(**throttles[sc.throttle]) if sc.throttle else nullcontext():
            run = self.contender(sc, cwd, warehouse, database)
            run.scenario, run.latency_ms, run.round = name, latency, round_no
            if sc.phase == "growth":
                run.clock, run.world_changes = self.clock, self.changes
            self.record(run)
        if sc.contender in ("devportal", "models"):
            keep = any(name in (o.on, o.after) for o in SCENARIOS)
            done[name] = (run, warehouse, database if keep else None)
            if database is not None and not keep:
                self.drop_database(database)

    def advance(self, how: str) -> None:
        """Move the sandbox clock an hour, or to the next night; the live count follows."""
        sandbox = self.world
        now = sandbox.state()["now"]
        if how == "hour":
            hours = 1.0
        else:
            hours = (next_night(now) - datetime.strptime(now, CLOCK_FORMAT)).total_seconds() / 3600
        answer = sandbox.advance(hours=hours)
        self.clock, self.changes = answer["now"], dict(answer["changes"])
        self.expected = int(sandbox.state()["counts"]["live"])

    def contender(self, sc: Scenario, cwd: Path, warehouse: Path, database: str | None) -> Run:
        """Run `sc`'s contender measured and read what it printed and left behind."""
        s, url, expected = self.settings, self.world.base_url, self.expected
        workers = (s.pinned_workers if sc.pinned else None) or s.workers
        if sc.contender == "devportal":
            cmd = [*self.devportal, "sync", "--base-url", url, "--warehouse", str(warehouse)]
            cmd += [*([] if sc.models else ["--no-models"]), "--progress", "off"]
            cmd += ["--workers", str(workers)] if workers else []
            cmd += ["--resources", sc.resources] if sc.resources else []
            cmd += ["--destination", "postgres"] if database else []
            cmd += ["--since", s.window_since] if sc.since else []
            cmd += ["--window"] if sc.window else []
        elif sc.contender == "models":
            cmd, workers = [*self.devportal, "models", "--warehouse", str(warehouse)], None
            cmd += ["--destination", "postgres"] if database else []
            cmd += ["--verbose"] if sc.verbose else []
        elif sc.contender == "migrate":
            cmd, workers = [*self.devportal, "migrate", "--from-warehouse", str(self.source)], None
            cmd += ["--destination", "postgres", "--warehouse", str(warehouse), "--no-models"]
        elif sc.contender == "peer":
            cmd, workers = [sys.executable, str(HERE / "peer_rest_api.py"), "--base-url", url], None
            cmd += ["--warehouse", str(cwd / "peer.duckdb"), "--pipelines-dir", str(cwd / "dlt")]
        else:
            cmd, workers = [sys.executable, str(HERE / "floor.py"), "--base-url", url], s.workers
            cmd += ["--workers", str(workers)] if workers else []
        run, m = self.measure(sc, cmd, cwd, database, workers)
        if sc.disk:
            measure_disk(run, warehouse)
        if sc.contender in ("models", "migrate"):
            run.contender = "devportal"
            if sc.verbose and run.ok:
                seconds = {name: float(v) for name, v in MODEL_LINE.findall(m.stderr)}
                run.model_seconds = seconds or None
                built = BUILD_LINE.search(m.stderr)
                run.work_s = float(built.group(1)) if built else None
            if sc.contender == "models" and not run.ok:
                what = "`devportal models" + (" --destination postgres`" if database else "`")
                run.note = f"skipped: {what} failed or is not available yet"
        elif run.ok and sc.contender == "devportal":
            pg = self.pg
            if database is None:
                record, current = read_back(lambda: _duckdb(warehouse))
            else:
                record, current = read_back(lambda: pg.connect(database)) if pg else ({}, None)
            parsed = parse_devportal(m.stdout) | record  # the run's own record, cuts included
            run.work_s, run.requests = parsed.get("work_s"), parsed.get("requests")
            run.rows = parsed.get("rows", {}).get(sc.count_table)
            for name in ("retries", *CONCURRENCY_FIELDS):
                setattr(run, name, parsed.get(name))
            run.sync_mode, run.rows_read = parsed.get("mode"), parsed.get("rows_read")
            pipeline = "devportal" if database is None else "devportal_postgres"
            run.steps = dlt_steps(pipeline, warehouse.parent / f".{warehouse.stem}.dlt", m)
            if sc.check:
                found = f"read {run.rows}, warehouse holds {current} current, API has {expected}"
                run.rows_check = "ok" if current == expected == run.rows else found
        elif run.ok:
            parsed = parse_json_line(m.stdout)
            run.work_s, run.rows = parsed.get("seconds"), parsed.get("rows")
            found = f"{'loaded' if sc.contender == 'peer' else 'read'} {run.rows}, API {expected}"
            run.rows_check = "ok" if run.rows == expected else found
            if sc.contender == "peer":
                run.steps = dlt_steps("peer_rest_api", cwd / "dlt", m)
            else:
                c = parsed.get("concurrency") or {}
                run.requests = c.get("requests", parsed.get("pages"))
                run.concurrency_mode, run.concurrency_settled = c.get("mode"), c.get("settled")
                run.concurrency_peak, run.concurrency_cuts = c.get("peak"), c.get("cuts")
                run.rate_limited, run.paused_s = c.get("throttled"), c.get("paused_s")
        return run

    def measure(
        self, sc: Scenario, cmd: list[str], cwd: Path, database: str | None, workers: int | None
    ) -> tuple[Run, Measured]:
        """Run `cmd` measured; with `database`, against that database of `self.pg`."""
        sandbox, load = self.world, os.getloadavg()[0]
        before = sandbox_state(sandbox)
        throttle = throttle_fields(before)
        env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB_PREFIXES)}
        env |= {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sandbox.token, "PYTHONUNBUFFERED": "1"}
        env["RUNTIME__DLTHUB_TELEMETRY"] = "false"
        env |= {"DEVPORTAL_SPEEDUPS": sc.speedups} if sc.speedups is not None else {}
        pg = self.pg if database is not None else None
        if pg is not None and database is not None:
            env["DESTINATION__POSTGRES__CREDENTIALS"] = pg.uri(database)
        with pg.watch() if pg is not None else nullcontext() as cost:
            m = run_measured(cmd, cwd=cwd, env=env, server=sandbox.process)
        head = (sc.contender, "", sandbox.subscriptions, 0.0, 0, m.exit_code == 0, m.exit_code)
        memory = (m.peak_rss, m.rss_wait4, m.rss_sampled_tree, m.max_processes)
        run = Run(*head, m.wall_s, *memory, m.server_cpu_s, load, workers=workers, **throttle)
        if before is not None and (after := sandbox_state(sandbox)) is not None:
            counts, was = after["stats"], before["stats"]
            run.server_requests = int(counts["api_requests"]) - int(was["api_requests"])
            run.server_rate_limited = int(counts["rate_limited"]) - int(was["rate_limited"])
        if cost is not None:
            run.destination, run.db_cpu_s = "postgres", cost.cpu_s
            run.db_peak_pss_bytes, run.db_idle_pss_bytes = cost.peak_pss, cost.idle_pss
        if not run.ok:
            lines = [ln.strip() for ln in m.stderr.splitlines() if ln.strip()]
            text = lines[-1] if lines else f"exit code {m.exit_code}"
            run.error = ("timed out; " if m.timed_out else "") + text[:1000]
        return run, m

    def record(self, run: Run) -> None:
        self.runs.append(run.derive())
        what = f"{run.wall_s:7.2f} s {run.peak_rss_bytes / MB:7.0f} MB"
        what += f" {run.rows} rows" if run.rows is not None else ""
        if run.concurrency_mode:
            peak = f", peak {run.concurrency_peak}" if run.concurrency_mode == "adaptive" else ""
            what += f" [{run.concurrency_mode} {run.concurrency_settled}{peak}]"
        what += f" {run.server_rate_limited} x 429" if run.server_rate_limited else ""
        what += f" (postgres CPU {run.db_cpu_s:.2f} s)" if run.db_cpu_s is not None else ""
        what += f" [{run.rows_check}]" if run.rows_check not in (None, "ok") else ""
        if run.clock is not None:
            what += f" [{run.clock}] {run.server_requests} requests"
            mb, files = run.dlt_dir_bytes, run.dlt_dir_files
            what += f", warehouse {(run.warehouse_bytes or 0) / MB:.1f} MB"
            what += f", folder {(mb or 0) / MB:.1f} MB/{files} files"
        what += f" FAILED: {run.error}" if run.error else ""
        at = f"{run.size:>8} {run.latency_ms:>3.0f} ms r{run.round} {run.contender:<9}"
        elapsed = time.perf_counter() - self._started
        print(f"[{elapsed:6.0f}s] {at} {run.scenario:<24} {what}", file=sys.stderr, flush=True)

    def start_postgres(self) -> None:
        """The throwaway server for the Postgres scenarios; without it they are not run."""
        if not self.settings.postgres:
            self.postgres.skipped = "--skip-postgres"
            return
        try:
            self.pg = PostgresServer().__enter__()
        except Exception as err:
            self.postgres.skipped = f"cannot start a throwaway PostgreSQL: {err}"[:300]
            print(self.postgres.skipped, file=sys.stderr)
            return
        version = self.pg.version
        self.postgres.server = f"PostgreSQL {version} (pgserver {_version('pgserver')}), local Unix socket, default settings"
        self.postgres.version, self.postgres.startup_s = version, round(self.pg.startup_s, 2)

    def create_database(self, name: str) -> str | None:
        try:
            assert self.pg is not None
            self.pg.create_database(name)
        except Exception as err:
            print(f"could not create database {name}: {err}", file=sys.stderr)
            self.postgres.errors = [*(self.postgres.errors or []), f"create {name}: {err}"[:300]]
            return None
        return name

    def drop_database(self, name: str | None) -> None:
        if self.pg is not None and name is not None:
            try:
                self.pg.drop_database(name)
            except Exception as err:  # a leftover database dies with the server anyway
                print(f"could not drop database {name}: {err}", file=sys.stderr)


def measure_disk(run: Run, warehouse: Path) -> None:
    """The warehouse file (and any write-ahead log) and dlt's folder beside it, as they are."""
    run.warehouse_bytes = file_size(warehouse)
    run.warehouse_wal_bytes = file_size(warehouse.with_name(warehouse.name + ".wal"))
    found = folder_size(warehouse.parent / f".{warehouse.stem}.dlt")
    run.dlt_dir_bytes, run.dlt_dir_files = found if found is not None else (None, None)


def _duckdb(warehouse: Path, read_only: bool = True) -> Any:
    import duckdb

    return duckdb.connect(str(warehouse), read_only=read_only)


def sandbox_state(sandbox: SandboxProcess) -> dict[str, Any] | None:
    try:
        return sandbox.state()
    except Exception:  # a run that killed the server is reported by the run itself
        return None


def throttle_fields(state: dict[str, Any] | None) -> dict[str, Any]:
    """The server cost and rate limit in force, as `Run` fields."""
    if state is None:
        return {}
    limit = state.get("rate_limit") or {}
    return {
        "server_ms": float(state.get("server_ms") or 0.0),
        "rate_limit_per_s": limit.get("per_second"),
        "rate_burst": limit.get("burst"),
    }


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=HERE.parent, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


VERSIONS = (
    "dlt",
    "duckdb",
    "pyarrow",
    "requests",
    "orjson",
    "psutil",
    "psycopg2-binary",
    "pgserver",
)


def use_source(commit: str) -> tuple[str, Path]:
    """Unpack COMMIT's pipelines/ and sql/ (`git archive`, the repository untouched; the package
    links its `sql` to the repository's) into a temporary folder outside the checkout (mypy would
    find a second `devportal` under benchmarks/) and put it first on every child's PYTHONPATH:
    devportal, its models and the sandbox run that code, whatever the working tree holds.
    Returns the full commit and the folder (the caller removes it)."""
    full = _git("rev-parse", "--verify", f"{commit}^{{commit}}")
    if not full:
        raise SystemExit(f"--source: no commit {commit!r} in this repository")
    target = Path(tempfile.mkdtemp(prefix=f"devportal-source-{full[:12]}-"))
    archive = subprocess.run(
        ["git", "archive", "--format=tar", full, "pipelines", "sql"],
        cwd=HERE.parent,
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    inherited = os.environ.get("PYTHONPATH")
    path = str(target / "pipelines")
    os.environ["PYTHONPATH"] = path + (os.pathsep + inherited if inherited else "")
    return full, target


def machine() -> Machine:
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        cpuinfo = []
    models = [ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")]
    status = _git("status", "--porcelain", "--", "pipelines")
    return Machine(
        models[0] if models else platform.processor() or "unknown",
        *(os.cpu_count(), psutil.cpu_count(logical=False), len(os.sched_getaffinity(0))),
        *(psutil.virtual_memory().total, platform.platform(), platform.python_version()),
        {name: _version(name) for name in (*VERSIONS, "devportal")},
        _git("rev-parse", "--short", "HEAD"),
        bool(status) if status is not None else None,
        list(os.getloadavg()),
    )


# flag(s), type (bool: a switch), default, help; the README says more
OPTIONS: list[tuple[str, Any, Any, str]] = [
    ("--quick", bool, False, "smoke test: 10k rows, 200 users, 1 round, no 1M, 20 req/s burst 10"),
    ("--sizes", str, None, "comma list of subscription counts (default 100000)"),
    ("--users", int, None, "users in each world (default 2000)"),
    ("--rounds", int, None, "interleaved rounds per latency (default 3)"),
    ("--latencies", str, "0,50", "comma list of ms per request (default 0,50)"),
    ("--big-size", int, 1_000_000, "the flat-RSS run's size"),
    ("--skip-1m", bool, False, "skip the big (1M) run"),
    ("--skip-postgres", bool, False, "skip the PostgreSQL scenarios"),
    ("--accounts-latency", float, 50.0, "ms for user_accounts"),
    ("--workers", int, None, "pin devportal's and the floor's requests in flight"),
    ("--pinned-workers/--variant-workers", int, 8, "the pinned comparison (0: none)"),
    ("--server-ms", float, 8.0, "the slow server's serial cost per request, ms (0: skip)"),
    ("--rate-limit", float, None, "requests/s per token (default 50, quick 20; 0: skip)"),
    ("--rate-burst", float, None, "its token bucket's burst (default 50, quick 10)"),
    ("--rate-rounds", int, 2, "how many of the 0 ms rounds include the rate-limited pair"),
    ("--skip-models-rss", bool, False, "skip `devportal sync` with models in the 0 ms rounds"),
    ("--only", str, None, "`growth` or `models-worlds`: only that (results/<it>.*)"),
    ("--growth", bool, False, "the same as `--only growth`"),
    ("--skip-growth", bool, False, "leave the growth scenario out"),
    ("--growth-sizes", str, None, "comma list of SIZE[/USERS][:HOURS] (default 100000)"),
    ("--growth-hours", int, 24, "hourly window runs per growth world (default 24)"),
    ("--growth-folder-mb", float, 5.0, "the dlt folder's bound over the first sweep's, MB"),
    ("--growth-warehouse-mb", float, 1.0, "warehouse growth per window run (mean), MB"),
    (
        "--models-worlds",
        str,
        None,
        "comma list of SIZE[/USERS]:SYNCSxDAYS[+2y][+migrate], `devportal models` on PostgreSQL "
        "beside DuckDB (default 100000/2000:4x10+2y,20000/4000:2x15+migrate)",
    ),
    ("--skip-models-worlds", bool, False, "leave the models worlds out"),
    ("--models-ratio", float, 2.0, "the bound of PostgreSQL's models time / DuckDB's"),
    ("--source", str, None, "run devportal and the sandbox from this commit's pipelines/"),
    ("--name", str, None, "results file stem (default latest, quick with --quick)"),
    ("--out", Path, RESULTS, "results folder (default benchmarks/results)"),
    ("--keep", bool, False, "keep the warehouses under work/"),
    ("--render", str, None, "only re-render a saved result (JSON) as Markdown"),
    ("--rejudge", bool, False, "with --render: judge the targets again (this code's)"),
]


QUICK_DEFAULTS = {  # (full run, --quick) where an option is not given
    **{"sizes": ("100000", "10000"), "users": (2000, 200), "rounds": (3, 1)},
    **{"rate_limit": (50, 20), "rate_burst": (50, 10)},
    "growth_sizes": ("100000", "10000:3"),
    "models_worlds": ("100000/2000:4x10+2y,20000/4000:2x15+migrate", "10000/200:2x15+2y+migrate"),
}


def settings_from(argv: list[str] | None) -> tuple[argparse.Namespace, Settings]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    for flags, kind, default, text in OPTIONS:
        if kind is bool:
            p.add_argument(*flags.split("/"), action="store_true", help=text)
        else:
            p.add_argument(*flags.split("/"), type=kind, default=default, help=text)
    a = p.parse_args(argv)
    for name, defaults in QUICK_DEFAULTS.items():
        if getattr(a, name) is None:
            setattr(a, name, defaults[a.quick])
    given = {k: v for k, v in vars(a).items() if k in {f.name for f in fields(Settings)}}
    given["sizes"] = [int(x) for x in a.sizes.split(",")]
    given["latencies"] = [float(x) for x in a.latencies.split(",")]
    given["big_size"] = None if (a.skip_1m or a.quick) else a.big_size
    postgres, models_rss = not a.skip_postgres, not a.skip_models_rss
    if a.growth:
        a.only = "growth"
    if a.only not in (None, "growth", "models-worlds"):
        p.error("--only takes `growth` or `models-worlds`")
    given["only"] = a.only
    given["growth_worlds"] = (
        [] if a.skip_growth else growth_worlds(p, a.growth_sizes, a.growth_hours)
    )
    skip_worlds = a.skip_models_worlds or a.skip_postgres or a.only == "growth"
    given["models_worlds"] = [] if skip_worlds else parse_models_worlds(p, a.models_worlds)
    given["models_ratio"] = a.models_ratio
    given["growth_folder_mb"], given["growth_warehouse_mb"] = (
        a.growth_folder_mb,
        a.growth_warehouse_mb,
    )
    postgres = postgres and a.only != "growth"
    return a, Settings(**given, window_since=WINDOW_SINCE, postgres=postgres, models_rss=models_rss)


def parse_models_worlds(p: argparse.ArgumentParser, spec: str) -> list[list[int]]:
    """`--models-worlds` as [subscriptions, users, syncs, days, two years (1/0), migrate (1/0)];
    users default to a fifth of the subscriptions."""
    worlds = []
    for item in spec.split(","):
        if not (match := MODELS_WORLD.fullmatch(item.strip())):
            p.error(f"--models-worlds takes SIZE[/USERS]:SYNCSxDAYS[+2y][+migrate], not {item!r}")
        size, users, syncs, days, extras = match.groups()
        flags = [int("+2y" in extras), int("+migrate" in extras)]
        worlds.append([int(size), int(users or int(size) // 5), int(syncs), int(days), *flags])
    return worlds


def growth_worlds(p: argparse.ArgumentParser, spec: str, hours: int) -> list[list[int]]:
    """`--growth-sizes` as [subscriptions, users, hourly runs]: users default to a fifth of the
    subscriptions (the issue's worlds), hourly runs to `--growth-hours`."""
    worlds = []
    for item in spec.split(","):
        if not (match := GROWTH_WORLD.fullmatch(item.strip())):
            p.error(f"--growth-sizes takes SIZE[/USERS][:HOURS], not {item!r}")
        size, users, runs = match.groups()
        worlds.append([int(size), int(users or int(size) // 5), int(runs or hours)])
    return worlds


def main(argv: list[str] | None = None) -> int:
    args, settings = settings_from(argv)
    if args.render:
        saved = load_result(json.loads(Path(args.render).read_text()))
        if args.rejudge:
            saved.targets = evaluate(saved)
        print(render_markdown(saved))
        return 0
    name = args.name or ("quick" if settings.quick else "latest")
    if args.name is None and settings.only == "growth":
        name = "growth-quick" if settings.quick else "growth"
    elif args.name is None and settings.only == "models-worlds":
        name = "models-worlds-quick" if settings.quick else "models-worlds"
    started_at = datetime.now(UTC)
    workdir = WORK / started_at.strftime("%Y%m%dT%H%M%S")
    description = machine()
    source = None
    if args.source:
        description.source, source = use_source(args.source)
        description.git_commit, description.pipelines_dirty = description.source[:7], False
    bench = Bench(settings, workdir)
    t0, interrupted = time.perf_counter(), False
    try:
        bench.run_all()
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: saving what was measured", file=sys.stderr)
    description.load_avg_at_end = list(os.getloadavg())
    result = Result(
        schema=2,
        command="python -m benchmarks.run " + " ".join(sys.argv[1:] if argv is None else argv),
        started_at=started_at.isoformat(timespec="seconds"),
        total_wall_s=round(time.perf_counter() - t0, 1),
        interrupted=interrupted,
        machine=description,
        settings=settings,
        sandboxes=bench.sandboxes,
        postgres=bench.postgres,
        runs=bench.runs,
    )
    result.summary = summarise(result.runs)
    result.pairs = pair_ratios(result.runs)
    result.postgres_pairs = postgres_pairs(result.runs)
    try:
        result.targets = evaluate(result)
    except Exception as err:  # keep what was measured; `--render --rejudge` judges it again
        print(f"could not judge the targets: {err!r}", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(result.as_json(), indent=1) + "\n")
    markdown = render_markdown(result)
    (args.out / f"{name}.md").write_text(markdown)
    print(markdown)
    if not settings.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    if source is not None:
        shutil.rmtree(source, ignore_errors=True)
    failed = [r for r in bench.runs if not r.ok and r.scenario not in MODELS_SCENARIOS]
    return 1 if failed or interrupted else 0


if __name__ == "__main__":
    raise SystemExit(main())
