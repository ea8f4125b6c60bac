"""Application manifest (`manifest.json`): its JSON Schema, validation and warehouse record.

This package owns everything about the manifest an app bundle ships (spec part 2.5): the JSON
Schema file shipped beside this module (`manifest.schema.json`), the rules the schema cannot
express (files in the bundle, sizes, URLs, icon, platform history), the dlt resources that
record each distinct manifest in the `devportal` dataset, and how findings are printed (the
`devportal manifest` sub-command itself is devportal.cli.manifest_command).

Two layers, imports running one way (recording -> validation, never back):

- validation: facts, findings, images, bundle, positions (where a pointer is written),
  reader, schema, rules, validate: pure, no warehouse, no dlt, no duckdb; history comes in
  as `previous_platforms`;
- recording: tables (table names), history (reads the recorded platforms, validates against
  them), resource (rows, dlt resources, load_manifest), output (findings as text, JSON or
  GitHub annotations, load_and_report).

Public entry points:
    validate_path(path, previous_platforms=None) -> ManifestReport
    validate_document(document, bundle, *, previous_platforms=None) -> list[Finding]
    validate_with_history(path, previous_platforms=None, *, warehouse=None, pipeline=None)
    manifest_resources(path, previous_platforms=None, *, pipeline=None) -> list[DltResource]
    resources_for_report(report) -> list[DltResource]
    load_manifest(path, target) -> LoadResult
    recorded_platforms(warehouse, name) -> set[str]

The validation layer is re-exported plainly. The recording layer's names are resolved on
first use (`__getattr__`), so importing a validation module, which runs this file first, does
not load the warehouse side; no module of the package imports a name from this file, so
neither way makes a cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from devportal.manifest.findings import Finding, ManifestReport
from devportal.manifest.reader import ManifestUnreadable
from devportal.manifest.validate import validate_document, validate_path

if TYPE_CHECKING:
    from devportal.manifest.history import recorded_platforms, validate_with_history
    from devportal.manifest.resource import (
        LoadResult,
        load_manifest,
        manifest_resources,
        resources_for_report,
    )

_RECORDING = {
    "recorded_platforms": "devportal.manifest.history",
    "validate_with_history": "devportal.manifest.history",
    "LoadResult": "devportal.manifest.resource",
    "load_manifest": "devportal.manifest.resource",
    "manifest_resources": "devportal.manifest.resource",
    "resources_for_report": "devportal.manifest.resource",
}

__all__ = [
    "Finding",
    "LoadResult",
    "ManifestReport",
    "ManifestUnreadable",
    "load_manifest",
    "manifest_resources",
    "recorded_platforms",
    "resources_for_report",
    "validate_document",
    "validate_path",
    "validate_with_history",
]


def __getattr__(name: str) -> Any:
    module = _RECORDING.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
