"""`devportal models`: build the SQL models into the warehouse and, with --check, test them."""

from __future__ import annotations

import argparse
from typing import Any

from devportal.cli import options


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "models",
        help="build the SQL models (analytics schema) and run their data tests",
        description=(
            "Build every model in sql/staging and sql/marts into the warehouse's `analytics` "
            "schema, in the dependency order read from the SQL. Models whose raw tables do not "
            "exist yet are skipped with a note. --check then runs the data tests (unique and "
            "not-null keys, accepted values, reconciliations) and exits 1 naming each failure."
        ),
    )
    options.add_warehouse(p)
    p.add_argument("--check", action="store_true", help="run the data tests after building")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from devportal import models

    print(models.summary_line(models.build(args.warehouse, check=args.check)))
    return 0
