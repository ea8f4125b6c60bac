"""Walking a list, the paging half of `ApiClient`: page 1 tells `last_page`, pages 2..last are
fetched by a pool of workers sharing the session and yielded in order, at most twice the
current concurrency limit and `AHEAD_BYTES` ahead so memory stays flat; without a usable
`last_page`, `next_page_url` is followed one page at a time. `Prefetch` reads one list ahead
on a thread of its own.

A stopped run (`Halt`: a signal, Ctrl-C) ends every wait of the read at once, on whichever
thread waits: the reader's, the prefetch's, the workers' (their requests in flight are cut, no
new one is sent). While a client reads, the signals that stop a run are held (`HeldSignals`):
they stop the client at once and are raised in the main thread where the read waits next,
never at an arbitrary line (inside an import, a thread's start, a finalizer: a lock left
broken, a module half imported, the exception printed and lost while the run goes on). The
waits also look at `errors.Stopped.received`, so a stop raised elsewhere and lost still ends
the read at its next wait."""

from __future__ import annotations

import contextlib
import queue
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, InvalidStateError, ThreadPoolExecutor, wait
from types import FrameType
from typing import Any, cast

from devportal.base.errors import Stopped
from devportal.http.body import MIB
from devportal.http.concurrency import Concurrency
from devportal.http.pages import Page, PageGuard, page_parser, refused, row_keys

# What `ApiClient.get_json` returns instead of `(body, headers)`: `check(body, headers)`.
Check = Callable[[Any, Mapping[str, str]], Any]

AHEAD_BYTES = 64 * MIB  # decoded bytes of pages read ahead of the reader, at most (about)
# how often a wait looks at `Stopped.received` besides its own wake-up (a lost stop's bound)
STOP_CHECK_S = 0.5
# the signals that stop a run, held while a client reads (where the platform has them)
HELD_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")
_END = object()


class Halt:
    """Whether one client's reading was stopped (`set`), and waits that end when it is.

    `signum`: the stop's signal, this client's own or the process's (`Stopped.received`, set
    after this client was made). `check` raises what the stop means where the run is:
    `Stopped`, or `KeyboardInterrupt` for SIGINT (Ctrl-C). `set` only sets a future and wakes
    its waiters: safe in a signal handler on the main thread while other threads wait."""

    def __init__(self) -> None:
        self._own: int | None = None
        self._woken: Future[None] = Future()
        self._before = Stopped.received  # a stop of an earlier run in this process is not ours
        self.raised = False  # the stop was raised in the main thread: the run has it

    def set(self, signum: int) -> None:
        if self._own is None:
            self._own = signum
        with contextlib.suppress(InvalidStateError):  # already set
            self._woken.set_result(None)

    @property
    def signum(self) -> int | None:
        if self._own is not None:
            return self._own
        return Stopped.received if self._before is None else None

    def check(self) -> None:
        signum = self.signum
        if signum is not None:
            if threading.current_thread() is threading.main_thread():
                self.raised = True
            raise stop_error(signum)

    def result(self, fut: Future[Any]) -> Any:
        """FUT's result once it is done; what the stop means as soon as the read is stopped."""
        while not fut.done():
            self.check()
            wait([fut, self._woken], timeout=STOP_CHECK_S, return_when=FIRST_COMPLETED)
        self.check()
        return fut.result()

    def sleep(self, seconds: float) -> None:
        """A retry's pause, cut short by a stop (the next attempt then finds it)."""
        wait([self._woken], timeout=seconds)


class HeldSignals:
    """The signals that stop a run (SIGTERM, SIGHUP, Ctrl-C's SIGINT), held while CLIENT reads:
    from the moment it is made until it is closed (`release`).

    The first one stops the client at once (`stop`: requests cut, threads ended, every wait of
    the read raising the stop) and is kept (SIGTERM and SIGHUP are also the process's
    `Stopped.received`, as the CLI's handler records them). The main thread meets it where the
    read waits next (`Halt.check`); if it never waits again, `release` raises it. Held only in
    a process that turns SIGTERM into an exception (the CLI as its own program: its handler is
    a Python function) and only on the main thread (where handlers are); an ignored or default
    signal is left as it is."""

    def __init__(self, client: Paging) -> None:
        self.client = client
        self.previous: dict[int, Any] = {}
        self.kept: int | None = None

    @classmethod
    def hold(cls, client: Paging) -> HeldSignals | None:
        """The signals held for CLIENT, or None where they are not (see above)."""
        if threading.current_thread() is not threading.main_thread():
            return None
        if not callable(signal.getsignal(signal.SIGTERM)):
            return None
        held = cls(client)
        for name in HELD_SIGNALS:
            number = getattr(signal, name, None)
            current = signal.getsignal(number) if number is not None else None
            if number is not None and callable(current):
                held.previous[number] = current
                signal.signal(number, held.on_signal)
        return held

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.kept is not None:
            return  # one stop is enough (`timeout` sends SIGTERM twice)
        self.kept = signum
        if signum != signal.SIGINT and Stopped.received is None:
            Stopped.received = signum
        self.client.stop(signum)

    def release(self) -> None:
        """Put back the handlers that were in place; then raise the kept signal if the main
        thread has not met it yet (the read ended, or was never read, before it waited)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for number, handler in self.previous.items():
            if signal.getsignal(number) == self.on_signal:  # not replaced meanwhile
                signal.signal(number, handler)
        self.previous = {}
        kept, self.kept = self.kept, None
        if kept is not None and not self.client.halt.raised:
            self.client.halt.raised = True
            raise stop_error(kept)


def stop_error(signum: int) -> BaseException:
    """What a stop by SIGNUM raises where the run waits: Ctrl-C's `KeyboardInterrupt`, else
    `Stopped` (SIGTERM, SIGHUP)."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Stopped(signum)


class Paging:
    """The paging half of `ApiClient`, which supplies `get_json`, `concurrency` and the
    prefetch it started (if any)."""

    concurrency: Concurrency
    halt: Halt
    _prefetch: Prefetch | None
    # ApiClient.get_json(path_or_url, params, check, per_page), called positionally here
    get_json: Callable[[str, Mapping[str, Any] | None, Check | None, int | None], Any]
    # ApiClient.stop(signum): its reading ends at once
    stop: Callable[[int], None]

    def fetch_page(
        self, path: str, params: Mapping[str, Any], page: int, per_page: int | None = None
    ) -> Page:
        """Page PAGE of a list, checked (`parse_page`); PER_PAGE sizes the body's cap."""
        result: Page = self.get_json(
            path, {**params, "page": page}, page_parser(page, path), per_page
        )
        return result

    def prefetch(self, path: str, params: Mapping[str, Any] | None = None) -> None:
        """Start reading a whole list now, on a thread of its own, before anyone asks for it
        (`devportal sync` does this while dlt and DuckDB import). `first_page` and `iter_pages`
        with the same path and params then take what it read; nothing else sees it."""
        if self._prefetch is None:
            self._prefetch = Prefetch(self, path, dict(params or {}))

    def first_page(self, path: str, params: Mapping[str, Any] | None = None) -> Page:
        """Page 1 of a list: the prefetched one when it is that list, else fetched now."""
        ahead = self._prefetch
        if ahead is not None and ahead.matches(path, params):
            return ahead.first()
        return self.fetch_page(path, dict(params or {}), 1)

    def iter_pages(
        self, path: str, params: Mapping[str, Any] | None = None, first: Page | None = None
    ) -> Iterator[Page]:
        """Every page of a list, in page order. Page 1 first, then the rest concurrently.

        `first`: page 1 when the caller has already fetched it (it is not fetched again); the
        prefetched page 1 brings the pages read ahead with it (once)."""
        params = dict(params or {})
        ahead = self._prefetch
        if ahead is not None and first is not None and ahead.owns(first, path, params):
            yield from ahead.take()
            return
        first = first if first is not None else self.fetch_page(path, params, 1)
        yield first
        yield from self.pages_after(first, path, params)

    def pages_after(self, first: Page, path: str, params: Mapping[str, Any]) -> Iterator[Page]:
        """The pages after page 1 (`first`), in order, each held against what page 1 proves
        (`PageGuard`): the paging ends where the wrapper says, or is refused at the page that
        shows the server does not page (see `parse_page` for what one page must agree with)."""
        yield from self.pages_following(first, first, PageGuard(first, path), path, params)

    def pages_following(
        self, first: Page, after: Page, guard: PageGuard, path: str, params: Mapping[str, Any]
    ) -> Iterator[Page]:
        """The pages after AFTER (page 1, or a later page already read and held against
        GUARD), as `pages_after` reads them."""
        per_page = first.per_page or len(first.data) or None
        last = first.last_page
        if last is None:
            yield from self._follow_next(after, path, guard, per_page)
            return
        if last <= after.number:
            return
        numbers = range(after.number + 1, last + 1)
        for page in self._concurrent_pages(path, params, numbers, per_page):
            guard.check(page, last)
            yield page

    def _follow_next(
        self, page: Page, path: str, guard: PageGuard, per_page: int | None
    ) -> Iterator[Page]:
        """The pages after PAGE by their `next_page_url`, until one is empty or links none.

        A page more than half of whose rows were on the page before it is refused: a chain
        that slides over the same rows would otherwise never end (a list that moved while it
        was paged shifts a few rows, not half a page; `reading` notices and reads it again)."""
        previous = row_keys(page.data)
        while page.next_page_url and page.data:
            number = page.number + 1
            page = self.get_json(page.next_page_url, None, page_parser(number, path), per_page)
            guard.check(page, None)
            rows = row_keys(page.data)
            if len(rows) >= 2 and 2 * len(rows & previous) > len(rows):
                raise refused(
                    f"{path} page {number}",
                    f"{len(rows & previous)} of its {len(rows)} rows were on page {number - 1}: "
                    "the API's next_page_url does not move on to the next rows",
                )
            previous = rows
            yield page

    def _concurrent_pages(
        self, path: str, params: Mapping[str, Any], numbers: range, per_page: int | None
    ) -> Iterator[Page]:
        pages = self.map_concurrent(
            lambda n: self.fetch_page(path, params, n, per_page), list(numbers)
        )
        for _number, page in pages:
            yield page

    def map_concurrent(
        self, fn: Callable[[Any], Any], items: list[Any]
    ) -> Iterator[tuple[Any, Any]]:
        """(item, fn(item)) for each item, in input order, as many at a time as the client's
        concurrency allows (its slots gate every attempt). At most twice the current limit of
        items are started ahead of the one being yielded, and none while the pages done ahead
        of it hold AHEAD_BYTES, so memory stays flat whatever size the pages are."""
        limit = self.concurrency
        pool = ThreadPoolExecutor(max_workers=limit.max, thread_name_prefix="devportal-get")
        pending: deque[tuple[Any, Future[Any]]] = deque()
        it = iter(items)
        try:
            while True:
                while len(pending) < 2 * limit.slots and _held(pending) < AHEAD_BYTES:
                    item = next(it, _END)
                    if item is _END:
                        break
                    pending.append((item, pool.submit(fn, item)))
                if not pending:
                    return
                head, fut = pending.popleft()
                yield head, self.halt.result(fut)
        finally:
            for _, fut in pending:
                fut.cancel()
            # requests in flight finish (each bounded by its deadline) before the error goes
            # on, unless the run is being stopped: a signal stopped it (its requests are cut,
            # the workers end at once) or Ctrl-C interrupted it (not waited for)
            signum = self.halt.signum
            if signum is not None:
                self.stop(signum)
            ending = signum is not None or isinstance(sys.exc_info()[1], KeyboardInterrupt)
            pool.shutdown(wait=not ending, cancel_futures=True)


def _held(pending: deque[tuple[Any, Future[Any]]]) -> int:
    """Decoded bytes of the pages done but not yet taken (a result that is no Page: 0)."""
    return sum(
        getattr(fut.result(), "size", 0)
        for _, fut in pending
        if fut.done() and not fut.cancelled() and fut.exception() is None
    )


class Prefetch:
    """One list read ahead on its own thread: page 1 as soon as it comes, then the rest into a
    bounded queue (`DEPTH` pages and AHEAD_BYTES of them, so memory stays flat when nobody
    reads them yet, whatever size the pages are).

    Errors are kept and raised to whoever takes the pages, as if they had been read then.
    `close()` stops it: pages in flight finish (each bounded by `timeout_s`) and are dropped.
    """

    DEPTH = 256  # pages read ahead at most: about 50k subscriptions, ~28 MB parsed

    def __init__(self, client: Paging, path: str, params: dict[str, Any]) -> None:
        self.client = client
        self.path, self.params = path, params
        self._first: Page | None = None
        self._first_error: BaseException | None = None
        self._got_first = threading.Event()
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=self.DEPTH)
        self._queued_bytes = 0  # decoded bytes of the pages in the queue
        self._room = threading.Condition()
        self._stop = threading.Event()
        self._taken = False
        self._thread = threading.Thread(target=self._run, name="devportal-prefetch", daemon=True)
        self._thread.start()

    def matches(self, path: str, params: Mapping[str, Any] | None) -> bool:
        return path == self.path and dict(params or {}) == self.params

    def owns(self, first: Page, path: str, params: Mapping[str, Any]) -> bool:
        return not self._taken and self.matches(path, params) and first is self._first

    def first(self) -> Page:
        while not self._got_first.wait(STOP_CHECK_S):
            self.client.halt.check()
        self.client.halt.check()
        if self._first_error is not None:
            raise self._first_error
        assert self._first is not None
        return self._first

    def take(self) -> Iterator[Page]:
        """Page 1 and every page after it, once; closes the prefetch when done or abandoned."""
        self._taken = True
        try:
            yield self.first()
            while True:
                try:
                    kind, value = self._queue.get(timeout=STOP_CHECK_S)
                except queue.Empty:
                    self.client.halt.check()  # a stopped prefetch queues nothing more
                    continue
                if kind == "page":
                    with self._room:
                        self._queued_bytes -= value.size
                        self._room.notify()
                    yield value
                elif kind == "end":
                    return
                else:
                    raise value
        finally:
            self.close()

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        try:
            first = self.client.fetch_page(self.path, self.params, 1)
        except BaseException as err:  # raised to the reader, in its own thread
            self._first_error = err
            self._got_first.set()
            return
        self._first = first
        self._got_first.set()
        pages = cast(
            Generator[Page, None, None], self.client.pages_after(first, self.path, self.params)
        )
        try:
            for page in pages:
                if not self._put(("page", page)):
                    return
            self._put(("end", None))
        except BaseException as err:
            self._put(("error", err))
        finally:
            pages.close()  # cancels what is queued; requests in flight finish

    def _put(self, item: tuple[str, Any]) -> bool:
        size = item[1].size if item[0] == "page" else 0
        with self._room:  # one page always fits, however large: the queue never blocks empty
            while self._queued_bytes and self._queued_bytes + size > AHEAD_BYTES:
                if self._stop.is_set():
                    return False
                self._room.wait(0.1)
            self._queued_bytes += size
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False
