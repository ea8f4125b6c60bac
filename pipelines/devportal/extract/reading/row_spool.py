"""Dict rows spooled to a local file while a list is read, handed to dlt in batches: a read's
memory stays one batch, whatever the size of the list (200,000 users with 1.6M settings
values held as dicts took more than a gigabyte).

Rows are pickled in frames of at most `FRAME_ROWS`: the file is this process's own scratch,
read back only by it, and pickle keeps Python's types (datetimes stay datetimes for dlt)."""

from __future__ import annotations

import contextlib
import pickle
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

FRAME_ROWS = 5_000


class RowSpool:
    """Rows appended while reading, read back once in batches of at most `FRAME_ROWS`. With no
    folder, rows stay in memory (a bare source's small reads, the tests' pure functions)."""

    def __init__(self, folder: Path | None, name: str) -> None:
        self._pending: list[dict[str, Any]] = []
        self._file: IO[bytes] | None = None
        self._path: Path | None = None
        self.rows = 0
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            # kept open across appends: closed in `batches` or `discard`
            handle = tempfile.NamedTemporaryFile(  # noqa: SIM115
                "wb", prefix=f"{name}-", suffix=".pickle", dir=folder, delete=False
            )
            self._file, self._path = handle, Path(handle.name)

    def extend(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self._pending.append(row)
            self.rows += 1
            if self._file is not None and len(self._pending) >= FRAME_ROWS:
                self._flush()

    def _flush(self) -> None:
        if self._file is not None and self._pending:
            pickle.dump(self._pending, self._file, protocol=pickle.HIGHEST_PROTOCOL)
            self._pending = []

    def batches(self) -> Iterator[list[dict[str, Any]]]:
        """The rows in the order appended, a batch at a time; the file is removed after."""
        if self._file is None:
            if self._pending:
                yield self._pending
            return
        self._flush()
        self._file.close()
        assert self._path is not None
        try:
            with self._path.open("rb") as handle:
                while True:
                    try:
                        yield pickle.load(handle)
                    except EOFError:
                        break
        finally:
            self.discard()
            with contextlib.suppress(OSError):  # the last of the run's spools out removes it
                self._path.parent.rmdir()

    def discard(self) -> None:
        """Remove the file (a read that did not add up, a run that failed, rows handed over)."""
        self._pending = []
        if self._file is not None:
            self._file.close()
        if self._path is not None:
            self._path.unlink(missing_ok=True)
