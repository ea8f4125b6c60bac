"""A verified read of a subscription partition spooled to a local Arrow file while paging, so
memory stays flat: writing the batches (`spool_pages`) and handing them to dlt (`Spool`)."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from devportal.extract import extra_fields, transform
from devportal.extract.reading.list_read import ListRead
from devportal.http import Page

# decoded page bytes a spooled batch holds at most (about): the rows of a batch are Python
# objects until it is typed, so rows that carry many fields make smaller batches (20,000 rows of
# the spec's four fields are about 2 MB: unaffected; wide rows are not held 20,000 at a time)
BATCH_BYTES = 3 * 2**20


class Spool:
    """One verified read of a subscription partition, on disk until dlt has taken it.

    The file goes when `discard()` is called, or with this object (a source created but never
    run leaves nothing behind). `extra`: rows the read missed that the API confirmed one by one
    (`?id=N`), loaded after the file's. `kept`: current ids the sweep may not close although it
    did not read them (nothing confirmed them); `closes_missing` False: it closes none of those.
    `fields`: the paths its rows had; `statuses`: rows per status (the confirmed rows included).
    """

    def __init__(
        self,
        path: Path,
        ids: np.ndarray,
        is_test: bool,
        report: ListRead,
        dq: transform.DataQuality,
        fields: extra_fields.FieldStats | None = None,
        statuses: Counter[str] | None = None,
    ) -> None:
        self.path, self.ids, self.is_test, self.report, self.dq = path, ids, is_test, report, dq
        self.fields = fields if fields is not None else extra_fields.FieldStats()
        self.statuses = statuses if statuses is not None else Counter()
        self.extra: pa.Table | None = None
        self.kept = np.zeros(0, dtype=np.int64)
        self.closes_missing = report.verified
        self._finalizer = weakref.finalize(self, path.unlink, missing_ok=True)

    @property
    def extra_ids(self) -> np.ndarray:
        if self.extra is None:
            return np.zeros(0, dtype=np.int64)
        return self.extra.column("id").to_numpy().astype(np.int64)

    @property
    def rows(self) -> int:
        """Rows handed to dlt: the unique ids read and the rows confirmed one by one."""
        return self.report.unique_ids + (self.extra.num_rows if self.extra is not None else 0)

    def staying(self) -> np.ndarray:
        """The ids this sweep leaves current: read, confirmed, or kept."""
        return np.concatenate([self.ids, self.extra_ids, self.kept])

    def batches(self) -> Iterator[pa.Table]:
        """Each spooled batch (an Arrow stream of its own: its extra columns are its own)."""
        # a plain read, not a memory map: mapped pages would count as resident memory
        with pa.OSFile(str(self.path), "rb") as source:
            size = source.size()
            while source.tell() < size:
                yield pa.ipc.open_stream(source).read_all()
        if self.extra is not None and self.extra.num_rows:
            yield self.extra

    def discard(self) -> None:
        self._finalizer()


def spool_pages(
    pages: Iterator[Page],
    is_test: bool,
    dq: transform.DataQuality,
    spool_path: Path,
    batch_rows: int,
    on_page: Callable[[Page, int], None],
    fields: extra_fields.FieldStats | None = None,
    statuses: Counter[str] | None = None,
) -> tuple[np.ndarray, set[int]]:
    """Transform pages into Arrow batches of about `batch_rows` in a spool file, one Arrow
    stream after another (each batch has the extra columns of its own rows).

    Returns the ids written (for the integrity check) and the users (`service_id`) seen; the
    fields seen go to FIELDS, the rows per status to STATUSES."""
    id_chunks: list[np.ndarray] = []
    services: set[int] = set()
    rows_read = 0
    fields = fields if fields is not None else extra_fields.FieldStats()
    with pa.OSFile(str(spool_path), "wb") as sink:
        buffer: list[dict[str, Any]] = []

        def flush() -> None:
            table, ids = transform.subscriptions_table(buffer, is_test, dq, fields)
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            id_chunks.append(ids)
            services.update(table.column("service_id").drop_null().unique().to_pylist())
            if statuses is not None:
                statuses.update(transform.status_counts(table.column("status")))

        buffered = 0  # decoded bytes of the pages in `buffer`: pages of huge rows flush early
        for page in pages:
            buffer.extend(page.data)
            buffered += page.size
            on_page(page, rows_read + len(buffer))
            if len(buffer) >= batch_rows or buffered >= BATCH_BYTES:
                flush()
                rows_read += len(buffer)
                buffer, buffered = [], 0
        if buffer:
            flush()
    return (np.concatenate(id_chunks) if id_chunks else np.zeros(0, np.int64)), services
