"""The deadline on a request's status line and headers: a watchdog thread cuts the socket of a
request still waiting for them at its attempt's deadline, so a server dripping its headers
cannot stretch an attempt; the requests adapter whose connections it watches; `InFlight`, the
sockets one client's requests are using, cut at once when its run is stopped."""

from __future__ import annotations

import contextlib
import heapq
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import urllib3
import urllib3.connection
from requests.adapters import HTTPAdapter


def _cut(sock: Any) -> None:
    """Shut SOCK down both ways: a read blocked on it (in any thread) fails at once."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class InFlight:
    """The sockets one client's requests are using right now (their headers and their body),
    so that `cut` ends every one of them at once: a run stopped by a signal does not wait for
    answers it will never use. A socket a request takes after the cut is cut as it starts.

    Counted, not a set: a keep-alive connection goes back to the pool before the request that
    used it is done with, and the next request on it (another thread's) has added it by then.

    `cut` takes only a reentrant lock held for a count's update, so it is safe in a signal
    handler on the main thread."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._socks: Counter[Any] = Counter()
        self.is_cut = False

    def add(self, sock: Any) -> None:
        with self._lock:
            if not self.is_cut:
                self._socks[sock] += 1
                return
        _cut(sock)

    def discard(self, sock: Any) -> None:
        with self._lock:
            self._socks[sock] -= 1
            if self._socks[sock] <= 0:
                del self._socks[sock]

    def cut(self) -> None:
        with self._lock:
            self.is_cut = True
            socks, self._socks = list(self._socks), Counter()
        for sock in socks:
            _cut(sock)


class HeadersWatchdog:
    """Bounds the wait for a status line and headers in total, not per socket read.

    A socket timeout bounds each read, so a server dripping its headers a byte at a time could
    stretch one request for hours. One daemon thread (process-wide, started on first use)
    shuts down the socket of any request still waiting for its headers at its deadline; the
    blocked read then fails and the attempt ends as a timeout. The body has its own deadline
    (`read_body`).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, list[Any]]] = []
        self._local = threading.local()
        self._thread: threading.Thread | None = None
        self._count = 0

    @contextmanager
    def deadline(self, when: float) -> Iterator[None]:
        """Requests made by this thread inside the block get their headers by `when`."""
        self._local.deadline = when
        try:
            yield
        finally:
            self._local.deadline = None

    @contextmanager
    def in_flight(self, in_flight: InFlight) -> Iterator[None]:
        """The sockets of the requests this thread makes inside the block are in IN_FLIGHT
        from their headers until the block ends (their bodies are read inside it)."""
        self._local.in_flight = in_flight
        self._local.socks = []
        try:
            yield
        finally:
            self._local.in_flight = None
            for sock in self._local.socks:
                in_flight.discard(sock)
            self._local.socks = []

    @contextmanager
    def watching(self, sock: Any) -> Iterator[None]:
        in_flight = getattr(self._local, "in_flight", None)
        if in_flight is not None and sock is not None:
            self._local.socks.append(sock)
            in_flight.add(sock)
        when = getattr(self._local, "deadline", None)
        if when is None or sock is None:
            yield
            return
        entry: list[Any] = [sock, True]
        with self._cond:
            self._count += 1
            heapq.heappush(self._heap, (when, self._count, entry))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="devportal-headers-watchdog", daemon=True
                )
                self._thread.start()
            if self._heap[0][2] is entry:  # earlier than what the thread waits for: wake it
                self._cond.notify()
        try:
            yield
        finally:
            entry[1] = False  # answered in time (or failed): nothing to cut

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and not self._heap[0][2][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                when, _, entry = self._heap[0]
                left = when - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                heapq.heappop(self._heap)
                if entry[1]:
                    _cut(entry[0])


WATCHDOG = HeadersWatchdog()


class _WatchedHTTPConnection(urllib3.connection.HTTPConnection):
    def getresponse(self) -> Any:
        with WATCHDOG.watching(self.sock):
            return super().getresponse()


class _WatchedHTTPSConnection(urllib3.connection.HTTPSConnection):
    def getresponse(self) -> Any:
        with WATCHDOG.watching(self.sock):
            return super().getresponse()


class _WatchedHTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class WatchedAdapter(HTTPAdapter):
    """requests' adapter whose connections are watched while they wait for headers."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _WatchedHTTPPool,
            "https": _WatchedHTTPSPool,
        }
