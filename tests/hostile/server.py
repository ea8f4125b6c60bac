"""A small, deliberately imperfect Developer API for tests: not the sandbox, no code shared
with it or the pipeline but the API's paths and timestamp format (`devportal.base.api`).

It answers the way real APIs sometimes do: Laravel's *simple* paginator (no `total`, no
`last_page`), empty pages with a `next_page_url`, rows without ids, impossible dates, settings
with case-distinct, dotted or very deep keys, a `Date` header from another century, redirects
to another origin, bodies that drip one byte at a time, `Retry-After: 3600`. A test sets the
data and the quirks, runs the real `devportal sync`, and compares the warehouse with what this
server sent (`sent_*`).

Each answer is decided by `respond()`; a test can replace any route with `api.route(path, fn)`.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from devportal.base.api import (
    SUBSCRIPTIONS_PATH,
    TIMESTAMP_FORMAT,
    USER_ACCOUNTS_PREFIX,
    USER_SETTINGS_PATH,
)

TOKEN = "hostile-token-0123456789"
SUBSCRIPTIONS = SUBSCRIPTIONS_PATH
SETTINGS = USER_SETTINGS_PATH
ACCOUNT_PREFIX = USER_ACCOUNTS_PREFIX


@dataclass
class Answer:
    status: int = 200
    body: bytes | Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    drip_s: float | None = None  # send the body one byte every `drip_s` seconds
    drip_head_s: float | None = None  # the same for the status line and headers

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body).encode()


Route = Callable[["Request"], Answer]


@dataclass
class Request:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    base_url: str
    # the request's socket on this side (`HangupGate` watches it for the client hanging up)
    connection: Any = field(default=None, repr=False, compare=False)


def serving(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """HANDLER served on 127.0.0.1 (a free port) from a daemon thread, started."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop(server: ThreadingHTTPServer | None) -> None:
    """Stop a server of `serving` (nothing when none was started)."""
    if server is not None:
        server.shutdown()
        server.server_close()


class HostileApi:
    """Start with `with HostileApi() as api:`; `api.base_url`, `api.token`."""

    def __init__(self, per_page: int = 3) -> None:
        self.per_page = per_page
        self.token = TOKEN
        self.subscriptions: list[dict[str, Any]] = []
        self.settings: list[dict[str, Any]] = []
        self.accounts: dict[int, Any] = {}
        self.simple_paginator = False  # Laravel's simplePaginate: no total, no last_page
        self.empty_from_page: int | None = None  # pages from here on are empty (next url kept)
        self.date: str | None = None  # the Date header; None = this machine's clock
        # `?is_test=true` lists (and `?id=N&is_test=true` finds) these; None: `subscriptions`
        self.test_subscriptions: list[dict[str, Any]] | None = None
        self.id_lookup = True  # `?id=N` answers one subscription (spec 4.1), 404 when none
        self.id_lookup_ignores_is_test = False  # `?id=N&is_test=true` finds live rows only
        # called before each subscription list page is built, atomically with it: a test
        # creates or removes rows between page requests (a busy API)
        self.on_subscriptions_page: Callable[[Request], None] | None = None
        self._page_lock = threading.Lock()
        self.requests: list[Request] = []
        # (bytes written, bytes in all) of each dripped answer, recorded when its drip ended
        # (done, or the client hung up): `wait_drips(n)` waits for n of them
        self.drips: list[tuple[int, int]] = []
        self._drips_changed = threading.Condition()
        self._routes: dict[str, Route] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> HostileApi:
        self._server = serving(type("Handler", (_Handler,), {"api": self}))
        return self

    def __exit__(self, *exc: object) -> None:
        stop(self._server)

    def stop_listening(self) -> None:
        """Close the listening socket (connections already open keep being served): a new
        connection to `base_url` is refused from now on, as when the API goes down. Safe to
        call from a route."""
        assert self._server is not None
        self._server.shutdown()
        self._server.socket.close()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def route(self, path: str, fn: Route) -> None:
        """Answer `path` (exact, without query) with `fn(request)` instead of the default."""
        self._routes[path] = fn

    def hits(self, path: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.path == path)

    def dripped(self, sent: int, total: int) -> None:
        """A dripped answer ended after SENT of its TOTAL bytes (see `drips`)."""
        with self._drips_changed:
            self.drips.append((sent, total))
            self._drips_changed.notify_all()

    def wait_drips(self, n: int, timeout_s: float = 120) -> list[tuple[int, int]]:
        """`drips` once N dripped answers have ended (a server thread notices a client that
        hung up at its next write); fails after TIMEOUT_S, a limit on a hang, not a measure."""
        with self._drips_changed:
            if not self._drips_changed.wait_for(lambda: len(self.drips) >= n, timeout_s):
                raise AssertionError(f"{len(self.drips)} of {n} drips ended: {self.drips}")
            return list(self.drips)

    # -- default answers --------------------------------------------------------------------

    def respond(self, req: Request) -> Answer:
        with self._lock:
            self.requests.append(req)
        if req.headers.get("authorization") != f"Bearer {self.token}":
            return Answer(401, {"message": "Unauthenticated."})
        if req.path in self._routes:
            return self._routes[req.path](req)
        if req.path == SUBSCRIPTIONS:
            return self.subscriptions_answer(req)
        if req.path == SETTINGS:
            return Answer(200, self.page(req, self.settings))
        if req.path.startswith(ACCOUNT_PREFIX):
            key = req.path[len(ACCOUNT_PREFIX) :]
            if key.isdigit() and int(key) in self.accounts:
                return Answer(200, self.accounts[int(key)])
            return Answer(404, {"message": "Not Found"})
        return Answer(404, {"message": "Not Found"})

    def page(self, req: Request, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """A Laravel page of `rows` (length-aware unless `simple_paginator`)."""
        number = max(1, int(req.query.get("page", "1") or 1))
        last = max(1, -(-len(rows) // self.per_page))
        start = (number - 1) * self.per_page
        data = rows[start : start + self.per_page]
        if self.empty_from_page is not None and number >= self.empty_from_page:
            data = []
        url = f"{req.base_url}{req.path}"
        more = number < last
        body: dict[str, Any] = {
            "current_page": number,
            "data": data,
            "first_page_url": f"{url}?page=1",
            "from": start + 1 if data else None,
            "next_page_url": f"{url}?page={number + 1}" if more else None,
            "path": url,
            "per_page": self.per_page,
            "prev_page_url": f"{url}?page={number - 1}" if number > 1 else None,
            "to": start + len(data) if data else None,
        }
        if not self.simple_paginator:
            body.update(last_page=last, last_page_url=f"{url}?page={last}", total=len(rows))
        return body

    def http_date(self) -> str:
        return self.date or format_datetime(datetime.now(UTC), usegmt=True)

    def subscriptions_answer(self, req: Request) -> Answer:
        """A page of the live list, or of `test_subscriptions` with `is_test=true`; with
        `id` (and `id_lookup`) the one subscription of that id, or 404."""
        test = req.query.get("is_test", "").lower() in ("true", "1")
        if self.id_lookup and req.query.get("id", "").strip():
            if not test or self.test_subscriptions is None or self.id_lookup_ignores_is_test:
                rows = self.subscriptions
            else:
                rows = self.test_subscriptions
            found = [r for r in rows if str(r.get("id")) == req.query["id"].strip()]
            return Answer(200, found[0]) if found else Answer(404, {"message": "Not Found"})
        with self._page_lock:
            if self.on_subscriptions_page is not None:
                self.on_subscriptions_page(req)
            rows = self.subscriptions
            if test and self.test_subscriptions is not None:
                rows = self.test_subscriptions
            return Answer(200, self.page(req, rows))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes: without this, Nagle's algorithm holds the
    # body until the client acknowledges the headers (about 40 ms a request on loopback)
    disable_nagle_algorithm = True
    api: HostileApi

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        # a client that hung up on an answer it refused: no traceback on stderr
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            super().handle()

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        host = self.headers.get("Host") or "127.0.0.1"
        req = Request(
            path=parts.path,
            query=query,
            headers={k.lower(): v for k, v in self.headers.items()},
            base_url=f"http://{host}",
            connection=self.connection,
        )
        answer = self.api.respond(req)
        body = answer.payload()
        if answer.drip_head_s is not None:
            self._drip_head(answer, body)
            return
        self.send_response(answer.status)
        self.send_header("Date", self.api.http_date())
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in answer.headers.items():
            self.send_header(key, value)
        self.end_headers()
        try:
            if answer.drip_s is None:
                self.wfile.write(body)
                return
            self.wfile.flush()
            sent = 0
            try:
                for _ in self._drip(body, answer.drip_s):
                    sent += 1
            finally:
                self.api.dripped(sent, len(body))
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _drip_head(self, answer: Answer, body: bytes) -> None:
        head = (
            f"HTTP/1.1 {answer.status} OK\r\nDate: {self.api.http_date()}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            + "".join(f"X-Padding-{i}: {'x' * 20}\r\n" for i in range(20))
            + "\r\n"
        ).encode()
        self.close_connection = True
        sent = 0
        try:
            for _ in self._drip(head, answer.drip_head_s or 0):
                sent += 1
            self.wfile.write(body)
            sent += len(body)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.api.dripped(sent, len(head) + len(body))

    def _drip(self, data: bytes, every_s: float) -> Iterator[None]:
        """Send DATA one byte every EVERY_S seconds, yielding after each byte is out."""
        for i in range(len(data)):
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()
            yield
            time.sleep(every_s)

    # send_response writes the server's own Date; ours (possibly wrong) must be the only one
    def send_response(self, code: int, message: str | None = None) -> None:
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Server", "hostile")


def laravel_date(when: datetime) -> str:
    return when.strftime(TIMESTAMP_FORMAT)


# -- a proxy that answers every request itself (tests/hostile/test_proxies.py) -----------------


class AnsweringProxy:
    """A forward proxy on 127.0.0.1 that forwards nothing: every request, a plain-http GET in
    absolute form or an https CONNECT, gets `status` (407 by default, with the
    `Proxy-Authenticate` challenge a real proxy sends). `requests` records each request line
    and whether it carried `Proxy-Authorization`. `with AnsweringProxy() as proxy:`;
    `proxy.url(user, password)`."""

    def __init__(self, status: int = 407, reason: str = "Proxy Authentication Required") -> None:
        self.status, self.reason = status, reason
        self.requests: list[tuple[str, bool]] = []  # (request line, had Proxy-Authorization)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> AnsweringProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def answer(self) -> None:
                with proxy._lock:
                    proxy.requests.append(
                        (self.requestline, "proxy-authorization" in map(str.lower, self.headers))
                    )
                body = b"<html><body>proxy says no</body></html>"
                self.send_response(proxy.status, proxy.reason)
                if proxy.status == 407:
                    self.send_header("Proxy-Authenticate", 'Basic realm="corp"')
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True

            do_GET = do_CONNECT = answer

        self._server = serving(Handler)
        return self

    def __exit__(self, *exc: object) -> None:
        stop(self._server)

    @property
    def where(self) -> str:
        assert self._server is not None
        return f"127.0.0.1:{self._server.server_address[1]}"

    def url(self, user: str = "", password: str = "") -> str:
        login = f"{user}:{password}@" if user or password else ""
        return f"http://{login}{self.where}"


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then closed): a dead proxy's."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- busy lists and rolling deploys (issue 33) --------------------------------------------------


def sized_page(
    req: Request, rows: list[dict[str, Any]], per_page: int | None, total: int | None = None
) -> dict[str, Any]:
    """A length-aware Laravel page of ROWS at PER_PAGE rows a page, as one version of a rolling
    deploy serves it (PER_PAGE None: a wrapper without `per_page`; ROWS are then paged at 3).
    TOTAL: what the wrapper says the list holds (default: the rows there are)."""
    size = per_page or 3
    total = len(rows) if total is None else total
    number = max(1, int(req.query.get("page", "1") or 1))
    last = max(1, -(-total // size))
    start = (number - 1) * size
    data = rows[start : start + size]
    url = f"{req.base_url}{req.path}"
    body: dict[str, Any] = {
        "current_page": number,
        "data": data,
        "first_page_url": f"{url}?page=1",
        "from": start + 1 if data else None,
        "last_page": last,
        "last_page_url": f"{url}?page={last}",
        "next_page_url": f"{url}?page={number + 1}" if number < last else None,
        "path": url,
        "prev_page_url": f"{url}?page={number - 1}" if number > 1 else None,
        "to": start + len(data) if data else None,
        "total": total,
    }
    if per_page is not None:
        body["per_page"] = per_page
    return body


# -- an answer held until the test lets it go (tests/hostile/test_signals.py) ------------------


class Gate:
    """Holds the requests it is asked to hold until `release()`: `reached` is set as the first
    one is held, so a test acts while the client is surely waiting for that answer (no sleep
    stands in for it). `release()` in the test's cleanup ends what is held."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self._released = threading.Event()

    def hold(self) -> None:
        self.reached.set()
        self._released.wait(300)  # a bound on a forgotten release, not a measure

    def release(self) -> None:
        self._released.set()


def held_at(api: HostileApi, path: str, gate: Gate, page: int) -> None:
    """API answers PATH (the subscription or settings list) as usual, but holds page PAGE at
    GATE until it is released."""

    def answer(req: Request) -> Answer:
        if int(req.query.get("page", "1") or 1) == page:
            gate.hold()
        if path == SUBSCRIPTIONS:
            return api.subscriptions_answer(req)
        return Answer(200, api.page(req, api.settings))

    api.route(path, answer)


class HangupGate(Gate):
    """A `Gate` that also watches the held request's connection: `hung_up` is set when the
    client closes it while it is held (a client that cut its requests), and the held request
    then ends. A test asserts with it what the client did on its own, while nothing else (a
    process exiting closes every socket) could have done it."""

    def __init__(self) -> None:
        super().__init__()
        self.hung_up = threading.Event()

    def hold_watching(self, connection: Any) -> None:
        self.reached.set()
        while not self._released.is_set():
            # readable with nothing to read: the client's end is closed (its FIN, or a reset)
            readable, _, _ = select.select([connection], [], [], 0.05)
            if readable and _closed_by_peer(connection):
                self.hung_up.set()
                return


def _closed_by_peer(connection: socket.socket) -> bool:
    try:
        return connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:  # reset
        return True


def held_watching(api: HostileApi, path: str, gate: HangupGate, page: int) -> None:
    """`held_at` with a `HangupGate`: page PAGE of PATH is held until released, or until the
    client hangs up on it."""

    def answer(req: Request) -> Answer:
        if int(req.query.get("page", "1") or 1) == page:
            gate.hold_watching(req.connection)
        if path == SUBSCRIPTIONS:
            return api.subscriptions_answer(req)
        return Answer(200, api.page(req, api.settings))

    api.route(path, answer)
