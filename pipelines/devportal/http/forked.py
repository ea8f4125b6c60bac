"""The early read in a process of its own (`ForkedPrefetch`, the `fork-read` speed-up of
`cli.speedups`): a `paging.Prefetch` whose requests run in a forked child.

Why: the HTTP client's work (requests, urllib3, decoding, parsing) is Python, and so is
importing dlt and DuckDB, which the sync does meanwhile. In one interpreter they take turns on
its lock, so a list read while dlt imports came no sooner than one read after it. In a child
process the two run side by side on two cores.

What crosses, through one pipe: each page, pickled, in page order; then how the read ended
(the end, or the error that ended it) with the child's counters (`ClientStats`, what its
concurrency controller learned, whether the API answered), which the parent's client takes
over, so the run's record counts every request and retry. The parent reads the pipe on a thread
of its own into memory, at most `PIPE_AHEAD_BYTES` ahead of the reader (the child waits beyond),
and unpickles a page only when the reader takes it.

The child reads as the parent would, with the same client (a copy): its retries, their
warnings on the same stderr, its errors. An error that ends the read is raised in the parent,
the same exception with the same message; one that cannot cross intact (it does not pickle and
unpickle to the same type, text and exit code) ends the child instead, and the parent's client
reads on from that page itself, meeting the error there as a run without the child would. So
the child changes when pages arrive, never what a run does with them.

Only on Linux, from a process with one thread (a fork copies the locks other threads hold),
in devportal's own program (`args.own_process`). The child dies with its parent (Linux's
parent-death signal), ignores Ctrl-C (its parent decides; `close` kills it) and ends with
`os._exit`, so nothing of the parent's (atexit, buffered output) runs twice.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import struct
import sys
import threading
import traceback
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import fields
from typing import Any, Protocol

from devportal.http.concurrency import Concurrency
from devportal.http.pages import Page, PageGuard
from devportal.http.paging import STOP_CHECK_S, Halt, Prefetch

# one record: its tag, the length of its pickle, the pickle
_HEAD = struct.Struct("<cQ")
PAGE, END, ERROR, FAILED = b"P", b"E", b"X", b"F"
# bytes of pickled pages the parent holds ahead of its reader, at most (about): the child
# waits beyond (what it reads while dlt imports, about 10 MB at 100k subscriptions, fits)
PIPE_AHEAD_BYTES = 16 << 20
CHUNK = 1 << 20  # bytes read from the pipe at a time


class Client(Protocol):
    """What of `session.ApiClient` the forked read uses."""

    halt: Halt
    answered: bool
    stats: Any  # session.ClientStats: its counts and their lock
    concurrency: Concurrency

    def fetch_page(
        self, path: str, params: Mapping[str, Any], page: int, per_page: int | None = None
    ) -> Page: ...

    def pages_after(self, first: Page, path: str, params: Mapping[str, Any]) -> Iterator[Page]: ...

    def pages_following(
        self, first: Page, after: Page, guard: PageGuard, path: str, params: Mapping[str, Any]
    ) -> Iterator[Page]: ...

    def forget_parent(self) -> None: ...


class InTheChild(Exception):
    """What the forked read's child raised, as the text of its traceback (frames do not cross
    the pipe): the cause of the same error raised in the parent, shown by `--debug`."""

    def __init__(self, trace: str) -> None:
        super().__init__("in the early read's child process:\n" + trace.rstrip())


def usable() -> bool:
    """Whether this process can fork its early read: Linux, and no other thread running."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


class _Pipe:
    """The parent's end: a thread reads the child's records into memory (at most
    `PIPE_AHEAD_BYTES` ahead of the reader); `next()` takes one, waiting for it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._chunks: deque[bytes] = deque()
        self._held = 0  # bytes read, not yet taken
        self._eof = False
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, name="devportal-forked", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                with self._cond:
                    while self._held >= PIPE_AHEAD_BYTES and not self._closed:
                        self._cond.wait(STOP_CHECK_S)
                    if self._closed:
                        return
                chunk = os.read(self.fd, CHUNK)
                with self._cond:
                    if not chunk:
                        return
                    self._chunks.append(chunk)
                    self._held += len(chunk)
                    self._cond.notify_all()
        except OSError:
            return
        finally:
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def _take(self, size: int) -> bytes | None:
        """SIZE bytes from the front, if they are there (under the lock)."""
        if self._held < size:
            return None
        out = bytearray()
        while len(out) < size:
            chunk = self._chunks.popleft()
            need = size - len(out)
            if len(chunk) > need:
                self._chunks.appendleft(chunk[need:])
                chunk = chunk[:need]
            out += chunk
        self._held -= size
        self._cond.notify_all()
        return bytes(out)

    def _peek_head(self) -> tuple[bytes, int] | None:
        if self._held < _HEAD.size:
            return None
        first = self._chunks[0]
        if len(first) < _HEAD.size:  # the head spans chunks: join them
            joined = b"".join(self._chunks)
            self._chunks.clear()
            self._chunks.append(joined)
            first = joined
        tag, size = _HEAD.unpack_from(first)
        return tag, size

    def next(self, check: Any) -> tuple[bytes, bytes] | None:
        """The next record (tag, pickle); None when the child ended without one more. CHECK
        runs between waits (a stop of the run raises there)."""
        with self._cond:
            while True:
                head = self._peek_head()
                if head is not None and self._held >= _HEAD.size + head[1]:
                    self._take(_HEAD.size)
                    body = self._take(head[1])
                    assert body is not None
                    return head[0], body
                if self._eof or self._closed:
                    return None
                check()
                self._cond.wait(STOP_CHECK_S)

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._chunks.clear()
            self._held = 0
            self._cond.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(STOP_CHECK_S)
        with contextlib.suppress(OSError):
            os.close(self.fd)


class ForkedPrefetch(Prefetch):
    """One list read ahead by a forked child (module docstring); `Prefetch`'s interface:
    `first()`, `take()` (once), `close()`."""

    def __init__(self, client: Client, path: str, params: dict[str, Any]) -> None:
        # not Prefetch.__init__: no thread of its own reads the list here
        self.own = client
        self.path, self.params = path, params
        self._first: Page | None = None
        self._taken = False
        self._guard: PageGuard | None = None
        self._last: Page | None = None  # the last page taken
        read_end, write_end = os.pipe()
        self._pid: int | None = os.fork()
        if self._pid == 0:  # the child: never returns
            os.close(read_end)
            _child(client, path, params, write_end)
        os.close(write_end)
        self._pipe = _Pipe(read_end)

    def first(self) -> Page:
        if self._first is None:
            self._first = self._take_first()
            self._guard = PageGuard(self._first, self.path)
            self._last = self._first
        return self._first

    def _take_first(self) -> Page:
        tag, value = self._record()
        if tag == PAGE:
            page: Page = value
            return page
        self._end(tag, value)  # no page 1 came: read here, as a run without the child would
        return self.own.fetch_page(self.path, self.params, 1)

    def take(self) -> Iterator[Page]:
        """Page 1 and every page after it, once; closes the prefetch when done or abandoned."""
        self._taken = True
        try:
            first = self.first()
            yield first
            if self._pid is not None:  # the child reads on
                while True:
                    tag, value = self._record()
                    if tag != PAGE:
                        self._end(tag, value)
                        break
                    assert self._guard is not None
                    self._guard.check(value, first.last_page)
                    self._last = value
                    yield value
                if tag == END:
                    return
            # the child stopped short: the rest is read here, from the page after the last one
            assert self._guard is not None and self._last is not None
            yield from self.own.pages_following(
                first, self._last, self._guard, self.path, self.params
            )
        finally:
            self.close()

    def _record(self) -> tuple[bytes, Any]:
        record = self._pipe.next(self.own.halt.check)
        self.own.halt.check()  # stopped (the child was killed): the stop, not a failure
        if record is None:
            return FAILED, None
        tag, body = record
        return tag, pickle.loads(body)

    def _end(self, tag: bytes, ending: dict[str, Any] | None) -> None:
        """The child is done (TAG: how; ENDING: its counters and error, if it sent them): the
        counters taken over, the child reaped, its error raised here."""
        if ending is not None:
            take_over(self.own, ending["counters"])
        self.close()
        if tag == ERROR and ending is not None:
            # its frames stay in the child: their text is the cause `--debug` shows
            raise ending["error"] from InTheChild(ending["trace"])

    def close(self) -> None:
        """Stop the child (killed if still reading), reap it, let the pipe go. Safe in the
        signal handler that stops the run (`client.stop`): the pipe is let go only outside
        one (it may be waited on in the main thread)."""
        pid, self._pid = self._pid, None
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        if not self.own.halt.signum:
            self._pipe.close()


def _child(client: Client, path: str, params: dict[str, Any], fd: int) -> None:
    """The child's whole life: the list read, each page sent as it comes, then its counters;
    `os._exit` whatever happens."""
    code = 0
    try:
        _be_a_child()
        client.forget_parent()
        out = os.fdopen(fd, "wb", buffering=CHUNK)

        def send(tag: bytes, value: Any) -> None:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            out.write(_HEAD.pack(tag, len(data)))
            out.write(data)

        error: BaseException | None = None
        trace = ""
        try:
            first = client.fetch_page(path, params, 1)
            send(PAGE, first)
            out.flush()  # page 1 at once: the parent's reader may be waiting for it
            for page in client.pages_after(first, path, params):
                send(PAGE, page)
            tag = END
        except Exception as err:  # the read's error: raised in the parent if it crosses
            tag, error = (ERROR, err) if _crosses(err) else (FAILED, None)
            trace = "".join(traceback.format_exception(err))
        except BaseException:  # stopped: the parent, stopped too, kills this process
            tag = FAILED
        send(tag, {"counters": counters(client), "error": error, "trace": trace})
        out.flush()
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def counters(client: Client) -> dict[str, Any]:
    """What CLIENT counted and learned, for `take_over` in another process."""
    stats = client.stats
    with stats._lock:
        counted = {f.name: getattr(stats, f.name) for f in fields(stats) if f.name != "_lock"}
    return {
        "stats": counted,
        "concurrency": client.concurrency.learned(),
        "answered": client.answered,
    }


def take_over(client: Client, counted: Mapping[str, Any]) -> None:
    """Add what another client counted (`counters`: a forked early read) to CLIENT's, and go
    on from what its concurrency controller learned."""
    stats = client.stats
    with stats._lock:
        for name, value in counted["stats"].items():
            if isinstance(value, dict):
                merged = getattr(stats, name)
                for key, count in value.items():
                    merged[key] = merged.get(key, 0) + count
            else:
                setattr(stats, name, getattr(stats, name) + value)
    client.concurrency.take_over(counted["concurrency"])
    client.answered = client.answered or bool(counted["answered"])


def _crosses(err: BaseException) -> bool:
    """Whether ERR pickles and unpickles to itself: the same type, text and exit code."""
    try:
        back = pickle.loads(pickle.dumps(err, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        return False
    return (
        type(back) is type(err)
        and str(back) == str(err)
        and getattr(back, "exit_code", None) == getattr(err, "exit_code", None)
    )


def _be_a_child() -> None:
    """Signals: Ctrl-C is the parent's to handle (it kills this process); SIGTERM and SIGHUP
    end it; and it dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parent = os.getppid()
    with contextlib.suppress(Exception):
        import ctypes  # deferred: only a forked child needs it, kept out of startup

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the signal was set
        os._exit(1)
