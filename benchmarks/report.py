"""The Markdown of a bench result: each table a list of (header, cell) columns over records."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from benchmarks.records import (
    Group,
    Result,
    Run,
    fmt,
    fmt_int,
    fmt_mb,
    median,
    ratio,
    slow_difference,
    slow_server_pairs,
)

PROSE = Path(__file__).with_name("report_text.md")
POSTGRES_SCENARIOS = ("sweep_postgres", "models_setup_postgres", "models_postgres")
THROTTLED_SCENARIOS = ("slow_server", "rate_limited")  # prefixes; they have their own sections
SIDE_BY_SIDE_SCENARIOS = ("sweep", "sweep_speedups_off")
ORDER = {"devportal": 0, "peer": 1, "floor": 2}
STEPS = ("extract", "normalize", "load")
Columns = list[tuple[str, Callable[[Any], str]]]
TEXT = dict(
    re.findall(r"^@@ (\w+)\n(.*?)\n*(?=^@@ |\Z)", PROSE.read_text(), re.MULTILINE | re.DOTALL)
)


def text(name: str, **values: Any) -> str:
    """The prose block `name` of `report_text.md`, filled and its wrapped lines joined."""
    return re.sub(r"(?<=[^\n])\n(?=[^\n#-])", " ", TEXT[name].format(**values))


def table(columns: Columns, items: Iterable[Any], extra: Iterable[list[str]] = ()) -> list[str]:
    header = [name for name, _ in columns]
    rows = [[cell(item) for _, cell in columns] for item in items] + list(extra)
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def section(heading: str, *parts: str | list[str]) -> list[str]:
    """`heading` and each part (a paragraph, or lines such as a table) after a blank line."""
    out = ["", heading]
    for part in parts:
        out += ["", part] if isinstance(part, str) else ["", *part]
    return out


def _order(g: Group) -> int:
    return 3 if g.scenario == "sweep_speedups_off" else ORDER.get(g.contender, 9)


def _values(values: list[Any]) -> str:
    shown = ["-" if v is None else f"{v:g}" for v in values]
    return ", ".join(shown) if any(v is not None for v in values) else "-"


def _check(g: Group) -> str:
    if g.ok < g.runs:
        return f"{g.runs - g.ok} failed"
    if not g.rows_check:
        return ""
    return "ok" if g.rows_check == ["ok"] else "; ".join(g.rows_check)


def _checked(g: Group) -> str:
    note = "; ".join(g.notes + g.errors[:1])
    return _check(g) + (f" {note}" if note else "")


def _shown(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return {
        "s": f"{value:+.2f} s" if value < 0 else f"{value:.2f} s",
        "MB": f"{value:,.0f} MB",
        "users/s": f"{value:,.0f} users/s",
        "x limit": f"{value:.2f}x the limit",
    }.get(unit, f"{value:.3f}")


def _step(g: Group, step: str, key: str) -> float | None:
    return g.steps.get(step, {}).get(key)


def _outside(g: Group) -> float | None:
    run_s = _step(g, "run", "seconds")
    return g.wall_s - run_s if g.wall_s is not None and run_s else None


def _workers(scenario: str, prefix: str) -> str:
    return f"`--workers {scenario.removeprefix(prefix)}`"


LABELS = {"rate_limited": "rate-limited (adaptive)", "slow_server": "slow server"}
LABELS |= {"sync_models": "sync + models", "sweep_speedups_off": "sweep, speed-ups off"}
LABELS |= {"sync_models_speedups_off": "sync + models, speed-ups off"}


def _scenario_label(scenario: str) -> str:
    for prefix, label in (("sweep_workers", "sweep"), ("rate_limited_workers", "rate-limited")):
        if scenario.startswith(prefix):
            return f"{label}, {_workers(scenario, prefix)}"
    return LABELS.get(scenario, scenario)


def _slash(a: Any, b: Any) -> str:
    return f"{a or '-'} / {b or '-'}"


def _wall_range(g: Group) -> str:
    return f"{fmt(g.wall_s)} ({fmt(g.wall_min_s)}-{fmt(g.wall_max_s)})"


SIZE: Columns = [("subscriptions", lambda r: f"{r.size:,}")]
SIZE_LATENCY: Columns = [*SIZE, ("latency", lambda r: f"{r.latency_ms:g} ms")]
ROWS: Columns = [
    ("in-process s", lambda g: fmt(g.work_s)),
    ("rows", lambda g: fmt_int(g.rows)),
    ("rows/s", lambda g: fmt_int(g.rows_per_s)),
    ("peak RSS MB", lambda g: fmt_mb(g.peak_rss_bytes)),
]
SIDE_BY_SIDE: Columns = [
    *SIZE_LATENCY,
    (
        "contender",
        lambda g: g.contender + (", speed-ups off" if g.scenario == "sweep_speedups_off" else ""),
    ),
    ("wall s (min-max)", _wall_range),
    *ROWS,
    ("sandbox CPU s", lambda g: fmt(g.server_cpu_s)),
    ("ok", _check),
]
PAIRS: Columns = [
    *SIZE_LATENCY,
    ("round", lambda p: str(p.round)),
    ("wall vs peer", lambda p: fmt(p.wall_vs_peer, 3)),
    ("RSS vs peer", lambda p: fmt(p.rss_vs_peer, 3)),
    ("wall vs floor", lambda p: fmt(p.wall_vs_floor)),
    ("in-process vs floor", lambda p: fmt(p.work_vs_floor)),
    (
        "pinned variant wall vs peer",
        lambda p: (
            f"{fmt(p.variant_wall_vs_peer, 3)} ({_workers(p.variant, 'sweep_workers')})"
            if p.variant
            else "-"
        ),
    ),
]
SPEEDUPS_OFF: Columns = [
    (
        "speed-ups off vs on: wall / RSS",
        lambda p: (
            f"{fmt(p.speedups_off_wall_vs_on)} / {fmt(p.speedups_off_rss_vs_on)}"
            if p.speedups_off_wall_vs_on is not None
            else "-"
        ),
    )
]
STEP_TABLE: Columns = [
    *SIZE_LATENCY,
    ("contender", lambda g: g.contender),
    ("scenario", lambda g: g.scenario),
    ("wall s", lambda g: fmt(g.wall_s)),
    ("outside dlt s", lambda g: fmt(_outside(g))),
    *((f"{s} s", lambda g, s=s: fmt(_step(g, s, "seconds"))) for s in STEPS),
    (
        "peak RSS MB extract / normalize / load",
        lambda g: " / ".join(fmt_mb(_step(g, s, "peak_rss_bytes")) for s in STEPS),
    ),
]
CONCURRENCY: Columns = [
    *SIZE_LATENCY,
    ("contender", lambda g: g.contender),
    ("run", lambda g: _scenario_label(g.scenario)),
    ("mode", lambda g: ", ".join(g.concurrency_modes) or "-"),
    ("settled", lambda g: _values(g.concurrency_settled)),
    ("peak", lambda g: _values(g.concurrency_peak)),
    ("cuts", lambda g: _values(g.concurrency_cuts)),
    ("requests (median)", lambda g: f"{fmt_int(g.requests)} / {fmt_int(g.server_requests)}"),
    ("429s", lambda g: f"{_values(g.rate_limited)} / {_values(g.server_rate_limited)}"),
    ("paused s (median)", lambda g: fmt(g.paused_s, 1)),
    ("wall s (median)", lambda g: fmt(g.wall_s)),
]


def _ok_wall(r: Run) -> float | None:
    return r.wall_s if r.ok else None


def _slow_ratio(p: tuple[Run, Run]) -> float | None:
    return ratio(p[0].wall_s, p[1].wall_s) if p[0].ok and p[1].ok else None


SLOW_SERVER: Columns = [
    ("subscriptions", lambda p: f"{p[0].size:,}"),
    ("round", lambda p: str(p[0].round)),
    ("devportal wall s", lambda p: fmt(_ok_wall(p[0]))),
    ("floor wall s", lambda p: fmt(_ok_wall(p[1]))),
    ("difference s", lambda p: fmt(slow_difference(p))),
    ("ratio", lambda p: fmt(_slow_ratio(p))),
    ("devportal settled / peak", lambda p: _slash(p[0].concurrency_settled, p[0].concurrency_peak)),
    ("floor settled / peak", lambda p: _slash(p[1].concurrency_settled, p[1].concurrency_peak)),
]
POSTGRES_PAIRS: Columns = [
    *SIZE,
    ("round", lambda p: str(p.round)),
    ("wall s postgres / duckdb", lambda p: f"{fmt(p.postgres_wall_s)} / {fmt(p.duckdb_wall_s)}"),
    ("wall ratio", lambda p: fmt(p.wall_ratio)),
    (
        "devportal peak RSS MB postgres / duckdb",
        lambda p: f"{fmt_mb(p.postgres_rss_bytes)} / {fmt_mb(p.duckdb_rss_bytes)}",
    ),
    ("RSS ratio", lambda p: fmt(p.rss_ratio)),
]
TARGETS: Columns = [
    ("target", lambda t: t.target),
    ("measured", lambda t: _shown(t.value, t.unit)),
    ("limit", lambda t: ("at least " if t.at_least else "") + _shown(t.limit, t.unit)),
    ("verdict", lambda t: f"**{t.verdict}** ({t.factor})"),
    ("basis", lambda t: t.basis),
]
Cell = tuple[Callable[[Any], float | None], bool] | None  # a value to take the median of, bold


def _medians(items: list[Any], size: Callable[[Any], int], cells: list[Cell]) -> list[list[str]]:
    """One `**median of N**` row per size: each column's median where `cells` gives one."""
    rows = []
    for n in sorted({size(i) for i in items}):
        mine = [i for i in items if size(i) == n]
        row = [f"{n:,}", f"**median of {len(mine)}**"]
        for cell in cells:
            value = fmt(median([cell[0](i) for i in mine])) if cell else ""
            row.append(f"**{value}**" if cell and cell[1] else value)
        rows.append(row)
    return rows


def _machine(res: Result) -> list[str]:
    m = res.machine
    versions = ", ".join(f"{k} {v}" for k, v in m.versions.items() if v)
    load0, load1 = (
        ", ".join(f"{x:.2f}" for x in a) for a in (m.load_avg_at_start, m.load_avg_at_end)
    )
    dirty = " (pipelines/ has uncommitted changes)" if m.pipelines_dirty else ""
    return [
        f"- Date: {res.started_at} UTC; total bench wall time {res.total_wall_s:,.0f} s; "
        f"command `{res.command.strip()}`",
        f"- Machine: {m.cpu}, {m.logical_cores} logical cores ({m.cores_usable} usable), "
        f"{m.ram_bytes / 1024**3:.1f} GiB RAM, {m.os}",
        f"- Python {m.python}; {versions}; git {m.git_commit}{dirty}",
        f"- Load average (1/5/15 min) at start {load0}, at end {load1} "
        "(the machine is shared: other work shows up here)",
    ]


def render_markdown(res: Result) -> str:
    s, summary = res.settings, res.summary
    off = any(p.speedups_off_wall_vs_on is not None for p in res.pairs)
    side = [g for g in summary if g.scenario in SIDE_BY_SIDE_SCENARIOS and g.size in s.sizes]
    stepped = [g for g in summary if g.steps]
    heading = {
        "postgres": "devportal into PostgreSQL (0 ms), " if res.postgres.server else "",
        "off": "devportal with speed-ups off, " if off else "",
        "pinned": f"devportal pinned `--workers {s.pinned_workers}` (> 0 ms), "
        if s.pinned_workers
        else "",
    }
    lines = [
        text("intro"),
        "",
        *_machine(res),
        *section("## Targets", table(TARGETS, res.targets)),
        "",
        text("side_by_side", s=s, speedups=text("speedups_off") if off else "", **heading),
        "",
        *table(SIDE_BY_SIDE, sorted(side, key=lambda g: (g.size, g.latency_ms, _order(g)))),
        *section(
            "### Pair by pair (devportal / contender, same round)",
            table(PAIRS + (SPEEDUPS_OFF if off else []), res.pairs),
        ),
        "",
        text("where"),
        "",
        *table(STEP_TABLE, sorted(stepped, key=lambda g: (*_where(g), g.scenario))),
        *section("## devportal beyond the first sweep", _beyond(res)),
        *_concurrency_section(res),
        *_slow_server_section(res),
        *_rate_limited_section(res),
        *_postgres_section(res),
        *_method(res),
    ]
    return "\n".join(lines) + "\n"


def _where(g: Group) -> tuple[int, float, int]:
    return g.size, g.latency_ms, ORDER.get(g.contender, 9)


def _beyond(res: Result) -> list[str]:
    s = res.settings
    labels = {
        "second_sweep": "second sweep, no server change (same warehouse)",
        "window": f"window (`--since {s.window_since}`, same warehouse)",
        "accounts_setup": "setup: subscriptions + user_settings (fresh warehouse)",
        "user_accounts": "user_accounts (`--resources user_accounts`, all users due)",
        "models_setup": "setup: user_settings + user_accounts",
        "models": "`devportal models` on that warehouse",
        "sweep": "sweep (fresh warehouse)",
        "sync_models": "`devportal sync`: every resource, then the models (fresh warehouse)",
        "sync_models_speedups_off": "`devportal sync` with the models, `DEVPORTAL_SPEEDUPS=off`",
    }

    def label(scenario: str) -> str:
        if scenario.startswith("sweep_workers"):
            return f"sweep pinned at {_workers(scenario, 'sweep_workers')} (variant, informational)"
        return labels.get(scenario, scenario)

    other = [
        g
        for g in res.summary
        if (g.scenario != "sweep" or g.size not in s.sizes or g.size != res.main_size)
        and g.scenario not in (*POSTGRES_SCENARIOS, "sweep_speedups_off")
        and not g.scenario.startswith(THROTTLED_SCENARIOS)
    ]
    columns: Columns = [
        *SIZE_LATENCY,
        ("contender", lambda g: g.contender),
        ("run", lambda g: label(g.scenario)),
        ("ok/runs", lambda g: f"{g.ok}/{g.runs}"),
        ("wall s", lambda g: fmt(g.wall_s)),
        *ROWS,
        ("check / note", _checked),
    ]
    return table(columns, sorted(other, key=lambda g: (g.size, g.latency_ms, g.contender)))


def _concurrency_section(res: Result) -> list[str]:
    groups = [g for g in res.summary if g.concurrency_modes or any(g.server_rate_limited)]
    if not groups:
        return []
    groups.sort(key=lambda g: (*_where(g)[:2], g.scenario, _where(g)[2]))
    return ["", text("concurrency"), "", *table(CONCURRENCY, groups)]


def _slow_server_section(res: Result) -> list[str]:
    pairs = slow_server_pairs(res.runs)
    if not pairs:
        return []
    cells: list[Cell] = [(lambda p: _ok_wall(p[0]), False), (lambda p: _ok_wall(p[1]), False)]
    cells += [(slow_difference, True), (_slow_ratio, False), None, None]
    medians = _medians(pairs, lambda p: p[0].size, cells)
    return ["", text("slow_server", s=res.settings), "", *table(SLOW_SERVER, pairs, medians)]


def _rate_limited_section(res: Result) -> list[str]:
    s, limit = res.settings, res.settings.rate_limit or 0
    runs = [r for r in res.runs if r.scenario.startswith("rate_limited")]
    sizes = {r.size for r in runs if r.scenario == "rate_limited"}
    if not sizes:
        return []
    runs = sorted((r for r in runs if r.size in sizes), key=lambda r: (r.size, r.round, r.scenario))
    columns: Columns = [
        *SIZE,
        ("round", lambda r: str(r.round)),
        (
            "devportal",
            lambda r: (
                "devportal (adaptive)"
                if r.scenario == "rate_limited"
                else _workers(r.scenario, "rate_limited_workers")
            ),
        ),
        ("ok", lambda r: "ok" if r.ok else f"FAILED: {r.error or ''}"[:120]),
        ("wall s", lambda r: fmt(r.wall_s)),
        ("sync s", lambda r: fmt(r.work_s, 1)),
        ("requests", lambda r: fmt_int(r.server_requests)),
        ("req/s (sync s)", lambda r: fmt(r.request_rate_per_s, 1)),
        ("x limit", lambda r: fmt(ratio(r.request_rate_per_s, limit))),
        ("req/s (wall)", lambda r: fmt(r.request_rate_wall_per_s, 1)),
        (
            "429s sandbox / client",
            lambda r: _slash(fmt_int(r.server_rate_limited), fmt_int(r.rate_limited)),
        ),
        ("paused s", lambda r: fmt(r.paused_s, 1)),
        ("settled / peak", lambda r: _slash(r.concurrency_settled, r.concurrency_peak)),
        ("cuts", lambda r: fmt_int(r.concurrency_cuts)),
    ]
    return ["", text("rate_limited", s=s, limit=limit), "", *table(columns, runs)]


POSTGRES_RUNS = {  # scenario -> label; the destination is in the name
    "sweep": "sweep (fresh warehouse / database)",
    "sweep_postgres": "sweep (fresh warehouse / database)",
    "models": "`devportal models`",
    "models_setup_postgres": "setup: subscriptions + user_settings + user_accounts",
    "models_postgres": "`devportal models --destination postgres`",
}
POSTGRES: Columns = [
    *SIZE,
    ("run", lambda g: POSTGRES_RUNS[g.scenario]),
    ("destination", lambda g: "postgres" if "postgres" in g.scenario else "duckdb"),
    ("ok/runs", lambda g: f"{g.ok}/{g.runs}"),
    ("wall s (min-max)", lambda g: _wall_range(g) if g.wall_s is not None else "-"),
    *(c for c in ROWS if c[0] in ("in-process s", "rows")),
    ("devportal peak RSS MB", lambda g: fmt_mb(g.peak_rss_bytes)),
    ("server CPU s", lambda g: fmt(g.db_cpu_s)),
    (
        "server peak PSS MB (idle)",
        lambda g: (
            "-"
            if g.db_peak_pss_bytes is None
            else f"{fmt_mb(g.db_peak_pss_bytes)} ({fmt_mb(g.db_idle_pss_bytes)})"
        ),
    ),
    ("check / note", _checked),
]


def _postgres_section(res: Result) -> list[str]:
    pg = res.postgres
    sizes = sorted({g.size for g in res.summary if g.scenario in POSTGRES_SCENARIOS})
    if not sizes:
        return ["", text("postgres_skipped", why=pg.skipped or "no PostgreSQL run in this bench")]
    found = [g for n in sizes for sc in POSTGRES_RUNS if (g := res.find(n, 0.0, sc)) is not None]
    lines = ["", text("postgres", server=pg.server or "PostgreSQL"), "", *table(POSTGRES, found)]
    if pairs := res.postgres_pairs:
        cells: list[Cell] = [
            None,
            (lambda p: p.wall_ratio, True),
            None,
            (lambda p: p.rss_ratio, True),
        ]
        medians = _medians(pairs, lambda p: p.size, cells)
        lines += section(
            "### PostgreSQL / DuckDB, same round (0 ms)", table(POSTGRES_PAIRS, pairs, medians)
        )
    for size in sizes:
        duck, pgm = res.find(size, 0.0, "models"), res.find(size, 0.0, "models_postgres")
        if duck and pgm and duck.wall_s and pgm.wall_s:
            figures = {
                "pg_wall": fmt(pgm.wall_s),
                "pg_rss": fmt_mb(pgm.peak_rss_bytes),
                "duck_wall": fmt(duck.wall_s),
                "duck_rss": fmt_mb(duck.peak_rss_bytes),
                "wall_ratio": fmt(ratio(pgm.wall_s, duck.wall_s)),
                "rss_ratio": fmt(ratio(pgm.peak_rss_bytes, duck.peak_rss_bytes)),
            }
            lines += ["", text("postgres_models", size=size, **figures)]
    return lines


def _method(res: Result) -> list[str]:
    s, pg = res.settings, res.postgres
    processes = ", ".join(
        f"{g.contender} {g.max_processes}"
        for g in res.summary
        if g.scenario == "sweep" and g.size == res.main_size and g.latency_ms == 0.0
    )
    leaks = [
        f"{r.scenario} r{r.round}"
        for r in res.runs
        if not r.scenario.startswith(THROTTLED_SCENARIOS) and (r.server_ms or r.rate_limit_per_s)
    ]
    method = text(
        "method",
        s=s,
        clock=res.sandboxes[0]["clock"] if res.sandboxes else "-",
        processes=processes,
        workers=text("workers_pinned" if s.workers else "workers_adaptive", s=s),
        variant=text("variant", s=s) if s.pinned_workers else "",
        throttle=text("leaks", leaks=", ".join(leaks)) if leaks else text("no_leaks"),
    )
    lines = ["", method]
    if any(r.scenario.endswith("_speedups_off") for r in res.runs):
        lines.append(text("method_speedups_off"))
    if pg.server:
        lines.append(text("method_postgres", pg=pg, startup=pg.startup_s or 0))
    return lines + ([text("interrupted")] if res.interrupted else [])
