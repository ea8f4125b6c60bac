"""All HTTP to the Developer API: one keep-alive session, the tenacity retry policy, pagination.

Nothing else in devportal opens a connection to the API. The access token lives only in the
session (its headers, and its auth, so that neither credentials in a URL nor ~/.netrc can
replace it); it never enters a URL, a log line, an exception or a returned value, and
`errors.scrub` takes it out of any text that quotes it back.

Bounds: one attempt (connect, headers, the body, same-origin redirects) has one deadline,
`timeout_s` from its start: connecting and each read wait at most what is left of it, and the
body is read in chunks against it, so a body dripping one byte a second times out like a
silent server; a watchdog thread cuts a request still waiting for its status line and headers
at the deadline (`_HeadersWatchdog`), so dripping headers cannot stretch an attempt either.
One `get_json()` (all attempts and the sleeps between them) takes at most `max_wait_s`: each
attempt gets min(`timeout_s`, what is left) and a sleep that does not fit in what is left ends
the retries at once, with a message that says what happened (attempts, time, the last answer).

Bodies: one decoded body is capped (`max_body_mb`; by default 64 KiB per row of the list's
`per_page`, between 16 and 64 MiB, and 16 MiB where `per_page` is not known yet): a body past
it is refused, not retried. Content-Encoding is undone here, 256 KiB at a time whatever the
ratio (a small gzip bomb cannot grow past the cap), and at most `LARGE_BODIES` bodies past
`LARGE_BODY` are read at once, so the memory of the bodies in flight is bounded whatever the
server sends; pages read ahead are bounded in bytes as well as in number (`AHEAD_BYTES`).

Retry policy (tenacity): only what another attempt can fix. 408, 429 (honouring `Retry-After`,
shortened to `retry_after_cap_s`), 5xx, connection errors, timeouts, and bodies that are not
JSON (truncated, malformed, an HTML maintenance page) are retried with exponential backoff and
full jitter, bounded by `max_attempts` and `max_wait_s` (a body that is not JSON may be a
proxy's passing error page: it is retried, and the final error says to check `base_url` first).
A UTF-8 byte order mark before the JSON is skipped (RFC
8259 allows a reader to). 401/403/404/422, a page of the wrong shape, a body past its cap and
pages that contradict themselves are answers, not accidents: they raise at once with a
one-line cause and never advise trying again later.

Server text (an error's `message`, a URL it sent) reaches messages only through
`errors.server_text`: without the token, any `Bearer ...` or terminal control sequences.

Redirects: followed by this module, not by requests, and only on the configured origin (a few
hops at most); a redirect to another origin is refused before anything is sent there.

Concurrency: every attempt takes a slot from the client's one `concurrency.Concurrency` before
it is sent, so all lists and the account fetches share one adaptive limit (slow start, additive
increase, halved on 429/503/timeouts or rising latency, everyone paused on `Retry-After`),
between `min_workers` and `max_workers`; `workers` pins it (see that module).

Pagination: page 1 tells `last_page`; pages 2..last are fetched by a pool of workers sharing the
session, yielded in order, with at most twice the current limit of pages fetched ahead so
memory stays flat. Without a usable `last_page` the pager follows `next_page_url` one page at a
time. Paging is bounded by what the wrapper proves (`_PageGuard`): `last_page` must be
ceil(`total` / `per_page`), `current_page` the page asked for, a page before the last must not
be empty, no page may repeat an earlier one, and a `next_page_url` chain ends where `total`
says it must. A server that breaks one of these is refused in one line at the page that shows
it, instead of being paged for thousands of requests or re-read.
"""

from __future__ import annotations

import contextlib
import ctypes
import email.utils
import heapq
import http.client
import ipaddress
import json
import logging
import queue
import re
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol, cast
from urllib.parse import urljoin, urlsplit

import orjson
import requests
import urllib3
import urllib3.connection
from requests.adapters import HTTPAdapter
from tenacity import RetryCallState, Retrying, retry_if_exception_type, wait_random_exponential

from devportal.concurrency import Concurrency, Outcome, Slot
from devportal.errors import ApiError, ConfigError, register_secret, server_text
from devportal.values import replace_nul_escapes, to_int

log = logging.getLogger("devportal.client")

SUBSCRIPTIONS_PATH = "/api/v1/developer/subscriptions"
USER_SETTINGS_PATH = "/api/v1/developer/users/settings"
USER_ACCOUNTS_PATH = "/api/v1/developer/users/{user_id}"
# what a sync can read, one resource per endpoint, in the order it reads them
RESOURCES = ("subscriptions", "user_settings", "user_accounts")

TOKEN_HINT = "set SOURCES__DEVPORTAL__ACCESS_TOKEN or access_token in .dlt/secrets.toml"

MAX_REDIRECTS = 5  # same-origin hops followed within one attempt
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
READ_CHUNK = 256 * 1024  # one socket read at most; the deadline is checked between reads
MIB = 1024 * 1024
# the cap on one decoded body when `max_body_mb` is not set: ROW_BYTES per row of the list's
# `per_page` (a subscription is ~150 bytes, a settings entry a few KB), within these bounds;
# BODY_FLOOR also where `per_page` is not known yet (page 1, an account, an error body)
BODY_ROW_BYTES = 64 * 1024
BODY_FLOOR = 16 * MIB
BODY_CEILING = 64 * MIB
LARGE_BODY = 1 * MIB  # a body past this waits for one of LARGE_BODIES turns to read on
LARGE_BODIES = 2
AHEAD_BYTES = 64 * MIB  # decoded bytes of pages read ahead of the reader, at most (about)
ENCODINGS = ("gzip", "deflate")  # what the client asks for and undoes itself
_BOM = b"\xef\xbb\xbf"
_END = object()


class HttpSettings(Protocol):
    """How to reach the API and how hard to try: the fields of `config.DevportalConfig` that
    this module reads (its defaults and their meaning are there). A protocol, so the client
    does not import dlt's configuration machinery (the benchmark floor stays honest)."""

    base_url: Any
    access_token: Any
    workers: int | None  # pins the number of requests in flight; None: adaptive
    min_workers: int
    max_workers: int
    timeout_s: float
    max_attempts: int
    max_wait_s: float
    backoff_initial_s: float
    backoff_max_s: float
    retry_after_cap_s: float
    allow_insecure_remote: bool
    max_body_mb: float | None  # the cap on one decoded body; None: sized from `per_page`


class RetryableError(Exception):
    """A transient failure worth another attempt; `retry_after` is the server's own hint.

    `timed_out`: no complete answer in time, a sign of an overloaded server (the concurrency
    controller cuts on it, not on a connection error). `body`: for a complete answer that is
    not JSON, a fingerprint of it: the same body twice in a row is not worth a third attempt."""

    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        timed_out: bool = False,
        body: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.timed_out = timed_out
        self.body = body


class NotFound(ApiError):
    """404: the resource does not exist (callers decide whether that is a failure)."""


@dataclass
class ClientStats:
    requests: int = 0
    retries: int = 0
    bytes: int = 0
    retry_reasons: dict[str, int] = field(default_factory=dict)
    replaced_surrogates: int = 0  # lone surrogates in answers, replaced by U+FFFD
    replaced_nul: int = 0  # NUL characters (`\u0000` escapes) in answers, replaced by U+FFFD
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_request(self, nbytes: int) -> None:
        with self._lock:
            self.requests += 1
            self.bytes += nbytes

    def count_replaced(self, surrogates: int, nul: int = 0) -> None:
        with self._lock:
            self.replaced_surrogates += surrogates
            self.replaced_nul += nul

    def count_retry(self, reason: str) -> None:
        with self._lock:
            self.retries += 1
            self.retry_reasons[reason] = self.retry_reasons.get(reason, 0) + 1


@dataclass(frozen=True)
class Page:
    """One page of a paginated list, with the wrapper fields the pager relies on."""

    number: int
    data: list[dict[str, Any]]
    total: int | None
    last_page: int | None
    per_page: int | None
    next_page_url: str | None
    server_time: datetime | None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    size: int = 0  # bytes of the decoded body
    fingerprint: int = 0  # the rows' (see `_fingerprint`); 0 for an empty page


def check_base_url(base_url: str, allow_insecure_remote: bool = False) -> str:
    """Validate the base URL; refuse to send a bearer token over plain http to a remote host.

    Credentials in it (`user:password@`) are refused before any request: the HTTP library would
    send them as Basic auth, and the API would then reject "the token". They are never shown."""
    parts = urlsplit(base_url.strip())
    if "@" in parts.netloc:
        host = parts.netloc.rpartition("@")[2]
        raise ConfigError(
            f"base_url for {host or 'its host'} holds a user name or password before '@': "
            "devportal signs in with the access token only; remove 'user:password@' from "
            "base_url (the token goes in SOURCES__DEVPORTAL__ACCESS_TOKEN or .dlt/secrets.toml)"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        # a value without a scheme may still hold a password before an '@': not shown then
        shown = repr(base_url) if "@" not in base_url else "given (not shown: it holds an '@')"
        raise ConfigError(
            f"base_url {shown} is not an http(s) URL; set base_url in .dlt/config.toml "
            "or pass --base-url"
        )
    if parts.scheme == "http" and not allow_insecure_remote and not is_loopback(parts.hostname):
        raise ConfigError(
            f"refusing to send the access token over plain http to {parts.hostname}; "
            "use https (or a loopback address for the sandbox)"
        )
    return base_url.strip().rstrip("/")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _retry_after_seconds(header: str | None) -> float | None:
    if not header:
        return None
    header = header.strip()
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:  # HTTP-date form
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def server_time(headers: Mapping[str, str]) -> datetime | None:
    value = headers.get("Date")
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when


_LONG_NUMBER = re.compile(rb"\d{20,}")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_NUL = b"\\u0000"


def parse_json(content: bytes, status: int) -> tuple[Any, int, int]:
    """A body's JSON and how many lone surrogates and NUL characters it held (each replaced by
    U+FFFD); RetryableError when it is not JSON.

    orjson (fast) reads integers beyond 64 bits as floats, silently rounding them, and refuses
    `\\udXXX` escapes that pair with nothing (valid JSON, invalid Unicode). A body with a run of
    20 or more digits or a surrogate escape is read by the standard library instead: big
    integers stay exact, and each lone surrogate becomes U+FFFD (no UTF-8 text can hold it),
    counted so the run reports it. NUL (U+0000) is valid in JSON and DuckDB text but PostgreSQL
    text cannot hold it (the whole load would fail, every run again), so it becomes U+FFFD on
    every engine alike, counted too. JSON carries NUL only as the escape `\\u0000` (a raw
    control byte is invalid JSON), so the escape is replaced in the bytes before parsing, and
    only in a body that holds one. A page is never retried for a value it does hold.

    A UTF-8 byte order mark before the JSON is skipped: RFC 8259 lets a reader ignore it, and
    some servers (a PHP file saved "with BOM") send one before every answer.
    """
    if content.startswith(_BOM):
        content = content[len(_BOM) :]
    nul = 0
    if _NUL in content:
        content, nul = replace_nul_escapes(content)
    if _LONG_NUMBER.search(content) is not None or _SURROGATE_ESCAPE.search(content) is not None:
        try:
            body = json.loads(content, parse_constant=_not_json)
        except (ValueError, RecursionError):
            pass
        else:
            body, surrogates = _replace_lone_surrogates(body)
            return body, surrogates, nul
    try:
        return orjson.loads(content), 0, nul
    except orjson.JSONDecodeError:
        pass
    kind = "truncated JSON" if content[:1] in (b"{", b"[") else "a body that is not JSON"
    raise RetryableError(
        f"{status} with {kind} ({len(content)} bytes)", body=hash(content)
    ) from None


def _not_json(constant: str) -> Any:
    """NaN and Infinity: the standard library reads them, JSON (and orjson) does not."""
    raise ValueError(f"{constant} is not JSON")


def _replace_lone_surrogates(body: Any) -> tuple[Any, int]:
    """`body` with every unpaired surrogate in keys and strings replaced by U+FFFD (iterative)."""
    replaced = 0

    def fix(text: str) -> str:
        nonlocal replaced
        fixed, n = _LONE_SURROGATE.subn("\ufffd", text)
        replaced += n
        return fixed

    root = [body]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        value = parent[key]
        if isinstance(value, str):
            parent[key] = fix(value)
        elif isinstance(value, list):
            stack.extend((value, i) for i in range(len(value)))
        elif isinstance(value, dict):
            if any(_LONE_SURROGATE.search(k) for k in value):
                value = {fix(k): v for k, v in value.items()}
                parent[key] = value
            stack.extend((value, k) for k in value)
    return root[0], replaced


def _error_message(resp: requests.Response, content: bytes) -> str:
    """The server's own `message` (and first field error) if it sent JSON, else the reason;
    scrubbed (`errors.server_text`): a framework that echoes the request's headers in a
    validation error would otherwise put the token in the message, and so in cron mail."""
    reason = server_text(resp.reason or f"HTTP {resp.status_code}", 100)
    try:
        body = orjson.loads(content[len(_BOM) :] if content.startswith(_BOM) else content)
    except orjson.JSONDecodeError:
        return reason
    if not isinstance(body, dict):
        return reason
    message = str(body.get("message") or resp.reason or "")
    errors = body.get("errors")
    if isinstance(errors, dict) and errors:
        name, problems = next(iter(errors.items()))
        detail = problems[0] if isinstance(problems, list) and problems else problems
        message = f"{message} ({name}: {detail})" if message else f"{name}: {detail}"
    return server_text(message) or reason


def clean_token(token: str) -> str:
    """The token without surrounding whitespace (a file read with $(cat ...) ends in CR/LF).

    Whatever is left must be one header-safe word; the message names the problem, never the
    token.
    """
    token = (token or "").strip()
    if not token:
        raise ConfigError(f"no access token: {TOKEN_HINT}")
    if token.isascii() and token.isprintable() and " " not in token:
        return token
    if any(ch in token for ch in "\r\n\v\f\x85\u2028\u2029"):
        problem = "a line break"
    elif any(ch.isspace() for ch in token):
        problem = "a space or tab"
    elif not token.isprintable():
        problem = "a control character"
    else:
        problem = "a non-ASCII character"
    raise ConfigError(
        f"the access token contains {problem} inside it (surrounding whitespace is ignored); "
        f"copy the token again as one line: {TOKEN_HINT}"
    )


def _secs(seconds: float) -> str:
    """Seconds for messages: 3600s, 12s, 1.5s, 0.05s."""
    return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.2g}s"


def _size(nbytes: int) -> str:
    """Bytes for messages: 16 MiB, 1.5 GiB, 300 KiB."""
    for unit, scale in (("GiB", 1024 * MIB), ("MiB", MIB), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes} bytes"


class _Budget:
    """One `get_json()`: its deadline (`max_wait_s`), its attempts, the cap on each body it
    reads, and why it stopped."""

    def __init__(self, config: HttpSettings, body_cap: int) -> None:
        self.config = config
        self.body_cap = body_cap
        self.started = time.monotonic()
        self.deadline = self.started + config.max_wait_s
        self.attempts = 0
        self.why_stopped = ""

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def start_attempt(self) -> tuple[float, str]:
        """The next attempt's deadline: `timeout_s` from now or the budget's end, the earlier."""
        self.attempts += 1
        own = time.monotonic() + self.config.timeout_s
        if own <= self.deadline:
            return own, "timeout_s"
        return self.deadline, "what was left of max_wait_s"

    def stop(self, state: RetryCallState) -> bool:
        """Tenacity stop: attempts used up, or the next sleep does not fit in what is left.

        Records `why_stopped`: the last answer and what ended the retries, with the fix.
        """
        exc = state.outcome.exception() if state.outcome else None
        budget = f"the {_secs(self.config.max_wait_s)} retry budget (max_wait_s)"
        later = "try again later or raise max_wait_s"
        # Not "the same body twice ends the retries": a proxy or load balancer serves the same
        # error page for as long as its backend is away, and a fault storm repeats one by chance
        # (tests/reliability/test_secrets.py at 30% faults did): such a body can change.
        body = exc.body if isinstance(exc, RetryableError) else None
        if body is not None and state.attempt_number >= self.config.max_attempts:
            self.why_stopped = (
                f"{exc}; the API kept answering with bodies that are not JSON: check that "
                "base_url is the Developer API itself; if it is, it may be failing: try again "
                "later or raise max_attempts"
            )
            return True
        if state.attempt_number >= self.config.max_attempts:
            self.why_stopped = (
                f"{exc}; the API may be down or overloaded: try again later or raise max_attempts"
            )
            return True
        left, sleep = self.left(), state.upcoming_sleep
        if left <= 0:
            self.why_stopped = f"{exc}; {budget} is spent: the API may be down or slow, {later}"
            return True
        if sleep < left:
            return False
        if left < self.config.max_wait_s - 0.5:
            budget = f"the {_secs(left)} left of {budget}"
        asked = exc.retry_after if isinstance(exc, RetryableError) else None
        if asked is not None:
            shortened = (
                f" even shortened to {_secs(sleep)} (retry_after_cap_s)" if sleep < asked else ""
            )
            self.why_stopped = (
                f"{exc}, server asked to wait {_secs(asked)} (Retry-After), more than {budget}"
                f"{shortened}: {later}"
            )
        else:
            self.why_stopped = (
                f"{exc}; the next retry in {_secs(sleep)} would not fit in {budget}: "
                f"the API may be down, {later}"
            )
        return True


class _HeadersWatchdog:
    """Bounds the wait for a status line and headers in total, not per socket read.

    A socket timeout bounds each read, so a server dripping its headers a byte at a time could
    stretch one request for hours. One daemon thread (process-wide, started on first use)
    shuts down the socket of any request still waiting for its headers at its deadline; the
    blocked read then fails and the attempt ends as a timeout. The body has its own deadline
    (`_read_body`).
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
    def watching(self, sock: Any) -> Iterator[None]:
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
                    with contextlib.suppress(OSError):
                        entry[0].shutdown(socket.SHUT_RDWR)


_WATCHDOG = _HeadersWatchdog()


class _WatchedHTTPConnection(urllib3.connection.HTTPConnection):
    def getresponse(self) -> Any:
        with _WATCHDOG.watching(self.sock):
            return super().getresponse()


class _WatchedHTTPSConnection(urllib3.connection.HTTPSConnection):
    def getresponse(self) -> Any:
        with _WATCHDOG.watching(self.sock):
            return super().getresponse()


class _WatchedHTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _Adapter(HTTPAdapter):
    """requests' adapter whose connections are watched while they wait for headers."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _WatchedHTTPPool,
            "https": _WatchedHTTPSPool,
        }


class ApiClient:
    """A Developer API client. Thread-safe for concurrent GETs; close() when done."""

    def __init__(self, config: HttpSettings) -> None:
        token = clean_token(config.access_token or "")
        if config.max_body_mb is not None and not config.max_body_mb > 0:
            raise ConfigError(
                f"configuration max_body_mb = {config.max_body_mb} must be above 0: fix "
                "[sources.devportal] max_body_mb in .dlt/config.toml or "
                "SOURCES__DEVPORTAL__MAX_BODY_MB"
            )
        self.config = config
        self.base_url = check_base_url(config.base_url or "", config.allow_insecure_remote)
        self.stats = ClientStats()
        self.concurrency = Concurrency(
            config.min_workers,
            config.max_workers,
            pinned=config.workers,
            pause_cap_s=config.retry_after_cap_s,
        )
        self._prefetch: Prefetch | None = None
        # turns to read a body past LARGE_BODY: the bodies in flight stay bounded in memory
        self._large_bodies = threading.BoundedSemaphore(LARGE_BODIES)
        register_secret(token)  # any text quoting it back is scrubbed (errors.scrub)
        self.session = requests.Session()
        adapter = _Adapter(pool_connections=1, pool_maxsize=self.concurrency.max, max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.session.headers.update(
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "Accept-Encoding": ", ".join(ENCODINGS),
                "Content-Type": "application/json",
                "User-Agent": "devportal-sync",
            }
        )
        # set on every request, after requests would add credentials from the URL or ~/.netrc
        self.session.auth = _BearerAuth(token)

    def close(self) -> None:
        if self._prefetch is not None:
            self._prefetch.close()
        self.session.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- single requests -------------------------------------------------------------------

    def url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            return path_or_url
        return urljoin(self.base_url + "/", path_or_url.lstrip("/"))

    def get_json(
        self,
        path_or_url: str,
        params: Mapping[str, Any] | None = None,
        check: Callable[[Any, Mapping[str, str]], Any] | None = None,
        per_page: int | None = None,
    ) -> Any:
        """GET and parse JSON with the retry policy.

        Returns `check(body, headers)` (default: `(body, headers)`); a `Page` it returns gets
        the body's size. `check` runs inside the retry loop: a RetryableError it raises fetches
        the body again, any other error ends the call. Each attempt is bounded by `timeout_s`
        in total, the whole call by `max_wait_s` (see `_Budget`); the body by `body_cap`
        (`per_page`: the rows a page of this list holds, when known).
        """
        url = self.url(path_or_url)
        self._check_same_origin(url)
        budget = _Budget(self.config, self.body_cap(per_page))
        retrying = Retrying(
            retry=retry_if_exception_type(RetryableError),
            stop=budget.stop,
            wait=self._wait,
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            return retrying(self._get_once, url, params, check, budget)
        except RetryableError as err:
            attempts = budget.attempts
            spent = time.monotonic() - budget.started
            raise ApiError(
                f"GET {_display(url, params)} still failing after {attempts} "
                f"attempt{'s' if attempts != 1 else ''} in {spent:.1f}s, last: "
                f"{budget.why_stopped or err} (nothing partial was loaded)"
            ) from None

    def body_cap(self, per_page: int | None = None) -> int:
        """The most bytes one decoded body may have: `max_body_mb`, else sized from PER_PAGE."""
        if self.config.max_body_mb is not None:
            return max(1, int(self.config.max_body_mb * MIB))
        if per_page is None or per_page < 1:
            return BODY_FLOOR
        return min(BODY_CEILING, max(BODY_FLOOR, per_page * BODY_ROW_BYTES))

    def _check_same_origin(self, url: str) -> None:
        # Page URLs come from the server; the token must not follow them to another host.
        foreign = self._foreign_origin(url)
        if foreign:
            raise ApiError(
                f"the API sent a page URL on another origin ({foreign}); "
                "refusing to send the access token there"
            )

    def _foreign_origin(self, url: str) -> str | None:
        """`scheme://host:port` of `url` if it is not the configured origin, else None."""
        base, target = urlsplit(self.base_url), urlsplit(url)
        if (base.scheme, base.netloc) == (target.scheme, target.netloc):
            return None
        if target.netloc:  # without credentials a server may have put in it
            return server_text(f"{target.scheme}://{target.netloc.rpartition('@')[2]}", 100)
        return repr(server_text(url, 100))

    def _get_once(
        self,
        url: str,
        params: Mapping[str, Any] | None,
        check: Callable[[Any, Mapping[str, str]], Any] | None,
        budget: _Budget,
    ) -> Any:
        started = time.monotonic()
        deadline, bound = budget.start_attempt()
        with self.concurrency.slot() as slot:
            try:
                resp, content = self._exchange(url, params, deadline, bound, started, budget)
            except RetryableError as err:
                slot.done(Outcome.CONGESTED if err.timed_out else Outcome.FAILED)
                raise
            status = resp.status_code
            retry_after = None
            if status == 429 or status >= 500:
                retry_after = _retry_after_seconds(resp.headers.get("Retry-After"))
            _report(slot, resp, retry_after)
        if status == 429:
            raise RetryableError("429 rate limited", retry_after)
        if status >= 500:
            raise RetryableError(f"{status} server error", retry_after)
        if status == 408:  # the server gave up waiting for us: another attempt may do
            raise RetryableError("408 request timeout")
        if status == 401:
            raise ApiError(f"access token rejected (401): {TOKEN_HINT}")
        if status == 403:
            raise ApiError(
                f"access denied (403) for {_display(url, params)}: the token lacks access to this app"
            )
        if status == 404:
            raise NotFound(f"not found (404): {_display(url, params)}")
        if status == 422:
            raise ApiError(
                f"the API rejected the request (422) {_display(url, params)}: "
                f"{_error_message(resp, content)}"
            )
        if status >= 300:
            raise ApiError(
                f"HTTP {status} for {_display(url, params)}: {_error_message(resp, content)}"
            )
        body: Any = None
        try:
            body, surrogates, nul = parse_json(content, status)
            if surrogates or nul:
                self.stats.count_replaced(surrogates, nul)
            if check is None:
                return body, resp.headers
            result = check(body, resp.headers)
        except BaseException:
            content, body = b"", None  # the error's traceback keeps this frame: not the answer
            raise
        return replace(result, size=len(content)) if isinstance(result, Page) else result

    def _exchange(
        self,
        url: str,
        params: Mapping[str, Any] | None,
        deadline: float,
        bound: str,
        started: float,
        budget: _Budget,
    ) -> tuple[requests.Response, bytes]:
        """One attempt's answer, following same-origin redirects, all by `deadline`."""
        target, query = url, params
        for _hop in range(MAX_REDIRECTS + 1):
            resp, content = self._fetch(
                target, query, deadline, f"{deadline - started:.1f}s, {bound}", budget.body_cap
            )
            if resp.status_code not in REDIRECT_STATUSES:
                return resp, content
            target, query = self._redirect_target(url, params, resp), None
        raise ApiError(
            f"GET {_display(url, params)} was redirected more than {MAX_REDIRECTS} times "
            "on the API's own origin; check base_url"
        )

    def _fetch(
        self,
        url: str,
        params: Mapping[str, Any] | None,
        deadline: float,
        bound: str,
        cap: int,
    ) -> tuple[requests.Response, bytes]:
        """One HTTP exchange, headers and whole body, done by `deadline` (redirects not followed).

        `bound` says in the timeout message which limit the deadline came from; the decoded
        body may have `cap` bytes at most (`_read_body`).
        """
        left = deadline - time.monotonic()
        if left <= 0:
            raise _timeout(bound)
        try:
            with _WATCHDOG.deadline(deadline):
                resp = self.session.get(
                    url,
                    params=params,
                    # urllib3's total bounds connecting and each read; the watchdog the total
                    timeout=urllib3.Timeout(total=left),  # type: ignore[arg-type]
                    stream=True,
                    allow_redirects=False,
                )
        except requests.Timeout:
            raise _timeout(bound) from None
        except requests.RequestException as err:
            if time.monotonic() >= deadline:  # the watchdog cut a request dripping its headers
                raise _timeout(bound) from None
            raise RetryableError(f"connection error ({type(err).__name__})") from None
        try:
            content = _read_body(resp, deadline, cap, self._large_bodies)
        except _DeadlinePassed:
            raise _timeout(bound) from None
        except _TooLarge as err:
            limit = (
                "max_body_mb"
                if self.config.max_body_mb is not None
                else "the default of max_body_mb, sized from the list's per_page"
            )
            raise ApiError(
                f"GET {_display(url, params)}: the answer {err} once decoded, more than "
                f"{_size(cap)} ({limit}): refused, nothing partial was loaded; if the API's "
                "answers really are this large, raise max_body_mb"
            ) from None
        except _BadEncoding as err:
            raise ApiError(f"GET {_display(url, params)}: {err}; nothing was loaded") from None
        except _Undecodable as err:  # like a body that is not JSON: the same twice ends it
            raise RetryableError(f"{resp.status_code} with {err}", body=err.body) from None
        except (
            urllib3.exceptions.HTTPError,
            http.client.HTTPException,
            OSError,
        ) as err:
            raise RetryableError(f"connection error ({type(err).__name__})") from None
        finally:
            resp.close()  # after a whole body: back to the pool; otherwise the socket is closed
        self.stats.count_request(len(content))
        return resp, content

    def _redirect_target(
        self, url: str, params: Mapping[str, Any] | None, resp: requests.Response
    ) -> str:
        """Where a same-origin redirect points; another origin or no Location is an ApiError."""
        location = resp.headers.get("Location")
        if not location or not location.strip():
            raise ApiError(
                f"the API answered GET {_display(url, params)} with a {resp.status_code} redirect "
                "without a Location header; check base_url"
            )
        target = urljoin(resp.url, location.strip())
        foreign = self._foreign_origin(target)
        if foreign:
            raise ApiError(
                f"the API redirected GET {_display(url, params)} to another origin ({foreign}); "
                "refused, the access token is only sent to base_url: if the API has moved, set "
                "base_url to the new origin"
            )
        return target

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RetryableError) and exc.retry_after is not None:
            return min(exc.retry_after, self.config.retry_after_cap_s)
        backoff = wait_random_exponential(
            multiplier=self.config.backoff_initial_s, max=self.config.backoff_max_s
        )(state)
        return float(backoff)

    def _before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        reason = str(exc).split(" (")[0] if exc else "unknown"
        self.stats.count_retry(reason.split()[0] if reason else "unknown")
        url = state.args[0] if state.args else "?"
        params = state.args[1] if len(state.args) > 1 else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "retry %d/%d for GET %s in %.2fs: %s",
            state.attempt_number,
            self.config.max_attempts,
            _display(url, params),
            wait,
            exc,
        )

    # -- pagination ------------------------------------------------------------------------

    def fetch_page(
        self, path: str, params: Mapping[str, Any], page: int, per_page: int | None = None
    ) -> Page:
        """Page PAGE of a list, checked (`parse_page`); PER_PAGE sizes the body's cap."""
        result: Page = self.get_json(
            path, {**params, "page": page}, _page_parser(page, path), per_page
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
        (`_PageGuard`): the paging ends where the wrapper says, or is refused at the page that
        shows the server does not page (see `parse_page` for what one page must agree with)."""
        guard = _PageGuard(first, path)
        per_page = first.per_page or len(first.data) or None
        last = first.last_page
        if last is None:
            yield from self._follow_next(first, path, guard, per_page)
            return
        if last <= 1:
            return
        for page in self._concurrent_pages(path, params, range(2, last + 1), per_page):
            guard.check(page, last)
            yield page

    def _follow_next(
        self, page: Page, path: str, guard: _PageGuard, per_page: int | None
    ) -> Iterator[Page]:
        """The pages after PAGE by their `next_page_url`, until one is empty or links none.

        A page more than half of whose rows were on the page before it is refused: a chain
        that slides over the same rows would otherwise never end (a list that moved while it
        was paged shifts a few rows, not half a page; `reading` notices and reads it again)."""
        previous = _row_keys(page.data)
        while page.next_page_url and page.data:
            number = page.number + 1
            page = self.get_json(page.next_page_url, None, _page_parser(number, path), per_page)
            guard.check(page, None)
            rows = _row_keys(page.data)
            if len(rows) >= 2 and 2 * len(rows & previous) > len(rows):
                raise _refused(
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
        with ThreadPoolExecutor(max_workers=limit.max, thread_name_prefix="devportal-get") as pool:
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
                    yield head, fut.result()
            finally:
                for _, fut in pending:
                    fut.cancel()


def _held(pending: deque[tuple[Any, Future[Any]]]) -> int:
    """Decoded bytes of the pages done but not yet taken (a result that is no Page: 0)."""
    return sum(
        getattr(fut.result(), "size", 0)
        for _, fut in pending
        if fut.done() and not fut.cancelled() and fut.exception() is None
    )


def adopt(early: ApiClient | None, settings: HttpSettings) -> ApiClient | None:
    """EARLY, a client started before the settings were resolved (to read ahead while the rest
    of devportal imports), if it reaches the same API with the same token and every HTTP
    setting agrees with SETTINGS. Otherwise it is closed and forgotten: None."""
    if early is None:
        return None
    names = set(HttpSettings.__annotations__) - {"base_url", "access_token"}
    try:
        same = (
            early.base_url
            == check_base_url(settings.base_url or "", settings.allow_insecure_remote)
            and early.session.headers.get("Authorization")
            == f"Bearer {clean_token(settings.access_token or '')}"
            and all(getattr(early.config, n) == getattr(settings, n) for n in names)
        )
    except ConfigError:
        same = False
    if not same:
        early.close()
        return None
    early.config = settings
    return early


@dataclass
class DefaultHttpSettings:
    """`config.DevportalConfig`'s HTTP defaults, spelled out so that a client can start before
    dlt's configuration is imported (the early start of `devportal sync`, the benchmark's
    floor); a test keeps the two equal."""

    base_url: str
    access_token: str = field(repr=False)
    workers: int | None = None
    min_workers: int = 1
    max_workers: int = 64
    timeout_s: float = 30.0
    max_attempts: int = 8
    max_wait_s: float = 120.0
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 10.0
    retry_after_cap_s: float = 30.0
    allow_insecure_remote: bool = False
    max_body_mb: float | None = None


class Prefetch:
    """One list read ahead on its own thread: page 1 as soon as it comes, then the rest into a
    bounded queue (`DEPTH` pages and AHEAD_BYTES of them, so memory stays flat when nobody
    reads them yet, whatever size the pages are).

    Errors are kept and raised to whoever takes the pages, as if they had been read then.
    `close()` stops it: pages in flight finish (each bounded by `timeout_s`) and are dropped.
    """

    DEPTH = 256  # pages read ahead at most: about 50k subscriptions, ~28 MB parsed

    def __init__(self, client: ApiClient, path: str, params: dict[str, Any]) -> None:
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
        self._got_first.wait()
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
                kind, value = self._queue.get()
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


class _DeadlinePassed(Exception):
    """The attempt's deadline passed while its body was still arriving."""


class _TooLarge(Exception):
    """The body is past its cap; the message says how large it is or claims to be."""


class _BadEncoding(Exception):
    """A Content-Encoding the client did not ask for and cannot undo."""


class _Undecodable(Exception):
    """A compressed body that does not decompress; `body` fingerprints what came."""

    def __init__(self, message: str, body: int) -> None:
        super().__init__(message)
        self.body = body


class _BearerAuth(requests.auth.AuthBase):
    """The bearer token on every request. As the session's auth it also keeps requests from
    sending credentials of its own: `user:password@` in a URL or a ~/.netrc entry would
    otherwise become Basic auth in place of the token."""

    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token}"

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = self._header
        return request

    def __repr__(self) -> str:
        return "_BearerAuth(<token>)"


def _timeout(bound: str) -> RetryableError:
    return RetryableError(f"timeout (no complete answer within {bound})", timed_out=True)


def _report(slot: Slot, resp: requests.Response, retry_after: float | None) -> None:
    """Tell the concurrency controller what an answer (and its `Retry-After`) says about the
    server's load."""
    status = resp.status_code
    if status in (429, 503):
        slot.done(Outcome.CONGESTED, retry_after, throttled=status == 429)
    elif status >= 500:
        slot.done(Outcome.FAILED, retry_after)
    else:
        slot.done(Outcome.OK, remaining=to_int(resp.headers.get("X-RateLimit-Remaining")))


def _read_body(
    resp: requests.Response, deadline: float, cap: int, large: threading.BoundedSemaphore
) -> bytes:
    """The whole decoded body by `deadline`, at most `cap` bytes (`_TooLarge` beyond).

    One socket read at a time, each waiting at most what is left, so a server dripping bytes
    cannot stretch the attempt. The Content-Encoding is undone here (`_Inflater`), at most
    READ_CHUNK decoded bytes per step whatever the compression ratio, so a small compressed
    body that expands to gigabytes is refused at `cap` without ever being held. A body past
    LARGE_BODY first takes one of the client's LARGE_BODIES turns (`large`), waiting for it
    within the deadline: the bodies in flight hold at most workers x LARGE_BODY plus
    LARGE_BODIES x cap, whatever the server sends.
    """
    raw = resp.raw
    declared = to_int(resp.headers.get("Content-Length"))
    if declared is not None and declared > cap:  # refused before a byte of it is read
        raise _TooLarge(f"declares {_size(declared)} (Content-Length)")
    decode = _decoder(resp.headers.get("Content-Encoding"))
    conn = getattr(raw, "connection", None)
    sock = getattr(conn, "sock", None)
    chunks: list[bytes] = []
    size = 0
    turn = False
    chunk = b""
    pieces: Iterable[bytes] = ()
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _DeadlinePassed
            if sock is not None:
                sock.settimeout(left)
            try:
                chunk = raw.read1(READ_CHUNK, decode_content=False)
            except (urllib3.exceptions.ReadTimeoutError, TimeoutError):
                raise _DeadlinePassed from None
            pieces = decode(chunk) if decode is not None else ([chunk] if chunk else [])
            for piece in pieces:
                size += len(piece)
                if size > cap:
                    raise _TooLarge("is larger")
                if size > LARGE_BODY and not turn:
                    turn = large.acquire(timeout=max(0.0, deadline - time.monotonic()))
                    if not turn:
                        raise _DeadlinePassed
                chunks.append(piece)
            if not chunk:
                body = b"".join(chunks)
                chunks.clear()
                return body
    except BaseException:
        # the error's traceback keeps this frame alive (in a future, a log record, the error
        # the user sees): it must not keep what was read with it
        chunks.clear()
        chunk, pieces = b"", ()
        if turn:  # a large body dropped (a bomb, most likely): its memory goes back too
            _trim_heap()
        raise
    finally:
        if turn:
            large.release()


def _trim_heap() -> None:
    """Give the memory freed in malloc's arenas back to the system (glibc's `malloc_trim`;
    elsewhere nothing). After a large body is dropped: glibc keeps what a thread freed for that
    thread's next use, so workers taking turns at refused bodies would each keep one's worth
    resident (measured: a client refusing nine 512 MiB gzip bombs fetched at once, in a 58 MB
    process, peaked at 209 MB without this and 96 MB with it). Not after a body that is kept:
    a legitimately large page is reused memory, and trimming costs a walk of every arena."""
    trim = _MALLOC_TRIM
    if trim is not None:
        trim(0)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return cast(Callable[[int], int], ctypes.CDLL(None).malloc_trim)
    except (OSError, AttributeError, TypeError):  # not glibc (macOS, musl, Windows)
        return None


_MALLOC_TRIM = _malloc_trim()


def _decoder(header: str | None) -> Callable[[bytes], Iterator[bytes]] | None:
    """What undoes a Content-Encoding header (None: nothing to undo): the codings in the order
    the server applied them, undone last first; an empty chunk means the body has ended."""
    codings = [c.strip().lower() for c in (header or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    unknown = [c for c in codings if c not in ("gzip", "x-gzip", "deflate")]
    if unknown or len(codings) > 4:
        shown = server_text(header, 60)
        raise _BadEncoding(
            f"the API sent a body encoded as {shown!r}, which devportal did not ask for "
            f"(it asks for {', '.join(ENCODINGS)}) and cannot read"
        )
    stages = [_Inflater(c) for c in reversed(codings)]

    def decode(chunk: bytes) -> Iterator[bytes]:
        def through(i: int, data: bytes) -> Iterator[bytes]:
            if i == len(stages):
                if data:
                    yield data
                return
            for piece in stages[i].feed(data):
                yield from through(i + 1, piece)
            if not data:  # the end: what each stage still holds, then the end downstream
                yield from through(i + 1, b"")

        yield from through(0, chunk)

    return decode


class _Inflater:
    """One gzip or deflate coding undone, READ_CHUNK decoded bytes at a time at most (zlib's
    `max_length`): input not consumed yet waits in `unconsumed_tail`, never expanded ahead.

    As browsers and urllib3 do: concatenated gzip members are read on, bytes after the last
    one (or after a deflate stream) are ignored, and "deflate" without zlib's header (raw
    deflate, which some servers send) is read too. A stream cut short is an error."""

    HEAD = READ_CHUNK  # deflate input kept until the first output, to read again as raw

    def __init__(self, coding: str) -> None:
        self.gzip = coding in ("gzip", "x-gzip")
        self._raw = False
        self._obj = self._new()
        self._head = b""
        self._fed = self._out = self._ended = self._ignore = False
        self._members = 0  # gzip members read to their end
        self._crc = 0  # of all input: which body it was, for the retry policy

    def _new(self) -> Any:
        if self.gzip:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if self._raw else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes DATA yields, in pieces of READ_CHUNK at most; b"": the end."""
        self._crc = zlib.crc32(data, self._crc)
        if not data:
            if self._fed and not (self._ended or self._ignore):
                raise _Undecodable(self._what("is cut short"), self._crc)
            return
        self._fed = True
        if not (self.gzip or self._out or self._raw) and len(self._head) <= self.HEAD:
            self._head += data  # zlib's header is 2 bytes: its error comes within the first read
        more = False  # the last call filled READ_CHUNK: output may still be pending
        while not self._ignore and (data or more):
            if self._ended:  # bytes after the end of a stream
                if not self.gzip:
                    self._ignore = True
                    break
                self._obj, self._ended = self._new(), False
            try:
                out = self._obj.decompress(data, READ_CHUNK)
            except zlib.error:
                if self.gzip and self._members:  # no further member: trailing bytes, ignored
                    self._ignore = True
                    break
                if self.gzip or self._out or self._raw or len(self._head) > self.HEAD:
                    raise _Undecodable(self._what("does not decompress"), self._crc) from None
                self._raw = True  # raw deflate: read what came so far again
                self._obj, data, self._head = self._new(), self._head, b""
                continue
            if out:
                self._out = True
                yield out
            more = len(out) == READ_CHUNK
            if self._obj.eof:
                self._ended, more = True, False
                self._members += 1
                data = self._obj.unused_data
            else:
                data = self._obj.unconsumed_tail

    def _what(self, problem: str) -> str:
        return f"a {'gzip' if self.gzip else 'deflate'}-encoded body that {problem}"


def _page_parser(number: int, path: str) -> Callable[[Any, Mapping[str, str]], Page]:
    def parse(body: Any, headers: Mapping[str, str]) -> Page:
        return parse_page(body, number, server_time(headers), path, headers)

    return parse


def parse_page(
    body: Any,
    number: int,
    server_time: datetime | None,
    path: str,
    headers: Mapping[str, str] | None = None,
) -> Page:
    """Page NUMBER of a list, checked: a wrong shape, or a wrapper that contradicts itself, is
    refused at once (ApiError, never retried: the same request brings the same answer).

    One answer must agree with itself: `current_page` is NUMBER; `total` >= 0 and `per_page`
    >= 1 (numbers or digit strings); `last_page` is max(1, ceil(total / per_page)) and the
    page holds at most `per_page` rows, exactly `per_page` on a page before the last (the last
    page is not counted exactly: a row added between the server's count and its select, a
    race no reader can avoid, is the `reading` module's to notice); a page at or past the last
    links no next page. A `data` object keyed by row position ({"0": {...}, "2": {...}}: a
    Laravel collection filtered without values()) is read in key order; when positions are
    missing and the page reports a `total`, it is refused: rows were dropped from the page
    after it was counted, so the list can never add up.
    """
    where = f"{path} page {number}"
    if not isinstance(body, dict):
        raise _not_a_page(where, f"expected a JSON object (a page of the list), got {_kind(body)}")
    total = to_int(body.get("total"))
    data = body.get("data")
    if isinstance(data, dict):
        data = _positional_rows(data, where, total)
    elif not isinstance(data, list):
        shown = "missing" if "data" not in body else _kind(data)
        raise _not_a_page(where, f"`data` is {shown}, not a list of rows")
    rows = [row for row in data if isinstance(row, dict)]
    if len(rows) != len(data):
        raise _not_a_page(where, f"`data` holds {len(data) - len(rows)} items that are not objects")
    reported = to_int(body.get("current_page"))
    if reported is not None and reported != number:
        raise _refused(
            where,
            f"the API answered with current_page {reported}: it does not serve the page asked "
            "for (it ignores `page`, or a cache in front of it ignores the query)",
        )
    next_url = body.get("next_page_url")
    page = Page(
        number=number,
        data=rows,
        total=total,
        last_page=to_int(body.get("last_page")),
        per_page=to_int(body.get("per_page")),
        next_page_url=next_url if isinstance(next_url, str) and next_url else None,
        server_time=server_time,
        headers=headers if headers is not None else {},
        fingerprint=_fingerprint(rows),
    )
    _check_wrapper(page, where)
    return page


def _check_wrapper(page: Page, where: str) -> None:
    """The arithmetic of one page's wrapper (see `parse_page`)."""
    total, per_page, last = page.total, page.per_page, page.last_page
    if total is not None and total < 0:
        raise _refused(where, f"total is {total}")
    if per_page is not None and per_page < 1:
        raise _refused(where, f"per_page is {per_page}")
    if last is not None and last < 0:
        raise _refused(where, f"last_page is {last}")
    rows = len(page.data)
    if per_page is not None and rows > per_page:
        raise _refused(where, f"it holds {rows} rows, more than its per_page of {per_page}")
    if total is None or per_page is None:
        return
    proven = max(1, -(-total // per_page))
    sums = f"total {total} at per_page {per_page} makes {proven} page{'s' if proven > 1 else ''}"
    if last is not None and max(1, last) != proven:
        raise _refused(where, f"last_page is {last}, but {sums}")
    if page.number < proven and rows != per_page:
        raise _refused(
            where, f"it holds {rows} rows, but {sums}: a page before the last holds {per_page}"
        )
    if page.number >= proven and page.next_page_url:
        raise _refused(where, f"it links a next page, but {sums}")


def _not_a_page(where: str, what: str) -> ApiError:
    """The error for an answer of the wrong shape: the same request would bring it again."""
    return ApiError(
        f"{where}: {what}; the answer is not a page of the list: check that base_url is the "
        "Developer API (nothing was loaded)"
    )


def _refused(where: str, what: str) -> ApiError:
    """The error for pages that contradict themselves or each other: paging on would send
    requests without end or load rows twice, and another attempt would bring the same."""
    return ApiError(
        f"{where}: {what}; the API's paging is inconsistent, so the list was not read "
        "(nothing was loaded): report it to whoever runs the API"
    )


def _positional_rows(data: dict[str, Any], where: str, total: int | None) -> list[Any]:
    """`data` sent as an object keyed by row position: its values in position order."""
    keys = list(data)
    if not all(k.isascii() and k.isdigit() for k in keys):
        shown = ", ".join(repr(server_text(k, 20)) for k in keys[:3])
        raise _not_a_page(where, f"`data` is an object keyed by {shown}, not a list of rows")
    keys.sort(key=int)
    missing = int(keys[-1]) + 1 - len(keys) if keys else 0
    if missing and total is not None:
        shown = ", ".join(keys[:4]) + (", ..." if len(keys) > 4 else "")
        raise _refused(
            where,
            f"`data` is an object keyed by row position ({shown}), not a list, with {missing} "
            "position(s) missing: rows were dropped from the page after it was counted (a "
            "Laravel collection filtered without values()), so the list cannot add up to its "
            f"total of {total}",
        )
    log.debug("%s: `data` is an object keyed by row position; read in position order", where)
    return [data[k] for k in keys]


def _kind(value: Any) -> str:
    """A JSON value's kind, for messages (never the value: it may be large)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a JSON array"
    return "a JSON object"


def _row_key(row: Any) -> bytes:
    """A row's identity for repeat checks: its JSON (integers past 64 bits: its repr)."""
    try:
        return orjson.dumps(row)
    except TypeError:
        return repr(row).encode()


def _row_keys(rows: list[dict[str, Any]]) -> set[bytes]:
    return {_row_key(row) for row in rows}


def _fingerprint(rows: list[dict[str, Any]]) -> int:
    """Which rows a page holds, cheaply (its length, first and last row): two pages with the
    same fingerprint repeat each other. 0 for an empty page."""
    if not rows:
        return 0
    return hash((len(rows), _row_key(rows[0]), _row_key(rows[-1]))) or 1


class _PageGuard:
    """What page 1 of a list proves, held against every page after it, in order.

    A page that repeats an earlier one (`fingerprint`), or an empty page before `last_page`,
    shows a server that does not page (it ignores `page`, a cache ignores the query, its
    `last_page` overstates the list): refused at that page, in seconds, instead of requests
    without end or a list re-read that would repeat them. A page whose wrapper differs from
    page 1's is let through: the list moved while it was paged, which `reading` notices."""

    def __init__(self, first: Page, path: str) -> None:
        self.first, self.path = first, path
        self.seen: dict[int, int] = {first.fingerprint: first.number} if first.data else {}
        # a wrapper without `per_page`: page 1 of several is full, so its rows are the size
        self.implied: int | None = None
        if first.per_page is None and first.data and (first.last_page or 0) > 1:
            self.implied = len(first.data)
            _check_wrapper(replace(first, per_page=self.implied), f"{path} page 1")

    def check(self, page: Page, last: int | None) -> None:
        first = self.first
        if (page.total, page.last_page, page.per_page) != (
            first.total,
            first.last_page,
            first.per_page,
        ):
            return
        where = f"{self.path} page {page.number}"
        if self.implied is not None:
            _check_wrapper(replace(page, per_page=self.implied), where)
        if not page.data:
            if last is not None and page.number < last:
                raise _refused(where, f"it is empty, but last_page is {last}")
            return
        earlier = self.seen.setdefault(page.fingerprint, page.number)
        if earlier != page.number:
            raise _refused(
                where,
                f"it holds the same rows as page {earlier}: the API does not serve the page "
                "asked for (it ignores `page`, or a cache in front of it ignores the query)",
            )


def _display(url: str, params: Mapping[str, Any] | None = None) -> str:
    """URL for messages: path and query only (hosts stay short), scrubbed: a page URL comes
    from the server and may hold anything (`errors.server_text`)."""
    parts = urlsplit(url)
    shown = parts.path + (f"?{parts.query}" if parts.query else "")
    if params:
        shown += ("&" if parts.query else "?") + "&".join(f"{k}={v}" for k, v in params.items())
    return server_text(shown, 200)
