"""Findings and the validation report: the one shape every check returns and every output uses.

A finding is `{severity, pointer, rule, message}`: `pointer` is an RFC 6901 JSON pointer into
the manifest ("" is the whole document), `rule` a stable id (`schema.<keyword>` for JSON Schema
keywords, a kebab-case name for the rules in rules.py) that tests, tables and scripts can key on.
The helpers every check writes its findings with live here too: `pointer`, `quoted` (a value
in a message) and `json_type` / `TYPE_NAMES` (how a message names a JSON type).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from devportal.base.coercion import json_type as json_type  # re-exported: the checks import it here

Severity = Literal["error", "warning"]
ERROR: Severity = "error"
WARNING: Severity = "warning"

_SEVERITY_ORDER = {ERROR: 0, WARNING: 1}


@dataclass(frozen=True)
class Finding:
    severity: Severity
    pointer: str
    rule: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {
            "severity": self.severity,
            "pointer": self.pointer,
            "rule": self.rule,
            "message": self.message,
        }


def pointer(parts: Iterable[str | int]) -> str:
    """RFC 6901 pointer from path parts (`~` and `/` escaped as the RFC requires)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def quoted(text: str, limit: int) -> str:
    """TEXT in quotes for a message, cut to LIMIT characters (ending "...") when longer."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


# How messages name a JSON type (schema type names; `integer` is a schema type, not a value's).
TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "null": "null",
}


def _pointer_key(ptr: str) -> tuple[tuple[int, int, str], ...]:
    # Array indexes compare as numbers so /sources/10 sorts after /sources/2.
    parts = ptr.split("/")[1:] if ptr else []
    # isascii: str.isdigit accepts "²", which int() rejects.
    return tuple((0, int(p), "") if p.isascii() and p.isdigit() else (1, 0, p) for p in parts)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then document order of the pointer, then rule id: stable for diffs."""
    return sorted(
        findings, key=lambda f: (_SEVERITY_ORDER[f.severity], _pointer_key(f.pointer), f.rule)
    )


@dataclass
class ManifestReport:
    """The outcome of validating one manifest file (readable input only; see reader.py)."""

    manifest_path: Path
    bundle: Path
    raw: bytes
    document: dict[str, Any]
    content_hash: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed): the `validate` exit code 0."""
        return not self.errors

    @property
    def name(self) -> str | None:
        value = self.document.get("name")
        return value if isinstance(value, str) else None

    @property
    def version(self) -> str | None:
        value = self.document.get("version")
        return value if isinstance(value, str) else None

    def as_list(self) -> list[dict[str, str]]:
        """The `--json` output: one `{severity, pointer, rule, message}` per finding."""
        return [f.to_dict() for f in self.findings]


def closest(value: Any, known: Iterable[Any]) -> str | None:
    """The known value closest to VALUE (another case, a letter missing or swapped), or None
    when none is close."""
    if not isinstance(value, str):
        return None
    names = [k for k in known if isinstance(k, str) and not k.startswith("$") and k != value]
    by_case = {name.lower(): name for name in names}
    if value.lower() in by_case:
        return by_case[value.lower()]
    close = difflib.get_close_matches(value, names, n=1, cutoff=0.75)
    return close[0] if close else None


def did_you_mean(value: Any, known: Iterable[Any]) -> str:
    """` (did you mean 'x'?)` for the known value `closest` to VALUE, or "" when none is."""
    close = closest(value, known)
    return f" (did you mean {close!r}?)" if close is not None else ""


def count(findings: Sequence[Finding], severity: Severity) -> int:
    return sum(1 for f in findings if f.severity == severity)
