"""A small, deliberately imperfect Developer API for tests: not the sandbox, no shared code.

It answers the way real APIs sometimes do: Laravel's *simple* paginator (no `total`, no
`last_page`), empty pages with a `next_page_url`, rows without ids, impossible dates, settings
with case-distinct, dotted or very deep keys, a `Date` header from another century, redirects
to another origin, bodies that drip one byte at a time, `Retry-After: 3600`. A test sets the
data and the quirks, runs the real `devportal sync`, and compares the warehouse with what this
server sent (`sent_*`).

Each answer is decided by `respond()`; a test can replace any route with `api.route(path, fn)`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "hostile-token-0123456789"
SUBSCRIPTIONS = "/api/v1/developer/subscriptions"
SETTINGS = "/api/v1/developer/users/settings"
ACCOUNT_PREFIX = "/api/v1/developer/users/"


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
        self.requests: list[Request] = []
        self._routes: dict[str, Route] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> HostileApi:
        handler = type("Handler", (_Handler,), {"api": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

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

    # -- default answers --------------------------------------------------------------------

    def respond(self, req: Request) -> Answer:
        with self._lock:
            self.requests.append(req)
        if req.headers.get("authorization") != f"Bearer {self.token}":
            return Answer(401, {"message": "Unauthenticated."})
        if req.path in self._routes:
            return self._routes[req.path](req)
        if req.path == SUBSCRIPTIONS:
            return Answer(200, self.page(req, self.subscriptions))
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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    api: HostileApi

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        host = self.headers.get("Host") or "127.0.0.1"
        req = Request(
            path=parts.path,
            query=query,
            headers={k.lower(): v for k, v in self.headers.items()},
            base_url=f"http://{host}",
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
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(answer.drip_s)
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
        try:
            for i in range(len(head)):
                self.wfile.write(head[i : i + 1])
                self.wfile.flush()
                time.sleep(answer.drip_head_s or 0)
            self.wfile.write(body)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            pass

    # send_response writes the server's own Date; ours (possibly wrong) must be the only one
    def send_response(self, code: int, message: str | None = None) -> None:
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Server", "hostile")


def laravel_date(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S")
