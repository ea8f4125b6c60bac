"""How a manifest's findings are shown: text grouped by severity, a JSON list, or GitHub
Actions annotations (`::error file=...,line=...,col=...::`), and the summary line of a load
(recording layer: `load_and_report` records through resource.py).

Used by `devportal manifest validate | load` and `devportal sync --manifest`
(devportal.cli.manifest_command, devportal.cli.sync_command).

A manifest's name, version and keys (in pointers) are the author's text: each printed line goes
through `display.terminal` (no control characters), and the JSON list is written with what a
terminal would act on escaped (`display.json_document`: the same data). An annotation's message
and properties are also escaped as GitHub's workflow commands require (`escape_data`,
`escape_property`), so no text of the author's can end the command or start another.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from json import JSONDecodeError
from pathlib import Path
from typing import Literal, TextIO

from devportal.base.errors import ManifestUnreadable
from devportal.base.safe_text import json_document, terminal
from devportal.manifest.findings import ERROR, Finding, ManifestReport
from devportal.manifest.positions import Positions
from devportal.manifest.reader import decode, locate
from devportal.warehouse.target import Target

Format = Literal["text", "json", "github"]
FORMATS: tuple[Format, ...] = ("text", "json", "github")


def load_and_report(path: str | Path, target: Target, *, as_json: bool = False) -> int:
    """Load PATH into TARGET and print the findings and a summary line (also used by
    `devportal sync --manifest`). Returns the exit code: 0 recorded valid, 1 recorded with
    errors; unreadable input raises `ManifestUnreadable` (exit 2) before anything is written."""
    from devportal.manifest.resource import load_manifest  # deferred: dlt, only when recording

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
    sent = report.document.get("version") if isinstance(report.document, dict) else None
    if report.version is not None:
        version = report.version
    elif sent is not None:  # a version that is not text: shown as sent, not as none
        version = f"(version {sent!r}, not a string)"
    else:
        version = "(no version)"
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
    lines.append(_verdict(report))
    return "\n".join(terminal(line) for line in lines)


def _verdict(report: ManifestReport) -> str:
    verdict = "valid" if report.ok else "invalid"
    counts = f"{_plural(len(report.errors), 'error')}, {_plural(len(report.warnings), 'warning')}"
    return f"{verdict}: {counts}"


def print_findings(
    report: ManifestReport,
    *,
    as_json: bool = False,
    fmt: Format | None = None,
    out: TextIO | None = None,
) -> None:
    """REPORT's findings in the format FMT (`as_json`: the format json)."""
    stream = out or sys.stdout
    fmt = fmt or ("json" if as_json else "text")
    if fmt == "json":
        stream.write(json_document(json.dumps(report.as_list(), indent=2, ensure_ascii=False)))
        stream.write("\n")
    elif fmt == "github":
        for line in github_annotations(report):
            print(line, file=stream)
        # The log's own line: annotations show on the file and in the run's summary.
        print(
            terminal(f"{report.manifest_path}: {_title(report)}: {_verdict(report)}"), file=stream
        )
    else:
        print(format_report(report), file=stream)


# --- GitHub Actions workflow commands -------------------------------------------------------
# The escaping is GitHub's own (actions/toolkit, command.ts): `%`, CR and LF in the message;
# in a property also `:` and `,`, which separate the properties.


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, properties: Mapping[str, str | int], message: str) -> str:
    """`::COMMAND key=value,...::MESSAGE`, each part escaped and kept to one line."""
    listed = ",".join(f"{key}={escape_property(terminal(str(v)))}" for key, v in properties.items())
    return f"::{command} {listed}::{escape_data(terminal(message))}"


def annotation_path(path: Path) -> str:
    """PATH as GitHub matches it against the repository: relative to the workspace (the
    checkout, `GITHUB_WORKSPACE`) or else to the current folder, when inside it."""
    resolved = path.resolve()
    for root in (os.environ.get("GITHUB_WORKSPACE"), os.getcwd()):
        if root and resolved.is_relative_to(Path(root).resolve()):
            return resolved.relative_to(Path(root).resolve()).as_posix()
    return path.as_posix()


def github_annotations(report: ManifestReport) -> list[str]:
    """One `::error` or `::warning` per finding, at the line and column where its pointer is
    written (a pointer the file does not hold, such as a missing required property: the
    enclosing object)."""
    text, _ = decode(report.raw, report.manifest_path)  # readable: the reader decoded it
    positions = Positions(text)
    file = annotation_path(report.manifest_path)
    lines = []
    for finding in report.findings:
        where = positions.of(finding.pointer)
        properties: dict[str, str | int] = {
            "file": file,
            "line": where.line,
            "col": where.column,
            "title": f"manifest {finding.rule}",
        }
        command = "error" if finding.severity == ERROR else "warning"
        lines.append(
            workflow_command(
                command, properties, f"{finding.pointer or '(document)'}: {finding.message}"
            )
        )
    return lines


def unreadable_annotation(err: ManifestUnreadable, path: str | Path) -> str:
    """The `::error` for a manifest that cannot be read: at the syntax error when there is one,
    else on the file as a whole."""
    try:
        file = locate(path)  # a bundle folder: the manifest.json in it, where the error is
    except ManifestUnreadable:
        file = Path(path)
    properties: dict[str, str | int] = {"file": annotation_path(file)}
    cause = err.__cause__
    if isinstance(cause, JSONDecodeError):
        properties.update(line=cause.lineno, col=cause.colno)
    properties["title"] = "manifest unreadable"
    return workflow_command("error", properties, str(err))
