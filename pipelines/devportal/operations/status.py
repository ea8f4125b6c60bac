"""The state of a warehouse for a person or a scheduler (`devportal status`): the last
successful sync, the last failure, the packages set aside, when the models were built, and
the verdict: fresh, stale, failed, or no sync yet.

Where each fact comes from, each from one place:
- the last successful sync: `sync_runs` joined with dlt's `_dlt_loads` (status 0), in the
  warehouse (DuckDB) or the database (PostgreSQL), read-only: the same rule as the models'
  `stg_sync_runs`. Its age is this machine's clock against the run's `started_at` (also this
  machine's clock; `observed_at`, the API server's, may be a simulated or a skewed clock);
- the last failure and the models' build time: the files `devportal.operations.outcomes` keeps beside the
  warehouse (a failed run leaves nothing in `sync_runs`);
- the packages set aside: `devportal.load.packages` (what `devportal packages` lists);
- what the models were built from: `analytics.as_of` (the server clock of the sync they rest on);
- a DuckDB file `devportal migrate` moved elsewhere: its mark (`devportal.warehouse.moved`), said first.

A failure is current when nothing succeeded after it: a failed `sync` is over once a later
load has committed (`_dlt_loads.inserted_at`, the loading machine's clock); a failed `models`
build once the models were built again or a later sync loaded.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from devportal.load.packages import set_aside_packages, set_aside_reason
from devportal.operations import outcomes
from devportal.operations.outcomes import Failure
from devportal.warehouse import (
    ANALYTICS_SCHEMA,
    RAW_SCHEMA,
    engines,
    locate_warehouse,
    pipelines_dir,
)
from devportal.warehouse.moved import Moved, moved
from devportal.warehouse.target import Target

# the states, worst first where several hold (`Status.state`)
STATES = ("moved", "no sync", "failed", "stale", "fresh")


@dataclass(frozen=True)
class LastSync:
    """The latest successful sync run: its record in `sync_runs` and when its load committed."""

    run_id: str
    mode: str
    started_at: datetime  # this machine's clock at the start of the run, UTC
    observed_at: datetime | None  # the API server's clock (the history boundary), UTC
    clock_source: str  # whose clock `observed_at` is: `server` or `machine`
    loaded_at: datetime | None  # when its load committed (`_dlt_loads.inserted_at`), UTC
    rows: dict[str, int] = field(default_factory=dict)


@dataclass
class Disk:
    """Bytes on disk: the warehouse file (with a write-ahead log), dlt's folder beside it (also
    on PostgreSQL: packages, state, the run records), and the room free on its device."""

    warehouse: int | None  # None on PostgreSQL: the server's own
    folder: int
    free: int | None

    @classmethod
    def of(cls, target: Target) -> Disk:
        path = Path(target.warehouse).resolve()
        files = [p for p in (path, path.with_name(path.name + ".wal")) if p.is_file()]
        warehouse = sum(p.stat().st_size for p in files) if target.is_file else None
        folder = pipelines_dir(path)
        size = 0
        for entry in folder.rglob("*") if folder.is_dir() else ():
            with contextlib.suppress(OSError):  # a run may remove files as they are counted
                if entry.is_file():
                    size += entry.stat().st_size
        where = next((p for p in (folder, path.parent) if p.exists()), None)
        free = shutil.disk_usage(where).free if where is not None else None
        return cls(warehouse, size, free)

    def text(self) -> str:
        parts = [] if self.warehouse is None else [f"warehouse {_mb(self.warehouse)}"]
        parts.append(f"dlt's folder beside it {_mb(self.folder)}")
        if self.free is not None:
            parts.append(f"{_mb(self.free)} free (a writer's copy needs the warehouse's size)")
        return ", ".join(parts)


def _mb(size: int) -> str:
    return f"{size / 10**6:,.1f} MB"


@dataclass
class Status:
    target: Target
    checked_at: datetime  # this machine's clock, UTC
    max_age_hours: float
    last_sync: LastSync | None = None
    successful_syncs: int = 0
    failure: Failure | None = None
    set_aside: list[tuple[str, str]] = field(default_factory=list)  # (load id, reason)
    models_built_at: datetime | None = None
    models_as_of: datetime | None = None  # analytics.as_of: the sync the models rest on
    found: bool = True  # False: no DuckDB warehouse file there (yet)
    moved: Moved | None = None  # the DuckDB file was moved elsewhere by `devportal migrate`
    disk: Disk | None = None  # what the warehouse and dlt's folder beside it take, free room

    @property
    def age(self) -> timedelta | None:
        """How old the data is: now against the last successful sync's start."""
        if self.last_sync is None:
            return None
        return self.checked_at - self.last_sync.started_at

    @property
    def stale(self) -> bool:
        """No successful sync, or the last one is at least `max_age_hours` old."""
        age = self.age
        return age is None or age >= timedelta(hours=self.max_age_hours)

    @property
    def failed(self) -> bool:
        """The last failure is current: nothing succeeded after it."""
        failure = self.failure
        if failure is None:
            return False
        sync = self.last_sync
        loaded = sync.loaded_at or sync.started_at if sync is not None else None
        if loaded is not None and loaded > failure.at:
            return False
        built = self.models_built_at
        return not (failure.command == "models" and built is not None and built > failure.at)

    @property
    def state(self) -> str:
        if self.moved is not None:
            return "moved"
        if self.last_sync is None:
            return "no sync"
        if self.failed:
            return "failed"
        return "stale" if self.stale else "fresh"

    @property
    def exit_code(self) -> int:
        """0 fresh; 1 stale, failed, moved or no sync yet (as dbt's `source freshness` exits 1
        on a source past its `error_after`)."""
        return 0 if self.state == "fresh" else 1

    @property
    def models_current(self) -> bool | None:
        """Whether the models rest on the last successful sync; None when not known."""
        sync = self.last_sync
        if sync is None or self.models_as_of is None or sync.observed_at is None:
            return None
        return self.models_as_of >= sync.observed_at

    def staleness(self) -> str | None:
        """Why the data is stale, or None when it is not."""
        if self.last_sync is None:
            return "no successful sync yet"
        if self.stale:
            return (
                f"the last successful sync is {duration(self.age)} old, "
                f"max_age_hours is {self.max_age_hours:g}"
            )
        return None

    def problems(self) -> list[str]:
        """What makes the status non-fresh, one clause each."""
        stale = self.staleness()
        said = [self.moved.line()] if self.moved is not None else []
        said += [stale] if stale else []
        if self.failed and self.failure is not None:
            said.append(f"the last {self.failure.command} failed: {self.failure.cause}")
        return said


def where(target: Target) -> str:
    """The warehouse for people: the DuckDB file, or the destination's name."""
    if target.is_file:
        return str(target.warehouse)
    return f"{target.name} (dataset {RAW_SCHEMA})"


def duration(delta: timedelta | None) -> str:
    """`3 min`, `5 h 12 min`, `2 d 4 h`; negative (a clock ahead) reads as 0."""
    if delta is None:
        return "n/a"
    minutes = max(0, int(delta.total_seconds() // 60))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min"


def utc(value: Any) -> datetime | None:
    """A timestamp as an aware UTC datetime (naive ones are UTC, as devportal stores them)."""
    if not isinstance(value, datetime):
        return None
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def collect(target: Target, max_age_hours: float) -> Status:
    """The status of TARGET now. A DuckDB warehouse that does not exist yet is "no sync"; one
    that cannot be read, or a server that cannot be reached, is the one-line error of
    `engines.connect`."""
    status = Status(target, outcomes.now(), max_age_hours)
    status.failure = outcomes.last_failure(target)
    status.models_built_at = outcomes.models_built_at(target)
    status.set_aside = [(p.name, set_aside_reason(p)) for p in set_aside_packages(target.warehouse)]
    status.disk = Disk.of(target)
    if target.is_file and locate_warehouse(target.warehouse) is None:
        status.found = False
        return status
    if target.is_file:
        status.moved = moved(target.warehouse)
    with engines.connect(target, read_only=True) as engine:
        _read(engine, status)
    return status


_LAST_SYNC = """
    select runs.run_id, runs.mode, runs.started_at, runs.observed_at, runs.clock_source,
        runs.rows_read, loads.inserted_at
    from {runs} as runs
    inner join {loads} as loads on loads.load_id = runs._dlt_load_id
    where loads.status = 0
    order by runs.started_at desc, loads.inserted_at desc
"""


def _read(engine: engines.Engine, status: Status) -> None:
    raw = engine.relations(RAW_SCHEMA)
    if not {"sync_runs", "_dlt_loads"} <= set(raw):
        return
    sql = _LAST_SYNC.format(
        runs=engine.qualify(RAW_SCHEMA, "sync_runs"),
        loads=engine.qualify(RAW_SCHEMA, "_dlt_loads"),
    )
    rows = engine.execute(sql)
    status.successful_syncs = len(rows)
    if rows:
        run_id, mode, started, observed, clock, rows_read, inserted = rows[0]
        status.last_sync = LastSync(
            run_id=str(run_id),
            mode=str(mode or ""),
            started_at=utc(started) or status.checked_at,
            observed_at=utc(observed),
            clock_source=str(clock or ""),
            loaded_at=utc(inserted),
            rows=_rows(rows_read),
        )
    if "as_of" in engine.relations(ANALYTICS_SCHEMA):
        found = engine.execute(f"select as_of from {engine.qualify(ANALYTICS_SCHEMA, 'as_of')}")
        status.models_as_of = utc(found[0][0]) if found else None


def _rows(value: Any) -> dict[str, int]:
    """`sync_runs.rows_read` as {table: rows}: JSON text (DuckDB) or parsed (PostgreSQL)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): int(v) for k, v in value.items() if isinstance(v, int | float)}


def as_json(status: Status) -> dict[str, Any]:
    """The status as one JSON object (`devportal status --format json`); times ISO 8601 UTC."""

    def moment(value: datetime | None) -> str | None:
        return value.isoformat().replace("+00:00", "Z") if value is not None else None

    sync = status.last_sync
    failure = status.failure
    age = status.age
    return {
        "state": status.state,
        "fresh": status.state == "fresh",
        "stale": status.stale,
        "failed": status.failed,
        "problems": status.problems(),
        "checked_at": moment(status.checked_at),
        "max_age_hours": status.max_age_hours,
        "destination": status.target.name,
        "warehouse": where(status.target),
        "successful_syncs": status.successful_syncs,
        "last_sync": None
        if sync is None
        else {
            "run_id": sync.run_id,
            "mode": sync.mode,
            "started_at": moment(sync.started_at),
            "observed_at": moment(sync.observed_at),
            "clock_source": sync.clock_source,
            "loaded_at": moment(sync.loaded_at),
            "age_hours": round(age.total_seconds() / 3600, 3) if age is not None else None,
            "rows": sync.rows,
        },
        "last_failure": None
        if failure is None
        else {
            "at": moment(failure.at),
            "command": failure.command,
            "exit_code": failure.exit_code,
            "cause": failure.cause,
            "current": status.failed,
        },
        "set_aside": [{"load_id": load_id, "reason": why} for load_id, why in status.set_aside],
        "disk": None
        if status.disk is None
        else {
            "warehouse_bytes": status.disk.warehouse,
            "dlt_folder_bytes": status.disk.folder,
            "free_bytes": status.disk.free,
        },
        "moved": None
        if status.moved is None
        else {
            "to": status.moved.destination,
            "where": status.moved.where,
            "at": moment(status.moved.at),
        },
        "models": {
            "built_at": moment(status.models_built_at),
            "as_of": moment(status.models_as_of),
            "current": status.models_current,
        },
    }


def as_lines(status: Status) -> list[tuple[str, str]]:
    """The status as (label, text) rows for the table."""
    now = status.checked_at

    def when(value: datetime) -> str:
        return f"{value:%Y-%m-%d %H:%M:%S} UTC ({duration(now - value)} ago)"

    problems = status.problems()
    verdict = status.state + (f": {'; '.join(problems)}" if problems else "")
    if status.state == "fresh":
        verdict += f" (synced within max_age_hours {status.max_age_hours:g})"
    place = where(status.target) + ("" if status.found else " (no warehouse file there yet)")
    lines = [("status", verdict), ("warehouse", place)]
    sync = status.last_sync
    if sync is None:
        lines.append(("last sync", "none succeeded yet"))
    else:
        clock = "server clock" if sync.clock_source != "machine" else "this machine's clock"
        observed = (
            f", as of {sync.observed_at:%Y-%m-%d %H:%M:%S} ({clock})" if sync.observed_at else ""
        )
        lines.append(("last sync", f"{when(sync.started_at)}{observed}, {sync.mode}"))
        rows = ", ".join(f"{table} {n:,}" for table, n in sync.rows.items()) or "none"
        syncs = status.successful_syncs
        lines.append(("rows read", f"{rows} ({syncs} successful sync{'' if syncs == 1 else 's'})"))
    failure = status.failure
    if failure is None:
        lines.append(("last failure", "none recorded"))
    else:
        after = "" if status.failed else " (a later run succeeded)"
        lines.append(
            (
                "last failure",
                f"{when(failure.at)}, {failure.command} exit {failure.exit_code}{after}: "
                f"{failure.cause}",
            )
        )
    if status.set_aside:
        ids = ", ".join(load_id for load_id, _ in status.set_aside)
        lines.append(
            ("set aside", f"{len(status.set_aside)} package(s): {ids} (see `devportal packages`)")
        )
    else:
        lines.append(("set aside", "none"))
    lines.append(("models", _models_text(status, when)))
    if status.disk is not None:
        lines.append(("disk", status.disk.text()))
    return lines


def _models_text(status: Status, when: Any) -> str:
    built = (
        f"built {when(status.models_built_at)}"
        if status.models_built_at
        else "built: not recorded here"
    )
    if status.models_as_of is None:
        return "not built yet" if status.models_built_at is None else built
    rests = f"on the sync as of {status.models_as_of:%Y-%m-%d %H:%M:%S}"
    current = status.models_current
    if current is False:
        command = "devportal models" + (
            "" if status.target.is_file else f" --destination {status.target.name}"
        )
        rests += f" (not the last sync: run `{command}`)"
    elif current:
        rests += " (the last sync)"
    return f"{built}, {rests}"
