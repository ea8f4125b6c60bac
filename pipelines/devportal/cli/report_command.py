"""`devportal report`: print the business figures (devportal.reporting.report) as text, JSON, CSV or
Markdown; `--html PATH` also writes the page with the charts. `--destination postgres` reads
the models built in PostgreSQL instead of the DuckDB warehouse."""

from __future__ import annotations

import argparse
from typing import Any

from devportal.cli import options
from devportal.reporting import report


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "report",
        help="print the subscription report (usable, churn, expiring, last 30 days)",
        description=(
            "Print the business figures from the analytics models, as of the latest successful "
            "sync: usable subscribers, churn of the last full month, subscriptions expiring "
            "within 7 and 30 days, new and canceled in the last 30 days."
        ),
    )
    options.add_warehouse(p)
    options.add_destination(p)
    p.add_argument("--format", choices=report.FORMATS, default="table", help="output format")
    p.add_argument("--html", metavar="PATH", help="also write a self-contained HTML page")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = options.target(args)
    unapplied = options.figures_current(args, target)
    report.print_report(target, fmt=args.format, html=args.html, unapplied=unapplied)
    return 0
