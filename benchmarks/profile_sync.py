"""Where `devportal sync --no-models` spends its time and memory with each `--speedups` value
as DEVPORTAL_SPEEDUPS (`on`, `off`, `early,no-pandas`, ...): interleaved rounds (medians), then
one cProfile run of each (read shares, not seconds). Writes `profile-<size>-<latency>ms.md`."""

from __future__ import annotations

import argparse
import io
import itertools
import os
import pstats
import shutil
import sys
from functools import partial
from pathlib import Path

from benchmarks.measure import run_measured
from benchmarks.records import MB, fmt, median
from benchmarks.report import STEPS, Columns, section, table
from benchmarks.run import RESULTS, SCRUB_PREFIXES, WAREHOUSE, WORK, dlt_steps, parse_devportal
from benchmarks.sandbox import SandboxProcess


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_sync", description=__doc__)
    for flag, default in (("--size", 100_000), ("--users", 2_000), ("--rounds", 3)):
        p.add_argument(flag, type=int, default=default)
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--resources", default="subscriptions")
    p.add_argument("--workers", type=int, default=None, help="pin the requests in flight")
    p.add_argument("--speedups", action="append", help="a DEVPORTAL_SPEEDUPS value (repeat)")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    variants, workdir = args.speedups or ["on", "off"], WORK / f"profile-{os.getpid()}"
    runs: dict[str, list[list[float | None]]] = {v: [] for v in variants}  # one a column
    devportal, profiles = [sys.executable, "-m", "devportal"], dict[str, str]()
    with SandboxProcess(devportal, workdir, args.size, args.users) as sandbox:
        sandbox.set_latency(args.latency)
        env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB_PREFIXES)}
        env |= {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sandbox.token}
        sync = ["sync", "--base-url", sandbox.base_url, "--resources", args.resources]
        sync += ["--no-models", "--progress", "off"]
        sync += ["--workers", str(args.workers)] if args.workers else []
        for round_no, v in itertools.product(range(1, args.rounds + 1), variants):
            cwd = workdir / f"{v}-{round_no}"
            cmd = [*devportal, *sync, "--warehouse", str(cwd / WAREHOUSE)]
            m = run_measured(cmd, cwd=cwd, env={**env, "DEVPORTAL_SPEEDUPS": v})
            steps = dlt_steps("devportal", cwd / ".bench.dlt", m)
            if m.exit_code == 0:
                seconds = [steps.get(name, {}).get("seconds") for name in STEPS]
                runs[v].append([m.wall_s, parse_devportal(m.stdout).get("work_s"), *seconds])
                runs[v][-1].append(m.peak_rss / MB)
            print(f"{v} r{round_no}: {m.wall_s:.2f} s, exit {m.exit_code}", file=sys.stderr)
        for v in variants:
            prof, cwd = workdir / f"{v}.prof", workdir / f"profile-{v}"
            cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), *devportal[1:], *sync]
            cmd += ["--warehouse", str(cwd / WAREHOUSE)]
            run_measured(cmd, cwd=cwd, env={**env, "DEVPORTAL_SPEEDUPS": v})
            text = io.StringIO()
            pstats.Stats(str(prof), stream=text).sort_stats("cumulative").print_stats(30)
            profiles[v] = text.getvalue().strip()

    def cell(i: int, v: str) -> str:
        return fmt(median([r[i] for r in runs[v]])) if i >= 0 else f"{len(runs[v])}/{args.rounds}"

    heads = ["ok", "wall s", "in-process s", *(f"{name} s" for name in STEPS), "peak RSS MB"]
    columns: Columns = [("DEVPORTAL_SPEEDUPS", str)]
    columns += [(h, partial(cell, i - 1)) for i, h in enumerate(heads)]
    command = " ".join(sys.argv[1:] if argv is None else argv)
    lines = [
        f"# devportal sync profile: {args.size:,} subscriptions, {args.latency:g} ms, {args.resources}",
        "",
        f"Command: `python -m benchmarks.profile_sync {command}`",
        *section(
            f"## Measured ({args.rounds} interleaved round(s), medians)", table(columns, variants)
        ),
    ]
    for v, listing in profiles.items():
        lines += section(f"## cProfile, DEVPORTAL_SPEEDUPS={v}", ["```", listing, "```"])
    suffix = f"-{args.resources.replace(',', '+')}" if args.resources != "subscriptions" else ""
    out = Path(args.out) / f"profile-{args.size}-{args.latency:g}ms{suffix}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    shutil.rmtree(workdir, ignore_errors=True)
    print(out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
