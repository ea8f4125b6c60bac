"""A DuckDB warehouse that `devportal migrate` moved to another engine: marked, so that a
command reading the old file says in one line where the warehouse went and the setting that
makes that its home, instead of showing figures that stopped at the migration (issue 35).

The mark is `<dlt folder>/devportal.moved.json` beside the file (the folder `devportal.operations.outcomes`
keeps its records in): where it went, when, and the file it was written for (its device and
inode). DuckDB writers publish a new file by renaming a draft over the old one, so a file
written since (a migration back into it, a new warehouse at that path) is no longer the one
marked: the mark then applies no more and is dropped. Deleting the mark (the one line names it)
takes the old file up again as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from devportal.base.errors import ConfigError
from devportal.warehouse.paths import pipelines_dir
from devportal.warehouse.target import Target, home_setting

MARK = "devportal.moved.json"


@dataclass(frozen=True)
class Moved:
    """Where the warehouse file WAREHOUSE went: the destination's name (`postgres`), it for a
    person (`PostgreSQL (dataset devportal)`), when (UTC)."""

    warehouse: Path
    destination: str
    where: str
    at: datetime

    @property
    def mark(self) -> Path:
        return mark_path(self.warehouse)

    def line(self) -> str:
        """The one line a command reading the old file says."""
        return (
            f"warehouse {self.warehouse} was moved to {self.where} by `devportal migrate` on "
            f"{self.at:%Y-%m-%d %H:%M} UTC and holds nothing newer: make that the warehouse "
            f"of every command with {home_setting(self.destination)}, or pass --destination "
            f"{self.destination} (to use this file again as it is, delete {self.mark})"
        )


def mark_path(warehouse: str | Path) -> Path:
    return pipelines_dir(warehouse) / MARK


def _identity(warehouse: str | Path) -> list[int] | None:
    try:
        st = os.stat(warehouse)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def mark_moved(warehouse: str | Path, to: Target, where: str) -> None:
    """Mark the DuckDB file WAREHOUSE as moved to TO (described as WHERE). The migration is
    done whatever happens here: a mark that cannot be written is said on stderr by the
    caller's logging, never a failure."""
    path = mark_path(warehouse)
    data = {
        "destination": to.name,
        "where": where,
        "at": datetime.now(UTC).isoformat(),
        "file": _identity(warehouse),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    aside.write_text(json.dumps(data), encoding="utf-8")
    os.replace(aside, path)


def clear(warehouse: str | Path) -> None:
    """The file at WAREHOUSE is current again (a migration published into it)."""
    mark_path(warehouse).unlink(missing_ok=True)


def moved(warehouse: str | Path) -> Moved | None:
    """Where the DuckDB file WAREHOUSE was moved, None when it was not (or is no longer the
    file marked: a stale mark is dropped). A path that cannot be a warehouse at all (a symlink
    loop, a name too long) is not moved: opening it says what is wrong with it."""
    try:
        path = mark_path(warehouse)
    except (OSError, RuntimeError, ValueError):
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # not ours to trust
    if not isinstance(data, dict):
        return None
    if data.get("file") != _identity(warehouse):
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return None
    try:
        at = datetime.fromisoformat(str(data.get("at")))
    except ValueError:
        at = datetime.now(UTC)
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    name = str(data.get("destination") or "postgres")
    return Moved(Path(warehouse), name, str(data.get("where") or name), at.astimezone(UTC))


def refuse_moved(warehouse: str | Path) -> None:
    """Raise the one line (`ConfigError`, exit 2) when WAREHOUSE was moved."""
    found = moved(warehouse)
    if found is not None:
        raise ConfigError(found.line())
