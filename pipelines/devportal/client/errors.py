"""The client's own exception `RetryableError`, a failure another attempt may fix (it never
leaves the client), and `connection_failure`, what a failure to talk to the API's host was, in
one line naming `host:port`; `NotFound` (404) and every other failure are `devportal.errors`
classes (`NotFound` is re-exported here)."""

from __future__ import annotations

import http.client
import socket
import ssl
from urllib.parse import urlsplit

from urllib3.exceptions import NameResolutionError

from devportal.errors import ApiError
from devportal.errors import NotFound as NotFound


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


def connection_failure(err: BaseException, url: str) -> RetryableError | ApiError:
    """What ERR (requests', urllib3's or the socket's failure to talk to URL's host) says, in
    one line naming `host:port`: a refused connection, a host name not found, a reset, a TLS
    failure. Only its causes' types and codes are read: requests quotes the request's headers,
    the token among them, in some of its messages (InvalidHeader), never shown here."""
    where = host_port(url)
    chain = _causes(err)
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
