"""`ApiClient`: the one keep-alive session, one GET under the retry policy and its budget,
same-origin redirects, and `adopt` (a client started early taken over by the sync).

The token lives in the session's headers and its auth, so that neither credentials in a URL
nor ~/.netrc can replace it. Retry policy (tenacity): only what another attempt can fix. 408,
429 (honouring `Retry-After`, shortened to `retry_after_cap_s`), 5xx, connection errors,
timeouts and bodies that are not JSON are retried with exponential backoff and full jitter,
bounded by `max_attempts` and `max_wait_s`; 401/403/404/422, a page of the wrong shape, a body
past its cap and pages that contradict themselves raise at once. Redirects are followed here,
not by requests, and only on the configured origin. Every attempt takes a slot from the
client's one `concurrency.Concurrency` before it is sent.

`stop(signum)` ends a client's reading at once (a signal stopped the run): its requests in
flight are cut, none is sent or retried after, and every wait on a page raises the stop. A
client made on the main thread of the CLI holds the signals that stop a run until it is
closed (`paging.HeldSignals`): they reach the run where its read waits, never at any line."""

from __future__ import annotations

import http.client
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import urllib3
from tenacity import RetryCallState, Retrying, retry_if_exception_type, wait_random_exponential

from devportal.base.api import API_PREFIX
from devportal.base.coercion import to_int
from devportal.base.errors import ApiError, ConfigError, register_secret, server_text
from devportal.http.body import (
    BODY_CEILING,
    BODY_FLOOR,
    BODY_ROW_BYTES,
    ENCODINGS,
    LARGE_BODIES,
    MIB,
    BadEncoding,
    DeadlinePassed,
    TooLarge,
    Undecodable,
    format_size,
    read_body,
)
from devportal.http.budget import UNREACHED_PAUSE_S, Budget, retry_after_seconds
from devportal.http.concurrency import Concurrency, RequestOutcome, Slot
from devportal.http.failures import (
    NotFound,
    RetryableError,
    connection_failure,
    host_port,
    proxy_auth_refused,
)
from devportal.http.forked import ForkedPrefetch, usable
from devportal.http.jsonparse import error_message, parse_json
from devportal.http.pages import Page, page_parser
from devportal.http.paging import Check, Halt, HeldSignals, Paging, Prefetch, stop_error
from devportal.http.proxy import proxy_for
from devportal.http.watchdog import WATCHDOG, InFlight, WatchedAdapter
from devportal.settings.http import TOKEN_HINT, HttpSettings, check_base_url, clean_token

# the client's one logger, whichever module of it logs: log settings and tests name it
log = logging.getLogger("devportal.client")

MAX_REDIRECTS = 5  # same-origin hops followed within one attempt
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


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


class ApiClient(Paging):
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
        # the proxy the environment sets for the API (requests uses it): named in failures
        self.proxy = proxy_for(self.base_url + API_PREFIX)
        self.stats = ClientStats()
        self.concurrency = Concurrency(
            config.min_workers,
            config.max_workers,
            pinned=config.workers,
            pause_cap_s=config.retry_after_cap_s,
        )
        self._prefetch: Prefetch | None = None
        self.halt = Halt()  # whether a signal stopped this client's reading (`stop`)
        self._in_flight = InFlight()  # the sockets its requests are using, cut by `stop`
        # whether the API's host ever answered this client: until it has, a refused connection
        # or an unknown host name is a wrong base_url (or an API not started), worth one quick
        # attempt more, not the whole retry budget (`budget.Budget.stop`)
        self.answered = False
        # turns to read a body past LARGE_BODY: the bodies in flight stay bounded in memory
        self._large_bodies = threading.BoundedSemaphore(LARGE_BODIES)
        register_secret(token)  # any text quoting it back is scrubbed (errors.scrub)
        self.session = requests.Session()
        adapter = WatchedAdapter(
            pool_connections=1, pool_maxsize=self.concurrency.max, max_retries=0
        )
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
        # last: a client that could not be made holds nothing (released by `close`)
        self._held = HeldSignals.hold(self)

    def prefetch(
        self, path: str, params: Mapping[str, Any] | None = None, *, fork: bool = False
    ) -> None:
        """`Paging.prefetch`; with FORK, the list is read by a forked child where this process
        can fork one (`http.forked`: Linux, one thread), else on a thread."""
        if self._prefetch is None and fork and usable():
            self._prefetch = ForkedPrefetch(self, path, dict(params or {}))
            return
        super().prefetch(path, params)

    def forget_parent(self) -> None:
        """In a forked child (`http.forked`): what the parent's copy of this client held is
        the parent's (its prefetch, its signal handlers), not the child's to use or undo."""
        self._prefetch = None
        self._held = None

    def close(self) -> None:
        """Stop what reads ahead, close the session, put the signal handlers back (raising a
        stop the run has not met yet: `HeldSignals.release`)."""
        try:
            if self._prefetch is not None:
                self._prefetch.close()
            self.session.close()
        finally:
            held, self._held = self._held, None
            if held is not None:
                held.release()

    def stop(self, signum: int) -> None:
        """End this client's reading at once: a signal (SIGNUM) stopped the run. Requests in
        flight are cut, none is sent or retried after, a retry's pause ends, and whoever waits
        on a page (the reader, the prefetch) gets the stop (`Halt.check`). Waits for nothing:
        safe in a signal handler on the main thread, while the workers are busy."""
        self.halt.set(signum)
        self.concurrency.stop()
        self._in_flight.cut()
        if self._prefetch is not None:
            self._prefetch.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- single requests -------------------------------------------------------------------

    def url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            return path_or_url
        return urljoin(self.base_url + "/", path_or_url.lstrip("/"))

    def peek_page(self, path: str, params: Mapping[str, Any]) -> Page:
        """Page 1 of a list asked only for what its headers tell (the server's `Date`): nothing
        of its body is kept, so what its text had replaced is not counted in `stats` (its
        request is)."""
        page: Page = self.get_json(path, {**params, "page": 1}, page_parser(1, path), counted=False)
        return page

    def get_json(
        self,
        path_or_url: str,
        params: Mapping[str, Any] | None = None,
        check: Check | None = None,
        per_page: int | None = None,
        *,
        counted: bool = True,
    ) -> Any:
        """GET and parse JSON with the retry policy.

        Returns `check(body, headers)` (default: `(body, headers)`); a `Page` it returns gets
        the body's size. `check` runs inside the retry loop: a RetryableError it raises fetches
        the body again, any other error ends the call. Each attempt is bounded by `timeout_s`
        in total, the whole call by `max_wait_s` (see `Budget`); the body by `body_cap`
        (`per_page`: the rows a page of this list holds, when known). `counted=False`: an
        answer nothing of which is kept (`peek_page`), whose replaced text `stats` leaves out.
        """
        url = self.url(path_or_url)
        self._check_same_origin(url)
        budget = Budget(self.config, self.body_cap(per_page), lambda: self.answered)
        retrying = Retrying(
            retry=retry_if_exception_type(RetryableError),
            stop=budget.stop,
            wait=self._wait,
            sleep=self.halt.sleep,
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            return retrying(self._get_once, url, params, check, budget, counted)
        except RetryableError as err:
            attempts = budget.attempts
            if budget.unreachable:  # the message is whole: which host, what to check
                raise ApiError(f"cannot reach the API: {budget.why_stopped}") from err
            spent = time.monotonic() - budget.started
            raise ApiError(
                f"GET {_display(url, params)} still failing after {attempts} "
                f"attempt{'s' if attempts != 1 else ''} in {spent:.1f}s, last: "
                f"{budget.why_stopped or err} (nothing partial was loaded)"
            ) from err

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
        check: Check | None,
        budget: Budget,
        counted: bool = True,
    ) -> Any:
        self.halt.check()  # stopped: no attempt more
        started = time.monotonic()
        deadline, bound = budget.start_attempt()
        with self.concurrency.slot() as slot:
            self.halt.check()  # stopped while it waited for its slot
            try:
                resp, content = self._exchange(url, params, deadline, bound, started, budget)
            except RetryableError as err:
                slot.done(RequestOutcome.CONGESTED if err.timed_out else RequestOutcome.FAILED)
                if self.halt.signum is not None:  # cut by `stop`: not retried, not logged
                    raise stop_error(self.halt.signum) from None
                raise
            status = resp.status_code
            retry_after = None
            if status == 429 or status >= 500:
                retry_after = retry_after_seconds(resp.headers.get("Retry-After"))
            _report(slot, resp, retry_after)
        self.halt.check()  # cut by `stop` mid-body: whatever came is not used
        if status == 429:
            raise RetryableError("429 rate limited", retry_after)
        if status >= 500:
            raise RetryableError(f"{status} server error{self._from_proxy(resp)}", retry_after)
        if status == 407:  # never retried: a wrong proxy password sent again can lock it
            raise proxy_auth_refused(self.proxy, url)
        if status == 408:  # the server gave up waiting for us: another attempt may do
            raise RetryableError("408 request timeout")
        if status == 401:
            raise ApiError(f"access token rejected (401): {TOKEN_HINT}")
        if status == 403:
            raise ApiError(
                f"access denied (403) for {_display(url, params)}: the token lacks access to this app"
            )
        if status == 404:
            raise NotFound(
                f"not found (404): {_display(url, params)} on {host_port(url)}; check base_url "
                f"({self.base_url}): the API's paths ({API_PREFIX}/...) are added to it"
            )
        if status == 422:
            raise ApiError(
                f"the API rejected the request (422) {_display(url, params)}: "
                f"{error_message(resp, content)}"
            )
        if status >= 300:
            raise ApiError(
                f"HTTP {status} for {_display(url, params)}: {error_message(resp, content)}"
            )
        body: Any = None
        try:
            body, surrogates, nul = parse_json(content, status)
            if counted and (surrogates or nul):
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
        budget: Budget,
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
        body may have `cap` bytes at most (`read_body`). Its socket is in the client's
        `InFlight` from its headers to its body's end (`stop` cuts it).
        """
        with WATCHDOG.in_flight(self._in_flight):
            return self._fetch_watched(url, params, deadline, bound, cap)

    def _fetch_watched(
        self,
        url: str,
        params: Mapping[str, Any] | None,
        deadline: float,
        bound: str,
        cap: int,
    ) -> tuple[requests.Response, bytes]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _timeout(bound)
        try:
            with WATCHDOG.deadline(deadline):
                resp = self.session.get(
                    url,
                    params=params,
                    # urllib3's total bounds connecting and each read; the watchdog the total
                    timeout=urllib3.Timeout(total=left),  # type: ignore[arg-type]
                    stream=True,
                    allow_redirects=False,
                )
        except requests.ConnectTimeout as err:
            raise RetryableError(
                f"timeout connecting to {host_port(url)} (within {bound})", timed_out=True
            ) from err
        except requests.Timeout as err:
            raise _timeout(bound) from err
        except requests.RequestException as err:
            # from None: requests quotes a header value it refuses (InvalidHeader), and the
            # Authorization header holds the token; `connection_failure` says what failed
            if time.monotonic() >= deadline:  # the watchdog cut a request dripping its headers
                raise _timeout(bound) from None
            raise connection_failure(err, url, self.proxy) from None
        self.answered = True  # a status line came back: this host is there
        try:
            content = read_body(resp, deadline, cap, self._large_bodies)
        except DeadlinePassed as err:
            raise _timeout(bound) from err
        except TooLarge as err:
            limit = (
                "max_body_mb"
                if self.config.max_body_mb is not None
                else "the default of max_body_mb, sized from the list's per_page"
            )
            raise ApiError(
                f"GET {_display(url, params)}: the answer {err} once decoded, more than "
                f"{format_size(cap)} ({limit}): refused, nothing partial was loaded; if the API's "
                "answers really are this large, raise max_body_mb"
            ) from err
        except BadEncoding as err:
            raise ApiError(f"GET {_display(url, params)}: {err}; nothing was loaded") from err
        except Undecodable as err:  # like a body that is not JSON: the same twice ends it
            raise RetryableError(f"{resp.status_code} with {err}", body=err.body) from err
        except (
            urllib3.exceptions.HTTPError,
            http.client.HTTPException,
            OSError,
        ) as err:  # the response's failure: no request header in its text
            raise connection_failure(err, url, self.proxy) from err
        finally:
            resp.close()  # after a whole body: back to the pool; otherwise the socket is closed
        self.stats.count_request(len(content))
        return resp, content

    def _from_proxy(self, resp: requests.Response) -> str:
        """For an error answer through a proxy: that it came through it, and the proxy's own
        reason when it gives one (`Proxy-Status: <name>; error=<type>`, RFC 9209)."""
        if self.proxy is None:
            return ""
        status = resp.headers.get("Proxy-Status", "")
        error = next(
            (p.split("=", 1)[1] for p in status.split(";") if p.strip().startswith("error=")), ""
        )
        said = f": {server_text(error.strip(), 60)}" if error.strip() else ""
        return f" (through {self.proxy}{said})"

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
        if self._first_contact(exc):  # an API starting or restarting this very second
            return min(UNREACHED_PAUSE_S, self.config.backoff_max_s)
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
        # the one quick attempt more at a host that never answered: no warning, the error (if
        # that attempt fails too) says it all
        log.log(
            logging.DEBUG if self._first_contact(exc) else logging.WARNING,
            "retry %d/%d for GET %s in %.2fs: %s",
            state.attempt_number,
            self.config.max_attempts,
            _display(url, params),
            wait,
            exc,
        )

    def _first_contact(self, exc: BaseException | None) -> bool:
        """EXC is a connection refused or a host name not found at a host that never answered."""
        return isinstance(exc, RetryableError) and bool(exc.unreachable) and not self.answered


def adopt(early: ApiClient | None, settings: HttpSettings) -> ApiClient | None:
    """EARLY, a client started before the settings were resolved (to read ahead while the rest
    of devportal imports), if it reaches the same API with the same token and every HTTP
    setting agrees with SETTINGS. Otherwise it is closed and forgotten: None."""
    if early is None:
        return None
    names = {f.name for f in fields(HttpSettings)} - {"base_url", "access_token"}
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
        slot.done(RequestOutcome.CONGESTED, retry_after, throttled=status == 429)
    elif status >= 500:
        slot.done(RequestOutcome.FAILED, retry_after)
    else:
        slot.done(RequestOutcome.OK, remaining=to_int(resp.headers.get("X-RateLimit-Remaining")))


def _display(url: str, params: Mapping[str, Any] | None = None) -> str:
    """URL for messages: path and query only (hosts stay short), scrubbed: a page URL comes
    from the server and may hold anything (`errors.server_text`)."""
    parts = urlsplit(url)
    shown = parts.path + (f"?{parts.query}" if parts.query else "")
    if params:
        shown += ("&" if parts.query else "?") + "&".join(f"{k}={v}" for k, v in params.items())
    return server_text(shown, 200)
