"""Medians, pair-by-pair ratios, the issue's targets and the Markdown rendering of a bench run.

Works on the plain dicts saved in the JSON, so a saved result can be re-rendered
(`python -m benchmarks.run --render benchmarks/results/latest.json`).

Targets (issue 6), judged on the main size (100,000 unless `--sizes` leaves it out) with the
median of the pair-by-pair ratios (each round's devportal run against the same round's peer or
floor run, which ran seconds apart under the same machine load):
- 0 ms: devportal wall <= 1/5 of the peer's, peak RSS <= 1/8 of the peer's, wall <= 1.5x floor;
- 50 ms: devportal wall <= 1/10 of the peer's;
- the big run (1M): devportal peak RSS <= 1.3x its figure at the main size (flat memory).

PostgreSQL next to DuckDB (issue 11) is informational, no target: per round, the 0 ms
`sweep_postgres` run against the same round's DuckDB `sweep` (wall, devportal's peak RSS), and
`models_postgres` next to `models`, with the server's own CPU and memory beside them.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

MB = 1024 * 1024
SIDE_BY_SIDE = ("devportal", "peer", "floor")
MODELS_SCENARIOS = ("models", "models_postgres")  # may fail while a backend lacks models
POSTGRES_SCENARIOS = ("sweep_postgres", "models_setup_postgres", "models_postgres")
THROTTLED_SCENARIOS = ("slow_server", "rate_limited")  # prefixes; they have their own sections


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarise(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Medians per (size, latency, contender, scenario) over the successful runs."""
    groups: dict[tuple[int, float, str, str], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        groups[(run["size"], run["latency_ms"], run["contender"], run["scenario"])].append(run)
    out = []
    for (size, latency, contender, scenario), group in groups.items():
        ok = [r for r in group if r["ok"]]
        step_names = sorted({name for r in ok for name in r.get("steps", {})})
        out.append(
            {
                "size": size,
                "latency_ms": latency,
                "contender": contender,
                "scenario": scenario,
                "runs": len(group),
                "ok": len(ok),
                "wall_s": _median([r["wall_s"] for r in ok]),
                "wall_min_s": min((r["wall_s"] for r in ok), default=None),
                "wall_max_s": max((r["wall_s"] for r in ok), default=None),
                "work_s": _median([r["work_s"] for r in ok]),
                "rows": _median([r["rows"] for r in ok]),
                "rows_per_s": _median([r["rows_per_s"] for r in ok]),
                "peak_rss_bytes": _median([r["peak_rss_bytes"] for r in ok]),
                "server_cpu_s": _median([r["server_cpu_s"] for r in ok]),
                "db_cpu_s": _median([r.get("db_cpu_s") for r in ok]),
                "db_peak_pss_bytes": _median([r.get("db_peak_pss_bytes") for r in ok]),
                "db_idle_pss_bytes": _median([r.get("db_idle_pss_bytes") for r in ok]),
                "max_processes": max((r["max_processes"] for r in ok), default=None),
                "requests": _median([r.get("requests") for r in ok]),
                "server_requests": _median([r.get("server_requests") for r in ok]),
                "request_rate_per_s": _median([r.get("request_rate_per_s") for r in ok]),
                # per run, in round order: where the concurrency settled, its peak, the 429s
                "concurrency_modes": sorted(
                    {r["concurrency_mode"] for r in ok if r.get("concurrency_mode")}
                ),
                "concurrency_settled": [r.get("concurrency_settled") for r in ok],
                "concurrency_peak": [r.get("concurrency_peak") for r in ok],
                "concurrency_cuts": [r.get("concurrency_cuts") for r in ok],
                "rate_limited": [r.get("rate_limited") for r in ok],
                "server_rate_limited": [r.get("server_rate_limited") for r in ok],
                "paused_s": _median([r.get("paused_s") for r in ok]),
                "rows_check": sorted({str(r["rows_check"]) for r in ok if r.get("rows_check")}),
                "errors": [r["error"] for r in group if r.get("error")],
                "notes": sorted({r["note"] for r in group if r.get("note")}),
                "steps": {
                    name: {
                        "seconds": _median([r["steps"].get(name, {}).get("seconds") for r in ok]),
                        "peak_rss_bytes": _median(
                            [r["steps"].get(name, {}).get("peak_rss_bytes") for r in ok]
                        ),
                    }
                    for name in step_names
                },
            }
        )
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def pair_ratios(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per round: devportal/peer (wall, RSS) and devportal/floor (wall) of the fresh sweeps."""
    rounds: dict[tuple[int, float, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for run in runs:
        if not run["ok"] or run["contender"] not in SIDE_BY_SIDE:
            continue
        key = (run["size"], run["latency_ms"], run["round"])
        if run["scenario"] == "sweep":
            rounds[key][run["contender"]] = run
        elif run["scenario"].startswith("sweep_workers"):
            rounds[key]["variant"] = run
    out = []
    for (size, latency, round_no), by in sorted(rounds.items()):
        dp, peer, floor = by.get("devportal"), by.get("peer"), by.get("floor")
        variant = by.get("variant")
        if dp is None:
            continue
        out.append(
            {
                "size": size,
                "latency_ms": latency,
                "round": round_no,
                "wall_vs_peer": _ratio(dp["wall_s"], peer["wall_s"]) if peer else None,
                "rss_vs_peer": _ratio(dp["peak_rss_bytes"], peer["peak_rss_bytes"])
                if peer
                else None,
                "wall_vs_floor": _ratio(dp["wall_s"], floor["wall_s"]) if floor else None,
                "work_vs_floor": _ratio(dp["work_s"], floor["work_s"]) if floor else None,
                "variant": variant["scenario"] if variant else None,
                "variant_wall_vs_peer": _ratio(variant["wall_s"], peer["wall_s"])
                if variant and peer
                else None,
            }
        )
    return out


def postgres_pairs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per round: devportal's PostgreSQL sweep / the same round's DuckDB sweep (wall, RSS)."""
    rounds: dict[tuple[int, float, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for run in runs:
        if (
            run["ok"]
            and run["contender"] == "devportal"
            and run["scenario"] in ("sweep", "sweep_postgres")
        ):
            rounds[(run["size"], run["latency_ms"], run["round"])][run["scenario"]] = run
    out = []
    for (size, latency, round_no), by in sorted(rounds.items()):
        duck, pg = by.get("sweep"), by.get("sweep_postgres")
        if duck is None or pg is None:
            continue
        out.append(
            {
                "size": size,
                "latency_ms": latency,
                "round": round_no,
                "duckdb_wall_s": duck["wall_s"],
                "postgres_wall_s": pg["wall_s"],
                "wall_ratio": _ratio(pg["wall_s"], duck["wall_s"]),
                "duckdb_rss_bytes": duck["peak_rss_bytes"],
                "postgres_rss_bytes": pg["peak_rss_bytes"],
                "rss_ratio": _ratio(pg["peak_rss_bytes"], duck["peak_rss_bytes"]),
                "postgres_db_cpu_s": pg.get("db_cpu_s"),
                "postgres_db_peak_pss_bytes": pg.get("db_peak_pss_bytes"),
            }
        )
    return out


def main_size(result: dict[str, Any]) -> int:
    sizes = result["settings"]["sizes"]
    return 100_000 if 100_000 in sizes else max(sizes)


def _find(summary: list[dict[str, Any]], **key: Any) -> dict[str, Any] | None:
    for row in summary:
        if all(row[k] == v for k, v in key.items()):
            return row
    return None


def _verdict(value: float | None, limit: float, at_least: bool = False) -> tuple[str, str]:
    if value is None:
        return "n/a", "not measured in this run"
    if at_least:
        if value >= limit:
            return "PASS", f"{value / limit:.2f}x the minimum" if limit else "no minimum"
        return "MISS", f"{limit / value:.2f}x short of the minimum" if value > 0 else "none"
    if value <= limit:
        return "PASS", f"{limit / value:.2f}x headroom" if value > 0 else "no cost"
    return "MISS", f"{value / limit:.2f}x over the limit"


def _shown(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:+.2f} s" if value < 0 else f"{value:.2f} s"
    if unit == "MB":
        return f"{value:,.0f} MB"
    if unit == "users/s":
        return f"{value:,.0f} users/s"
    if unit == "x limit":
        return f"{value:.2f}x the limit"
    return f"{value:.3f}"


def _pinned_label(settings: dict[str, Any]) -> str:
    workers = settings.get("workers")
    return f"pinned `--workers {workers}`" if workers else "default settings: adaptive"


def _settled_range(runs: list[dict[str, Any]]) -> str:
    values = sorted({r["concurrency_settled"] for r in runs if r.get("concurrency_settled")})
    peaks = [r["concurrency_peak"] for r in runs if r.get("concurrency_peak")]
    if not values:
        return ""
    settled = str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"
    return f"settled at {settled}" + (f", peak {max(peaks)}" if peaks else "")


def slow_server_pairs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per round of the slow-server scenario: devportal's wall time against the floor's."""
    rounds: dict[tuple[int, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for run in runs:
        if run["scenario"] == "slow_server":
            rounds[(run["size"], run["round"])][run["contender"]] = run
    out = []
    for (size, round_no), by in sorted(rounds.items()):
        dp, floor = by.get("devportal"), by.get("floor")
        if dp is None or floor is None:
            continue
        both = dp["ok"] and floor["ok"]
        out.append(
            {
                "size": size,
                "round": round_no,
                "server_ms": dp.get("server_ms"),
                "devportal_wall_s": dp["wall_s"] if dp["ok"] else None,
                "floor_wall_s": floor["wall_s"] if floor["ok"] else None,
                "difference_s": dp["wall_s"] - floor["wall_s"] if both else None,
                "ratio": _ratio(dp["wall_s"], floor["wall_s"]) if both else None,
                "devportal_settled": dp.get("concurrency_settled"),
                "devportal_peak": dp.get("concurrency_peak"),
                "floor_settled": floor.get("concurrency_settled"),
                "floor_peak": floor.get("concurrency_peak"),
            }
        )
    return out


def _rate_runs(runs: list[dict[str, Any]], size: int) -> tuple[list[dict], list[dict]]:
    """(adaptive, pinned) runs of the rate-limited scenario at `size`."""
    adaptive = [r for r in runs if r["size"] == size and r["scenario"] == "rate_limited"]
    pinned = [
        r for r in runs if r["size"] == size and r["scenario"].startswith("rate_limited_workers")
    ]
    return adaptive, pinned


def _429s(run: dict[str, Any]) -> int | None:
    """The rate limit's 429s during a run: the sandbox's count, else the client's."""
    value = run.get("server_rate_limited")
    return value if value is not None else run.get("rate_limited")


def evaluate_targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    size = main_size(result)
    settings = result["settings"]
    pairs = [p for p in result["pairs"] if p["size"] == size]
    runs = result["runs"]
    summary = result["summary"]

    def pair_median(latency: float, field: str) -> tuple[float | None, int]:
        values = [p[field] for p in pairs if p["latency_ms"] == latency and p[field] is not None]
        return (statistics.median(values) if values else None), len(values)

    targets: list[dict[str, Any]] = []

    def add(
        label: str,
        value: float | None,
        limit: float,
        basis: str,
        *,
        unit: str = "ratio",
        at_least: bool = False,
        verdict: tuple[str, str] | None = None,
    ) -> None:
        outcome, factor = verdict or _verdict(value, limit, at_least)
        targets.append(
            {
                "target": label,
                "value": value,
                "limit": limit,
                "unit": unit,
                "at_least": at_least,
                "verdict": outcome,
                "factor": factor,
                "basis": basis,
            }
        )

    def sweep_runs(latency: float) -> list[dict[str, Any]]:
        return [
            r
            for r in runs
            if r["ok"]
            and r["size"] == size
            and r["latency_ms"] == latency
            and r["contender"] == "devportal"
            and r["scenario"] == "sweep"
        ]

    for latency, field, label, limit in (
        (0.0, "wall_vs_floor", "0 ms: devportal wall time <= 1.5x the floor's", 1.5),
        (0.0, "wall_vs_peer", "0 ms: devportal wall time <= 1/5 of the peer's", 1 / 5),
        (0.0, "rss_vs_peer", "0 ms: devportal peak RSS <= 1/8 of the peer's", 1 / 8),
        (
            50.0,
            "wall_vs_peer",
            "50 ms: devportal wall time, default settings, <= 1/10 of the peer's",
            1 / 10,
        ),
    ):
        value, n = pair_median(latency, field)
        concurrency = _settled_range(sweep_runs(latency))
        add(
            label,
            value,
            limit,
            f"median of {n} pair ratio(s), {size:,} subscriptions; devportal "
            f"{_pinned_label(settings)}" + (f", {concurrency}" if concurrency else ""),
        )

    # slow server: devportal within 1.5 s of the floor, pair by pair
    slow = [p for p in slow_server_pairs(runs) if p["size"] == size]
    diffs = [p["difference_s"] for p in slow if p["difference_s"] is not None]
    dp_median = _median([p["devportal_wall_s"] for p in slow])
    floor_median = _median([p["floor_wall_s"] for p in slow])
    server_ms = settings.get("server_ms") or 0
    add(
        f"slow server (`--server-ms {server_ms:g}`): devportal wall time <= the floor's + 1.5 s",
        statistics.median(diffs) if diffs else None,
        1.5,
        f"median of {len(diffs)} pair-by-pair difference(s) (devportal - floor, same round); "
        f"medians devportal {_f(dp_median)} s, floor {_f(floor_median)} s (difference of "
        f"medians {_f(_ratio_diff(dp_median, floor_median))} s); "
        + (
            _settled_range(
                [
                    r
                    for r in runs
                    if r["scenario"] == "slow_server"
                    and r["contender"] == "devportal"
                    and r["size"] == size
                ]
            )
            or "-"
        ),
        unit="s",
    )

    # rate-limited: finishes, at most 1.1x the limit on average, fewer 429s than pinned
    add(**_rate_target(result, size))

    # user accounts at 50 ms: at least 3x 125 users/s
    latency = float(settings.get("accounts_latency", 50.0))
    accounts = _find(
        summary, size=size, latency_ms=latency, contender="devportal", scenario="user_accounts"
    )
    account_runs = [
        r for r in runs if r["size"] == size and r["scenario"] == "user_accounts" and r["ok"]
    ]
    add(
        f"user accounts at {latency:g} ms: >= 375 users/s (3x 125)",
        accounts["rows_per_s"] if accounts else None,
        375.0,
        f"users read / process wall time of `devportal sync --resources user_accounts`, "
        f"{_pinned_label(settings)}, median of {accounts['ok'] if accounts else 0} run(s), "
        f"{_int(accounts['rows'] if accounts else None)} users in "
        f"{_f(accounts['wall_s'] if accounts else None)} s"
        + (f"; {_settled_range(account_runs)}" if _settled_range(account_runs) else ""),
        unit="users/s",
        at_least=True,
    )

    # peak RSS of a plain `devportal sync` (the models built after the load)
    models = _find(
        summary, size=size, latency_ms=0.0, contender="devportal", scenario="sync_models"
    )
    add(
        "0 ms: peak RSS of `devportal sync` with the models (fresh warehouse) <= 256 MB",
        models["peak_rss_bytes"] / MB if models and models["peak_rss_bytes"] else None,
        256.0,
        f"median of {models['ok'] if models else 0} run(s) of `devportal sync` (every resource, "
        f"no `--no-models`), {size:,} subscriptions, {_pinned_label(settings)}; MB = MiB",
        unit="MB",
    )

    big = settings.get("big_size")
    base = _find(summary, size=size, latency_ms=0.0, contender="devportal", scenario="sweep")
    top = (
        _find(summary, size=big, latency_ms=0.0, contender="devportal", scenario="sweep")
        if big
        else None
    )
    value = (
        top["peak_rss_bytes"] / base["peak_rss_bytes"]
        if top and base and top["peak_rss_bytes"] and base["peak_rss_bytes"]
        else None
    )
    add(
        f"{big or 1_000_000:,} subscriptions: devportal peak RSS <= 1.3x its {size:,} figure",
        value,
        1.3,
        "one big run against the median at the main size, both at 0 ms",
    )
    return targets


def _ratio_diff(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


def _rate_target(result: dict[str, Any], size: int) -> dict[str, Any]:
    """The rate-limited target, as `add`'s arguments: devportal (adaptive) finishes, sends on
    average at most 1.1x the limit (requests the sandbox saw / the sync's own seconds), and
    meets fewer 429s than the same sync pinned (both medians over the rounds)."""
    settings = result["settings"]
    limit = settings.get("rate_limit") or 0
    burst = settings.get("rate_burst")
    adaptive, pinned = _rate_runs(result["runs"], size)
    pinned_n = settings.get("pinned_workers") or settings.get("variant_workers")
    label = (
        f"rate limit {limit:g} req/s (burst {burst:g}): devportal finishes, averages <= 1.1x "
        f"the limit, fewer 429s than `--workers {pinned_n}`"
        if limit and burst
        else "rate-limited sandbox: devportal finishes, <= 1.1x the limit, fewer 429s than pinned"
    )
    if not adaptive:
        return {
            "label": label,
            "value": None,
            "limit": 1.1,
            "basis": "not measured in this run",
            "unit": "x limit",
        }
    ok = [r for r in adaptive if r["ok"]]
    rate = _median([r.get("request_rate_per_s") for r in ok])
    ratio = rate / limit if rate is not None and limit else None
    mine = _median([_429s(r) for r in ok])
    theirs = _median([_429s(r) for r in pinned if r["ok"]])
    finished = len(ok) == len(adaptive)
    rate_ok = ratio is not None and ratio <= 1.1
    if theirs is None:
        fewer_ok, fewer = True, f"{_int(mine)} 429s (no pinned run to compare)"
    else:
        fewer_ok = mine is not None and (mine < theirs or mine == 0)
        fewer = f"{_int(mine)} vs {_int(theirs)} 429s pinned"
    parts = [
        f"finished {len(ok)}/{len(adaptive)}",
        f"{_f(ratio)}x the limit" if ratio is not None else "no rate",
        fewer,
    ]
    verdict = "PASS" if finished and rate_ok and fewer_ok else "MISS"
    misses = [
        why
        for bad, why in (
            (not finished, "did not finish"),
            (not rate_ok, "over 1.1x the limit"),
            (not fewer_ok, "not fewer 429s than pinned"),
        )
        if bad
    ]
    return {
        "label": label,
        "value": ratio,
        "limit": 1.1,
        "basis": f"median of {len(ok)} adaptive run(s) (and {len(pinned)} pinned) at "
        f"{size:,} subscriptions: requests the sandbox counted / the sync's own seconds "
        "(`sync ok in ...s`, imports excluded); 429s counted by the sandbox; "
        + (_settled_range(ok) or "-"),
        "unit": "x limit",
        "verdict": (verdict, "; ".join(parts) + (f" ({', '.join(misses)})" if misses else "")),
    }


# -- Markdown -------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / MB:,.0f}"


def _int(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _machine(result: dict[str, Any]) -> list[str]:
    m = result["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v)
    load0 = ", ".join(f"{x:.2f}" for x in m.get("load_avg_at_start", []))
    load1 = ", ".join(f"{x:.2f}" for x in m.get("load_avg_at_end", []))
    dirty = " (pipelines/ has uncommitted changes)" if m.get("pipelines_dirty") else ""
    return [
        f"- Date: {result['started_at']} UTC; total bench wall time "
        f"{result['total_wall_s']:,.0f} s; command `{result['command'].strip()}`",
        f"- Machine: {m['cpu']}, {m['logical_cores']} logical cores "
        f"({m['cores_usable']} usable), {m['ram_bytes'] / 1024**3:.1f} GiB RAM, {m['os']}",
        f"- Python {m['python']}; {versions}; git {m.get('git_commit')}{dirty}",
        f"- Load average (1/5/15 min) at start {load0}, at end {load1} "
        "(the machine is shared: other work shows up here)",
    ]


def render_markdown(result: dict[str, Any]) -> str:
    settings = result["settings"]
    summary = result["summary"]
    size = main_size(result)
    lines = [
        "# devportal benchmark",
        "",
        "devportal `sync` vs dlt's declarative `rest_api` source (the peer a dlt user would write) "
        "vs the floor (devportal's HTTP client fetching and parsing every page, loading nothing), "
        "against the sandbox in its own process. Reproduce with `make bench` "
        "(`python -m benchmarks.run`).",
        "",
        *_machine(result),
        "",
        "## Targets",
        "",
    ]
    lines += _table(
        ["target", "measured", "limit", "verdict", "basis"],
        [
            [
                t["target"],
                _shown(t["value"], t.get("unit", "ratio")),
                ("at least " if t.get("at_least") else "")
                + _shown(t["limit"], t.get("unit", "ratio")),
                f"**{t['verdict']}** ({t['factor']})",
                t["basis"],
            ]
            for t in result["targets"]
        ],
    )

    lines += [
        "",
        f"## Side by side ({settings['rounds']} interleaved round(s): devportal, "
        + ("devportal into PostgreSQL (0 ms), " if result.get("postgres", {}).get("server") else "")
        + "peer, floor, "
        + (
            f"devportal pinned `--workers {_pinned(settings)}` (> 0 ms), "
            if _pinned(settings)
            else ""
        )
        + "devportal second sweep, devportal window"
        + ("; at 0 ms also sync with models, slow server, rate-limited" if _new(settings) else "")
        + "; medians)",
        "",
        "Wall time is spawn to exit of the process (interpreter start and imports included); "
        "in-process is the contender's own timing after its imports. Rows are the live "
        "subscriptions read; every load was checked against the API's count. devportal and "
        f"the floor: {_pinned_label(settings)}.",
        "",
    ]
    order = {"devportal": 0, "peer": 1, "floor": 2}
    rows = []
    for row in sorted(
        (r for r in summary if r["scenario"] == "sweep" and r["size"] in settings["sizes"]),
        key=lambda r: (r["size"], r["latency_ms"], order.get(r["contender"], 9)),
    ):
        rows.append(
            [
                f"{row['size']:,}",
                f"{row['latency_ms']:g} ms",
                row["contender"],
                f"{_f(row['wall_s'])} ({_f(row['wall_min_s'])}-{_f(row['wall_max_s'])})",
                _f(row["work_s"]),
                _int(row["rows"]),
                _int(row["rows_per_s"]),
                _mb(row["peak_rss_bytes"]),
                _f(row["server_cpu_s"], 2),
                _check(row),
            ]
        )
    lines += _table(
        [
            "subscriptions",
            "latency",
            "contender",
            "wall s (min-max)",
            "in-process s",
            "rows",
            "rows/s",
            "peak RSS MB",
            "sandbox CPU s",
            "ok",
        ],
        rows,
    )

    lines += ["", "### Pair by pair (devportal / contender, same round)", ""]
    lines += _table(
        [
            "subscriptions",
            "latency",
            "round",
            "wall vs peer",
            "RSS vs peer",
            "wall vs floor",
            "in-process vs floor",
            "pinned variant wall vs peer",
        ],
        [
            [
                f"{p['size']:,}",
                f"{p['latency_ms']:g} ms",
                str(p["round"]),
                _f(p["wall_vs_peer"], 3),
                _f(p["rss_vs_peer"], 3),
                _f(p["wall_vs_floor"], 2),
                _f(p["work_vs_floor"], 2),
                (
                    f"{_f(p['variant_wall_vs_peer'], 3)} (`--workers "
                    f"{p['variant'].removeprefix('sweep_workers')}`)"
                    if p.get("variant")
                    else "-"
                ),
            ]
            for p in result["pairs"]
        ],
    )

    lines += [
        "",
        "## Where the time and memory go (dlt trace steps, medians)",
        "",
        "`outside dlt` is the process wall time minus dlt's `run` step: interpreter start, "
        "imports, configuration, opening the pipeline, and devportal's own pre/post queries. "
        "Peak RSS per step comes from the sampled timeline of the process.",
        "",
    ]
    step_rows = []
    for row in sorted(
        (r for r in summary if r["steps"]),
        key=lambda r: (r["size"], r["latency_ms"], order.get(r["contender"], 9), r["scenario"]),
    ):
        st = row["steps"]
        run_s = st.get("run", {}).get("seconds")
        outside = row["wall_s"] - run_s if row["wall_s"] is not None and run_s else None
        step_rows.append(
            [
                f"{row['size']:,}",
                f"{row['latency_ms']:g} ms",
                row["contender"],
                row["scenario"],
                _f(row["wall_s"]),
                _f(outside),
                *[_f(st.get(s, {}).get("seconds")) for s in ("extract", "normalize", "load")],
                " / ".join(
                    _mb(st.get(s, {}).get("peak_rss_bytes"))
                    for s in ("extract", "normalize", "load")
                ),
            ]
        )
    lines += _table(
        [
            "subscriptions",
            "latency",
            "contender",
            "scenario",
            "wall s",
            "outside dlt s",
            "extract s",
            "normalize s",
            "load s",
            "peak RSS MB extract / normalize / load",
        ],
        step_rows,
    )

    lines += ["", "## devportal beyond the first sweep", ""]
    labels = {
        "second_sweep": "second sweep, no server change (same warehouse)",
        "window": f"window (`--since {settings['window_since']}`, same warehouse)",
        "accounts_setup": "setup: subscriptions + user_settings (fresh warehouse)",
        "user_accounts": "user_accounts (`--resources user_accounts`, all users due)",
        "models_setup": "setup: user_settings + user_accounts",
        "models": "`devportal models` on that warehouse",
        "sweep": "sweep (fresh warehouse)",
        "sync_models": "`devportal sync`: every resource, then the models (fresh warehouse)",
    }
    other = [
        r
        for r in summary
        if (r["scenario"] != "sweep" or r["size"] not in settings["sizes"] or r["size"] != size)
        and r["scenario"] not in POSTGRES_SCENARIOS
        and not r["scenario"].startswith(THROTTLED_SCENARIOS)
    ]
    other_rows = []
    for row in sorted(other, key=lambda r: (r["size"], r["latency_ms"], r["contender"])):
        note = "; ".join(row["notes"] + [e for e in row["errors"][:1]])
        other_rows.append(
            [
                f"{row['size']:,}",
                f"{row['latency_ms']:g} ms",
                row["contender"],
                _label(labels, row["scenario"]),
                str(row["ok"]) + "/" + str(row["runs"]),
                _f(row["wall_s"]),
                _f(row["work_s"]),
                _int(row["rows"]),
                _int(row["rows_per_s"]),
                _mb(row["peak_rss_bytes"]),
                _check(row) + (f" {note}" if note else ""),
            ]
        )
    lines += _table(
        [
            "subscriptions",
            "latency",
            "contender",
            "run",
            "ok/runs",
            "wall s",
            "in-process s",
            "rows",
            "rows/s",
            "peak RSS MB",
            "check / note",
        ],
        other_rows,
    )

    lines += _concurrency_section(result)
    lines += _slow_server_section(result)
    lines += _rate_limited_section(result)
    lines += _postgres_section(result)

    lines += [
        "",
        "## Method",
        "",
        "- One `devportal sandbox` process per world size (seed 7, clock "
        f"{result['sandboxes'][0]['clock'] if result['sandboxes'] else '-'}, "
        f"{settings['users']:,} users); latency is switched through its control endpoint, the "
        "world never changes between runs. Sandbox CPU seconds per run are shown because on a "
        "2-core machine the server competes with the contender.",
        "- Every contender is its own process with a fresh DuckDB file and a fresh dlt working "
        "folder, started from an empty directory with dlt settings scrubbed from the "
        "environment (telemetry off); the token travels in the environment, never in argv.",
        "- Peak RSS = max(`os.wait4` ru_maxrss of the contender, exact, taken by a bare "
        "launcher process (`benchmarks/launch.py`) so the harness's own memory cannot leak into "
        "it, and which folds in descendants the contender reaped; psutil sum over the live "
        "process tree, sampled every 0.5 s). `max processes` seen: "
        + ", ".join(
            f"{r['contender']} {r['max_processes']}"
            for r in summary
            if r["scenario"] == "sweep" and r["size"] == size and r["latency_ms"] == 0.0
        )
        + " (1 = no worker processes).",
        (
            f"- devportal and the floor are pinned at `--workers {settings['workers']}`"
            if settings.get("workers")
            else "- devportal and the floor run with their defaults: adaptive concurrency "
            "(slow start, AIMD, cuts on 429/503/timeouts/rising latency, 1..64 requests in "
            "flight; `pipelines/devportal/concurrency.py`)"
        )
        + "; the peer is dlt's `rest_api` with its defaults (sequential `json_link` paging, "
        "default loader file format, merge on `id`), as a dlt user would configure it "
        "(`benchmarks/peer_rest_api.py`)."
        + (
            f" At latencies above 0 devportal pinned at `--workers {_pinned(settings)}` (the old "
            "fixed default) also runs each round (labelled variant: not a contender, "
            "informational)."
            if _pinned(settings)
            else ""
        ),
        "- Targets use the median of the pair-by-pair ratios of one round's runs, which ran "
        "seconds apart under the same machine load.",
    ]
    if _new(settings):
        lines.append(
            "- In each 0 ms round: `sync_models`, a plain `devportal sync` (every resource, the "
            "models built after the load) on a fresh warehouse, for the peak-RSS target; "
            f"`slow_server`, devportal then the floor with the sandbox's `--server-ms "
            f"{settings.get('server_ms', 0):g}` (every API request holds one global lock that "
            "long: a single-worker backend); and in the first "
            f"{settings.get('rate_rounds', 0)} round(s) `rate_limited`, devportal then "
            f"`--workers {_pinned(settings)}`, against a per-token limit of "
            f"{settings.get('rate_limit', 0):g} requests/s (burst "
            f"{settings.get('rate_burst', 0):g}) set afresh before each run, so each starts with "
            "a full bucket. Server cost and limit are cleared after each scenario. Requests and "
            "429s per run are the sandbox's own counters (after minus before); settled, peak and "
            "cuts come from the run's `sync_runs` row."
        )
        leaks = [
            f"{r['scenario']} r{r['round']}"
            for r in result["runs"]
            if not r["scenario"].startswith(THROTTLED_SCENARIOS)
            and (r.get("server_ms") or r.get("rate_limit_per_s"))
        ]
        lines.append(
            "- Throttle check: "
            + (
                "**runs outside their scenario saw a server cost or rate limit: "
                + ", ".join(leaks)
                + "**"
                if leaks
                else "every other run saw no server cost and no rate limit."
            )
        )
    pg = result.get("postgres") or {}
    if pg.get("server"):
        lines.append(
            f"- PostgreSQL: one throwaway server for the whole bench ({pg['server']}), started "
            "by the bench (`benchmarks/postgres.py`, as `devportal demo --destination postgres` "
            f"does) in {pg.get('startup_s', 0):.1f} s and removed at the end; every Postgres run "
            "gets a fresh database, dropped after its round. The devportal process reaches it "
            "through `DESTINATION__POSTGRES__CREDENTIALS` in its environment; its "
            "`--warehouse` path only places dlt's working folder and the lock file."
        )
    if result.get("interrupted"):
        lines += ["", "**This run was interrupted; the figures are partial.**"]
    return "\n".join(lines) + "\n"


def _pinned(settings: dict[str, Any]) -> int:
    """The pinned comparison's workers (`variant_workers` in results before issue 12)."""
    return int(settings.get("pinned_workers", settings.get("variant_workers")) or 0)


def _new(settings: dict[str, Any]) -> bool:
    """Whether the run had issue 12's 0 ms scenarios (slow server, rate limit, models RSS)."""
    return "server_ms" in settings


def _values(values: list[Any]) -> str:
    shown = ["-" if v is None else f"{v:g}" for v in values]
    return ", ".join(shown) if any(v is not None for v in values) else "-"


def _concurrency_section(result: dict[str, Any]) -> list[str]:
    """Requests in flight per devportal (and floor) run group: mode, settled, peak, 429s."""
    rows = [
        r
        for r in result["summary"]
        if r.get("concurrency_modes") or any(v for v in r.get("server_rate_limited", []))
    ]
    if not rows:
        return []
    lines = [
        "",
        "## Concurrency (requests in flight, per run in round order)",
        "",
        "`settled` is the median limit the run's requests were sent under, `peak` its highest, "
        "`cuts` its decreases (429/503/timeouts/rising latency); requests and 429s are the "
        "client's count / the sandbox's count.",
        "",
    ]
    order = {"devportal": 0, "peer": 1, "floor": 2}
    table = []
    for row in sorted(
        rows,
        key=lambda r: (r["size"], r["latency_ms"], r["scenario"], order.get(r["contender"], 9)),
    ):
        table.append(
            [
                f"{row['size']:,}",
                f"{row['latency_ms']:g} ms",
                row["contender"],
                _scenario_label(row["scenario"]),
                ", ".join(row["concurrency_modes"]) or "-",
                _values(row["concurrency_settled"]),
                _values(row["concurrency_peak"]),
                _values(row["concurrency_cuts"]),
                f"{_int(row.get('requests'))} / {_int(row.get('server_requests'))}",
                f"{_values(row['rate_limited'])} / {_values(row['server_rate_limited'])}",
                _f(row.get("paused_s"), 1),
                _f(row["wall_s"]),
            ]
        )
    return lines + _table(
        [
            "subscriptions",
            "latency",
            "contender",
            "run",
            "mode",
            "settled",
            "peak",
            "cuts",
            "requests (median)",
            "429s",
            "paused s (median)",
            "wall s (median)",
        ],
        table,
    )


def _slow_server_section(result: dict[str, Any]) -> list[str]:
    pairs = slow_server_pairs(result["runs"])
    if not pairs:
        return []
    ms = result["settings"].get("server_ms", 0)
    lines = [
        "",
        f"## Slow server (sandbox `--server-ms {ms:g}`: a single-worker backend, 0 ms latency)",
        "",
        "Every API request holds one global lock for that long, so the server serves one "
        "request at a time and more requests in flight only queue; the floor is what the "
        "server's pace allows. Difference and ratio are pair by pair (same round).",
        "",
    ]
    table = [
        [
            f"{p['size']:,}",
            str(p["round"]),
            _f(p["devportal_wall_s"]),
            _f(p["floor_wall_s"]),
            _f(p["difference_s"]),
            _f(p["ratio"]),
            f"{p['devportal_settled'] or '-'} / {p['devportal_peak'] or '-'}",
            f"{p['floor_settled'] or '-'} / {p['floor_peak'] or '-'}",
        ]
        for p in pairs
    ]
    for size in sorted({p["size"] for p in pairs}):
        mine = [p for p in pairs if p["size"] == size]
        table.append(
            [
                f"{size:,}",
                f"**median of {len(mine)}**",
                _f(_median([p["devportal_wall_s"] for p in mine])),
                _f(_median([p["floor_wall_s"] for p in mine])),
                f"**{_f(_median([p['difference_s'] for p in mine]))}**",
                _f(_median([p["ratio"] for p in mine])),
                "",
                "",
            ]
        )
    return lines + _table(
        [
            "subscriptions",
            "round",
            "devportal wall s",
            "floor wall s",
            "difference s",
            "ratio",
            "devportal settled / peak",
            "floor settled / peak",
        ],
        table,
    )


def _rate_limited_section(result: dict[str, Any]) -> list[str]:
    settings = result["settings"]
    sizes = sorted({r["size"] for r in result["runs"] if r["scenario"] == "rate_limited"})
    if not sizes:
        return []
    limit = settings.get("rate_limit") or 0
    lines = [
        "",
        f"## Rate-limited sandbox ({limit:g} requests/s per token, burst "
        f"{settings.get('rate_burst', 0):g}; 0 ms latency)",
        "",
        "The sandbox answers 429 with `Retry-After` (whole seconds, at least 1) and "
        "`X-RateLimit-Limit`/`-Remaining` headers once the token's bucket is empty; the limit "
        "is set afresh before each run (a full bucket). Requests and 429s are the sandbox's "
        "counts; the rate is requests / the sync's own seconds (`sync ok in ...s`), and / the "
        "process wall time.",
        "",
    ]
    table = []
    for size in sizes:
        adaptive, pinned = _rate_runs(result["runs"], size)
        for run in sorted(adaptive + pinned, key=lambda r: (r["round"], r["scenario"])):
            rate = run.get("request_rate_per_s")
            who = (
                "devportal (adaptive)"
                if run["scenario"] == "rate_limited"
                else f"`--workers {run['scenario'].removeprefix('rate_limited_workers')}`"
            )
            table.append(
                [
                    f"{size:,}",
                    str(run["round"]),
                    who,
                    "ok" if run["ok"] else f"FAILED: {run.get('error') or ''}"[:120],
                    _f(run["wall_s"]),
                    _f(run.get("work_s"), 1),
                    _int(run.get("server_requests")),
                    _f(rate, 1),
                    _f(rate / limit if rate is not None and limit else None),
                    _f(run.get("request_rate_wall_per_s"), 1),
                    f"{_int(run.get('server_rate_limited'))} / {_int(run.get('rate_limited'))}",
                    _f(run.get("paused_s"), 1),
                    f"{run.get('concurrency_settled') or '-'} / {run.get('concurrency_peak') or '-'}",
                    _int(run.get("concurrency_cuts")),
                ]
            )
    return lines + _table(
        [
            "subscriptions",
            "round",
            "devportal",
            "ok",
            "wall s",
            "sync s",
            "requests",
            "req/s (sync s)",
            "x limit",
            "req/s (wall)",
            "429s sandbox / client",
            "paused s",
            "settled / peak",
            "cuts",
        ],
        table,
    )


def _scenario_label(scenario: str) -> str:
    if scenario.startswith("sweep_workers"):
        return f"sweep, `--workers {scenario.removeprefix('sweep_workers')}`"
    if scenario.startswith("rate_limited_workers"):
        return f"rate-limited, `--workers {scenario.removeprefix('rate_limited_workers')}`"
    return {
        "rate_limited": "rate-limited (adaptive)",
        "slow_server": "slow server",
        "sync_models": "sync + models",
    }.get(scenario, scenario)


def _postgres_section(result: dict[str, Any]) -> list[str]:
    """devportal into PostgreSQL next to DuckDB: same world, same rounds, ratios."""
    pg = result.get("postgres")
    if pg is None:  # a result from before issue 11
        return []
    lines = ["", "## PostgreSQL next to DuckDB (informational, no target)", ""]
    summary = result["summary"]
    sizes = sorted({r["size"] for r in summary if r["scenario"] in POSTGRES_SCENARIOS})
    if not sizes:
        reason = pg.get("skipped") or "no PostgreSQL run in this bench"
        return [*lines, f"Not measured: {reason}."]
    lines += [
        "`devportal sync --destination postgres --no-models` of the same world at 0 ms, in "
        "each round right after the DuckDB sweep, into a fresh database of a throwaway local "
        f"{pg.get('server', 'PostgreSQL')}; then `devportal models --destination postgres` on "
        "a database holding the same three resources as the DuckDB models warehouse. Peak RSS "
        "is the devportal process alone: DuckDB runs inside it, the PostgreSQL server does not, "
        "so the server's CPU seconds and the peak summed PSS of its process tree (shared "
        "buffers counted once; idle figure before the run in brackets) are shown beside it. "
        "Rows were checked against the API's count in the database.",
        "",
    ]
    scenarios = (
        ("sweep", "sweep (fresh warehouse / database)", "duckdb"),
        ("sweep_postgres", "sweep (fresh warehouse / database)", "postgres"),
        ("models", "`devportal models`", "duckdb"),
        (
            "models_setup_postgres",
            "setup: subscriptions + user_settings + user_accounts",
            "postgres",
        ),
        ("models_postgres", "`devportal models --destination postgres`", "postgres"),
    )
    rows = []
    for size in sizes:
        for scenario, label, destination in scenarios:
            row = _find(
                summary, size=size, latency_ms=0.0, contender="devportal", scenario=scenario
            )
            if row is None:
                continue
            note = "; ".join(row["notes"] + [e for e in row["errors"][:1]])
            pss = (
                f"{_mb(row.get('db_peak_pss_bytes'))} ({_mb(row.get('db_idle_pss_bytes'))})"
                if row.get("db_peak_pss_bytes") is not None
                else "-"
            )
            rows.append(
                [
                    f"{size:,}",
                    label,
                    destination,
                    f"{row['ok']}/{row['runs']}",
                    f"{_f(row['wall_s'])} ({_f(row['wall_min_s'])}-{_f(row['wall_max_s'])})"
                    if row["wall_s"] is not None
                    else "-",
                    _f(row["work_s"]),
                    _int(row["rows"]),
                    _mb(row["peak_rss_bytes"]),
                    _f(row.get("db_cpu_s")),
                    pss,
                    _check(row) + (f" {note}" if note else ""),
                ]
            )
    lines += _table(
        [
            "subscriptions",
            "run",
            "destination",
            "ok/runs",
            "wall s (min-max)",
            "in-process s",
            "rows",
            "devportal peak RSS MB",
            "server CPU s",
            "server peak PSS MB (idle)",
            "check / note",
        ],
        rows,
    )

    pairs = result.get("postgres_pairs") or []
    if pairs:
        lines += ["", "### PostgreSQL / DuckDB, same round (0 ms)", ""]
        table = [
            [
                f"{p['size']:,}",
                str(p["round"]),
                f"{_f(p['postgres_wall_s'])} / {_f(p['duckdb_wall_s'])}",
                _f(p["wall_ratio"], 2),
                f"{_mb(p['postgres_rss_bytes'])} / {_mb(p['duckdb_rss_bytes'])}",
                _f(p["rss_ratio"], 2),
            ]
            for p in pairs
        ]
        for size in sorted({p["size"] for p in pairs}):
            mine = [p for p in pairs if p["size"] == size]
            table.append(
                [
                    f"{size:,}",
                    f"**median of {len(mine)}**",
                    "",
                    f"**{_f(_median([p['wall_ratio'] for p in mine]), 2)}**",
                    "",
                    f"**{_f(_median([p['rss_ratio'] for p in mine]), 2)}**",
                ]
            )
        lines += _table(
            [
                "subscriptions",
                "round",
                "wall s postgres / duckdb",
                "wall ratio",
                "devportal peak RSS MB postgres / duckdb",
                "RSS ratio",
            ],
            table,
        )
    for size in sizes:
        duck = _find(summary, size=size, latency_ms=0.0, contender="devportal", scenario="models")
        pgm = _find(
            summary, size=size, latency_ms=0.0, contender="devportal", scenario="models_postgres"
        )
        if duck and pgm and duck["wall_s"] and pgm["wall_s"]:
            lines += [
                "",
                f"Models at {size:,}: PostgreSQL {_f(pgm['wall_s'])} s / "
                f"{_mb(pgm['peak_rss_bytes'])} MB vs DuckDB {_f(duck['wall_s'])} s / "
                f"{_mb(duck['peak_rss_bytes'])} MB: wall ratio "
                f"{_f(_ratio(pgm['wall_s'], duck['wall_s']), 2)}, RSS ratio "
                f"{_f(_ratio(pgm['peak_rss_bytes'], duck['peak_rss_bytes']), 2)}.",
            ]
    return lines


def _label(labels: dict[str, str], scenario: str) -> str:
    if scenario.startswith("sweep_workers"):
        return (
            f"sweep pinned at `--workers {scenario.removeprefix('sweep_workers')}` "
            "(variant, informational)"
        )
    return labels.get(scenario, scenario)


def _check(row: dict[str, Any]) -> str:
    checks = row["rows_check"]
    if row["ok"] < row["runs"]:
        return f"{row['runs'] - row['ok']} failed"
    if not checks:
        return ""
    return "ok" if checks == ["ok"] else "; ".join(checks)
