"""The Markdown of a bench result: each table a list of (header, cell) columns over records."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from benchmarks.records import (
    GROWTH_PREFIX,
    MB,
    WORLD_MODELS,
    WORLD_PREFIX,
    Group,
    GrowthWorld,
    ModelsWorld,
    Result,
    Run,
    fmt,
    fmt_int,
    fmt_mb,
    growth_worlds,
    median,
    models_worlds,
    ratio,
    slow_difference,
    slow_server_pairs,
)
from benchmarks.scenarios import NIGHTLY_AT

PROSE = Path(__file__).with_name("report_text.md")
POSTGRES_SCENARIOS = ("sweep_postgres", "models_setup_postgres", "models_postgres")
THROTTLED_SCENARIOS = ("slow_server", "rate_limited")  # prefixes; they have their own sections
SIDE_BY_SIDE_SCENARIOS = ("sweep", "sweep_speedups_off", "sweep_models")
SIDE_BY_SIDE_LABELS = {"sweep_speedups_off": ", speed-ups off", "sweep_models": ", with its models"}
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
    later = {"sweep_models": 3, "sweep_speedups_off": 4}
    return later.get(g.scenario, ORDER.get(g.contender, 9))


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
        "MB": f"{value:,.0f} MB" if abs(value) >= 10 else f"{value:.2f} MB",
        "users/s": f"{value:,.0f} users/s",
        "x limit": f"{value:.2f}x the limit",
        "share": f"{value:.2%}",
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
LABELS |= {"sweep_models": "sweep with its models"}


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
        lambda g: g.contender + SIDE_BY_SIDE_LABELS.get(g.scenario, ""),
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
MODELS_PAIRS: Columns = [
    ("with models wall vs peer", lambda p: fmt(p.models_wall_vs_peer, 3)),
    ("with models - floor s", lambda p: fmt(p.models_minus_floor_s)),
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
    if m.source:
        dirty = f" (devportal and the sandbox ran from `git archive {m.source}`, pipelines/ as committed)"
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
    if res.settings.only == "growth":
        return _render_growth_only(res)
    if res.settings.only == "models-worlds":
        return _render_models_worlds_only(res)
    s = res.settings
    summary = [g for g in res.summary if not g.scenario.startswith((GROWTH_PREFIX, WORLD_PREFIX))]
    off = any(p.speedups_off_wall_vs_on is not None for p in res.pairs)
    models = any(
        p.models_wall_vs_peer is not None or p.models_minus_floor_s is not None for p in res.pairs
    )
    side = [g for g in summary if g.scenario in SIDE_BY_SIDE_SCENARIOS and g.size in s.sizes]
    stepped = [g for g in summary if g.steps]
    heading = {
        "postgres": "devportal into PostgreSQL (0 ms), " if res.postgres.server else "",
        "off": "devportal with speed-ups off, " if off else "",
        "models": "devportal with its models, " if models else "",
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
            table(
                PAIRS + (MODELS_PAIRS if models else []) + (SPEEDUPS_OFF if off else []), res.pairs
            ),
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
        *_models_worlds_section(res),
        *_growth_section(res),
        *_method(res),
    ]
    return "\n".join(lines) + "\n"


def _render_growth_only(res: Result) -> str:
    lines = [
        text("growth_intro"),
        "",
        *_machine(res),
        *section("## Targets", table(TARGETS, res.targets)),
        *_growth_section(res),
        *section("## Method", text("growth_method", night=_night())),
    ]
    lines += [text("interrupted")] if res.interrupted else []
    return "\n".join(lines) + "\n"


def _render_models_worlds_only(res: Result) -> str:
    lines = [
        text("models_worlds_intro"),
        "",
        *_machine(res),
        *section("## Targets", table(TARGETS, res.targets)),
        *_models_worlds_section(res),
    ]
    lines += [text("interrupted")] if res.interrupted else []
    return "\n".join(lines) + "\n"


def _night() -> str:
    return f"{NIGHTLY_AT[0]:02d}:{NIGHTLY_AT[1]:02d}"


def _run_name(r: Run) -> str:
    if r.scenario == GROWTH_PREFIX + "window":
        return f"hourly `--window` {r.round}"
    return r.scenario.removeprefix(GROWTH_PREFIX).replace("_", " ")


def _megabytes(value: int | None, before: int | None = None) -> str:
    if value is None:
        return "-"
    change = f" ({(value - before) / MB:+.2f})" if before is not None else ""
    return f"{value / MB:,.1f}{change}"


def _folder(r: Run, before: Run | None) -> str:
    if r.dlt_dir_bytes is None:
        return "-"
    prev_files = before.dlt_dir_files if before is not None else None
    files = f"{r.dlt_dir_files}" + (
        f" ({r.dlt_dir_files - prev_files:+d})"
        if r.dlt_dir_files is not None and prev_files is not None
        else ""
    )
    return f"{_megabytes(r.dlt_dir_bytes, before.dlt_dir_bytes if before else None)} / {files}"


def _warehouse(r: Run, before: Run | None) -> str:
    shown = _megabytes(r.warehouse_bytes, before.warehouse_bytes if before else None)
    wal = f" + {r.warehouse_wal_bytes / MB:,.1f} .wal" if r.warehouse_wal_bytes else ""
    return shown + wal


def _result(r: Run) -> str:
    if not r.ok:
        # the error's first sentence (the rest names the set-aside package's folder)
        error = (r.error or f"exit code {r.exit_code}").split(". ")[0][:300]
        return f"**fails** (exit {r.exit_code}): {error}"
    check = r.rows_check if r.rows_check not in (None, "ok") else ""
    asked = "window" if r.scenario == GROWTH_PREFIX + "window" else "sweep"
    mode = f"; ran as a {r.sync_mode}" if r.sync_mode and r.sync_mode != asked else ""
    return "ok" + (f"; {check}" if check else "") + mode


GrowthRow = tuple[GrowthWorld, int, Run, Run | None]  # world, index, run, the run before


def _world_cell(row: GrowthRow) -> str:
    w, index = row[0], row[1]
    return f"{w.size:,} subscriptions, {w.users:,} users" if index == 0 else f"{w.size:,}"


def _changes(r: Run) -> str:
    if not r.world_changes:
        return "-"
    return ", ".join(f"{k} {v:,}" for k, v in r.world_changes.items() if v) or "nothing"


GROWTH: Columns = [
    ("world", _world_cell),
    ("run", lambda row: _run_name(row[2])),
    ("clock", lambda row: row[2].clock or "-"),
    ("wall s", lambda row: fmt(row[2].wall_s, 1)),
    ("peak RSS MB", lambda row: fmt_mb(row[2].peak_rss_bytes)),
    (
        "requests (client / sandbox)",
        lambda row: f"{fmt_int(row[2].requests)} / {fmt_int(row[2].server_requests)}",
    ),
    ("warehouse MB (change)", lambda row: _warehouse(row[2], row[3])),
    ("folder MB / files (change)", lambda row: _folder(row[2], row[3])),
    ("result", lambda row: _result(row[2])),
]


def _growth_rows(worlds: list[GrowthWorld]) -> list[GrowthRow]:
    rows: list[GrowthRow] = []
    for w in worlds:
        runs = w.runs
        rows += [(w, i, r, runs[i - 1] if i else None) for i, r in enumerate(runs)]
    return rows


def _rows_cell(table: str) -> Callable[[GrowthRow], str]:
    def cell(row: GrowthRow) -> str:
        return fmt_int((row[2].rows_read or {}).get(table)) if row[2].ok else "-"

    return cell


def _rows_read(rows: list[GrowthRow]) -> Columns:
    tables: list[str] = []
    for _, _, r, _ in rows:
        tables += [t for t in (r.rows_read or {}) if t not in tables]
    columns: Columns = [
        ("world", _world_cell),
        ("run", lambda row: _run_name(row[2])),
        ("mode", lambda row: row[2].sync_mode or "-"),
    ]
    columns += [(t, _rows_cell(t)) for t in tables]
    return [*columns, ("the clock's changes before the run", lambda row: _changes(row[2]))]


def _span(values: list[float], unit: str = "", digits: int = 0, sign: str = "") -> str:
    """`low to high` of VALUES (one figure when they agree as shown), then UNIT."""
    if not values:
        return "-"
    low, high = (f"{v:{sign},.{digits}f}" for v in (min(values), max(values)))
    return (low if low == high else f"{low} to {high}") + unit


def _growth_summary(w: GrowthWorld, res: Result) -> str:
    windows, ok = w.windows, [r for r in w.windows if r.ok]
    world = f"{w.size:,} subscriptions / {w.users:,} users"
    took = next((sb.get("growth_s") for sb in res.sandboxes if sb["subscriptions"] == w.size), None)
    took_text = f" The sequence took {took:,.0f} s (sandbox start included)." if took else ""
    if not windows:
        return f"- {world}: no hourly run.{took_text}"
    shares = [100 * v for v in w.window_requests_share()]
    grew = [g / MB for g in w.warehouse_growth()]
    subs = [float(n) for r in ok if (n := (r.rows_read or {}).get("subscriptions")) is not None]
    first, last = w.first, w.nightly
    folder = ""
    if first and last and first.dlt_dir_bytes is not None and last.dlt_dir_bytes is not None:
        runs = len(w.runs) - 1
        per_run = (last.dlt_dir_bytes - first.dlt_dir_bytes) / MB / runs if runs else 0.0
        folder = (
            f"; the folder beside it {first.dlt_dir_bytes / MB:,.1f} MB / {first.dlt_dir_files} "
            f"files after the first sweep, {last.dlt_dir_bytes / MB:,.1f} MB / "
            f"{last.dlt_dir_files} files after the nightly sweep ({per_run:+.2f} MB per run)"
        )
    loaded = (
        f", subscriptions read {_span(subs)}; the warehouse file {_span(grew, ' MB', 2, '+')} "
        f"per successful hourly run (mean {fmt(sum(grew) / len(grew) if grew else None, 2)} MB)"
        if ok
        else "; nothing loaded"
    )
    return (
        f"- {world}: {len(ok)}/{len(windows)} hourly runs ok; wall "
        f"{_span([r.wall_s for r in windows], ' s', 1)}, peak RSS "
        f"{_span([r.peak_rss_bytes / MB for r in windows], ' MB')}, requests "
        f"{_span([float(r.server_requests) for r in windows if r.server_requests is not None])} "
        f"({_span(shares, '%', 2)} of the first sweep's){loaded}{folder}.{took_text}"
    )


def _growth_section(res: Result) -> list[str]:
    worlds = growth_worlds(res)
    if not worlds:
        return []
    rows = _growth_rows(worlds)
    hours = ", ".join(f"{w.hours} at {w.size:,}" for w in worlds)
    return [
        "",
        text("growth", hours=hours, night=_night()),
        "",
        *table(GROWTH, rows),
        "",
        *(_growth_summary(w, res) for w in worlds),
        *section(
            "### Rows read per table (the run's `sync_runs.rows_read`; -: not read, or the run failed)",
            table(_rows_read(rows), rows),
        ),
    ]


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
        if not g.scenario.startswith(GROWTH_PREFIX)
        and (g.scenario != "sweep" or g.size not in s.sizes or g.size != res.main_size)
        and g.scenario not in (*POSTGRES_SCENARIOS, "sweep_speedups_off", "sweep_models")
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
    groups = [
        g
        for g in res.summary
        if (g.concurrency_modes or any(g.server_rate_limited))
        and not g.scenario.startswith(GROWTH_PREFIX)
    ]
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


WORLD_RUNS: Columns = [
    ("engine", lambda e: WORLD_MODELS[e[0]]),
    ("ok/runs", lambda e: f"{sum(r.ok for r in e[1])}/{len(e[1])}"),
    ("wall s, median (min-max)", lambda e: _walls(e[1])),
    ("build s (its own line)", lambda e: fmt(median([r.work_s for r in e[1] if r.ok]))),
    ("server CPU s", lambda e: fmt(median([r.db_cpu_s for r in e[1] if r.ok]))),
    ("peak RSS MB", lambda e: fmt_mb(median([r.peak_rss_bytes for r in e[1] if r.ok]))),
    ("/ DuckDB, per round", lambda e: ", ".join(fmt(v) for v in e[2]) or "-"),
    ("/ DuckDB, median", lambda e: fmt(median(list(e[2])))),
]


def _walls(runs: list[Run]) -> str:
    walls = [r.wall_s for r in runs if r.ok]
    if not walls:
        return "-"
    return f"{fmt(median(walls))} ({fmt(min(walls))}-{fmt(max(walls))})"


def _slowest_models(w: ModelsWorld, top: int = 10) -> list[str]:
    """The models' median seconds per engine, the slowest on PostgreSQL first."""
    engines = [name for name in WORLD_MODELS if w.runs.get(name)]
    times = {name: w.model_medians(name) for name in engines}
    pg = times.get("world_models_postgres") or {}
    duck = times.get("world_models") or {}
    if not pg and not duck:
        return [
            "No model's own time: the devportal measured printed none (`built analytics.<name>`)."
        ]
    names = sorted(pg or duck, key=lambda n: -(pg or duck).get(n, 0.0))[:top]
    columns: Columns = [("model", lambda n: f"`{n}`")]
    for engine in engines:
        columns.append((f"{WORLD_MODELS[engine]} s", _model_cell(times[engine])))
    if pg and duck:
        columns.append(("PostgreSQL / DuckDB", lambda n: fmt(ratio(pg.get(n), duck.get(n)), 1)))
    total = ["all models"] + [fmt(sum(times[e].values())) for e in engines]
    total += [fmt(ratio(sum(pg.values()), sum(duck.values())), 1)] if pg and duck else []
    return table(columns, names, [total])


def _model_cell(seconds: dict[str, float]) -> Callable[[Any], str]:
    return lambda name: fmt(seconds.get(name))


def _models_worlds_section(res: Result) -> list[str]:
    worlds = models_worlds(res)
    if not worlds:
        return []
    lines = [
        "",
        text(
            "models_worlds", server=res.postgres.server or "PostgreSQL", rounds=res.settings.rounds
        ),
    ]
    for w in worlds:
        entries = [
            (name, runs, w.ratios(name) if name != "world_models" else [])
            for name, runs in w.runs.items()
            if runs
        ]
        setup = [
            r
            for r in res.runs
            if r.size == w.size
            and r.scenario.startswith(WORLD_PREFIX)
            and r.scenario not in WORLD_MODELS
        ]
        took = next(
            (
                b.get("models_world_s")
                for b in res.sandboxes
                if b["subscriptions"] == w.size and "models_world_s" in b
            ),
            None,
        )
        made = ", ".join(
            f"{r.scenario} {r.round}: {fmt(r.wall_s)} s{'' if r.ok else ' FAILED'}" for r in setup
        )
        lines += section(
            f"### {w.label}"
            + (" (and a copy carried over by `devportal migrate`)" if w.migrated else ""),
            table(WORLD_RUNS, entries),
            f"Setup (wall s): {made or '-'}; the world took {fmt(took, 0)} s in all.",
            _slowest_models(w),
        )
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
    if growth_worlds(res):
        lines.append(text("growth_method", night=_night()))
    return lines + ([text("interrupted")] if res.interrupted else [])
