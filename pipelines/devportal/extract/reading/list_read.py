"""What one list read saw (`ListRead`) and the checks it must pass before anything reaches
dlt: every page comes at the size page 1 came at, no page counts fewer rows than page 1 did
(a list may grow while it is read, never shrink), and the unique ids read plus the rows set
aside for lacking an id add up to the last `total` (else `ListMoved`: the read is no snapshot).
A list that grew is read to its new end: the page holding its old end is read again, and must
still begin with the rows read before (they stayed put), its new rows are added. A read whose
pages carry no `total` cannot be verified. `read_until_it_adds_up`: a list paged again until
one read passes them, refused in words that say what differed (`moves.refusal`).

The counts cannot see one thing: a row removed behind the reader while a signup lands at the
end keeps every `total`, and the rows behind the removed one slide back one place, so the row
at the edge of the page the reader is about to ask for slides onto the page it has read and is
never seen; the ids still add up. In a list ordered by id (either way), that row's id lies
between the ids at the two sides of the edge, so an edge whose ids are consecutive hides
nothing. Every edge whose ids jump is checked once the read is over (`_check_edges`): the page
before it is read again and must still hold the rows read from it; if it does not, rows were
removed behind the reader and the list is read again. One request per such edge, none where
ids are consecutive; a list in no id order is not checked (a signup in its middle moves rows
the same way as a removal)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from devportal.base.errors import IntegrityError
from devportal.extract.reading.moves import (
    COUNT,
    NO_ID,
    OUTRUN,
    PAGE_SIZE,
    REPEAT,
    SHIFTED,
    SHRANK,
    SLID,
    WRAPPER,
    Failure,
    ListMoved,
    PageLog,
    RowId,
    deterministic,
    refusal,
    subscription_id,
)
from devportal.http import ApiClient, Page

__all__ = ["ListMoved", "ListRead", "check_pages", "read_until_it_adds_up", "verify_ids"]

log = logging.getLogger("devportal.reading")
T = TypeVar("T")


@dataclass
class ListRead:
    """What one list read saw; goes into `sync_runs.sweeps`.

    `verified`: the pages reported a `total` and the rows read add up to it (unique ids plus
    rows set aside for lacking an id). Only a verified sweep may retire history. A list that
    grew while it was read adds up to its last `total`: `total_at_start` is page 1's, `added`
    the rows it grew by (read to its new end, `tail_pages` pages read again or beyond the end
    page 1 reported); `edge_pages`: pages read again at the end because the ids at their edge
    jump (`_check_edges`); `reread_because`: why each read thrown away did not add up.
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
    # how the current subscriptions this read did not list were confirmed (`CloseConfirmation.record`)
    closing: dict[str, Any] | None = None
    # rows that differ from what the destination holds, the only ones loaded (the settings
    # list; None: every row read is loaded)
    changed: int | None = None
    total_at_start: int | None = None
    added: int = 0
    tail_pages: int = 0
    edge_pages: int = 0
    reread_because: list[str] = field(default_factory=list)


def _same_list(first: Page, page: Page) -> None:
    """PAGE (after page 1, FIRST) pages the same list at the same size, and counts no fewer
    rows; else `ListMoved`."""
    n = page.number
    if first.per_page is not None and page.per_page is not None:
        if page.per_page != first.per_page:
            raise ListMoved(
                f"the page size changed while paging: page 1 came with per_page "
                f"{first.per_page}, page {n} with per_page {page.per_page}",
                PAGE_SIZE,
            )
    elif (
        page.total == first.total
        and None not in (page.last_page, first.last_page)
        and page.last_page != first.last_page  # no per_page to compare: the page counts
    ):
        raise ListMoved(
            f"the page size changed while paging: page 1 counted {first.last_page} pages "
            f"of the {first.total} rows, page {n} counted {page.last_page}",
            PAGE_SIZE,
        )
    if (first.total is None) != (page.total is None):
        said = "carries no total" if page.total is None else f"carries a total ({page.total})"
        raise ListMoved(f"page {n} {said} and page 1 did not", WRAPPER)
    if first.total is not None and page.total is not None and page.total < first.total:
        raise ListMoved(
            f"the total went from {first.total} at page 1 to {page.total} at page {n}: rows "
            "were removed while the list was paged",
            SHRANK,
        )


def check_pages(
    pages: Iterator[Page],
    report: ListRead,
    log_to: PageLog | None = None,
    fetch: Callable[[int], Page] | None = None,
    fetch_all: Callable[[list[int]], Iterable[Page]] | None = None,
) -> Iterator[Page]:
    """Pass pages through, failing as soon as they disagree about the list (`_same_list`);
    each is logged to LOG_TO. When the list grew while it was paged, FETCH(n) reads page n
    again: the pages up to its new end follow (`_tail`). Once every page is through, the
    pages before the edges whose ids jump are read again (`_check_edges`; FETCH_ALL(numbers):
    those pages in that order, at once; else FETCH one by one)."""
    pages_log = log_to if log_to is not None else PageLog()
    first: Page | None = None
    report.pages, report.added, report.tail_pages, report.edge_pages = 0, 0, 0, 0
    for page in pages:
        report.pages += 1
        if first is None:
            first = page
            report.total = report.total_at_start = page.total
        else:
            _same_list(first, page)
            if page.total is not None and report.total is not None:
                report.total = max(report.total, page.total)
        if not page.data and page.next_page_url:
            report.note = f"page {page.number} was empty but pointed to a next page"
        pages_log.add(page)
        yield page
    if first is not None and fetch is not None:
        read_once = len(pages_log.numbers)  # the pages of the read itself, before its tail
        yield from _tail(first, report, pages_log, fetch)
        again = fetch_all or (lambda numbers: map(fetch, numbers))
        _check_edges(first, report, pages_log, read_once, again)
    if report.total is not None and report.total_at_start is not None:
        report.added = report.total - report.total_at_start


def _tail(
    first: Page, report: ListRead, pages: PageLog, fetch: Callable[[int], Page]
) -> Iterator[Page]:
    """The rows a list grew by while it was paged, beyond the rows read: the page that holds
    the last row read is read again (then the pages after it) until the rows read reach the
    `total` (the largest any page reported, and no smaller than the last one's). That page
    must still hold the rows read before at its first positions (they stayed put: at least
    one is checked); only its new rows are passed on, as a page holding just them."""
    size = first.per_page or len(first.data)
    limit = max(16, report.pages)
    grew = report.total != report.total_at_start  # else rows short of it are a count's fault
    checked = False  # a row read before was found again at its place
    while grew and report.total is not None and size and pages.rows < report.total:
        if report.tail_pages >= limit:
            raise ListMoved(
                f"the list grew faster than it could be read: total {report.total_at_start} at "
                f"page 1, {report.total} after {report.tail_pages} more pages",
                OUTRUN,
            )
        start = pages.rows
        number = (start if checked else max(start - 1, 0)) // size + 1
        page = fetch(number)
        report.tail_pages += 1
        report.pages += 1
        _same_list(first, page)
        total = page.total if page.total is not None else 0
        if total < report.total:
            raise ListMoved(
                f"the total went from {report.total} to {total} (page {number}, read again "
                "at the end): rows were removed while the list was paged",
                SHRANK,
            )
        report.total = total
        offset = start - (number - 1) * size
        held = pages.ids_between(start - offset, start).tolist()
        again = [pages.row_id(row) for row in page.data[:offset]]
        if again != [None if i == NO_ID else i for i in held]:
            raise ListMoved(
                f"page {number}, read again for the rows added while the list was paged, no "
                f"longer holds the rows read before at positions {start - offset + 1} to "
                f"{start}: rows before them moved",
                SHIFTED,
            )
        checked = True
        fresh = page.data[offset:]
        if offset == size:  # the page read again ends where the rows read end: the next one
            continue
        if not fresh:  # it counts rows it does not hold: no growth, a count that is wrong
            raise ListMoved(
                f"page {number} counts {total} rows but holds none after row {start}", COUNT
            )
        tail = replace(page, data=fresh)
        pages.add(tail)
        yield tail


def _check_edges(
    first: Page,
    report: ListRead,
    pages: PageLog,
    read_once: int,
    fetch_all: Callable[[list[int]], Iterable[Page]],
) -> None:
    """Once the read is over: the page before each edge whose ids jump, read again, must still
    hold the rows read from it at their places; else `ListMoved` (SLID), naming the rows that
    slid onto it unseen. See the module's docstring for why; READ_ONCE: the pages logged by
    the read itself (a grown list's tail is checked by `_tail`).

    Only for a read that adds up so far (else it is read again anyway) and whose ids run in
    one direction (ids ascending or descending: only then does a row missed at an edge have an
    id between the ids at its sides). A row without a usable id at an edge: that edge is
    checked."""
    every = np.concatenate(pages.ids) if pages.ids else np.zeros(0, np.int64)
    known = every[every != NO_ID]
    unique = np.unique(known)
    if report.total is None or unique.size != known.size:
        return  # no total to add up to, or an id came twice: read again whatever the edges
    if unique.size + (every.size - known.size) != report.total or known.size < 2:
        return
    steps = np.diff(known)
    if not ((steps > 0).all() or (steps < 0).all()):
        return  # in no id order: a row missed at an edge has no place to be looked for
    edges = []  # index in the log of the page before each edge whose ids jump
    for n in range(1, read_once):
        before, after = pages.ids[n - 1], pages.ids[n]
        if not before.size or not after.size or pages.numbers[n] != pages.numbers[n - 1] + 1:
            continue
        a, c = int(before[-1]), int(after[0])
        if NO_ID not in (a, c) and abs(c - a) == 1:
            continue  # consecutive ids: no row fits between them
        edges.append(n - 1)
    if not edges:
        return
    numbers = [pages.numbers[n] for n in edges]
    for n, page in zip(edges, fetch_all(numbers), strict=True):
        report.edge_pages += 1
        _same_list(first, page)
        held = [None if i == NO_ID else i for i in pages.ids[n].tolist()]
        if [pages.row_id(row) for row in page.data[: len(held)]] == held:
            continue
        a, c = pages.ids[n][-1], pages.ids[n + 1][0]
        low, high = (
            (min(a, c), max(a, c)) if NO_ID not in (a, c) else (NO_ID, np.iinfo(np.int64).max)
        )
        now = np.array([i for i in map(pages.row_id, page.data) if i is not None], np.int64)
        slid = now[(now > low) & (now < high) & ~np.isin(now, unique)]
        number = pages.numbers[n]
        if slid.size == 1:
            seen = f"the row with id {slid[0]} slid back onto it from page {number + 1} unseen"
        elif slid.size:
            named = ", ".join(str(i) for i in slid[:5].tolist())
            seen = f"the rows with ids {named} slid back onto it from page {number + 1} unseen"
        else:
            seen = "a row may have slid back across its edge unseen"
        raise ListMoved(
            f"page {number}, read again at the end, no longer holds the rows read from it: "
            f"rows before them were removed while the list was paged, and {seen}",
            SLID,
        )


def verify_ids(ids: np.ndarray, report: ListRead, dropped: int = 0) -> None:
    """Check the ids of one read against the wrapper's `total` (the last one, for a list that
    grew while it was read).

    Rows set aside for lacking a usable id (`dropped`, counted as data quality) are part of the
    total: a list with such a row adds up, and re-reading it would not change anything.
    """
    unique = int(np.unique(ids).size) if ids.size else 0
    report.rows, report.unique_ids, report.dropped = int(ids.size), unique, dropped
    if unique != ids.size:
        raise ListMoved(f"{ids.size - unique} ids appeared twice while paging", REPEAT)
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
    row_id: RowId = subscription_id,
    noun: str = "subscription",
) -> T:
    """What `read_pages(pages)` returns for the first read of the WHAT list that adds up (raises
    no `ListMoved`), paging it at most ATTEMPTS times. Each read pages the list REPORT names (its
    endpoint and params) through `check_pages` (ROW_ID: a row's id, for the page log); FIRST is
    page 1 when the caller already has it (used by the first read only: a read again starts
    from a fresh page 1). REPORT describes the read kept (its attempt, its note, why the reads
    before it were thrown away) and is `complete`. A read that does not add up must leave
    nothing behind (`read_pages` cleans up before the error leaves it). Two reads in a row that
    fail the same way (`moves.deterministic`) end the reading early; then, or after ATTEMPTS
    reads, IntegrityError in words that say what differed (`moves.refusal`, NOUN: a row).
    """
    failures: list[Failure] = []
    report.reread_because = []
    for attempt in range(1, attempts + 1):
        report.attempts, report.note, report.dropped = attempt, None, 0
        pages = client.iter_pages(report.endpoint, report.params, first if attempt == 1 else None)
        pages_log = PageLog(row_id)

        def fetch(number: int, read: PageLog = pages_log) -> Page:
            size = read.sizes[0] if read.sizes else None  # page 1's: the body cap
            return client.fetch_page(report.endpoint, report.params, number, size)

        def fetch_all(numbers: list[int], one: Callable[[int], Page] = fetch) -> Iterator[Page]:
            return (page for _number, page in client.map_concurrent(one, numbers))

        try:
            result = read_pages(check_pages(pages, report, pages_log, fetch, fetch_all))
        except ListMoved as moved:
            failure = Failure.of(moved, pages_log, report.total_at_start, report.total,
                                 report.dropped)  # fmt: skip
            failures.append(failure)
            report.reread_because.append(failure.describe(noun))
            if deterministic(failures[-2:]):
                break
            log.warning(
                "%s list did not add up (%s); reading it again (%d/%d)",
                what,
                failure.describe(noun),
                attempt,
                attempts,
            )
            continue
        report.complete = True
        if report.added:
            log.info(
                "%s list grew by %d rows while it was read (total %s at page 1, %s at the end; "
                "the rows read before stayed put)",
                what,
                report.added,
                report.total_at_start,
                report.total,
            )
        return result
    raise IntegrityError(refusal(what, noun, failures))
