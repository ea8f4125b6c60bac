"""The demo's story (`devportal demo`): a sandbox whose clock ends near today, and the example
app's manifest recorded as two releases, an older one first and the current one last.

The command itself (devportal.cli.demo) runs the sandbox, the syncs and the clock advances and
prints what happens; this module holds what is not printing.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from devportal.manifest.report import Report

# package data (a link to examples/demo-app in a checkout, real files in a wheel)
DEMO_APP = Path(__file__).parent / "demo_app"


def clock_start(advance_days: float, syncs: int) -> datetime:
    """Midnight (naive UTC) such that SYNCS syncs, ADVANCE_DAYS apart, end near today: the
    report then reads like a live business."""
    start = datetime.now(UTC) - timedelta(days=advance_days * (syncs - 1))
    return start.replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)


def record_release(warehouse: str | Path, *, first: bool) -> Report:
    """Record the example app's manifest in WAREHOUSE; FIRST records the older release (v1.3.0:
    the same bundle before facebook and mixer were added). Returns the manifest's Report."""
    from devportal.manifest import load_manifest

    bundle = DEMO_APP
    with tempfile.TemporaryDirectory() as tmp:
        if first:
            bundle = Path(tmp) / "demo-app"
            shutil.copytree(DEMO_APP, bundle)
            manifest = json.loads((bundle / "manifest.json").read_text())
            manifest["version"] = "1.3.0"
            manifest["supportedPlatforms"] = ["twitch", "youtube"]
            (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2))
        result = load_manifest(bundle, warehouse)
    return result.report
