"""`devportal manifest validate | load`: the command-line face of devportal.manifest.

Exit codes: 0 valid (warnings allowed), 1 the manifest has errors, 2 the input is unreadable
(raised as `ManifestUnreadable`, printed by devportal.cli as one line). `load` records a
manifest with errors too (findings included, so analysts see broken releases) and then exits 1.
`validate --warehouse` reads the history (manifest/history.py) and validates against it;
`load` records through manifest/resource.py; the findings are printed by manifest/output.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from devportal.cli import options


def register(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "manifest",
        help="validate an app's manifest.json or record it in the warehouse",
        description="Validate an app's manifest.json (spec part 2.5) or record it in the "
        "warehouse. PATH is the manifest file or the app bundle folder holding it.",
    )
    actions = parser.add_subparsers(dest="manifest_action", required=True)

    validate = _action(
        actions,
        "validate",
        run_validate,
        help="report every problem with its JSON pointer (exit 0 valid, 1 errors, 2 unreadable)",
        description="Report every problem in the manifest, errors first, each with its JSON "
        "pointer and rule id. Exit 0 when valid (warnings allowed), 1 on errors, 2 when the "
        "input cannot be read.",
    )
    validate.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of {severity, pointer, rule, message} instead of text",
    )
    options.add_warehouse(
        validate,
        default=None,
        metavar="PATH",
        help="also check that no platform recorded in this warehouse for the app was removed",
    )

    load = _action(
        actions,
        "load",
        run_load,
        help="validate, then record the manifest and its findings in the warehouse",
        description="Validate the manifest against the versions already recorded, then record "
        "it (one record per distinct content; loading it again adds nothing). A manifest with "
        "errors is recorded too, with its findings, and the command exits 1.",
    )
    options.add_warehouse(load, metavar="PATH", help="DuckDB warehouse file (default: %(default)s)")
    options.add_destination(load)
    load.add_argument("--json", action="store_true", help="print the findings as a JSON list")


def _action(
    actions: argparse._SubParsersAction[Any],
    name: str,
    func: Callable[[argparse.Namespace], int],
    *,
    help: str,
    description: str,
) -> argparse.ArgumentParser:
    """`devportal manifest NAME PATH ...`: the action's parser, with PATH, handled by FUNC."""
    parser = actions.add_parser(name, help=help, description=description)
    parser.add_argument("path", metavar="PATH", help="manifest.json or the app bundle folder")
    parser.set_defaults(func=func)
    return parser


def run_validate(args: argparse.Namespace) -> int:
    from devportal.manifest.history import validate_with_history
    from devportal.manifest.output import print_findings

    report = validate_with_history(args.path, warehouse=args.warehouse)
    print_findings(report, as_json=args.json)
    return 0 if report.ok else 1


def run_load(args: argparse.Namespace) -> int:
    from devportal.manifest.output import load_and_report

    return load_and_report(args.path, options.target(args), as_json=args.json)
