"""Application manifest (`manifest.json`): its JSON Schema, validation and warehouse record.

This package owns everything about the manifest an app bundle ships (spec part 2.5): the JSON
Schema file shipped beside this module (`manifest.schema.json`), the rules the schema cannot
express (files in the bundle, sizes, URLs, icon, platform history), the dlt resources that
record each distinct manifest in the `devportal` dataset, and the `devportal manifest`
sub-command.

Public entry points (imported lazily so `devportal --help` does not pay for dlt/jsonschema):
    validate_path(path, previous_platforms=None, *, warehouse=None) -> Report
    validate_document(document, bundle, *, previous_platforms=None) -> list[Finding]
    manifest_resources(path, previous_platforms=None, *, pipeline=None) -> list[DltResource]
    resources_for_report(report) -> list[DltResource]
    load_manifest(path, warehouse) -> LoadResult
    recorded_platforms(warehouse, name) -> set[str]
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devportal.manifest.history import recorded_platforms
    from devportal.manifest.reader import ManifestUnreadable
    from devportal.manifest.report import Finding, Report
    from devportal.manifest.resource import (
        LoadResult,
        load_manifest,
        manifest_resources,
        resources_for_report,
    )
    from devportal.manifest.validate import validate_document, validate_path

_EXPORTS = {
    "Finding": "devportal.manifest.report",
    "Report": "devportal.manifest.report",
    "ManifestUnreadable": "devportal.manifest.reader",
    "validate_document": "devportal.manifest.validate",
    "validate_path": "devportal.manifest.validate",
    "recorded_platforms": "devportal.manifest.history",
    "LoadResult": "devportal.manifest.resource",
    "load_manifest": "devportal.manifest.resource",
    "manifest_resources": "devportal.manifest.resource",
    "resources_for_report": "devportal.manifest.resource",
}

__all__ = [
    "Finding",
    "LoadResult",
    "ManifestUnreadable",
    "Report",
    "load_manifest",
    "manifest_resources",
    "recorded_platforms",
    "resources_for_report",
    "validate_document",
    "validate_path",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
