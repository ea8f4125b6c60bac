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


def _verdict(value: float | None, limit: float) -> tuple[str, str]:
    if value is None:
        return "n/a", "not measured in this run"
    if value <= limit:
        return "PASS", f"{limit / value:.2f}x headroom" if value > 0 else "no cost"
    return "MISS", f"{value / limit:.2f}x over the limit"


def evaluate_targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    size = main_size(result)
    pairs = [p for p in result["pairs"] if p["size"] == size]

    def pair_median(latency: float, field: str) -> tuple[float | None, int]:
        values = [p[field] for p in pairs if p["latency_ms"] == latency and p[field] is not None]
        return (statistics.median(values) if values else None), len(values)

    targets: list[dict[str, Any]] = []

    def add(label: str, value: float | None, limit: float, basis: str) -> None:
        verdict, factor = _verdict(value, limit)
        targets.append(
            {
                "target": label,
                "value": value,
                "limit": limit,
                "verdict": verdict,
                "factor": factor,
                "basis": basis,
            }
        )

    for latency, field, label, limit in (
        (0.0, "wall_vs_peer", "0 ms: devportal wall time <= 1/5 of the peer's", 1 / 5),
        (0.0, "rss_vs_peer", "0 ms: devportal peak RSS <= 1/8 of the peer's", 1 / 8),
        (0.0, "wall_vs_floor", "0 ms: devportal wall time <= 1.5x the floor's", 1.5),
        (50.0, "wall_vs_peer", "50 ms: devportal wall time <= 1/10 of the peer's", 1 / 10),
    ):
        value, n = pair_median(latency, field)
        add(label, value, limit, f"median of {n} pair ratio(s), {size:,} subscriptions")

    big = result["settings"].get("big_size")
    summary = result["summary"]
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
                _f(t["value"], 3),
                _f(t["limit"], 3),
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
        + "peer, floor, devportal second sweep, devportal window; medians)",
        "",
        "Wall time is spawn to exit of the process (interpreter start and imports included); "
        "in-process is the contender's own timing after its imports. Rows are the live "
        "subscriptions read; every load was checked against the API's count.",
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
            "variant wall vs peer",
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
                    f"{_f(p['variant_wall_vs_peer'], 3)} ({p['variant']})"
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
    }
    other = [
        r
        for r in summary
        if (r["scenario"] != "sweep" or r["size"] not in settings["sizes"] or r["size"] != size)
        and r["scenario"] not in POSTGRES_SCENARIOS
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
        f"- devportal and the floor use {settings['workers']} concurrent requests; the peer is "
        "dlt's `rest_api` with its defaults (sequential `json_link` paging, default loader "
        "file format, merge on `id`), as a dlt user would configure it "
        "(`benchmarks/peer_rest_api.py`). At latencies above 0 a devportal variant with "
        f"`--workers {settings.get('variant_workers', 16)}` also runs each round (labelled variant: "
        "not a contender, it shows what more concurrent requests buy).",
        "- Targets use the median of the pair-by-pair ratios of one round's runs, which ran "
        "seconds apart under the same machine load.",
    ]
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
        return f"sweep with `--workers {scenario.removeprefix('sweep_workers')}` (variant)"
    return labels.get(scenario, scenario)


def _check(row: dict[str, Any]) -> str:
    checks = row["rows_check"]
    if row["ok"] < row["runs"]:
        return f"{row['runs'] - row['ok']} failed"
    if not checks:
        return ""
    return "ok" if checks == ["ok"] else "; ".join(checks)
