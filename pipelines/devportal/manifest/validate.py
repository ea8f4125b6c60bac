"""Validation entry points: a path (file or bundle folder) or an already parsed document.

Validation never touches a warehouse. The one check that depends on history, platform
removal, takes the platforms of earlier versions as an argument (None: not checked); the
recording layer (history.py) looks them up and passes them in.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from devportal.manifest.findings import Finding, ManifestReport, sort_findings
from devportal.manifest.reader import ManifestInput, read_manifest
from devportal.manifest.rules import rule_findings
from devportal.manifest.schema import schema_findings


def validate_document(
    document: dict[str, Any],
    bundle: str | Path,
    *,
    previous_platforms: Collection[str] | None = None,
) -> list[Finding]:
    """Every finding for DOCUMENT, whose referenced files live in the folder BUNDLE, sorted
    errors first. PREVIOUS_PLATFORMS: platforms of versions already live (None: not checked)."""
    findings = schema_findings(document)
    findings += rule_findings(document, Path(bundle), previous_platforms)
    return sort_findings(findings)


def validate_path(
    path: str | Path, previous_platforms: Collection[str] | None = None
) -> ManifestReport:
    """Validate the manifest at PATH (a `manifest.json` or the bundle folder holding it).

    Raises `ManifestUnreadable` (exit code 2) when PATH is not a readable JSON object.
    PREVIOUS_PLATFORMS: platforms of versions already live (None: not checked).
    """
    return validate_manifest(read_manifest(path), previous_platforms)


def validate_manifest(
    manifest: ManifestInput, previous_platforms: Collection[str] | None = None
) -> ManifestReport:
    """The report for an already read MANIFEST (see `reader.read_manifest`)."""
    findings = validate_document(
        manifest.document, manifest.bundle, previous_platforms=previous_platforms
    )
    return ManifestReport(
        manifest_path=manifest.manifest_path,
        bundle=manifest.bundle,
        raw=manifest.raw,
        document=manifest.document,
        content_hash=manifest.content_hash,
        findings=sort_findings(manifest.findings + findings),
    )
