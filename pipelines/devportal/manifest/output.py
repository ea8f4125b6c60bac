"""How a manifest's findings are shown to people: text grouped by severity, or a JSON list, and
the summary line of a load (recording layer: `load_and_report` records through resource.py).

Used by `devportal manifest validate | load` and `devportal sync --manifest`
(devportal.cli.manifest, devportal.cli.sync).

A manifest's name, version and keys (in pointers) are the author's text: each printed line goes
through `display.terminal` (no control characters), and the JSON list is written with what a
terminal would act on escaped (`display.json_document`: the same data).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from devportal.display import json_document, terminal
from devportal.manifest.report import Finding, ManifestReport
from devportal.target import Target


def load_and_report(path: str | Path, target: Target, *, as_json: bool = False) -> int:
    """Load PATH into TARGET and print the findings and a summary line (also used by
    `devportal sync --manifest`). Returns the exit code: 0 recorded valid, 1 recorded with
    errors; unreadable input raises `ManifestUnreadable` (exit 2) before anything is written."""
    from devportal.manifest.resource import load_manifest  # dlt: only when recording

    result = load_manifest(path, target)
    report = result.report
    print_findings(report, as_json=as_json)
    # The summary goes to stderr under --json so stdout stays one JSON document.
    out = sys.stderr if as_json else sys.stdout
    print(
        terminal(
            f"recorded {_title(report)} in {result.warehouse if target.is_file else target.name} "
            f"(content_hash {report.content_hash[:12]})"
        ),
        file=out,
    )
    return 0 if report.ok else 1


def _title(report: ManifestReport) -> str:
    name = report.name if report.name is not None else "(no name)"
    version = report.version if report.version is not None else "(no version)"
    return f"{name} {version}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _line(finding: Finding) -> str:
    where = finding.pointer or "(document)"
    return f"  {where}: {finding.message} [{finding.rule}]"


def format_report(report: ManifestReport) -> str:
    """Human-readable findings grouped by severity, errors first."""
    lines = [f"{report.manifest_path}: {_title(report)}"]
    for heading, group in (("errors", report.errors), ("warnings", report.warnings)):
        if group:
            lines.append(f"{heading} ({len(group)}):")
            lines += [_line(f) for f in group]
    verdict = "valid" if report.ok else "invalid"
    counts = f"{_plural(len(report.errors), 'error')}, {_plural(len(report.warnings), 'warning')}"
    lines.append(f"{verdict}: {counts}")
    return "\n".join(terminal(line) for line in lines)


def print_findings(report: ManifestReport, *, as_json: bool, out: TextIO | None = None) -> None:
    stream = out or sys.stdout
    if as_json:
        stream.write(json_document(json.dumps(report.as_list(), indent=2, ensure_ascii=False)))
        stream.write("\n")
    else:
        print(format_report(report), file=stream)
