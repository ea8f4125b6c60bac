"""`devportal demo`: sandbox -> sync -> clock advance -> sync -> models -> report, in-process."""

from __future__ import annotations

import argparse
from typing import Any

from devportal.cli import options
from devportal.warehouse.paths import DEMO_WAREHOUSE
from devportal.warehouse.target import Target


def register(sub: argparse._SubParsersAction[Any]) -> None:
    d = sub.add_parser(
        "demo",
        help="sandbox -> sync -> clock advance -> sync -> models -> report",
        description=(
            "Start the sandbox in-process, sync, advance its clock, sync again (so history "
            "exists), build the models and print the report. Recreates --warehouse. "
            "--quiet prints only the report; on a terminal, each sync shows a progress bar."
        ),
    )
    options.add_warehouse(d, default=DEMO_WAREHOUSE)
    d.add_argument(
        "--destination",
        choices=("postgres",),
        help="run the demo on PostgreSQL: the server of DESTINATION__POSTGRES__CREDENTIALS (an "
        "empty database), else a throwaway local one (pgserver) removed afterwards",
    )
    d.add_argument("--subscriptions", type=int, default=20_000)
    d.add_argument("--users", type=int, default=2_000)
    d.add_argument("--seed", type=int, default=42)
    d.add_argument("--syncs", type=int, default=3, help="syncs to run (clock advances between)")
    d.add_argument("--advance-days", type=float, default=30.0, help="days between syncs")
    d.add_argument("--fault-rate", type=float, default=0.0, help="share of requests that fail")
    d.add_argument("--html", help="also write the HTML report here")
    options.add_verbosity(d)
    d.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    import os
    from contextlib import nullcontext

    from devportal.starter import demo

    target = options.target(args)
    if target.is_file:
        return _run(args, target)
    if os.environ.get(demo.POSTGRES_ENV):
        demo.require_empty_postgres(target)
        server: Any = nullcontext()
    else:
        options.say(
            args, "demo: starting a throwaway PostgreSQL server (pgserver), removed at the end"
        )
        server = demo.throwaway_postgres()
    with server:
        return _run(args, target)


def _run(args: argparse.Namespace, target: Target) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.starter import demo

    # the demo's price book where the user set none, for every step: the command's settings
    # (`target.settings`, each section resolved once) hold it from the first sync on
    with demo.demo_prices():
        return _steps(args, target)


def _steps(args: argparse.Namespace, target: Target) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.load.sync import sync
    from devportal.reporting import report
    from devportal.sandbox import Sandbox
    from devportal.starter import demo
    from devportal.warehouse import delete_warehouse

    delete_warehouse(args.warehouse)
    start = demo.clock_start(args.advance_days, args.syncs)
    options.say(
        args,
        f"demo: sandbox with {args.subscriptions} subscriptions and {args.users} users, "
        f"clock at {start:%Y-%m-%d}; warehouse {args.warehouse} (recreated)",
    )
    with Sandbox(
        subscriptions=args.subscriptions,
        users=args.users,
        seed=args.seed,
        start=start.strftime("%Y-%m-%d %H:%M:%S"),
    ) as sb:
        if args.fault_rate:
            sb.set_faults(rate=args.fault_rate, seed=args.seed, retry_after=0)
        for n in range(1, args.syncs + 1):
            if n > 1:
                changes = sb.advance(days=args.advance_days)
                options.say(
                    args,
                    f"demo: clock +{args.advance_days:g} days -> {sb.now:%Y-%m-%d}: "
                    + ", ".join(f"{k} {v}" for k, v in changes.items()),
                )
            result = sync(
                target,
                base_url=sb.base_url,
                access_token=sb.token,
                progress=options.progress(args),
            )
            options.say(args, f"demo: sync {n}/{args.syncs}: {result.summary()}")
            if n == 1 or n == args.syncs:
                release = demo.record_release(target, first=n == 1)
                options.say(
                    args,
                    f"demo: manifest {release.name} {release.version} recorded "
                    f"({len(release.errors)} errors, {len(release.warnings)} warnings)",
                )
    options.build_models(args, target, after_sync=False)
    options.say(args, "")
    report.print_report(target, fmt="table", html=args.html)
    if target.is_file:  # a throwaway PostgreSQL server is gone by now
        options.say(args, "\n" + _next(args.warehouse))
    return 0


def _next(warehouse: str) -> str:
    """What to try after the demo: `make` targets when make ran it from this checkout
    (`options.under_make`), else the devportal commands a pip install has."""
    if options.under_make("report"):
        return (
            f"next: make report WAREHOUSE={warehouse} ARGS='--html report.html' (charts), "
            f"make notebook (pandas), or any DuckDB client on {warehouse}"
        )
    return (
        f"next: devportal report --warehouse {warehouse} --html report.html (charts), "
        f"devportal init (writes the notebooks: pandas), or any DuckDB client on {warehouse}"
    )
