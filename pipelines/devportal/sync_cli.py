"""`devportal sync` and `devportal demo`."""

from __future__ import annotations

import argparse
import logging
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# dlt is imported by the handlers, not here: `devportal --help` and the other commands stay fast
from devportal.pipeline import DEFAULT_WAREHOUSE, RESOURCES, pipelines_dir

log = logging.getLogger("devportal.cli")

DEMO_WAREHOUSE = "warehouse/demo.duckdb"
# package data (a link to examples/demo-app in a checkout, real files in a wheel)
DEMO_APP = Path(__file__).parent / "demo_app"


def _date(text: str) -> datetime:
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"{text!r} is not YYYY-MM-DD or 'YYYY-MM-DD HH:MM:SS'")


def _resources(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in RESOURCES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(RESOURCES)} (comma separated)")
    return names


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "sync",
        help="sync the Developer API into the warehouse",
        description=(
            "Read subscriptions, user settings and user accounts into the warehouse "
            "(SCD2 history for subscriptions), then rebuild the SQL models. Default: a full "
            "sweep. --since/--window read only a start/end window (see README: Sync modes)."
        ),
    )
    p.add_argument("--base-url", help="API base URL (else [sources.devportal] base_url)")
    p.add_argument(
        "--warehouse", default=DEFAULT_WAREHOUSE, help="DuckDB file (default %(default)s)"
    )
    p.add_argument(
        "--destination",
        help="a dlt destination name (postgres, motherduck, ...) configured in .dlt/; "
        "default: DuckDB at --warehouse",
    )
    p.add_argument(
        "--resources",
        type=_resources,
        default=list(RESOURCES),
        help=f"comma list of {', '.join(RESOURCES)} (default: all)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--since", type=_date, help="window mode from this date (YYYY-MM-DD)")
    mode.add_argument(
        "--window",
        action="store_true",
        help="window mode from the last run's cursor minus the lookback",
    )
    p.add_argument(
        "--include-test", action="store_true", default=None, help="also load is_test=true rows"
    )
    p.add_argument(
        "--workers", type=int, help="concurrent requests (default 8, [sources.devportal] workers)"
    )
    p.add_argument(
        "--allow-mass-close",
        action="store_true",
        default=None,
        help="accept a sweep that closes more than mass_close_max_share (20%%) of current "
        "subscriptions (refused by default: an API outage looks like mass churn)",
    )
    p.add_argument("--manifest", help="also validate and record this manifest.json or bundle")
    p.add_argument("--no-models", action="store_true", help="do not rebuild the SQL models")
    p.add_argument(
        "--progress", choices=("auto", "on", "off"), default="auto", help="progress log on stderr"
    )
    p.set_defaults(func=run_sync)

    d = sub.add_parser(
        "demo",
        help="sandbox -> sync -> clock advance -> sync -> models -> report",
        description=(
            "Start the sandbox in-process, sync, advance its clock, sync again (so history "
            "exists), build the models and print the report. Recreates --warehouse."
        ),
    )
    d.add_argument("--warehouse", default=DEMO_WAREHOUSE, help="DuckDB file (default %(default)s)")
    d.add_argument("--subscriptions", type=int, default=20_000)
    d.add_argument("--users", type=int, default=2_000)
    d.add_argument("--seed", type=int, default=42)
    d.add_argument("--syncs", type=int, default=3, help="syncs to run (clock advances between)")
    d.add_argument("--advance-days", type=float, default=30.0, help="days between syncs")
    d.add_argument("--fault-rate", type=float, default=0.0, help="share of requests that fail")
    d.add_argument("--html", help="also write the HTML report here")
    d.set_defaults(func=run_demo)


def _models(warehouse: str, destination: str | None) -> None:
    if destination is not None:  # the SQL models are DuckDB SQL
        print("models: skipped (they are built for the DuckDB destination)")
        return
    from devportal import models, models_cli

    print(models_cli.summary_line(models.build(warehouse)))


def run_sync(args: argparse.Namespace) -> int:
    import dlt

    from devportal.sync import sync

    result = sync(
        args.warehouse,
        base_url=args.base_url,
        resources=args.resources,
        since=args.since,
        window=args.window,
        include_test=args.include_test,
        destination=args.destination,
        progress=args.progress,
        build_models=False,
        allow_mass_close=args.allow_mass_close,
        **({"workers": args.workers} if args.workers else {}),
    )
    print(result.summary())
    code = 0
    manifest = args.manifest or dlt.config.get("sources.devportal.manifest_path")
    if manifest:
        from devportal.manifest.cli import load_and_report

        # a manifest with errors is recorded with its findings; exit 1 so a scheduler notices
        code = load_and_report(manifest, args.warehouse)
    if not args.no_models:
        _models(args.warehouse, args.destination)
    return code


def _reset(warehouse: str) -> None:
    path = Path(warehouse)
    for extra in (path, path.with_name(path.name + ".wal")):
        extra.unlink(missing_ok=True)
    shutil.rmtree(pipelines_dir(path), ignore_errors=True)


def run_demo(args: argparse.Namespace) -> int:
    from devportal.sandbox import Sandbox
    from devportal.sync import sync

    _reset(args.warehouse)
    # the simulated clock ends near today, so the report reads like a live business
    start = (datetime.now(UTC) - timedelta(days=args.advance_days * (args.syncs - 1))).replace(
        tzinfo=None, hour=0, minute=0, second=0, microsecond=0
    )
    print(
        f"demo: sandbox with {args.subscriptions} subscriptions and {args.users} users, "
        f"clock at {start:%Y-%m-%d}; warehouse {args.warehouse} (recreated)"
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
                print(
                    f"demo: clock +{args.advance_days:g} days -> {sb.now:%Y-%m-%d}: "
                    + ", ".join(f"{k} {v}" for k, v in changes.items())
                )
            result = sync(
                args.warehouse,
                base_url=sb.base_url,
                access_token=sb.token,
                build_models=False,
                progress="off",
            )
            print(f"demo: sync {n}/{args.syncs}: {result.summary()}")
            if n == 1 or n == args.syncs:
                _demo_release(args.warehouse, first=n == 1)
    _models(args.warehouse, None)
    print()
    from devportal import report

    report.print_report(args.warehouse, fmt="table", html=args.html)
    print(
        f"\nnext: make report WAREHOUSE={args.warehouse} ARGS='--html report.html'  "
        f"(charts), make notebook (pandas), or any DuckDB client on {args.warehouse}"
    )
    return 0


def _demo_release(warehouse: str, first: bool) -> None:
    """Record the example app's manifest: an older release first, the current one last."""
    import json
    import tempfile

    from devportal.manifest import load_manifest

    bundle = DEMO_APP
    with tempfile.TemporaryDirectory() as tmp:
        if first:  # v1.3.0: same bundle, before facebook and mixer were added
            bundle = Path(tmp) / "demo-app"
            shutil.copytree(DEMO_APP, bundle)
            manifest = json.loads((bundle / "manifest.json").read_text())
            manifest["version"] = "1.3.0"
            manifest["supportedPlatforms"] = ["twitch", "youtube"]
            (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2))
        result = load_manifest(bundle, warehouse)
    report = result.report
    print(
        f"demo: manifest {report.name} {report.version} recorded "
        f"({len(report.errors)} errors, {len(report.warnings)} warnings)"
    )
