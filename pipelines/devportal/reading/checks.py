"""What one list read saw (`ListRead`) and the checks it must pass before anything reaches
dlt: every page reports the same `total`, and the unique ids read plus the rows set aside for
lacking an id add up to it (else `ListMoved`: the read is no snapshot). A read whose pages carry
no `total` cannot be verified. `read_until_it_adds_up`: a list paged again until one read passes
them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from devportal.client import ApiClient, Page
from devportal.errors import IntegrityError

log = logging.getLogger("devportal.reading")
T = TypeVar("T")


@dataclass
class ListRead:
    """What one list read saw; goes into `sync_runs.sweeps`.

    `verified`: the pages reported a `total` and the rows read add up to it (unique ids plus
    rows set aside for lacking an id). Only a verified sweep may retire history.
    """

    endpoint: str
    params: dict[str, str]
    total: int | None = None
    rows: int = 0
    unique_ids: int = 0
    dropped: int = 0
    pages: int = 0
    attempts: int = 0
    complete: bool = False
    verified: bool = False
    note: str | None = None
    # how the current subscriptions this read did not list were settled (`Settling.record`)
    closing: dict[str, Any] | None = None
    # rows that differ from what the destination holds, the only ones loaded (the settings
    # list; None: every row read is loaded)
    changed: int | None = None


class ListMoved(Exception):
    """The list changed while it was paged; the read is not a snapshot of anything."""


def check_pages(pages: Iterator[Page], report: ListRead) -> Iterator[Page]:
    """Pass pages through, failing as soon as they disagree about the list's size."""
    first_total: int | None = None
    first_last: int | None = None
    report.pages = 0
    for page in pages:
        report.pages += 1
        if report.pages == 1:
            first_total, first_last = page.total, page.last_page
            report.total = page.total
        elif page.total != first_total or (first_last is not None and page.last_page != first_last):
            raise ListMoved(f"total went from {first_total} to {page.total} while paging")
        if not page.data and page.next_page_url:
            report.note = f"page {page.number} was empty but pointed to a next page"
        yield page


def verify_ids(ids: np.ndarray, report: ListRead, dropped: int = 0) -> None:
    """Check the ids of one read against the wrapper's `total`.

    Rows set aside for lacking a usable id (`dropped`, counted as data quality) are part of the
    total: a list with such a row adds up, and re-reading it would not change anything.
    """
    unique = int(np.unique(ids).size) if ids.size else 0
    report.rows, report.unique_ids, report.dropped = int(ids.size), unique, dropped
    if unique != ids.size:
        raise ListMoved(f"{ids.size - unique} ids appeared twice while paging")
    if report.total is None:
        report.verified = False
        report.note = report.note or "the pages carry no total to check the rows against"
        return
    if unique + dropped != report.total:
        extra = f" and {dropped} rows without a usable id" if dropped else ""
        raise ListMoved(
            f"read {unique} unique rows{extra} but the API reports total {report.total}"
        )
    report.verified = True


def read_until_it_adds_up(
    what: str,
    client: ApiClient,
    report: ListRead,
    attempts: int,
    read_pages: Callable[[Iterator[Page]], T],
    first: Page | None = None,
) -> T:
    """What `read_pages(pages)` returns for the first read of the WHAT list that adds up (raises
    no `ListMoved`), paging it at most ATTEMPTS times. Each read pages the list REPORT names (its
    endpoint and params) through `check_pages`; FIRST is page 1 when the caller already has it
    (used by the first read only: a read again starts from a fresh page 1). REPORT describes the
    read kept (its attempt, its note) and is `complete`. A read that does not add up must leave
    nothing behind (`read_pages` cleans up before the error leaves it); after ATTEMPTS of them,
    IntegrityError.
    """
    last_error = ""
    for attempt in range(1, attempts + 1):
        report.attempts, report.note = attempt, None
        pages = client.iter_pages(report.endpoint, report.params, first if attempt == 1 else None)
        try:
            result = read_pages(check_pages(pages, report))
        except ListMoved as moved:
            last_error = str(moved)
            log.warning(
                "%s list did not add up (%s); reading it again (%d/%d)",
                what,
                moved,
                attempt,
                attempts,
            )
            continue
        report.complete = True
        return result
    raise IntegrityError(
        f"the {what} list kept changing or did not add up in {attempts} reads "
        f"({last_error}); nothing was loaded: run the sync again later, and if it keeps "
        "failing the API's pages disagree with their own `total`"
    )
