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

Other packages use `load_manifest(path, target) -> LoadResult` from here; the rest is
imported from the module that defines it (`validate.validate_path`, `history.recorded_platforms`,
`output.load_and_report`, ...).

`load_manifest` is resolved on first use (`__getattr__`), so importing a validation module,
which runs this file first, does not load the warehouse side; no module of the package imports a name from this file, so
neither way makes a cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devportal.manifest.resource import load_manifest

# the recording side, loaded on first use: importing a validation module runs this file first
_RECORDING = {"load_manifest": "devportal.manifest.resource"}

__all__ = [
    "load_manifest",
]


def __getattr__(name: str) -> Any:
    module = _RECORDING.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
