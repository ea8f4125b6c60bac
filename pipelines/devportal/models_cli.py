"""`devportal models`: build the SQL models into the warehouse and, with --check, test them."""

from __future__ import annotations

import argparse
from typing import Any

from devportal.pipeline import DEFAULT_WAREHOUSE


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
    p.add_argument(
        "--warehouse", default=DEFAULT_WAREHOUSE, help="DuckDB file (default %(default)s)"
    )
    p.add_argument("--check", action="store_true", help="run the data tests after building")
    p.set_defaults(func=run_models)


def summary_line(summary: dict[str, Any]) -> str:
    """One line for people: what was built, what was skipped and why, tests run."""
    line = f"models ok: {len(summary['built'])} built in {summary['seconds']:.1f}s"
    if summary["skipped"]:
        notes = ", ".join(f"{name} ({why})" for name, why in summary["skipped"].items())
        line += f"; skipped {notes}"
    if summary["tests"]:
        line += f"; {summary['tests']} data tests passed"
    return line


def run_models(args: argparse.Namespace) -> int:
    from devportal import models

    summary = models.build(args.warehouse, check=args.check)
    print(summary_line(summary))
    return 0
