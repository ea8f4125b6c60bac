"""The typed results, saved as `results/*.json` (the keys are the field names), and what is
derived from the runs: groups, pairs, formatting."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from itertools import pairwise
from typing import Any, TypeVar

T = TypeVar("T")
Steps = dict[str, dict[str, float | None]]  # dlt step -> seconds, peak_rss_bytes
STEP_FIELDS = ("seconds", "peak_rss_bytes")
MB = 1024 * 1024


def median(values: list[Any]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def fmt_int(value: float | None) -> str:
    return fmt(value, 0)


def fmt_mb(value: float | None) -> str:
    return "-" if value is None else fmt(value / MB, 0)


@dataclass
class Settings:
    sizes: list[int]
    users: int
    rounds: int
    latencies: list[float]
    big_size: int | None
    accounts_latency: float
    window_since: str
    workers: int | None  # None: adaptive concurrency (devportal's and the floor's default)
    pinned_workers: int  # the pinned comparison: 50 ms variant, rate-limited
    keep: bool
    quick: bool
    postgres: bool = True
    server_ms: float = 8.0  # the slow server's serial cost per request (0: skip)
    rate_limit: float = 50.0  # requests/s per token (0: skip)
    rate_burst: float = 50.0
    rate_rounds: int = 2  # 0 ms rounds that include the rate-limited pair
    models_rss: bool = True  # `devportal sync` with models in each 0 ms round
    # the growth scenario (`growth.py`): [subscriptions, users, hourly runs] per world
    growth_worlds: list[list[int]] = field(default_factory=list)
    growth_folder_mb: float = 5.0  # the dlt folder's bound over its size after the first sweep
    growth_warehouse_mb: float = 1.0  # the warehouse file's growth per window run (mean)
    growth_rss_mb: float = 400.0  # peak RSS of every run of the growth sequence
    growth_requests_share: float = 0.01  # a window run's requests / the first sweep's
    only: str | None = None  # `growth`: nothing but the growth scenario
    # issue 35's worlds for `devportal models` on PostgreSQL beside DuckDB: [subscriptions,
    # users, syncs, days between them, expiries moved up to two years out (1/0), a copy carried
    # over by `devportal migrate` (1/0)] per world; `models_ratio` bounds PostgreSQL / DuckDB
    models_worlds: list[list[int]] = field(default_factory=list)
    models_ratio: float = 2.0

    @property
    def pinned(self) -> int:
        """The pinned comparison's workers, 0 when it is off or equals `--workers`."""
        return self.pinned_workers if self.pinned_workers != self.workers else 0

    @property
    def concurrency(self) -> str:
        return (
            f"pinned `--workers {self.workers}`" if self.workers else "default settings: adaptive"
        )


@dataclass
class Run:
    """One measured process run."""

    contender: str  # devportal | peer | floor
    scenario: str
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
    work_s: float | None = None  # the contender's own timing, after its imports
    rows: int | None = None
    rows_check: str | None = None  # "ok" or what disagreed
    requests: int | None = None
    steps: Steps = field(default_factory=dict)
    error: str | None = None
    note: str | None = None
    destination: str = "duckdb"
    db_cpu_s: float | None = None  # the PostgreSQL server's, during the run
    db_peak_pss_bytes: int | None = None
    db_idle_pss_bytes: int | None = None  # just before the run
    workers: int | None = None  # None: adaptive
    server_ms: float = 0.0  # the sandbox's load during the run
    rate_limit_per_s: float | None = None
    rate_burst: float | None = None
    retries: int | None = None  # from here: the run's `sync_runs` row (or summary line)
    concurrency_mode: str | None = None
    concurrency_settled: int | None = None
    concurrency_peak: int | None = None
    concurrency_cuts: int | None = None
    rate_limited: int | None = None  # 429s the client counted
    paused_s: float | None = None
    server_requests: int | None = None  # the sandbox's counters, after minus before
    server_rate_limited: int | None = None
    rows_per_s: float | None = None  # derived (`derive`), saved for readers of the JSON
    request_rate_per_s: float | None = None  # requests / work_s
    request_rate_wall_per_s: float | None = None
    # the growth scenario: the sandbox clock the run saw, what advancing it changed, the run's
    # `sync_runs` mode and rows read per table, the disk after the run
    clock: str | None = None
    world_changes: dict[str, int] | None = None
    sync_mode: str | None = None
    rows_read: dict[str, int] | None = None
    warehouse_bytes: int | None = None  # the .duckdb file
    warehouse_wal_bytes: int | None = None  # its write-ahead log, when one is left
    dlt_dir_bytes: int | None = None  # `.<stem>.dlt/` beside the warehouse
    dlt_dir_files: int | None = None
    # `devportal models --verbose`: each model's seconds, as its `built analytics.<name> in`
    # line says (the models worlds, issue 35)
    model_seconds: dict[str, float] | None = None

    def derive(self) -> Run:
        sent = self.server_requests if self.server_requests is not None else self.requests
        self.rows_per_s = self.rows / self.wall_s if self.rows and self.wall_s > 0 else None
        self.request_rate_per_s = sent / self.work_s if sent and self.work_s else None
        self.request_rate_wall_per_s = sent / self.wall_s if sent and self.wall_s > 0 else None
        return self

    @property
    def rate_429s(self) -> int | None:
        """The rate limit's 429s: the sandbox's count, else the client's."""
        return self.rate_limited if self.server_rate_limited is None else self.server_rate_limited


MEDIANS = (
    *("wall_s", "work_s", "rows", "rows_per_s", "peak_rss_bytes", "server_cpu_s", "db_cpu_s"),
    *("db_peak_pss_bytes", "db_idle_pss_bytes", "requests", "server_requests"),
    *("request_rate_per_s", "paused_s"),
)
PER_RUN = ("concurrency_settled", "concurrency_peak", "concurrency_cuts", "rate_limited")


@dataclass
class Group:
    """Medians per (size, latency, contender, scenario) over the successful runs."""

    size: int
    latency_ms: float
    contender: str
    scenario: str
    runs: int
    ok: int
    wall_s: float | None
    wall_min_s: float | None
    wall_max_s: float | None
    work_s: float | None
    rows: float | None
    rows_per_s: float | None
    peak_rss_bytes: float | None
    server_cpu_s: float | None
    db_cpu_s: float | None
    db_peak_pss_bytes: float | None
    db_idle_pss_bytes: float | None
    max_processes: int | None
    requests: float | None
    server_requests: float | None
    request_rate_per_s: float | None
    concurrency_modes: list[str]
    concurrency_settled: list[int | None]  # per run, in round order
    concurrency_peak: list[int | None]
    concurrency_cuts: list[int | None]
    rate_limited: list[int | None]
    server_rate_limited: list[int | None]
    paused_s: float | None
    rows_check: list[str]
    errors: list[str]
    notes: list[str]
    steps: Steps


def summarise(runs: list[Run]) -> list[Group]:
    groups: dict[tuple[int, float, str, str], list[Run]] = defaultdict(list)
    for run in runs:
        groups[(run.size, run.latency_ms, run.contender, run.scenario)].append(run)
    out = []
    for (size, latency, contender, scenario), group in groups.items():
        ok = [r for r in group if r.ok]
        walls = [r.wall_s for r in ok]
        values: dict[str, Any] = {m: median([getattr(r, m) for r in ok]) for m in MEDIANS}
        values |= {m: [getattr(r, m) for r in ok] for m in (*PER_RUN, "server_rate_limited")}
        steps = sorted({name for r in ok for name in r.steps})
        values["steps"] = {
            s: {k: median([r.steps.get(s, {}).get(k) for r in ok]) for k in STEP_FIELDS}
            for s in steps
        }
        out.append(
            Group(
                *(size, latency, contender, scenario, len(group), len(ok)),
                wall_min_s=min(walls, default=None),
                wall_max_s=max(walls, default=None),
                max_processes=max((r.max_processes for r in ok), default=None),
                concurrency_modes=sorted({r.concurrency_mode for r in ok if r.concurrency_mode}),
                rows_check=sorted({str(r.rows_check) for r in ok if r.rows_check}),
                errors=[r.error for r in group if r.error],
                notes=sorted({r.note for r in group if r.note}),
                **values,
            )
        )
    return out


@dataclass
class Pair:
    """One round's fresh sweeps: devportal against the peer, the floor and its own variants."""

    size: int
    latency_ms: float
    round: int
    wall_vs_peer: float | None
    rss_vs_peer: float | None
    wall_vs_floor: float | None
    work_vs_floor: float | None
    variant: str | None
    variant_wall_vs_peer: float | None
    speedups_off_wall_vs_on: float | None = None  # `DEVPORTAL_SPEEDUPS=off` / default, 0 ms
    speedups_off_rss_vs_on: float | None = None
    models_wall_vs_peer: float | None = None  # `sweep_models` (the sweep with its models)
    models_minus_floor_s: float | None = None  # its wall minus the floor's, seconds


@dataclass
class PostgresPair:
    """One 0 ms round: devportal's PostgreSQL sweep against its DuckDB sweep."""

    size: int
    latency_ms: float
    round: int
    duckdb_wall_s: float
    postgres_wall_s: float
    wall_ratio: float | None
    duckdb_rss_bytes: int
    postgres_rss_bytes: int
    rss_ratio: float | None
    postgres_db_cpu_s: float | None
    postgres_db_peak_pss_bytes: int | None


Rounds = dict[tuple[int, float, int], dict[str, Run]]


def by_round(runs: list[Run], key: Callable[[Run], str | None]) -> Rounds:
    """{(size, latency, round): {key(run): run}} of the runs `key` names (None: left out)."""
    rounds: Rounds = defaultdict(dict)
    for run in runs:
        if (name := key(run)) is not None:
            rounds[(run.size, run.latency_ms, run.round)][name] = run
    return dict(sorted(rounds.items()))


# scenario -> key prefix in a round
SWEEPS = {"sweep": "", "sweep_speedups_off": "off", "sweep_models": "models"}


def pair_ratios(runs: list[Run]) -> list[Pair]:
    def key(r: Run) -> str | None:
        if not r.ok or r.contender not in ("devportal", "peer", "floor"):
            return None
        if r.scenario.startswith("sweep_workers"):
            return "variant"
        return SWEEPS[r.scenario] + r.contender if r.scenario in SWEEPS else None

    out = []
    for (size, latency, round_no), by in by_round(runs, key).items():
        dp, peer, floor, variant, off, models = (
            by.get(k)
            for k in ("devportal", "peer", "floor", "variant", "offdevportal", "modelsdevportal")
        )
        if dp is not None or models is not None:
            out.append(
                Pair(
                    *(size, latency, round_no),
                    ratio(dp.wall_s, peer.wall_s) if dp and peer else None,
                    ratio(dp.peak_rss_bytes, peer.peak_rss_bytes) if dp and peer else None,
                    ratio(dp.wall_s, floor.wall_s) if dp and floor else None,
                    ratio(dp.work_s, floor.work_s) if dp and floor else None,
                    variant.scenario if variant else None,
                    ratio(variant.wall_s, peer.wall_s) if variant and peer else None,
                    ratio(off.wall_s, dp.wall_s) if off and dp else None,
                    ratio(off.peak_rss_bytes, dp.peak_rss_bytes) if off and dp else None,
                    ratio(models.wall_s, peer.wall_s) if models and peer else None,
                    models.wall_s - floor.wall_s if models and floor else None,
                )
            )
    return out


def postgres_pairs(runs: list[Run]) -> list[PostgresPair]:
    def key(r: Run) -> str | None:
        wanted = r.ok and r.contender == "devportal" and r.scenario in ("sweep", "sweep_postgres")
        return r.scenario if wanted else None

    out = []
    for (size, latency, round_no), by in by_round(runs, key).items():
        duck, pg = by.get("sweep"), by.get("sweep_postgres")
        if duck is not None and pg is not None:
            out.append(
                PostgresPair(
                    *(size, latency, round_no, duck.wall_s, pg.wall_s),
                    ratio(pg.wall_s, duck.wall_s),
                    *(duck.peak_rss_bytes, pg.peak_rss_bytes),
                    ratio(pg.peak_rss_bytes, duck.peak_rss_bytes),
                    *(pg.db_cpu_s, pg.db_peak_pss_bytes),
                )
            )
    return out


def slow_server_pairs(runs: list[Run]) -> list[tuple[Run, Run]]:
    """(devportal, floor) of each round of the slow-server scenario."""
    slow = by_round(runs, lambda r: r.contender if r.scenario == "slow_server" else None)
    return [(b["devportal"], b["floor"]) for b in slow.values() if {"devportal", "floor"} <= set(b)]


def slow_difference(pair: tuple[Run, Run]) -> float | None:
    dp, floor = pair
    return dp.wall_s - floor.wall_s if dp.ok and floor.ok else None


@dataclass
class TargetResult:
    target: str
    value: float | None
    limit: float
    unit: str
    at_least: bool
    verdict: str  # PASS | MISS | n/a
    factor: str
    basis: str


@dataclass
class Machine:
    cpu: str
    logical_cores: int | None
    physical_cores: int | None
    cores_usable: int
    ram_bytes: int
    os: str
    python: str
    versions: dict[str, str | None]
    git_commit: str | None
    pipelines_dirty: bool | None
    load_avg_at_start: list[float]
    load_avg_at_end: list[float] = field(default_factory=list)
    source: str | None = None  # devportal ran from `git archive` of this commit (`--source`)


@dataclass
class PostgresInfo:
    """The throwaway server; the JSON leaves out what is None."""

    enabled: bool
    skipped: str | None = None
    server: str | None = None
    version: str | None = None
    startup_s: float | None = None
    errors: list[str] | None = None


@dataclass
class Result:
    schema: int
    command: str
    started_at: str
    total_wall_s: float
    interrupted: bool
    machine: Machine
    settings: Settings
    sandboxes: list[dict[str, Any]]  # subscriptions, users, seed, clock, live_subscriptions, ...
    postgres: PostgresInfo
    runs: list[Run]
    summary: list[Group] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    postgres_pairs: list[PostgresPair] = field(default_factory=list)
    targets: list[TargetResult] = field(default_factory=list)

    @property
    def main_size(self) -> int:
        sizes = self.settings.sizes
        return 100_000 if 100_000 in sizes else max(sizes)

    def find(self, size: int | None, latency: float, scenario: str) -> Group | None:
        """devportal's group of `scenario` at that size and latency."""
        wanted = (size, latency, "devportal", scenario)
        return next(
            (g for g in self.summary if (g.size, g.latency_ms, g.contender, g.scenario) == wanted),
            None,
        )

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["postgres"] = {k: v for k, v in data["postgres"].items() if v is not None}
        return data


def _make(cls: type[T], data: dict[str, Any]) -> T:
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in names})


def load_result(data: dict[str, Any]) -> Result:
    """A saved result (the JSON) as typed records."""
    lists = {"runs": Run, "summary": Group, "pairs": Pair, "postgres_pairs": PostgresPair}
    records: dict[str, Any] = {k: [_make(c, i) for i in data.get(k, [])] for k, c in lists.items()}
    records["targets"] = [_make(TargetResult, i) for i in data.get("targets", [])]
    records["machine"] = _make(Machine, data["machine"])
    records["settings"] = _make(Settings, data["settings"])
    records["postgres"] = _make(PostgresInfo, data.get("postgres") or {"enabled": False})
    return _make(Result, data | records)


def settled_range(runs: list[Run]) -> str:
    """`settled at 7-8, peak 37` over the runs' concurrency; "" without a record."""
    values = sorted({r.concurrency_settled for r in runs if r.concurrency_settled})
    peaks = [r.concurrency_peak for r in runs if r.concurrency_peak]
    if not values:
        return ""
    settled = str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"
    return f"settled at {settled}" + (f", peak {max(peaks)}" if peaks else "")


GROWTH_PREFIX = "growth_"  # the growth scenario's runs: first sweep, windows, nightly sweep


@dataclass
class GrowthWorld:
    """One world's growth sequence, in run order: first sweep, hourly windows, nightly sweep."""

    size: int
    users: int
    hours: int
    first: Run | None
    windows: list[Run]
    nightly: Run | None

    @property
    def runs(self) -> list[Run]:
        return [r for r in (self.first, *self.windows, self.nightly) if r is not None]

    def window_requests_share(self) -> list[float]:
        """Each window run's requests (the sandbox's count) / the first sweep's."""
        base = self.first.server_requests if self.first else None
        return [v for w in self.windows if (v := ratio(w.server_requests, base)) is not None]

    def warehouse_growth(self) -> list[int]:
        """Bytes each successful window run added to the warehouse file (from the run before;
        a failed run loads nothing, so it is left out)."""
        runs = [r for r in (self.first, *self.windows) if r is not None]
        return [
            b.warehouse_bytes - a.warehouse_bytes
            for a, b in pairwise(runs)
            if b.ok and a.warehouse_bytes is not None and b.warehouse_bytes is not None
        ]


def growth_worlds(res: Result) -> list[GrowthWorld]:
    """The growth sequences of `res`, one per `--growth-sizes` world that ran."""
    out = []
    for size, users, hours in res.settings.growth_worlds:
        runs = [r for r in res.runs if r.size == size and r.scenario.startswith(GROWTH_PREFIX)]
        if runs:
            by = {
                name: [r for r in runs if r.scenario == GROWTH_PREFIX + name]
                for name in ("first_sweep", "window", "nightly_sweep")
            }
            out.append(
                GrowthWorld(
                    *(size, users, hours),
                    next(iter(by["first_sweep"]), None),
                    sorted(by["window"], key=lambda r: r.round),
                    next(iter(by["nightly_sweep"]), None),
                )
            )
    return out


# the models worlds (issue 35): the measured `devportal models` of each engine, by scenario
WORLD_PREFIX = "world_"
WORLD_MODELS = {
    "world_models": "DuckDB",
    "world_models_postgres": "PostgreSQL",
    "world_models_migrated": "PostgreSQL, carried over by `devportal migrate`",
}


@dataclass
class ModelsWorld:
    """One models world (issue 35): its spec and its measured `devportal models` runs, by
    scenario (`WORLD_MODELS`), in round order."""

    size: int
    users: int
    syncs: int
    days: int
    two_years: bool
    migrated: bool
    runs: dict[str, list[Run]]

    @property
    def label(self) -> str:
        label = f"{self.size:,} subscriptions / {self.users:,} users, {self.syncs} syncs"
        label += f" {self.days} days apart" if self.syncs > 1 else ""
        return label + (", expiries up to two years out" if self.two_years else "")

    def ratios(self, scenario: str) -> list[float]:
        """SCENARIO's wall time / DuckDB's, round by round (both successful)."""
        duck = {r.round: r for r in self.runs.get("world_models", []) if r.ok}
        return [
            v
            for r in self.runs.get(scenario, [])
            if r.ok and r.round in duck and (v := ratio(r.wall_s, duck[r.round].wall_s))
        ]

    def model_medians(self, scenario: str) -> dict[str, float]:
        """Each model's median seconds over SCENARIO's successful runs."""
        runs = [r for r in self.runs.get(scenario, []) if r.ok and r.model_seconds]
        names = {name for r in runs for name in r.model_seconds or {}}
        found = {n: median([(r.model_seconds or {}).get(n) for r in runs]) for n in names}
        return {n: v for n, v in found.items() if v is not None}


def models_worlds(res: Result) -> list[ModelsWorld]:
    """The models worlds of `res` that ran (`Settings.models_worlds`)."""
    out = []
    for size, users, syncs, days, two_years, migrated in res.settings.models_worlds:
        runs = {
            name: sorted(
                (r for r in res.runs if (r.size, r.scenario) == (size, name)), key=lambda r: r.round
            )
            for name in WORLD_MODELS
        }
        if any(runs.values()):
            out.append(ModelsWorld(size, users, syncs, days, bool(two_years), bool(migrated), runs))
    return out
