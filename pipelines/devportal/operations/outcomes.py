"""What a run leaves that the warehouse cannot hold, kept in small files beside it.

A failed sync leaves no row in `sync_runs`: the run's record travels in the run's own load
package, which is loaded whole or not at all (a failed load is put back, a failed read never
reaches the load), and a destination that cannot be reached cannot be written at all. So the
last failure is written here, after the run has let go of the warehouse and its lock:
`<dlt folder>/<pipeline>.last_failure.json` (the dlt folder being `pipelines_dir(warehouse)`,
where dlt keeps the pipeline and `devportal packages` the packages set aside; `<pipeline>` is
`Target.pipeline_name`, so DuckDB and PostgreSQL synced from one folder keep theirs apart). The
same folder keeps when the models were last built (no engine records when a table was created)
and which alerts were already posted, so that each is posted once.

Each file is one JSON object replaced whole (written aside, then renamed): a reader never sees
half of one, and no two writers change one file in parts. A file that cannot be written (a
full or read-only disk) costs a debug line, never the command: the run's own one-line error
says what went wrong. Times are this machine's clock, in UTC. Nothing secret is written: a
failure's cause passes through `errors.server_text` (the scrub).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devportal.base.errors import server_text
from devportal.warehouse import pipelines_dir
from devportal.warehouse.target import Target

log = logging.getLogger("devportal.outcomes")

# the longest cause kept (one line, like the error printed)
CAUSE_LIMIT = 500


@dataclass(frozen=True)
class Failure:
    """The last failed run of a command (`sync`, `models`): when (UTC), exit code, cause."""

    at: datetime
    command: str
    exit_code: int
    cause: str


def now() -> datetime:
    return datetime.now(UTC)


def _file(target: Target, what: str) -> Path:
    return pipelines_dir(target.warehouse) / f"{target.pipeline_name}.{what}.json"


def _write(target: Target, what: str, data: dict[str, Any]) -> None:
    """Replace the file WHAT with DATA. Only where the warehouse's folder exists: a command that
    failed before it made one (no base_url, a path that cannot be a warehouse) leaves no
    folder behind."""
    path = _file(target, what)
    try:
        if not path.parent.parent.is_dir():
            return
        path.parent.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False
        ) as f:
            json.dump(data, f, default=str)
        os.chmod(f.name, 0o644)  # no secret in it; a monitor running as another user reads it
        os.replace(f.name, path)
    except OSError as err:
        log.debug("could not write %s: %s", path, err)


def _read(target: Target, what: str) -> dict[str, Any] | None:
    path = _file(target, what)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or not ours to trust
        return None
    return data if isinstance(data, dict) else None


def _time(value: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def record_failure(target: Target, command: str, exit_code: int, cause: str) -> Failure:
    """Record that COMMAND failed on TARGET now, with its one-line CAUSE (scrubbed here)."""
    failure = Failure(now(), command, exit_code, server_text(cause, CAUSE_LIMIT))
    _write(target, "last_failure", {**asdict(failure), "at": failure.at.isoformat()})
    return failure


def last_failure(target: Target) -> Failure | None:
    data = _read(target, "last_failure")
    at = _time(data.get("at")) if data else None
    if data is None or at is None:
        return None
    return Failure(
        at=at,
        command=str(data.get("command", "sync")),
        exit_code=int(data.get("exit_code", 1)),
        cause=server_text(data.get("cause", ""), CAUSE_LIMIT),
    )


def record_models_built(target: Target) -> None:
    """The models of TARGET were built (committed) now."""
    _write(target, "models_built", {"at": now().isoformat()})


def models_built_at(target: Target) -> datetime | None:
    data = _read(target, "models_built")
    return _time(data.get("at")) if data else None


def already_alerted(target: Target, kind: str, key: str) -> bool:
    """Whether the alert KIND was already posted for KEY (a run, a month)."""
    data = _read(target, f"alerted_{kind}")
    return data is not None and data.get("key") == key


def mark_alerted(target: Target, kind: str, key: str) -> None:
    _write(target, f"alerted_{kind}", {"key": key, "at": now().isoformat()})
