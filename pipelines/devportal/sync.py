"""One sync run: lock -> finish what a killed run left -> run the source -> summarise.

A run is one dlt load package: everything `devportal_source` reads (subscriptions, user
settings, the user accounts due) and the run's own records (`sync_runs`, `data_quality`) travel
together, so a run is either in the warehouse whole or not at all. It is what
`pipeline.run(devportal_source(...))` does, with the load step replaced by `load_whole` (the
warehouse is put back if a table's load fails halfway). A process killed mid-run leaves either
nothing (killed while reading or extracting: dlt never commits the package) or a complete
package that the next run loads first.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import dlt
from dlt.pipeline.exceptions import PipelineStepFailed

from devportal import config as settings
from devportal.client import RESOURCES, ApiClient, adopt
from devportal.destination import CONCURRENCY_FIELDS, Destination
from devportal.errors import DevportalError, causes, devportal_cause, first_line
from devportal.pipeline import (
    begin_writing,
    finish_pending,
    load_whole,
    open_pipeline,
    warehouse_or,
)
from devportal.runlock import writer_lock
from devportal.source import devportal_source
from devportal.warehouse import disk_error

log = logging.getLogger("devportal.sync")

# seconds between progress lines: "auto" speaks only on long runs
PROGRESS_PERIOD = {"auto": 10.0, "on": 2.0}


@dataclass
class SyncResult:
    run_id: str
    mode: str
    rows: dict[str, int]
    new_versions: int
    closed_versions: int
    retries: int
    requests: int
    seconds: float
    observed_at: datetime | None
    data_quality_problems: int
    resumed_packages: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    concurrency: dict[str, Any] = field(default_factory=dict)  # sync_runs' concurrency_*

    def _concurrency(self) -> str:
        c = self.concurrency
        if not c.get("concurrency_mode"):
            return ""
        if c["concurrency_mode"] == "pinned":
            text = f", {c['concurrency_settled']} in flight (pinned)"
        else:
            text = (
                f", concurrency settled at {c['concurrency_settled']} "
                f"(adaptive, peak {c['concurrency_peak']})"
            )
        if c.get("rate_limited"):
            text += f", {c['rate_limited']} rate-limited (429)"
        if c.get("paused_s"):
            text += f", paused {c['paused_s']:.1f}s on Retry-After"
        return text

    def summary(self) -> str:
        parts = [f"{table} {n}" for table, n in self.rows.items()]
        notes = {
            "set_aside": "the package of an interrupted run could not load and was set aside "
            f"({', '.join(self.extra.get('set_aside', []))}: see `devportal packages`)",
            "machine_clock": "stamped with this machine's clock (the API's Date header was too "
            "far off)",
            "unverified": "the subscription list could not be verified against a total, so no "
            "subscription was closed",
            "unverified_partly": f"the {self.extra.get('unverified_partly')} subscription list "
            "could not be verified against a total, so none of its subscriptions was closed",
            "swept_instead": "swept the whole subscription list instead of a window: the "
            "warehouse held no verified sweep of it yet",
            "still_listed": f"{self.extra.get('still_listed')} subscription(s) the list did not "
            "show are still there (asked by id): loaded, not closed",
            "kept_open": f"{self.extra.get('kept_open')} subscription(s) the list did not show "
            "could not be confirmed gone: left current until a later sweep",
        }
        return (
            f"sync ok ({self.mode}) in {self.seconds:.1f}s: "
            + (", ".join(parts) or "no rows")
            + f"; subscription history +{self.new_versions} versions, {self.closed_versions} closed"
            + f"; {self.requests} requests, {self.retries} retries"
            + self._concurrency()
            + f"; {self.data_quality_problems} data-quality problems"
            + (f"; as of {self.observed_at:%Y-%m-%d %H:%M:%S}" if self.observed_at else "")
            + "".join(f"; {text}" for key, text in notes.items() if self.extra.get(key))
        )


def sync(
    warehouse: str | Path,
    *,
    base_url: str | None = None,
    access_token: str | None = None,
    resources: Sequence[str] = RESOURCES,
    since: datetime | None = None,
    window: bool = False,
    include_test: bool | None = None,
    destination: Any = None,
    progress: str = "off",
    build_models: bool = True,
    early: ApiClient | None = None,
    **overrides: Any,
) -> SyncResult:
    """Run one sync into `warehouse`. Raises DevportalError with a one-line cause on failure.

    Settings come from `[sources.devportal]` (see `config.py`); non-None arguments and
    `overrides` (any of its fields) win over it. `early`: a client that started reading the
    first list before the settings were resolved (`devportal sync` does); used if it reads
    the same API with the same token (`client.adopt`), else closed.
    """
    destination = warehouse_or(destination)
    cfg = settings.resolve(
        base_url=base_url, access_token=access_token, include_test=include_test, **overrides
    )
    started = time.monotonic()
    loaded: dict[str, Any] = {}
    try:
        with writer_lock(warehouse, destination):
            pipeline = open_pipeline(warehouse, destination, _dlt_progress(progress))
            # what a killed run left: its draft, pending packages (loaded whole or set aside)
            set_aside = finish_pending(pipeline, warehouse, destination)
            begin_writing(warehouse, destination)  # DuckDB: the copy this run writes
            with Destination(pipeline) as dest:
                before = dest.history_counts()
            source = devportal_source(
                resources=tuple(resources),
                since=since,
                window=window,
                progress_every_s=PROGRESS_PERIOD.get(progress),
                config=cfg,
                client=adopt(early, cfg),
            )

            def read_back(load_id: str) -> None:
                # what the run loaded, read before it is published (on DuckDB, from the copy)
                with Destination(pipeline) as dest:
                    loaded["after"] = dest.history_counts()
                    loaded["record"] = dest.run_record(load_id) or {}

            _extract_and_load(pipeline, source, warehouse, destination, read_back)
    except OSError as err:  # the disk filled or turned read-only under the run (the spool)
        disk = disk_error(err, warehouse)
        if disk is None:
            raise
        raise disk from err
    result = _result(loaded["record"], before, loaded["after"])
    result.resumed_packages = len(set_aside.resumed)
    if set_aside.ids:
        result.extra["set_aside"] = set_aside.ids
    if build_models:
        from devportal import models

        result.extra["models"] = models.build_after_load(warehouse, destination)
    result.seconds = time.monotonic() - started
    return result


def _dlt_progress(progress: str) -> Any:
    """dlt's own collector (normalize and load progress) for the same setting."""
    period = PROGRESS_PERIOD.get(progress)
    return dlt.progress.log(log_period=period, logger=sys.stderr) if period else None


def _extract_and_load(
    pipeline: Any,
    source: Any,
    warehouse: str | Path,
    destination: Any,
    read_back: Callable[[str], None],
) -> str:
    """Extract and normalize the source into one package and load it whole; its load id.
    READ_BACK(load_id) runs once the package has loaded, before it is published."""
    try:
        pipeline.extract(source)
        pipeline.normalize()
    except PipelineStepFailed as err:
        cause = devportal_cause(err)
        if cause is not None:
            raise cause from None
        disk = next(filter(None, (disk_error(e, warehouse) for e in causes(err))), None)
        if disk is not None:
            raise disk from err
        raise DevportalError(f"sync failed in {err.step}: {first_line(err)}") from None
    load_id = str(pipeline.list_normalized_load_packages()[0])
    load_whole(pipeline, warehouse, destination, lambda: read_back(load_id))
    return load_id


def _result(record: dict[str, Any], before: tuple[int, int], after: tuple[int, int]) -> SyncResult:
    """The summary of a loaded run, from its `sync_runs` row and the history counts."""
    new_versions = after[0] - before[0]
    sweeps = record.get("sweeps") or []
    reads = [s for s in sweeps if s.get("endpoint", "").endswith("/subscriptions")]
    if record.get("mode") != "sweep":
        reads = []
    unverified = [
        "test" if (s.get("params") or {}).get("is_test") else "live"
        for s in reads
        if not s.get("verified")
    ]
    partly = len(unverified) < len(reads)
    # how each sweep settled the current subscriptions it did not list (reading.Settling)
    closing = [s["closing"] for s in sweeps if isinstance(s.get("closing"), dict)]
    return SyncResult(
        run_id=record.get("run_id", ""),
        mode=record.get("mode", ""),
        rows=dict(record.get("rows_read") or {}),
        new_versions=new_versions,
        closed_versions=before[1] + new_versions - after[1],
        retries=int(record.get("retries") or 0),
        requests=int(record.get("requests") or 0),
        seconds=0.0,
        observed_at=record.get("observed_at"),
        data_quality_problems=int(record.get("data_quality_problems") or 0),
        extra={
            "machine_clock": record.get("clock_source") == "machine",
            "unverified": bool(unverified) and not partly,
            "unverified_partly": " and ".join(unverified) if partly else "",
            "swept_instead": record.get("mode") == "sweep"
            and record.get("requested_mode") == "window",
            "still_listed": sum(len(c.get("listed") or ()) for c in closing),
            "kept_open": sum(int(c.get("kept") or 0) for c in closing),
        },
        concurrency={key: record.get(key) for key in CONCURRENCY_FIELDS},
    )
