"""Turning a path into a parsed manifest, or into one clear message when that is impossible.

Input that cannot be read as a JSON object (missing path, directory without `manifest.json`,
over 1 MiB, not UTF-8, invalid JSON, a non-object top level) raises `ManifestUnreadable`
(exit code 2): there is no document to point into. Oddities the parser survives (a UTF-8 byte
order mark, a key repeated in one object) become warnings so validation still reports
everything else.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devportal.base.coercion import replace_nul_escapes_text
from devportal.base.errors import ManifestUnreadable as ManifestUnreadable
from devportal.manifest.findings import TYPE_NAMES, WARNING, Finding, json_type, pointer

MANIFEST_NAME = "manifest.json"
# The spec sets no size; 1 MiB is far above any real manifest (a few KiB) and bounds the memory
# and time one bad input can cost.
MAX_MANIFEST_BYTES = 1024 * 1024

_OTHER_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


@dataclass
class ManifestInput:
    manifest_path: Path
    bundle: Path
    raw: bytes
    document: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)

    @property
    def content_hash(self) -> str:
        # sha256 of the raw bytes: reproducible with `sha256sum manifest.json`.
        return hashlib.sha256(self.raw).hexdigest()


def locate(path: str | Path) -> Path:
    """The manifest file for PATH: the file itself, or `manifest.json` inside a bundle folder."""
    given = Path(path)
    try:
        mode = given.stat().st_mode
    except FileNotFoundError as err:
        raise ManifestUnreadable(
            f"{given} does not exist; pass a manifest.json file or the app bundle folder holding it"
        ) from err
    except OSError as err:
        raise ManifestUnreadable(f"cannot read {given}: {err.strerror}; check the path") from err
    if stat.S_ISDIR(mode):
        candidate = given / MANIFEST_NAME
        if not candidate.is_file():
            raise ManifestUnreadable(
                f"{given} is a folder without {MANIFEST_NAME}; pass the app bundle folder "
                f"that holds {MANIFEST_NAME}, or the manifest file itself"
            )
        return candidate
    if not stat.S_ISREG(mode):
        raise ManifestUnreadable(f"{given} is not a regular file; pass a manifest.json file")
    return given


def read_bytes(manifest_path: Path) -> bytes:
    try:
        with manifest_path.open("rb") as fh:
            # Read one byte past the limit instead of trusting stat: the file may be growing.
            raw = fh.read(MAX_MANIFEST_BYTES + 1)
    except OSError as err:
        raise ManifestUnreadable(
            f"cannot read {manifest_path}: {err.strerror}; check its permissions"
        ) from err
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestUnreadable(
            f"{manifest_path} is over the 1 MiB limit for a manifest; "
            "a manifest holds metadata only, keep assets in separate files"
        )
    return raw


def decode(raw: bytes, manifest_path: Path) -> tuple[str, list[Finding]]:
    """UTF-8 text of the manifest; a UTF-8 byte order mark is stripped and reported (warning)."""
    findings: list[Finding] = []
    for bom, encoding in _OTHER_BOMS:
        if raw.startswith(bom):
            raise ManifestUnreadable(
                f"{manifest_path} is {encoding} encoded; save it as UTF-8 without a byte order mark"
            )
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
        findings.append(
            Finding(
                WARNING,
                "",
                "utf8-bom",
                "the file starts with a UTF-8 byte order mark; save it without one, "
                "JavaScript's JSON.parse rejects it",
            )
        )
    if b"\x00" in raw:
        # UTF-16 without a byte order mark is valid UTF-8 (ASCII plus NULs) and would otherwise
        # surface as a baffling JSON syntax error.
        raise ManifestUnreadable(
            f"{manifest_path} contains NUL bytes (UTF-16 or binary?); save it as UTF-8 text"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ManifestUnreadable(
            f"{manifest_path} is not UTF-8 text (byte 0x{raw[err.start]:02x} at line {line}, "
            f"byte offset {err.start}); save it as UTF-8"
        ) from err
    return text, findings


def _reject_constant(name: str) -> Any:
    # Python accepts NaN/Infinity, JSON (and the desktop client's JSON.parse) does not.
    raise ValueError(f"{name} is not a JSON value")


def parse(text: str, manifest_path: Path) -> tuple[dict[str, Any], list[Finding]]:
    """The top-level object; keys repeated in one object are reported (the last one wins)."""
    # Holding the object itself (not just its id) keeps ids unique until the tree walk below.
    repeated: list[tuple[dict[str, Any], str]] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                repeated.append((obj, key))
            obj[key] = value
        return obj

    if not text.strip():
        raise ManifestUnreadable(f"{manifest_path} is empty; a manifest is a JSON object")
    nul_findings: list[Finding] = []
    if "\\u0000" in text:
        nul = replace_nul_escapes_text(text)[1]
        if nul:  # validated as written; recorded with U+FFFD (resource.build_rows)
            nul_findings.append(
                Finding(
                    WARNING,
                    "",
                    "nul-character",
                    f"{nul} `\\u0000` escape(s): a NUL character is invisible on screen and no "
                    "PostgreSQL text can hold it; it is recorded as U+FFFD: remove it",
                )
            )
    try:
        document = json.loads(text, object_pairs_hook=pairs_hook, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ManifestUnreadable(
            f"{manifest_path} is not valid JSON: {err.msg} at line {err.lineno}, "
            f"column {err.colno}; fix the syntax there"
        ) from err
    except RecursionError as err:
        raise ManifestUnreadable(
            f"{manifest_path} nests arrays or objects too deeply to parse; flatten it"
        ) from err
    except ValueError as err:
        # NaN/Infinity, or an integer too long for Python's int conversion limit.
        raise ManifestUnreadable(
            f"{manifest_path} is not valid JSON: {err}; use a plain JSON number"
        ) from err
    if not isinstance(document, dict):
        # "a boolean" here, where the schema's "true or false" would read oddly.
        kind = "a boolean" if isinstance(document, bool) else TYPE_NAMES[json_type(document)]
        raise ManifestUnreadable(
            f"{manifest_path} holds {kind} at the top level; a manifest is a JSON object {{...}}"
        )
    return document, nul_findings + _repeated_key_findings(document, repeated)


def _repeated_key_findings(
    document: dict[str, Any], repeated: list[tuple[dict[str, Any], str]]
) -> list[Finding]:
    if not repeated:
        return []
    # The hook only knows the object, not where it sits: walk the tree once to find its pointer.
    where: dict[int, list[str | int]] = {}

    def walk(node: Any, path: list[str | int]) -> None:
        if isinstance(node, dict):
            where[id(node)] = path
            for key, value in node.items():
                walk(value, [*path, key])
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, [*path, index])

    walk(document, [])
    findings = []
    for obj, key in repeated:
        # An object overwritten by a later duplicate is gone from the tree: point at the document.
        path = where.get(id(obj))
        ptr = pointer([*path, key]) if path is not None else ""
        findings.append(
            Finding(
                WARNING,
                ptr,
                "duplicate-key",
                f"key {key!r} appears more than once in one object; only the last value counts, "
                "remove the others",
            )
        )
    return findings


def read_manifest(path: str | Path) -> ManifestInput:
    """Read, decode and parse the manifest at PATH; raises `ManifestUnreadable` (exit 2)."""
    manifest_path = locate(path)
    raw = read_bytes(manifest_path)
    text, findings = decode(raw, manifest_path)
    document, more = parse(text, manifest_path)
    return ManifestInput(
        manifest_path=manifest_path,
        bundle=manifest_path.parent,
        raw=raw,
        document=document,
        findings=findings + more,
    )
