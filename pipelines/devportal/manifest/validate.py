"""Validation entry points: a path (file or bundle folder) or an already parsed document.

Validation never needs a warehouse. The one check that depends on history, platform removal,
takes the platforms of earlier versions as an argument; `validate_path` can look them up in a
warehouse file for you (read-only, see history.py).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from devportal.manifest.reader import read_manifest
from devportal.manifest.report import Finding, Report, sort_findings
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
    path: str | Path,
    previous_platforms: Collection[str] | None = None,
    *,
    warehouse: str | Path | None = None,
) -> Report:
    """Validate the manifest at PATH (a `manifest.json` or the bundle folder holding it).

    Raises `ManifestUnreadable` (exit code 2) when PATH is not a readable JSON object. When
    PREVIOUS_PLATFORMS is None and WAREHOUSE is given, the platforms recorded there for the
    same app name are used for the platform-removal check.
    """
    manifest = read_manifest(path)
    if previous_platforms is None and warehouse is not None:
        name = manifest.document.get("name")
        if isinstance(name, str):
            from devportal.manifest.history import recorded_platforms

            previous_platforms = recorded_platforms(
                warehouse, name, exclude_hash=manifest.content_hash
            )
    findings = validate_document(
        manifest.document, manifest.bundle, previous_platforms=previous_platforms
    )
    return Report(
        manifest_path=manifest.manifest_path,
        bundle=manifest.bundle,
        raw=manifest.raw,
        document=manifest.document,
        content_hash=manifest.content_hash,
        findings=sort_findings(manifest.findings + findings),
    )
