"""`devportal models`: build the SQL models into the warehouse (or PostgreSQL) and, with --check,
test them."""

from __future__ import annotations

import argparse
from typing import Any

from devportal.cli import options
from devportal.warehouse.target import Target


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "models",
        help="build the SQL models (analytics schema) and run their data tests",
        description=(
            "Build every model in sql/staging, sql/intermediate and sql/marts into the "
            "warehouse's `analytics` schema (one schema for all three layers), in the "
            "dependency order read from the SQL. Models whose raw tables do not "
            "exist yet are skipped with a note. --check then runs the data tests (unique and "
            "not-null keys, accepted values, reconciliations) and exits 1 naming each failure. "
            "--destination postgres builds them in the PostgreSQL database of dlt's postgres "
            "destination instead (raw tables in schema devportal, models in analytics), the "
            "models translated from DuckDB SQL by sqlglot. Prints one line (skipped models "
            "counted; with --verbose or on a terminal, each with why); --quiet prints nothing "
            "on success."
        ),
    )
    options.add_warehouse(p)
    options.add_destination(
        p,
        help="where the models are built: duckdb (default: the file at --warehouse) or "
        "postgres (DESTINATION__POSTGRES__CREDENTIALS or .dlt/secrets.toml; --warehouse then "
        "only places the lock file)",
    )
    p.add_argument("--check", action="store_true", help="run the data tests after building")
    options.add_verbosity(p)
    # `devportal sync` execs this command to build the models (`cli.speedups`): its line is
    # then the sync's detail, as when the sync builds them itself (`options.build_models`)
    p.add_argument("--after-sync", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.operations.alerts.events import watched

    target = options.target(args)
    # a failure is recorded and posted, a build recorded and its churn checked (also when
    # `devportal sync` runs this command in its place: cli.speedups)
    return watched("models", target, lambda: _run(args, target))


def _run(args: argparse.Namespace, target: Target) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal import models

    with options.progress(args) as shown:
        summary = models.build(target, check=args.check, progress=shown)
    tell = options.detail if args.after_sync else options.say
    tell(args, models.summary_line(summary, reasons=options.shows_detail(args)))
    return 0
