"""`devportal status`: is the warehouse fresh? The last successful sync, the last failure, the
packages set aside and the models' build, and an exit code a scheduler or a monitor can act
on (devportal.operations.status); stale data is also posted to the alert webhooks (devportal.operations.alerts)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from devportal.cli import options

FORMATS = ("table", "json")


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "status",
        help="is the warehouse fresh? last sync, last failure, set-aside packages, models",
        description=(
            "Show the last successful sync (when, by this machine's and by the API server's "
            "clock, how long ago, rows read), the last failure and its cause, the load "
            "packages set aside and when the models were built. Exit 0 when the last sync "
            "succeeded within --max-age-hours, 1 when the data is stale, the last run failed "
            "or no sync succeeded yet, 2 on a usage or configuration error (as dbt's `source "
            "freshness`). Stale data is posted once to the [alerts] webhooks."
        ),
    )
    options.add_warehouse(p)
    options.add_destination(
        p,
        help="postgres (or another dlt destination) instead of the DuckDB file at --warehouse; "
        "--warehouse then only says where this machine keeps the runs' records (dlt's folder)",
    )
    p.add_argument(
        "--max-age-hours",
        type=_hours,
        metavar="H",
        help="data older than H hours is stale (default: [alerts] max_age_hours, 26: a daily "
        "cron with two hours of slack; 0: any sync is stale)",
    )
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")
    options.add_verbosity(p)
    p.set_defaults(func=run)


def _hours(text: str) -> float:
    try:
        value = float(text)
    except ValueError:  # from None: argparse prints only this message, a usage error
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not value >= 0:  # also NaN
        raise argparse.ArgumentTypeError(f"{text} must be 0 or more")
    return value


def run(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.operations.alerts.events import stale
    from devportal.operations.status import as_json, as_lines, collect
    from devportal.settings.config import warn_unknown_keys

    warn_unknown_keys()  # a misspelt key of [alerts] or [sources.devportal]: one warning
    target = options.target(args, moved_ok=True)  # status says it was moved
    max_age = args.max_age_hours
    if max_age is None:
        max_age = target.settings.alerts().max_age_hours
    status = collect(target, max_age)
    if args.format == "json":
        options.say(args, json.dumps(as_json(status), indent=2))
    else:
        lines = as_lines(status)
        width = max(len(label) for label, _ in lines)
        options.say(args, "\n".join(f"{label:<{width}}  {text}" for label, text in lines))
    stale(status)
    return status.exit_code
