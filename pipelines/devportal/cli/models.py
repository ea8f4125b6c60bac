"""`devportal models`: build the SQL models into the warehouse (or PostgreSQL) and, with --check,
test them."""

from __future__ import annotations

import argparse
from typing import Any

from devportal.cli import options


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
            "models translated from DuckDB SQL by sqlglot."
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from devportal import models

    summary = models.build(options.target(args), check=args.check)
    print(models.summary_line(summary))
    return 0
