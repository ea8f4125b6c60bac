"""Where `devportal sync` spends its time and memory, and what a proposed fix would change.

    python -m benchmarks.profile_sync [--size 100000] [--latency 0] [--resources subscriptions]
        [--what-if no-pandas,jsonl,no-mmap,duckdb-lean] [--rounds 3]

Against a sandbox in its own process: devportal as is ("baseline") and, with `--what-if`, devportal
with those changes applied from outside (`benchmarks/whatif.py`), interleaved round by round
(wall time, peak RSS, dlt steps; medians), then one cProfile run of each. The profile table
gives the cumulative main-thread seconds of the functions that matter and their share of the
profiled run (cProfile slows Python code, so shares, not absolute seconds, are the evidence).
Writes `benchmarks/results/profile-<size>-<latency>ms.md` and prints it.
"""

from __future__ import annotations

import argparse
import os
import pstats
import re
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any, cast

from benchmarks.measure import run_measured
from benchmarks.run import RESULTS, SCRUB_PREFIXES, WAREHOUSE, WORK, dlt_steps, parse_devportal
from benchmarks.sandbox import SandboxProcess

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024

# (label, regex on "file:line(function)") of what the profile table reports, in this order.
WATCH: tuple[tuple[str, str], ...] = (
    ("whole process (profiled)", r"builtins\.exec>\)$"),
    ("all imports (nested, counted once)", r"_bootstrap>:\d+\(_find_and_load\)$"),
    ("  pandas import (via pyarrow's pandas shim)", r"pandas/__init__\.py:\d+\(<module>\)$"),
    ("devportal/sync.py:sync", r"devportal/sync\.py:\d+\(sync\)$"),
    ("  devportal/pipeline.py:open_pipeline", r"devportal/pipeline\.py:\d+\(open_pipeline\)$"),
    ("  devportal/sync.py:_query (pre/post SQL)", r"devportal/sync\.py:\d+\(_query\)$"),
    ("  dlt Pipeline.extract", r"dlt/pipeline/pipeline\.py:\d+\(extract\)$"),
    ("    devportal/source.py:_read_verified", r"source\.py:\d+\(_read_verified\)$"),
    ("      devportal/client.py:iter_pages (waiting)", r"client\.py:\d+\(iter_pages\)$"),
    ("      devportal/transform.py:subscriptions_table", r"\(subscriptions_table\)$"),
    ("    devportal/source.py:settings_rows", r"source\.py:\d+\(settings_rows\)$"),
    ("    devportal/source.py:account_rows", r"source\.py:\d+\(account_rows\)$"),
    ("  dlt Pipeline.normalize", r"dlt/pipeline/pipeline\.py:\d+\(normalize\)$"),
    ("  dlt Pipeline.load", r"dlt/pipeline/pipeline\.py:\d+\(load\)$"),
    (
        "dlt resolve_configuration (all calls)",
        r"configuration/resolve\.py:\d+\(resolve_configuration\)$",
    ),
    ("DuckDB execute (dlt sql_client)", r"duckdb/sql_client\.py:\d+\(execute_query\)$"),
)


def profile_table(path: Path) -> list[tuple[str, float, float]]:
    stats: Any = cast(Any, pstats.Stats(str(path))).stats
    index = {f"{file}:{line}({func})": value[3] for (file, line, func), value in stats.items()}
    total = max(index.values()) if index else 0.0
    rows = []
    for label, pattern in WATCH:
        seconds = sum(v for k, v in index.items() if re.search(pattern, k))
        rows.append((label, seconds, seconds / total if total else 0.0))
    return rows


def top_devportal(path: Path, limit: int = 15) -> list[tuple[str, float, float]]:
    stats: Any = cast(Any, pstats.Stats(str(path))).stats
    rows = [
        (f"{Path(file).name}:{func}", value[2], value[3])
        for (file, _line, func), value in stats.items()
        if "/devportal/" in file and "sandbox" not in file
    ]
    return sorted(rows, key=lambda r: -r[2])[:limit]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_sync", description=__doc__)
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--users", type=int, default=2_000)
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--resources", default="subscriptions")
    p.add_argument(
        "--workers", type=int, default=None, help="pin the requests in flight (default: adaptive)"
    )
    p.add_argument("--what-if", default="", help="comma list, see benchmarks/whatif.py")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)

    workdir = WORK / f"profile-{os.getpid()}"
    modes = {"baseline": ""}
    if args.what_if:
        modes[f"what-if {args.what_if}"] = args.what_if
    measured: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    profiles: dict[str, Path] = {}
    with SandboxProcess(
        [sys.executable, "-m", "devportal"], workdir, subscriptions=args.size, users=args.users
    ) as sandbox:
        sandbox.set_latency(args.latency)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB_PREFIXES)}
        base_env.update(
            SOURCES__DEVPORTAL__ACCESS_TOKEN=sandbox.token, RUNTIME__DLTHUB_TELEMETRY="false"
        )

        def sync_args(warehouse: Path) -> list[str]:
            return [
                *("sync", "--base-url", sandbox.base_url, "--warehouse", str(warehouse)),
                *("--resources", args.resources, "--no-models", "--progress", "off"),
                *(("--workers", str(args.workers)) if args.workers else ()),
            ]

        runner = str(HERE / "whatif.py")
        for round_no in range(1, args.rounds + 1):
            for mode, changes in modes.items():
                cwd = workdir / f"{mode.split()[0]}-{round_no}"
                env = {**base_env, "BENCH_WHATIF": changes}
                m = run_measured(
                    [sys.executable, runner, *sync_args(cwd / WAREHOUSE)],
                    cwd=cwd,
                    env=env,
                    server=sandbox.process,
                )
                steps = dlt_steps("devportal", cwd / f".{Path(WAREHOUSE).stem}.dlt", m)
                measured[mode].append(
                    {
                        "ok": m.exit_code == 0,
                        "wall_s": m.wall_s,
                        "work_s": parse_devportal(m.stdout).get("work_s"),
                        "peak": m.peak_rss,
                        "steps": steps,
                        "error": m.stderr.strip().splitlines()[-1:] if m.exit_code else [],
                    }
                )
                print(
                    f"{mode} r{round_no}: {m.wall_s:.2f} s {m.peak_rss / MB:.0f} MB",
                    file=sys.stderr,
                )
                shutil.rmtree(cwd, ignore_errors=True)
        for mode, changes in modes.items():
            cwd = workdir / f"profile-{mode.split()[0]}"
            out = cwd / "sync.prof"
            env = {**base_env, "BENCH_WHATIF": changes}
            run_measured(
                [
                    sys.executable,
                    "-m",
                    "cProfile",
                    "-o",
                    str(out),
                    runner,
                    *sync_args(cwd / WAREHOUSE),
                ],
                cwd=cwd,
                env=env,
            )
            kept = workdir.parent / f"profile-{args.size}-{args.latency:g}ms-{mode.split()[0]}.prof"
            shutil.copy(out, kept)
            profiles[mode] = kept

    lines = [
        f"# devportal sync profile: {args.size:,} subscriptions, {args.latency:g} ms, "
        f"resources {args.resources}, "
        + (f"{args.workers} workers (pinned)" if args.workers else "adaptive concurrency"),
        "",
        f"Command: `python -m benchmarks.profile_sync {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        f"## Measured ({args.rounds} interleaved round(s), medians, no profiler)",
        "",
        "| mode | ok | wall s | in-process s | extract s | normalize s | load s | peak RSS MB | "
        "peak RSS MB extract / normalize / load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def med(values: list[Any]) -> float | None:
        present = [v for v in values if v is not None]
        return statistics.median(present) if present else None

    def fmt(value: float | None, scale: float = 1.0, digits: int = 2) -> str:
        return "-" if value is None else f"{value / scale:,.{digits}f}"

    for mode, runs in measured.items():
        ok = [r for r in runs if r["ok"]]
        step = {
            s: (
                med([r["steps"].get(s, {}).get("seconds") for r in ok]),
                med([r["steps"].get(s, {}).get("peak_rss_bytes") for r in ok]),
            )
            for s in ("extract", "normalize", "load")
        }
        lines.append(
            f"| {mode} | {len(ok)}/{len(runs)} | {fmt(med([r['wall_s'] for r in ok]))} | "
            f"{fmt(med([r['work_s'] for r in ok]))} | "
            + " | ".join(fmt(step[s][0]) for s in ("extract", "normalize", "load"))
            + f" | {fmt(med([r['peak'] for r in ok]), MB, 0)} | "
            + " / ".join(fmt(step[s][1], MB, 0) for s in ("extract", "normalize", "load"))
            + " |"
        )
        for r in runs:
            if r["error"]:
                lines.append(f"|  | error: {r['error'][0][:200]} | | | | | | | |")
    for mode, path in profiles.items():
        lines += [
            "",
            f"## cProfile, {mode} (main thread, cumulative; `{path.name}` under benchmarks/work/)",
            "",
            "| function | cumulative s | share of run |",
            "|---|---|---|",
        ]
        lines += [
            f"| {label} | {sec:.2f} | {share:.0%} |" for label, sec, share in profile_table(path)
        ]
        lines += [
            "",
            "Top devportal functions by cumulative time:",
            "",
            "| function | own s | cumulative s |",
            "|---|---|---|",
        ]
        lines += [f"| {name} | {own:.3f} | {cum:.3f} |" for name, own, cum in top_devportal(path)]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = f"-{args.resources.replace(',', '+')}" if args.resources != "subscriptions" else ""
    target = RESULTS / f"profile-{args.size}-{args.latency:g}ms{suffix}.md"
    target.write_text(text)
    shutil.rmtree(workdir, ignore_errors=True)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
