"""devportal: the Developer Portal API data-sync pipeline (dlt -> DuckDB -> SQL analytics).

The package is grouped by layer, each folder importing only the folders before it in this
order (docs/architecture.md; `tests/test_import_layers.py` holds the code to it):

    base        errors, the API's names, coercions, safe text, progress
    settings    every setting: the configspecs, where dlt reads them, prices, alerts, HTTP
    http        the only code that speaks HTTP: the client, retries, paging, concurrency
    warehouse   the warehouse: its file, target, engines, locks, dlt's DuckDB destination
    extract     reading the API into rows: the lists, their checks, the dlt source
    load        loading a read whole: the pipeline, the transaction, packages, one sync
    models      the SQL models in sql/ built into `analytics`
    manifest    manifest.json: validation, then recording
    reporting   the report, the charts, the notebooks' helpers, number formats
    operations  status, the run's outcome files, alerts, migrate
    starter     init, the demo and the files they write
    sandbox     the embedded fake API server (reached over HTTP only)
    cli         the `devportal` command, one module per command
"""

from __future__ import annotations

import importlib
from types import ModuleType

__version__ = "0.1.0"

# Notebooks written by `devportal init` before the layers (issue 34) import
# `from devportal import charts, notebook`: they keep working.
_MOVED = {"charts": "devportal.reporting.charts", "notebook": "devportal.reporting.notebook"}


def __getattr__(name: str) -> ModuleType:
    if name in _MOVED:
        return importlib.import_module(_MOVED[name])
    raise AttributeError(f"module 'devportal' has no attribute {name!r}")
