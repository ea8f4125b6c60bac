"""`devportal manifest validate | load | schema`: the command-line face of devportal.manifest.

Exit codes: 0 valid (warnings allowed), 1 the manifest has errors, 2 the input is unreadable
(raised as `ManifestUnreadable`, printed by devportal.cli as one line). `load` records a
manifest with errors too (findings included, so analysts see broken releases) and then exits 1.
`validate --warehouse` reads the history (manifest/history.py) and validates against it;
`load` records through manifest/resource.py; the findings are printed by manifest/output.py.
`validate` takes several paths too (pre-commit hands a hook every changed manifest at once):
each is reported, an unreadable one with its one line, and the exit code is the worst of them.
`schema` prints the JSON Schema `validate` checks, for editors.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from devportal.base.errors import DevportalError, ManifestUnreadable
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
        "input cannot be read (with several PATHs: the highest of these).",
        several=True,
    )
    validate.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="text (default); json: a list of {severity, pointer, rule, message} (one PATH); "
        "github: GitHub Actions annotations (::error file=...,line=...,col=...::) for a workflow",
    )
    validate.add_argument(
        "--json",
        dest="format",
        action="store_const",
        const="json",
        help="the same as --format json",
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

    schema = actions.add_parser(
        "schema",
        help="print the manifest's JSON Schema (draft 2020-12) for editors",
        description="Print the JSON Schema that `validate` checks (draft 2020-12, a description "
        "on every property) for an editor: save it, then point VS Code's `json.schemas` setting "
        'or the manifest\'s "$schema" key at the file (docs/manifest.md).',
    )
    schema.set_defaults(func=run_schema)


def _action(
    actions: argparse._SubParsersAction[Any],
    name: str,
    func: Callable[[argparse.Namespace], int],
    *,
    help: str,
    description: str,
    several: bool = False,
) -> argparse.ArgumentParser:
    """`devportal manifest NAME PATH ...`: the action's parser, with PATH (one or, when SEVERAL,
    more), handled by FUNC."""
    parser = actions.add_parser(name, help=help, description=description)
    parser.add_argument(
        "path",
        metavar="PATH",
        nargs="+" if several else None,
        help="manifest.json or the app bundle folder" + (" (one or more)" if several else ""),
    )
    parser.set_defaults(func=func)
    return parser


def run_validate(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.manifest.history import validate_with_history
    from devportal.manifest.output import print_findings, unreadable_annotation

    paths: list[str] = args.path
    if args.format == "json" and len(paths) > 1:
        raise DevportalError(
            f"--format json prints one manifest's findings, and {len(paths)} paths were given; "
            "run it once per manifest, or use --format text or github",
            exit_code=2,
        )
    worst = 0
    for path in paths:
        try:
            report = validate_with_history(path, warehouse=args.warehouse)
        except ManifestUnreadable as err:
            if args.format == "github":
                print(unreadable_annotation(err, path))
            if len(paths) == 1:
                raise  # devportal.cli prints the one line (and the traceback under --debug)
            print(f"devportal: error: {err}", file=sys.stderr)
            worst = max(worst, err.exit_code)
            continue
        print_findings(report, fmt=args.format)
        worst = max(worst, 0 if report.ok else 1)
    return worst


def run_schema(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.manifest.schema import schema_text

    sys.stdout.write(schema_text())
    return 0


def run_load(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.manifest.output import load_and_report

    return load_and_report(args.path, options.target(args), as_json=args.json)
