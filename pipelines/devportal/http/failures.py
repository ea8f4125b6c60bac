"""The client's own exception `RetryableError`, a failure another attempt may fix (it never
leaves the client), and `connection_failure`, what a failure to talk to the API's host was, in
one line naming `host:port`, or the proxy's `host:port` and the variable that set it when the
failure was the proxy's (`proxy_failure`; a 407 is never retried: `proxy_auth_refused`);
`NotFound` (404) and every other failure are `devportal.base.errors` classes (`NotFound` is
re-exported here)."""

from __future__ import annotations

import http.client
import re
import socket
import ssl
from urllib.parse import urlsplit

from requests.exceptions import InvalidProxyURL
from requests.exceptions import ProxyError as RequestsProxyError
from urllib3.exceptions import (
    ConnectTimeoutError,
    NameResolutionError,
    NewConnectionError,
    ProxySchemeUnknown,
)
from urllib3.exceptions import ProxyError as Urllib3ProxyError

from devportal.base.errors import ApiError
from devportal.base.errors import NotFound as NotFound
from devportal.http.proxy import Proxy


class RetryableError(Exception):
    """A transient failure worth another attempt; `retry_after` is the server's own hint.

    `timed_out`: no complete answer in time, a sign of an overloaded server (the concurrency
    controller cuts on it, not on a connection error). `body`: for a complete answer that is
    not JSON, a fingerprint of it: the same body twice in a row is not worth a third attempt.
    `unreachable`: what to check when nothing answered at all (the connection refused, the host
    name unknown), empty otherwise; from a host that never answered this client, one quick
    attempt more is all that is worth (`budget.Budget.stop`). The message of every connection
    error names `host:port` (`connection_failure`)."""

    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        timed_out: bool = False,
        body: int | None = None,
        unreachable: str = "",
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.timed_out = timed_out
        self.body = body
        self.unreachable = unreachable


# TLS failures another attempt cannot fix: a certificate not trusted, or https spoken to a
# plain-http port (the reason codes of Python's `ssl.SSLError`)
TLS_FOR_GOOD = {
    "CERTIFICATE_VERIFY_FAILED": "its certificate is not trusted (check the host name in "
    "base_url; a private CA goes in REQUESTS_CA_BUNDLE)",
    "WRONG_VERSION_NUMBER": "it does not speak TLS there (is it http://, not https://?)",
}


def host_port(url: str) -> str:
    """`host:port` of URL for messages, the scheme's port when none is written."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    shown = f"[{host}]" if ":" in host else host
    try:
        port = parts.port
    except ValueError:  # a port that is no number: urlsplit keeps it, .port refuses it
        return parts.netloc.rpartition("@")[2] or shown
    return f"{shown}:{port or (443 if parts.scheme == 'https' else 80)}"


def connection_failure(
    err: BaseException, url: str, proxy: Proxy | None = None
) -> RetryableError | ApiError:
    """What ERR (requests', urllib3's or the socket's failure to talk to URL's host) says, in
    one line naming `host:port`: a refused connection, a host name not found, a reset, a TLS
    failure. Through PROXY, a failure to reach or use the proxy names the proxy instead
    (`proxy_failure`). Only its causes' types and codes are read: requests quotes the request's
    headers, the token among them, in some of its messages (InvalidHeader), never shown here."""
    where = host_port(url)
    chain = _causes(err)
    # plain http through a proxy: every connection is the proxy's (https tunnels through it)
    if proxy is not None and (
        urlsplit(url).scheme == "http" or any(isinstance(c, PROXY_FAILURES) for c in chain)
    ):
        return proxy_failure(chain, url, proxy)
    if proxy is not None:  # the proxy let the request through: the API's end failed
        found = connection_failure(err, url)
        found.args = (f"{found} (through {proxy})",)
        return found
    for cause in chain:
        if isinstance(cause, ssl.SSLError) and cause.reason in TLS_FOR_GOOD:
            return ApiError(
                f"TLS with {where} failed ({cause.reason}): {TLS_FOR_GOOD[cause.reason]}"
            )
    for cause in chain:
        if isinstance(cause, ConnectionRefusedError):
            return RetryableError(
                f"connection refused by {where}",
                unreachable="nothing is listening there: check the host and port in base_url, "
                "or start the API",
            )
        if isinstance(cause, socket.gaierror | NameResolutionError):
            host = urlsplit(url).hostname
            return RetryableError(
                f"host name {host} not found (for {where})",
                unreachable="check the host name in base_url (and this machine's DNS)",
            )
    for cause in chain:
        if isinstance(cause, ConnectionResetError | ConnectionAbortedError | BrokenPipeError):
            return RetryableError(f"connection reset by {where}")
        if isinstance(cause, http.client.RemoteDisconnected):
            return RetryableError(f"{where} closed the connection without an answer")
        if isinstance(cause, OSError) and cause.strerror:  # no route to host, network down
            return RetryableError(f"cannot connect to {where} ({cause.strerror})")
    return RetryableError(f"connection error with {where} ({type(err).__name__})")


# what requests and urllib3 raise when the proxy itself failed (before the API was reached)
PROXY_FAILURES = (RequestsProxyError, Urllib3ProxyError, InvalidProxyURL, ProxySchemeUnknown)
# http.client's message when a proxy answers CONNECT with anything but 200
_TUNNEL = re.compile(r"Tunnel connection failed: (\d{3})")


def proxy_auth_refused(proxy: Proxy | None, url: str) -> ApiError:
    """A 407 (Proxy Authentication Required): the proxy's credentials are missing or wrong.
    Never retried: a wrong password sent again and again can lock a corporate account."""
    api = host_port(url)
    if proxy is None:
        return ApiError(
            f"a proxy between this machine and {api} asks for credentials (407 Proxy "
            "Authentication Required) but no proxy is set for it: set HTTPS_PROXY (or "
            "HTTP_PROXY for an http base_url) to http://user:password@proxy-host:port; "
            "not retried"
        )
    if not proxy.has_credentials:
        return ApiError(
            f"{proxy} asks for a user name and password (407 Proxy Authentication Required) "
            f"and {proxy.setting} holds none: set it to http://user:password@{proxy.where} "
            "(special characters percent-encoded); not retried"
        )
    return ApiError(
        f"{proxy} refused the user name and password {proxy.setting} gives it (407 Proxy "
        f"Authentication Required): correct them in {proxy.setting} "
        f"(http://user:password@{proxy.where}, special characters percent-encoded); not "
        "retried: a wrong password sent again can lock the account"
    )


def proxy_failure(chain: list[BaseException], url: str, proxy: Proxy) -> RetryableError | ApiError:
    """What went wrong with PROXY on the way to URL, from the causes in CHAIN: its URL cannot
    be used, its CONNECT answer (407, 403, 5xx), a refused connection, an unknown host name, a
    timeout or a TLS failure, each naming the proxy and the variable that set it."""
    api = host_port(url)
    host = urlsplit(url).hostname or api
    if any(isinstance(c, InvalidProxyURL | ProxySchemeUnknown) for c in chain):
        return ApiError(
            f"{proxy.setting} holds a proxy URL requests cannot use: set it to "
            f"http://host:port (with user:password@ if the proxy needs them), or unset it"
        )
    for cause in chain:
        found = _TUNNEL.search(str(cause)) if isinstance(cause, OSError) else None
        if found is None:
            continue
        code = int(found.group(1))
        if code == 407:
            return proxy_auth_refused(proxy, url)
        if code >= 500:
            return RetryableError(f"{proxy} could not open a connection to {api} ({code})")
        return ApiError(
            f"{proxy} refused to open a connection to {api} ({code}): ask its administrator "
            f"to allow {host}, or {proxy.fix(host)}"
        )
    for cause in chain:
        if isinstance(cause, ssl.SSLError):
            return ApiError(f"TLS with {proxy} failed ({cause.reason}): {proxy.fix(host)}")
        if isinstance(cause, ConnectionRefusedError):
            return RetryableError(
                f"connection refused by {proxy}",
                unreachable=f"nothing is listening there: {proxy.fix(host)}",
            )
        if isinstance(cause, socket.gaierror | NameResolutionError):
            return RetryableError(
                f"the proxy's host name in {proxy.setting} not found ({proxy.where})",
                unreachable=f"{proxy.fix(host)} (and check this machine's DNS)",
            )
    for cause in chain:  # NewConnectionError is a ConnectTimeoutError: its cause said what
        if isinstance(cause, ConnectTimeoutError | TimeoutError) and not isinstance(
            cause, NewConnectionError
        ):
            return RetryableError(f"timeout connecting to {proxy}", timed_out=True)
        if isinstance(cause, ConnectionResetError | ConnectionAbortedError | BrokenPipeError):
            return RetryableError(f"connection reset by {proxy}")
        if isinstance(cause, http.client.RemoteDisconnected):
            return RetryableError(f"{proxy} closed the connection without an answer")
        if isinstance(cause, OSError) and cause.strerror:
            return RetryableError(f"cannot connect to {proxy} ({cause.strerror})")
    return RetryableError(f"connection error with {proxy} on the way to {api}")


def _causes(err: BaseException) -> list[BaseException]:
    """ERR and what it wraps: urllib3 keeps the cause in `reason`, requests in `args`."""
    found: list[BaseException] = []
    todo: list[object] = [err]
    while todo and len(found) < 20:
        current = todo.pop(0)
        if not isinstance(current, BaseException) or any(current is f for f in found):
            continue
        found.append(current)
        todo.extend([getattr(current, "reason", None), current.__cause__, current.__context__])
        todo.extend(a for a in current.args if isinstance(a, BaseException))
    return found
