"""The HTTP layer and the `Sandbox` object: sockets, auth, latency, faults, control endpoints.

`Sandbox` ties a `World` (data + clock), an `Api` (routing) and a `FaultInjector` to a
stdlib `ThreadingHTTPServer` (one thread per connection, HTTP/1.1 keep-alive). Every response
is written with a single `sendall` (status line + headers + body) on a socket with
TCP_NODELAY, so small responses never wait out Nagle + delayed-ACK (the 40 ms stalls).

Every response carries `Date:` with the *simulated* clock, so a client that stamps history
with the server's time follows the sandbox's clock.

Order of work per request: latency (API paths only) -> bearer auth (every path, control
included) -> control endpoints under /__sandbox/ (never faulted, never rate limited) -> route
and method check -> rate limit (per bearer token; 429 when the bucket is empty) -> server cost
-> fault draw (known API routes only) -> the API handler.

Two ways to make the server slow (see `throttle`): `latency_ms` sleeps on each request's own
thread, so concurrent requests overlap (N at once take ~X ms); `server_ms` holds one global
lock for X ms per admitted API request, so they queue like on a single-worker backend (N at
once take >= N*X ms). `rate_limit` answers 429 beyond R requests/s per token, with Laravel's
`X-RateLimit-*` headers on every answer of the API handler and on its own 429s (faults
injected in place of an answer keep their own headers: an injected 429 says limit 60, 0 left).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import re
import secrets
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from devportal.base.api import SIMULATED_CLOCK_HEADER, SUBSCRIPTIONS_PATH, USER_SETTINGS_PATH
from devportal.sandbox.app import (
    Api,
    PageHook,
    PageOverride,
    Response,
    json_response,
    message,
)
from devportal.sandbox.clock import Rates, fmt
from devportal.sandbox.faults import (
    DEFAULT_KINDS,
    FAULT_KINDS,
    HTML_BODIES,
    MALFORMED_BODIES,
    Fault,
    FaultConfig,
    FaultInjector,
    truncate,
)
from devportal.sandbox.signups import Signups
from devportal.sandbox.throttle import Decision, RateLimit, RateLimiter, SerialCost
from devportal.sandbox.world import World

log = logging.getLogger("devportal.sandbox")

CONTROL_PREFIX = "/__sandbox/"
_HOST_RE = re.compile(r"^[A-Za-z0-9.\-]+(?::[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?$")
# list endpoint path -> its counter in `Sandbox.stats`
_PAGE_COUNTERS = {
    SUBSCRIPTIONS_PATH: "pages_subscriptions",
    USER_SETTINGS_PATH: "pages_users_settings",
}


@dataclass(frozen=True)
class Delivery:
    """What the socket layer does: send a response, cut it halfway, or reset with nothing."""

    response: Response | None
    mode: str = "send"  # "send" | "cut" | "reset"


class Stats:
    """Request counters, readable while the server runs (`Sandbox.stats` copies them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._zero()

    def reset(self) -> None:
        with self._lock:
            self._zero()

    def _zero(self) -> None:
        self.requests = 0
        self.api_requests = 0
        self.control_requests = 0
        self.unauthorized = 0
        self.rate_limited = 0
        self.connections = 0
        self.pages: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.statuses: Counter[int] = Counter()

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def count(self, counter: str, key: Any) -> None:
        with self._lock:
            getattr(self, counter)[key] += 1

    def snapshot(self) -> dict[str, Any]:
        """Flat counters: every key starting with "fault" or "pages" holds an int;
        `rate_limited` counts the rate limit's 429s (injected 429s are `fault_429`)."""
        with self._lock:
            out: dict[str, Any] = {
                "requests": self.requests,
                "api_requests": self.api_requests,
                "control_requests": self.control_requests,
                "unauthorized": self.unauthorized,
                "rate_limited": self.rate_limited,
                "connections": self.connections,
                "pages": sum(self.pages.values()),
            }
            out.update({name: self.pages.get(name, 0) for name in _PAGE_COUNTERS.values()})
            out["faults"] = sum(self.faults.values())
            out.update({f"fault_{kind}": self.faults.get(kind, 0) for kind in FAULT_KINDS})
            out["statuses"] = {str(k): v for k, v in sorted(self.statuses.items())}
            return out


class _Server(ThreadingHTTPServer):
    """Tracks live connections so `stop()` can end keep-alive threads instead of waiting."""

    daemon_threads = True
    request_queue_size = 128  # 8 concurrent clients reconnecting after resets need headroom

    def __init__(self, address: tuple[str, int], sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._conns: dict[socket.socket, threading.Thread] = {}
        self._conns_lock = threading.Lock()
        self._closing = False
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        # As ThreadingMixIn does, but each connection is registered before its thread starts
        # (so stop() can always reach it) and threads are named after the port.
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"devportal-sandbox:{self.server_address[1]}:conn",
            daemon=True,
        )
        with self._conns_lock:
            if self._closing:
                self.shutdown_request(request)
                return
            self._conns[request] = thread
        thread.start()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._conns_lock:
                self._conns.pop(request, None)

    def close_connections(self, timeout: float = 5.0) -> None:
        with self._conns_lock:
            self._closing = True
            conns = list(self._conns.items())
        for sock, _ in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked reading the next request
        deadline = time.monotonic() + timeout
        for _, thread in conns:
            if thread.ident is not None:
                thread.join(max(0.0, deadline - time.monotonic()))

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up mid-request is normal traffic here, not an error worth a traceback.
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return
        log.exception("sandbox: error while serving a request")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the pipeline reuses connections
    server_version = "devportal-sandbox"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.sandbox._stats.add(connections=1)

    def log_message(self, format: str, *args: Any) -> None:
        # Per-request logging is off by default: it costs more than serving a page.
        if self.server.sandbox.verbose:
            log.info("%s %s", self.address_string(), format % args)

    def _dispatch(self) -> None:
        sandbox = self.server.sandbox
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.send_error(400, "bad Content-Length")
            return
        body = self.rfile.read(length) if length > 0 else b""
        host = self.headers.get("Host") or ""
        if not _HOST_RE.match(host):
            host = f"{sandbox.host}:{sandbox.port}"
        outcome = sandbox.respond(
            self.command, self.path, self.headers.get("Authorization"), host, body
        )
        if outcome.mode == "reset" or outcome.response is None:
            self._abort()
            return
        self._send(outcome.response, cut=outcome.mode == "cut")
        if self.server.sandbox.verbose:
            self.log_request(outcome.response.status, len(outcome.response.body))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch

    def _send(self, r: Response, *, cut: bool = False) -> None:
        try:
            reason = HTTPStatus(r.status).phrase
        except ValueError:
            reason = ""
        head = [
            f"HTTP/1.1 {r.status} {reason}",
            f"Date: {self.server.sandbox.http_date()}",
            f"Content-Type: {r.content_type}",
            f"Content-Length: {len(r.body)}",
            "Cache-Control: no-cache, private",
            # the Date above is a simulated clock: devportal accepts it (on loopback only)
            # however far it is from the machine's own
            f"{SIMULATED_CLOCK_HEADER}: 1",
        ]
        head.extend(f"{k}: {v}" for k, v in r.headers)
        if self.close_connection:
            head.append("Connection: close")
        body = r.body[: len(r.body) // 2] if cut else r.body
        if self.command == "HEAD":
            body = b""  # HEAD answers carry the headers only, or keep-alive framing breaks
        # counted first: a client reading the stats after its answer finds it there
        self.server.sandbox._stats.count("statuses", r.status)
        # One write for head and body: two small writes would meet Nagle/delayed-ACK.
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        if cut:
            self._abort()

    def _abort(self) -> None:
        """Drop the connection with a RST: the client sees a reset, not a clean close."""
        self.close_connection = True
        try:
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.request.close()
        except OSError:
            pass


class Sandbox:
    """The Developer API sandbox: a deterministic world served over HTTP on 127.0.0.1.

    `Sandbox(subscriptions=0, users=0)` is an empty, scripted world (see `World`); its clock
    applies only renewals and expiries unless `rates` says otherwise.

    `rate_limit`: R requests/s per bearer token (a number, `RateLimit(R, burst=B)` or
    `{"per_second": R, "burst": B}`; None = unlimited). `server_ms`: X ms of serial server time
    per admitted API request (one global lock), unlike `latency_ms` (concurrent delays that
    overlap). `extra_tokens`: more bearer tokens accepted besides `token`, each with its own
    rate-limit bucket. `signups_per_s`: new live subscriptions a second while the subscription
    list is read, at its end (`signups.Signups`; 0 = none).
    """

    def __init__(
        self,
        subscriptions: int = 1000,
        users: int = 200,
        seed: int = 7,
        token: str | None = None,
        latency_ms: float = 0.0,
        faults: FaultConfig | Mapping[str, Any] | None = None,
        test_share: float = 0.05,
        start: str | datetime = "2026-11-01 00:00:00",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        rates: Rates | None = None,
        verbose: bool = False,
        rate_limit: float | RateLimit | Mapping[str, Any] | None = None,
        server_ms: float = 0.0,
        extra_tokens: Iterable[str] = (),
        signups_per_s: float = 0.0,
    ) -> None:
        self.world = World(
            subscriptions=subscriptions,
            users=users,
            seed=seed,
            test_share=test_share,
            start=start,
            rates=rates,
        )
        self.api = Api(self.world)
        self._token = token if token is not None else secrets.token_urlsafe(24)
        self._tokens = (self._token, *_checked_tokens(extra_tokens))
        self.host = host
        self._port = port
        self.latency_ms = float(latency_ms)
        self.verbose = verbose
        self._faults = FaultInjector()
        self._limiter = RateLimiter()
        self._cost = SerialCost()
        self._stats = Stats()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._http_date: tuple[int, str] = (-1, "")
        self.set_faults(faults)
        self.set_rate_limit(rate_limit)
        self.set_server_ms(server_ms)
        self._signups: Signups | None = None
        self.set_signups(signups_per_s)

    def __repr__(self) -> str:  # never shows the token
        state = self.base_url if self._server is not None else "stopped"
        return f"<Sandbox {state} seed={self.world.seed} now={fmt(self.world.now_ts)}>"

    # ------------------------------------------------------------------ lifecycle

    def start(self, port: int | None = None) -> Sandbox:
        """Serve in a daemon thread on `host`, ephemeral port unless `port` is given."""
        if self._server is not None:
            raise RuntimeError("sandbox already started")
        server = _Server((self.host, self._port if port is None else port), self)
        self._server = server
        self._port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"devportal-sandbox:{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, end keep-alive connections, join every thread, close sockets."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.close_connections()
        if thread is not None:
            thread.join(5.0)
        self._server = self._thread = None

    def __enter__(self) -> Sandbox:
        return self if self._server is not None else self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ properties

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("sandbox not started: call start() first")
        return f"http://{self.host}:{self._port}"

    @property
    def token(self) -> str:
        return self._token

    @property
    def now(self) -> datetime:
        return self.world.now

    @property
    def stats(self) -> dict[str, Any]:
        return self._stats.snapshot()

    @property
    def faults(self) -> FaultConfig | None:
        return self._faults.config

    @property
    def rate_limit(self) -> RateLimit | None:
        return self._limiter.config

    @property
    def server_ms(self) -> float:
        return self._cost.ms

    # ------------------------------------------------------------------ python control API

    def advance(self, days: float = 0, hours: float = 0) -> dict[str, int]:
        return self.world.advance(days=days, hours=hours)

    def truth(self, is_test: bool = False) -> list[dict[str, Any]]:
        return self.world.truth(is_test)

    def truth_users(self) -> list[dict[str, Any]]:
        return self.world.truth_users()

    def user_ids(self) -> list[int]:
        return self.world.user_ids()

    def profiles(self, user_id: int) -> dict[str, Any] | None:
        return self.world.profiles(user_id)

    def set_faults(
        self,
        rate: float | FaultConfig | Mapping[str, Any] | None = 0.1,
        kinds: Iterable[str] | str = DEFAULT_KINDS,
        seed: int = 1,
        retry_after: int = 1,
    ) -> None:
        """Inject faults at `rate` over `kinds` (None or rate 0 clears). Restarts the sequence."""
        if rate is not None and not isinstance(rate, FaultConfig | Mapping):
            # the keywords are the mapping's keys: one reader of fault settings
            rate = {"rate": rate, "kinds": kinds, "seed": seed, "retry_after": retry_after}
        if isinstance(rate, Mapping):
            rate = FaultConfig.from_mapping(rate)
        self._faults.configure(rate)

    def queue_faults(self, *kinds: str | None) -> None:
        """The next API requests meet these faults in order (None = succeeds), then `rate` resumes."""
        self._faults.queue(kinds)

    def set_latency(self, ms: float) -> None:
        if ms < 0:
            raise ValueError("latency must be >= 0 ms")
        self.latency_ms = float(ms)

    def set_rate_limit(
        self,
        per_second: float | RateLimit | Mapping[str, Any] | None,
        burst: float | None = None,
    ) -> None:
        """Limit each bearer token to `per_second` requests/s, bursts of `burst` (default
        max(1, R)); None or 0 clears. Every bucket starts full again."""
        if isinstance(per_second, Mapping):
            per_second = RateLimit.from_mapping(per_second)
        elif per_second is not None and not isinstance(per_second, RateLimit):
            per_second = RateLimit(per_second, burst) if float(per_second) != 0 else None
        self._limiter.configure(per_second)

    def set_server_ms(self, ms: float) -> None:
        """Serial server time per admitted API request (a global lock held `ms`); 0 = none."""
        self._cost.set(ms)

    def set_signups(self, per_second: float | None) -> None:
        """R new live subscriptions a second while the subscription list is read (they arrive
        as its pages are served, at its end: `signups.Signups`); None or 0 stops them."""
        if per_second is None or float(per_second) == 0:
            self._signups = None
            return
        if float(per_second) < 0:
            raise ValueError("signups per second must be >= 0")
        self._signups = Signups(self.world, float(per_second), seed=self.world.seed)

    @property
    def signups_per_s(self) -> float:
        return self._signups.per_second if self._signups is not None else 0.0

    @property
    def signups_added(self) -> int:
        """Signups added by `signups_per_s` since it was last set."""
        return self._signups.added if self._signups is not None else 0

    def set_page_hook(self, hook: PageHook | None) -> None:
        """`hook(world, endpoint, page)` runs before each list page is built (drift tests)."""
        self.api.page_hook = hook

    def set_page_override(self, override: PageOverride | None) -> None:
        """`override(endpoint, page, body) -> dict | bytes | None` replaces list page bodies."""
        self.api.page_override = override

    def http_date(self) -> str:
        """The simulated clock as an HTTP `Date` header: clients may take it as server time."""
        ts = self.world.now_ts
        cached = self._http_date
        if cached[0] != ts:
            cached = (ts, formatdate(ts, usegmt=True))
            self._http_date = cached
        return cached[1]

    # ------------------------------------------------------------------ request handling

    def _authorized(self, header: str | None) -> str | None:
        """The accepted token the `Authorization` header carries, or None."""
        if not header:
            return None
        scheme, _, value = header.strip().partition(" ")
        if scheme.lower() != "bearer":
            return None
        presented = value.strip().encode()
        found = None
        for token in self._tokens:  # every token compared: no early exit to time
            if hmac.compare_digest(presented, token.encode()):
                found = token
        return found

    def respond(
        self, method: str, target: str, authorization: str | None, host: str, body: bytes
    ) -> Delivery:
        """Everything between the parsed request and the bytes on the wire."""
        stats = self._stats
        split = urlsplit(target)
        path = split.path if split.path == "/" else split.path.rstrip("/")
        params: dict[str, str] = {}
        for key, value in parse_qsl(split.query, keep_blank_values=True):
            params[key] = value  # last wins, first position kept: PHP's $_GET
        control = path.startswith(CONTROL_PREFIX) or path == CONTROL_PREFIX.rstrip("/")
        if control:
            stats.add(requests=1, control_requests=1)
        else:
            stats.add(requests=1, api_requests=1)
            latency = self.latency_ms
            if latency > 0:
                time.sleep(latency / 1000.0)
        token = self._authorized(authorization)
        if token is None:
            stats.add(unauthorized=1)
            return Delivery(message(401, "Unauthenticated."))
        if control:
            return Delivery(self._control(method, path, params, body))
        return self._api(method, path, params, host, token)

    def _api(
        self, method: str, path: str, params: dict[str, str], host: str, token: str
    ) -> Delivery:
        """An authorised request outside /__sandbox/: route, limit, cost, faults, handler."""
        if not Api.is_route(path):
            return Delivery(message(404, "Not Found"))
        if method != "GET":
            return Delivery(
                json_response(
                    405,
                    {
                        "message": f"The {method} method is not supported for this route. Supported methods: GET."
                    },
                    headers=(("Allow", "GET"),),
                )
            )
        decision = self._limiter.take(token)
        if decision is not None and not decision.allowed:
            self._stats.add(rate_limited=1)
            return Delivery(_throttled(decision, self.world.now_ts))
        self._cost.spend()
        return self._serve(path, params, host, decision.headers() if decision else ())

    def _serve(
        self,
        path: str,
        params: dict[str, str],
        host: str,
        limit_headers: tuple[tuple[str, str], ...],
    ) -> Delivery:
        """An admitted request: the fault draw, then the handler (its answer gets LIMIT_HEADERS)."""
        stats = self._stats
        fault = self._faults.draw()
        if fault is not None:
            stats.count("faults", fault.kind)
            early = _early_fault(fault)
            if early is not None:
                return early
        signups = self._signups
        if signups is not None and path == SUBSCRIPTIONS_PATH and not params.get("id", "").strip():
            is_test = params.get("is_test", "").strip().lower() in ("1", "true")
            if not is_test:
                signups.arrive()
        try:
            response = self.api.handle(path, params, host)
        except Exception as err:
            # Mostly a test's page hook or override failing: answer so the test sees why,
            # instead of a dropped connection that looks like an injected fault.
            log.exception("sandbox: request handler failed")
            response = message(500, f"sandbox handler error: {type(err).__name__}: {err}")
            return Delivery(replace(response, headers=response.headers + limit_headers))
        if limit_headers:
            response = replace(response, headers=response.headers + limit_headers)
        if fault is not None:
            return _late_fault(fault, response)
        counter = _PAGE_COUNTERS.get(response.endpoint or "")
        if counter is not None and response.status == 200:
            stats.count("pages", counter)
        return Delivery(response)

    # ------------------------------------------------------------------ /__sandbox/

    _CONTROL_METHODS = {
        "state": "GET",
        "advance": "POST",
        "faults": "POST",
        "latency": "POST",
        "rate-limit": "POST",
        "server-ms": "POST",
        "signups": "POST",
    }

    def _control(self, method: str, path: str, params: dict[str, str], body: bytes) -> Response:
        name = path[len(CONTROL_PREFIX) :] if path.startswith(CONTROL_PREFIX) else ""
        routes = self._CONTROL_METHODS
        if name not in routes:
            return message(404, f"Unknown control endpoint; use one of {', '.join(routes)}.")
        if method != routes[name]:
            return json_response(
                405,
                {"message": f"Use {routes[name]} for /__sandbox/{name}."},
                headers=(("Allow", routes[name]),),
            )
        try:
            data: Any = json.loads(body) if body.strip() else None
        except ValueError:
            return message(422, "The request body must be JSON.")
        args: dict[str, Any] = dict(params)
        if isinstance(data, dict):
            args.update(data)
        handlers = {
            "state": lambda a: self.state(),
            "advance": self._control_advance,
            "faults": self._control_faults,
            "latency": self._control_latency,
            "rate-limit": self._control_rate_limit,
            "server-ms": self._control_server_ms,
            "signups": self._control_signups,
        }
        try:
            return json_response(200, handlers[name](args))
        except (TypeError, ValueError) as err:
            return message(422, str(err))

    def _control_advance(self, args: dict[str, Any]) -> dict[str, Any]:
        days = float(args.get("days", 0) or 0)
        hours = float(args.get("hours", 0) or 0)
        changes = self.advance(days=days, hours=hours)
        return {"now": fmt(self.world.now_ts), "changes": changes}

    def _control_faults(self, args: dict[str, Any]) -> dict[str, Any]:
        # {} / no body / {"clear": true} clear; "queue" alone only scripts requests.
        if not args or args.get("clear"):
            self.set_faults(None)
        if "queue" in args:
            queue = args.pop("queue")
            if not isinstance(queue, list):
                raise ValueError("queue must be a JSON list of fault kinds or null")
            self.queue_faults(*queue)
        if "rate" in args or "kinds" in args:
            self.set_faults(FaultConfig.from_mapping(args))
        return {"faults": _as_dict(self.faults)}

    def _control_latency(self, args: dict[str, Any]) -> dict[str, Any]:
        self.set_latency(_ms(args, "latency_ms"))
        return {"latency_ms": self.latency_ms}

    def _control_rate_limit(self, args: dict[str, Any]) -> dict[str, Any]:
        # {"per_second": R, "burst": B}; {} / no body / per_second null or 0 clear.
        self.set_rate_limit(RateLimit.from_mapping(args))
        return {"rate_limit": _as_dict(self.rate_limit)}

    def _control_server_ms(self, args: dict[str, Any]) -> dict[str, Any]:
        self.set_server_ms(_ms(args, "server_ms"))
        return {"server_ms": self.server_ms}

    def _control_signups(self, args: dict[str, Any]) -> dict[str, Any]:
        # {"per_second": R}; {} / no body / per_second null or 0 stop them
        value = args.get("per_second")
        self.set_signups(float(value) if value is not None else None)
        return {"signups_per_s": self.signups_per_s, "signups_added": self.signups_added}

    def state(self) -> dict[str, Any]:
        """Clock, counts, fault/latency/limit settings, counters: what /__sandbox/state shows."""
        return {
            "now": fmt(self.world.now_ts),
            "seed": self.world.seed,
            "version": self.world.version,
            "counts": self.world.counts(),
            "rates": self.world.rates.to_dict(),
            "faults": _as_dict(self.faults),
            "latency_ms": self.latency_ms,
            "rate_limit": _as_dict(self.rate_limit),
            "server_ms": self.server_ms,
            "signups_per_s": self.signups_per_s,
            "signups_added": self.signups_added,
            "stats": self.stats,
        }


def _as_dict(cfg: FaultConfig | RateLimit | None) -> dict[str, Any] | None:
    """A setting as the control endpoints and the state show it (null when off)."""
    return cfg.to_dict() if cfg else None


def _ms(args: dict[str, Any], name: str) -> float:
    """The milliseconds a control request sets: `ms`, or the setting's own NAME; 0 without."""
    return float(args.get("ms", args.get(name, 0)))


def _checked_tokens(tokens: Iterable[str]) -> tuple[str, ...]:
    if isinstance(tokens, str):
        tokens = (tokens,)
    out = tuple(tokens)
    if any(not isinstance(t, str) or not t.strip() for t in out):
        raise ValueError("extra tokens must be non-empty strings")
    return out


def _throttled(decision: Decision, now_ts: int) -> Response:
    """The rate limit's 429, as Laravel's ThrottleRequests answers it (Reset: Date + wait)."""
    return json_response(
        429,
        {"message": "Too Many Attempts."},
        headers=(
            ("Retry-After", str(decision.retry_after)),
            *decision.headers(),
            ("X-RateLimit-Reset", str(int(now_ts) + decision.retry_after)),
        ),
    )


def _early_fault(fault: Fault) -> Delivery | None:
    """Faults that replace the response outright (no page is built)."""
    kind = fault.kind
    if kind == "429":
        return Delivery(
            json_response(
                429,
                {"message": "Too Many Attempts."},
                headers=(
                    ("Retry-After", str(fault.retry_after)),
                    ("X-RateLimit-Limit", "60"),
                    ("X-RateLimit-Remaining", "0"),
                ),
            )
        )
    if kind in ("500", "502", "503"):
        status = int(kind)
        return Delivery(Response(status, HTML_BODIES[status], "text/html; charset=UTF-8"))
    if kind == "reset":
        return Delivery(None, "reset")
    if kind == "malformed":
        body, ctype = MALFORMED_BODIES[int(fault.variant * len(MALFORMED_BODIES))]
        return Delivery(Response(200, body, ctype))
    return None


def _late_fault(fault: Fault, response: Response) -> Delivery:
    """Faults that damage the real response: truncated body, or cut mid-body."""
    if fault.kind == "cut":
        return Delivery(response, "cut")
    return Delivery(
        Response(
            response.status,
            truncate(response.body, fault.variant),
            response.content_type,
            response.headers,
        )
    )
