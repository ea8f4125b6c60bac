"""The targets, as one list, and the one evaluator, `evaluate`.

Judged on the main size with medians; ratios to the peer and the floor are the median of the
pair-by-pair ratios (same round, seconds apart, same machine load)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.records import (
    MB,
    WORLD_MODELS,
    GrowthWorld,
    ModelsWorld,
    Result,
    Run,
    TargetResult,
    fmt,
    fmt_int,
    growth_worlds,
    median,
    models_worlds,
    ratio,
    settled_range,
    slow_difference,
    slow_server_pairs,
)


@dataclass
class Measure:
    """A metric's value and basis; with `checks` the verdict is every check holding."""

    value: float | None
    basis: str
    checks: list[tuple[bool, str]] | None = None  # (holds, what a miss is called)
    shown: str = ""


Metric = Callable[[Result, float], Measure]  # (result, the bound) -> measure


@dataclass(frozen=True)
class Target:
    label: str | Callable[[Result], str]  # a str is formatted with s=settings, size, big
    metric: Metric
    limit: float
    unit: str = "ratio"  # ratio | s | MB | users/s | x limit | share
    at_least: bool = False  # value >= limit passes (else value <= limit)
    informational: bool = False  # shown with what it would be, never a miss


def _runs(res: Result, scenario: str, contender: str = "devportal") -> list[Run]:
    size = res.main_size
    return [r for r in res.runs if (r.size, r.scenario, r.contender) == (size, scenario, contender)]


def _pair_values(res: Result, latency: float, name: str) -> list[float]:
    size = res.main_size
    pairs = [p for p in res.pairs if (p.size, p.latency_ms) == (size, latency)]
    return [v for p in pairs if (v := getattr(p, name)) is not None]


def _medians_of(res: Result, latency: float, scenario: str, contender: str) -> float | None:
    runs = _runs(res, scenario, contender)
    return median([r.wall_s for r in runs if r.ok and r.latency_ms == latency])


def pair_ratio(latency: float, name: str, scenario: str = "sweep") -> Metric:
    def metric(res: Result, _limit: float) -> Measure:
        values = _pair_values(res, latency, name)
        runs = [r for r in _runs(res, scenario) if r.ok and r.latency_ms == latency]
        concurrency = settled_range(runs)
        return Measure(
            median(values),
            f"median of {len(values)} pair ratio(s), {res.main_size:,} subscriptions; devportal "
            f"{res.settings.concurrency}" + (f", {concurrency}" if concurrency else ""),
        )

    return metric


def models_vs_peer(res: Result, limit: float) -> Measure:
    """`sweep_models` / the peer at 50 ms, pair by pair; the medians beside it."""
    m = pair_ratio(50.0, "models_wall_vs_peer", "sweep_models")(res, limit)
    dp, peer = (
        _medians_of(res, 50.0, sc, c)
        for sc, c in (("sweep_models", "devportal"), ("sweep", "peer"))
    )
    m.basis += (
        f"; `devportal sync --resources subscriptions` with its models (fresh warehouse); "
        f"medians {fmt(dp)} s vs the peer's {fmt(peer)} s"
    )
    return m


def models_vs_floor(res: Result, _limit: float) -> Measure:
    """`sweep_models` minus the floor at 0 ms, pair by pair; the sweep without models beside."""
    diffs = _pair_values(res, 0.0, "models_minus_floor_s")
    dp, floor, sweep = (
        _medians_of(res, 0.0, sc, c)
        for sc, c in (("sweep_models", "devportal"), ("sweep", "floor"), ("sweep", "devportal"))
    )
    runs = [r for r in _runs(res, "sweep_models") if r.ok and r.latency_ms == 0.0]
    concurrency = settled_range(runs)
    return Measure(
        median(diffs),
        f"median of {len(diffs)} pair-by-pair difference(s) (`devportal sync --resources "
        f"subscriptions` with its models, fresh warehouse, - the floor, same round), "
        f"{res.main_size:,} subscriptions; medians with models {fmt(dp)} s, floor {fmt(floor)} s "
        f"(difference of medians {fmt(dp - floor if dp is not None and floor is not None else None)}"
        f" s), without models (`sweep`) {fmt(sweep)} s; devportal {res.settings.concurrency}"
        + (f", {concurrency}" if concurrency else ""),
    )


def slow_server(res: Result, _limit: float) -> Measure:
    slow = [p for p in slow_server_pairs(res.runs) if p[0].size == res.main_size]
    diffs = [d for p in slow if (d := slow_difference(p)) is not None]
    dp = median([p[0].wall_s for p in slow if p[0].ok])
    floor = median([p[1].wall_s for p in slow if p[1].ok])
    return Measure(
        median(diffs),
        f"median of {len(diffs)} pair-by-pair difference(s) (devportal - floor, same round); "
        f"medians devportal {fmt(dp)} s, floor {fmt(floor)} s (difference of medians "
        f"{fmt(dp - floor if dp is not None and floor is not None else None)} s); "
        + (settled_range(_runs(res, "slow_server")) or "-"),
    )


def rate_limited(res: Result, limit: float) -> Measure:
    """Finishes, averages at most `limit` x the rate limit, fewer 429s than pinned."""
    adaptive = _runs(res, "rate_limited")
    pinned = [
        r for r in res.runs if r.size == res.main_size and r.scenario.startswith("rate_limited_w")
    ]
    if not adaptive:
        return Measure(None, "not measured in this run")
    ok = [r for r in adaptive if r.ok]
    rate = median([r.request_rate_per_s for r in ok])
    value = ratio(rate, res.settings.rate_limit or 0)
    mine, theirs = median([r.rate_429s for r in ok]), median([r.rate_429s for r in pinned if r.ok])
    if theirs is None:
        fewer_ok, fewer = True, f"{fmt_int(mine)} 429s (no pinned run to compare)"
    else:
        fewer_ok = mine is not None and (mine < theirs or mine == 0)
        fewer = f"{fmt_int(mine)} vs {fmt_int(theirs)} 429s pinned"
    return Measure(
        value,
        f"median of {len(ok)} adaptive run(s) (and {len(pinned)} pinned) at {res.main_size:,} "
        "subscriptions: requests the sandbox counted / the sync's own seconds (`sync ok in "
        "...s`, imports excluded); 429s counted by the sandbox; " + (settled_range(ok) or "-"),
        checks=[
            (len(ok) == len(adaptive), "did not finish"),
            (value is not None and value <= limit, f"over {limit:g}x the limit"),
            (fewer_ok, "not fewer 429s than pinned"),
        ],
        shown=f"finished {len(ok)}/{len(adaptive)}; "
        + (f"{fmt(value)}x the limit" if value is not None else "no rate")
        + f"; {fewer}",
    )


def user_accounts(res: Result, _limit: float) -> Measure:
    s = res.settings
    g = res.find(res.main_size, s.accounts_latency, "user_accounts")
    concurrency = settled_range([r for r in _runs(res, "user_accounts") if r.ok])
    return Measure(
        g.rows_per_s if g else None,
        "users read / process wall time of `devportal sync --resources user_accounts`, "
        f"{s.concurrency}, median of {g.ok if g else 0} run(s), {fmt_int(g.rows if g else None)}"
        f" users in {fmt(g.wall_s if g else None)} s" + (f"; {concurrency}" if concurrency else ""),
    )


def sync_models_rss(res: Result, _limit: float) -> Measure:
    g = res.find(res.main_size, 0.0, "sync_models")
    return Measure(
        g.peak_rss_bytes / MB if g and g.peak_rss_bytes else None,
        f"median of {g.ok if g else 0} run(s) of `devportal sync` (every resource, no "
        f"`--no-models`), {res.main_size:,} subscriptions, {res.settings.concurrency}; MB = MiB",
    )


def big_rss(res: Result, _limit: float) -> Measure:
    big, base = res.settings.big_size, res.find(res.main_size, 0.0, "sweep")
    top = res.find(big, 0.0, "sweep") if big else None
    return Measure(
        ratio(top.peak_rss_bytes, base.peak_rss_bytes) if top and base else None,
        "one big run against the median at the main size, both at 0 ms",
    )


def _rate_label(res: Result) -> str:
    s = res.settings
    if s.rate_limit and s.rate_burst:
        return (
            f"rate limit {s.rate_limit:g} req/s (burst {s.rate_burst:g}): devportal finishes, "
            f"averages <= 1.1x the limit, fewer 429s than `--workers {s.pinned_workers}`"
        )
    return "rate-limited sandbox: devportal finishes, <= 1.1x the limit, fewer 429s than pinned"


TARGETS: list[Target] = [
    Target("0 ms: devportal wall time <= 1.5x the floor's", pair_ratio(0.0, "wall_vs_floor"), 1.5),
    Target(
        "0 ms: devportal wall time <= 1/5 of the peer's", pair_ratio(0.0, "wall_vs_peer"), 1 / 5
    ),
    Target("0 ms: devportal peak RSS <= 1/8 of the peer's", pair_ratio(0.0, "rss_vs_peer"), 1 / 8),
    Target(
        "50 ms: devportal wall time, default settings, <= 1/10 of the peer's",
        pair_ratio(50.0, "wall_vs_peer"),
        1 / 10,
    ),
    Target(
        "0 ms: devportal sync with its models (fresh warehouse) <= the floor's wall time + 2.0 s",
        *(models_vs_floor, 2.0, "s"),
    ),
    Target(
        "50 ms: devportal sync with its models, default settings, <= 1/10 of the peer's wall time",
        *(models_vs_peer, 1 / 10),
    ),
    Target(
        "slow server (`--server-ms {s.server_ms:g}`): devportal wall time <= the floor's + 1.5 s",
        *(slow_server, 1.5, "s"),
    ),
    Target(_rate_label, rate_limited, 1.1, unit="x limit"),
    Target(
        "user accounts at {s.accounts_latency:g} ms: >= 375 users/s (3x 125)",
        *(user_accounts, 375.0, "users/s", True),
    ),
    Target(
        "0 ms: peak RSS of `devportal sync` with the models (fresh warehouse) <= 256 MB",
        *(sync_models_rss, 256.0, "MB"),
    ),
    Target("{big:,} subscriptions: devportal peak RSS <= 1.3x its {size:,} figure", big_rss, 1.3),
]


def _world(w: GrowthWorld) -> str:
    return f"growth {w.size:,} subscriptions / {w.users:,} users"


def _failed(runs: list[Run]) -> tuple[bool, str]:
    bad = [r for r in runs if not r.ok]
    return not bad, f"{len(bad)} of {len(runs)} run(s) failed"


def growth_rss(w: GrowthWorld) -> Metric:
    def metric(_res: Result, limit: float) -> Measure:
        runs = w.runs
        top = max(runs, key=lambda r: r.peak_rss_bytes, default=None)
        value = top.peak_rss_bytes / MB if top else None
        return Measure(
            value,
            f"the highest of {len(runs)} run(s) (first sweep, {len(w.windows)} hourly window "
            "run(s), nightly sweep), each a plain `devportal sync` with its models, default "
            "settings; a failed run is a miss whatever its memory; MB = MiB",
            checks=[
                _failed(runs),
                (value is not None and value <= limit, f"over {limit:g} MB"),
            ],
            shown=f"{fmt_int(value)} MB"
            + (f" ({_run_label(top)})" if top else "")
            + f"; {sum(r.ok for r in runs)}/{len(runs)} ok",
        )

    return metric


def _run_label(r: Run) -> str:
    if r.scenario.endswith("window"):
        return f"hourly window {r.round}"
    return r.scenario.removeprefix("growth_").replace("_", " ")


def growth_folder(w: GrowthWorld) -> Metric:
    def metric(_res: Result, _limit: float) -> Measure:
        first, last = w.first, w.nightly
        a, b = (first.dlt_dir_bytes if first else None), (last.dlt_dir_bytes if last else None)
        value = (b - a) / MB if a is not None and b is not None else None
        files = (
            f"; {first.dlt_dir_files} -> {last.dlt_dir_files} files"
            if first is not None and last is not None
            else ""
        )
        return Measure(
            value,
            f"`.bench.dlt/` beside the warehouse (every file, recursively) after the nightly sweep "
            f"minus after the first sweep: {fmt(a / MB if a is not None else None, 1)} -> "
            f"{fmt(b / MB if b is not None else None, 1)} MB{files}; bound `--growth-folder-mb`",
        )

    return metric


def growth_warehouse(w: GrowthWorld) -> Metric:
    def metric(_res: Result, limit: float) -> Measure:
        grew = w.warehouse_growth()
        value = sum(grew) / len(grew) / MB if grew else None
        shown = ", ".join(f"{g / MB:+.2f}" for g in grew)
        failed = [r for r in w.windows if not r.ok]
        return Measure(
            value,
            f"mean growth of the .duckdb file per successful hourly window run over {len(grew)} "
            f"run(s) (each from the run before; MB: {shown or '-'}); a failed run loads nothing "
            "and is a miss; bound `--growth-warehouse-mb`",
            checks=[
                (not failed, f"{len(failed)} of {len(w.windows)} hourly run(s) failed"),
                (value is None or value <= limit, f"over {limit:g} MB"),
            ],
            shown=(f"{value:+.2f} MB per run" if value is not None else "no successful run"),
        )

    return metric


def growth_requests(w: GrowthWorld) -> Metric:
    def metric(_res: Result, _limit: float) -> Measure:
        shares = w.window_requests_share()
        first = w.first.server_requests if w.first else None
        counts = [r.server_requests for r in w.windows if r.server_requests is not None]
        return Measure(
            max(shares, default=None),
            f"the highest of {len(shares)} hourly window run(s): requests the sandbox counted "
            f"({_between(counts)}) / the "
            f"first sweep's ({fmt_int(first)}). Informational: the first sweep's count is mostly "
            "one request per user account (all due), so the share tracks the user count, and "
            "within a day no account is due again (accounts_ttl_days 7)",
        )

    return metric


def _between(values: list[int]) -> str:
    low, high = fmt_int(min(values, default=None)), fmt_int(max(values, default=None))
    return low if low == high else f"{low} to {high}"


def growth_targets(res: Result) -> list[Target]:
    """Issue 31's targets for every growth world of `res` that ran."""
    s, out = res.settings, []
    for w in growth_worlds(res):
        world = _world(w)
        out += [
            Target(
                f"{world}: peak RSS of every run <= {s.growth_rss_mb:g} MB",
                *(growth_rss(w), s.growth_rss_mb, "MB"),
            ),
            Target(
                f"{world}: the dlt folder after {w.hours} hourly runs and a sweep <= its size "
                f"after the first sweep + {s.growth_folder_mb:g} MB",
                *(growth_folder(w), s.growth_folder_mb, "MB"),
            ),
            Target(
                f"{world}: the warehouse file grows <= {s.growth_warehouse_mb:g} MB per hourly "
                "window run (mean)",
                *(growth_warehouse(w), s.growth_warehouse_mb, "MB"),
            ),
            Target(
                f"{world}: an hourly window run's requests <= "
                f"{s.growth_requests_share:.0%} of the first sweep's",
                *(growth_requests(w), s.growth_requests_share, "share"),
                informational=True,
            ),
        ]
    return out


def models_world_ratio(w: ModelsWorld, scenario: str) -> Metric:
    """SCENARIO's `devportal models` wall time over DuckDB's, the median of the round-by-round
    ratios (issue 35)."""

    def metric(_res: Result, _limit: float) -> Measure:
        values = w.ratios(scenario)
        walls = {
            name: median([r.wall_s for r in w.runs.get(name, []) if r.ok])
            for name in ("world_models", scenario)
        }
        return Measure(
            median(values),
            f"median of {len(values)} round-by-round ratio(s) of `devportal models` wall times "
            f"(each engine's models built from nothing, `--verbose`); medians "
            f"{fmt(walls[scenario])} s vs DuckDB's {fmt(walls['world_models'])} s",
        )

    return metric


def models_world_targets(res: Result) -> list[Target]:
    """Issue 35: `devportal models` on PostgreSQL within `models_ratio` x DuckDB's time, per
    models world and per PostgreSQL database of it (synced, carried over by migrate)."""
    out = []
    for w in models_worlds(res):
        for scenario in ("world_models_postgres", "world_models_migrated"):
            if w.runs.get(scenario):
                engine = WORLD_MODELS[scenario]
                out.append(
                    Target(
                        f"models, {w.label}: {engine} <= {res.settings.models_ratio:g}x DuckDB's "
                        "time",
                        *(models_world_ratio(w, scenario), res.settings.models_ratio),
                    )
                )
    return out


def verdict(value: float | None, limit: float, at_least: bool) -> tuple[str, str]:
    if value is None:
        return "n/a", "not measured in this run"
    if at_least:
        if value >= limit:
            return "PASS", f"{value / limit:.2f}x the minimum" if limit else "no minimum"
        return "MISS", f"{limit / value:.2f}x short of the minimum" if value > 0 else "none"
    if value <= limit:
        return "PASS", f"{limit / value:.2f}x headroom" if value > 0 else "no cost"
    return "MISS", f"{value / limit:.2f}x over the limit"


def evaluate(res: Result, targets: list[Target] | None = None) -> list[TargetResult]:
    """Every target's verdict in `res` (its runs, summary and pairs already computed): by
    default `TARGETS` (unless the run was `--only` one scenario), the models worlds' targets and
    the growth worlds' targets."""
    if targets is None:
        targets = [] if res.settings.only else list(TARGETS)
        targets += models_world_targets(res) + growth_targets(res)
    out = []
    for t in targets:
        m = t.metric(res, t.limit)
        if m.checks is None:
            outcome, factor = verdict(m.value, t.limit, t.at_least)
        else:
            misses = [why for holds, why in m.checks if not holds]
            outcome = "MISS" if misses else "PASS"
            factor = m.shown + (f" ({', '.join(misses)})" if misses else "")
        if t.informational and outcome != "n/a":
            outcome, factor = "info", f"would {outcome}: {factor}"
        s, big = res.settings, res.settings.big_size or 1_000_000
        label = (
            t.label(res) if callable(t.label) else t.label.format(s=s, size=res.main_size, big=big)
        )
        out.append(
            TargetResult(label, m.value, t.limit, t.unit, t.at_least, outcome, factor, m.basis)
        )
    return out
