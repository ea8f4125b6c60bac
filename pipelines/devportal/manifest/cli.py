"""`devportal manifest validate | load`: the command-line face of the manifest package.

Exit codes: 0 valid (warnings allowed), 1 the manifest has errors, 2 the input is unreadable
(raised as `ManifestUnreadable`, printed by devportal.cli as one line). `load` records a
manifest with errors too (findings included, so analysts see broken releases) and then exits 1.

Part of the recording layer: `validate --warehouse` reads the history (history.py) and passes
it into validation; `load` goes through resource.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from devportal.manifest.history import validate_with_history
from devportal.manifest.report import Finding, Report
from devportal.manifest.resource import load_manifest
from devportal.pipeline import DEFAULT_WAREHOUSE


def register(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "manifest",
        help="validate an app's manifest.json or record it in the warehouse",
        description="Validate an app's manifest.json (spec part 2.5) or record it in the "
        "warehouse. PATH is the manifest file or the app bundle folder holding it.",
    )
    actions = parser.add_subparsers(dest="manifest_action", required=True)

    validate = actions.add_parser(
        "validate",
        help="report every problem with its JSON pointer (exit 0 valid, 1 errors, 2 unreadable)",
        description="Report every problem in the manifest, errors first, each with its JSON "
        "pointer and rule id. Exit 0 when valid (warnings allowed), 1 on errors, 2 when the "
        "input cannot be read.",
    )
    validate.add_argument("path", metavar="PATH", help="manifest.json or the app bundle folder")
    validate.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of {severity, pointer, rule, message} instead of text",
    )
    validate.add_argument(
        "--warehouse",
        metavar="PATH",
        default=None,
        help="also check that no platform recorded in this warehouse for the app was removed",
    )
    validate.set_defaults(func=run_validate)

    load = actions.add_parser(
        "load",
        help="validate, then record the manifest and its findings in the warehouse",
        description="Validate the manifest against the versions already recorded, then record "
        "it (one record per distinct content; loading it again adds nothing). A manifest with "
        "errors is recorded too, with its findings, and the command exits 1.",
    )
    load.add_argument("path", metavar="PATH", help="manifest.json or the app bundle folder")
    load.add_argument(
        "--warehouse",
        metavar="PATH",
        default=DEFAULT_WAREHOUSE,
        help="DuckDB warehouse file (default: %(default)s)",
    )
    load.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    load.set_defaults(func=run_load)


def run_validate(args: argparse.Namespace) -> int:
    report = validate_with_history(args.path, warehouse=args.warehouse)
    print_report(report, as_json=args.json)
    return 0 if report.ok else 1


def run_load(args: argparse.Namespace) -> int:
    return load_and_report(args.path, args.warehouse, as_json=args.json)


def load_and_report(path: str | Path, warehouse: str | Path, *, as_json: bool = False) -> int:
    """Load PATH into WAREHOUSE and print the findings and a summary line (also used by
    `devportal sync --manifest`). Returns the exit code: 0 recorded valid, 1 recorded with
    errors; unreadable input raises `ManifestUnreadable` (exit 2) before anything is written."""
    result = load_manifest(path, warehouse)
    report = result.report
    print_report(report, as_json=as_json)
    # The summary goes to stderr under --json so stdout stays one JSON document.
    out = sys.stderr if as_json else sys.stdout
    print(
        f"recorded {_title(report)} in {result.warehouse} "
        f"(content_hash {report.content_hash[:12]})",
        file=out,
    )
    return 0 if report.ok else 1


def _title(report: Report) -> str:
    name = report.name if report.name is not None else "(no name)"
    version = report.version if report.version is not None else "(no version)"
    return f"{name} {version}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _line(finding: Finding) -> str:
    where = finding.pointer or "(document)"
    return f"  {where}: {finding.message} [{finding.rule}]"


def format_report(report: Report) -> str:
    """Human-readable findings grouped by severity, errors first."""
    lines = [f"{report.manifest_path}: {_title(report)}"]
    for heading, group in (("errors", report.errors), ("warnings", report.warnings)):
        if group:
            lines.append(f"{heading} ({len(group)}):")
            lines += [_line(f) for f in group]
    verdict = "valid" if report.ok else "invalid"
    counts = f"{_plural(len(report.errors), 'error')}, {_plural(len(report.warnings), 'warning')}"
    lines.append(f"{verdict}: {counts}")
    return "\n".join(lines)


def print_report(report: Report, *, as_json: bool, out: TextIO | None = None) -> None:
    stream = out or sys.stdout
    if as_json:
        json.dump(report.as_list(), stream, indent=2, ensure_ascii=False)
        stream.write("\n")
    else:
        print(format_report(report), file=stream)
