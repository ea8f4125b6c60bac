"""Errors meant for people: one line with the cause and the fix, and the process exit code.

Every `DevportalError` a caller may see is defined here (the modules raising them re-export
theirs). Exceptions that never leave their package stay there: `client.errors.RetryableError`
(the client's retry signal, turned into an `ApiError` once retries end), `client.body`'s
body-reading signals and `reading.checks.ListMoved` (the read starts over).

Also the scrub every text shown or stored by devportal passes through (`scrub`, `server_text`):
the access token (registered by the HTTP client, `register_secret`), any `Bearer <credential>`,
and terminal control sequences are taken out. A server may echo the request's headers in an
error body, or put escape sequences in a message that would rewrite the user's terminal.
"""

from __future__ import annotations

import re
import signal
import threading
from typing import Any

REDACTED = "[redacted]"
# a credential after `Bearer` (any case): up to whitespace, a quote or a JSON/list delimiter
_BEARER = re.compile(r"""(?i)\bbearer(\s+|%20|\+)([^\s"'`,;<>(){}\[\]\\]+)""")
# words a message puts after "bearer" that are no credential ("invalid bearer token")
_NOT_CREDENTIALS = frozenset(
    {"token", "tokens", "auth", "authentication", "authorization", "header", "scheme", "realm"}
)
# ANSI/VT escape sequences (CSI ... final byte, OSC/DCS/APC/PM/SOS ... BEL or ST, two-byte
# escapes), then any other C0/C1 control, DEL and the bidirectional overrides that reorder text
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# The bidirectional controls (ALM, LRM, RLM, the embeddings and overrides, the isolates): they
# reorder what is shown ("Trojan Source"). One list for the scrub and `display`.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f{BIDI_CONTROLS}]")
_LINE_BREAKS = re.compile(r"\s*[\r\n\v\f\x85\u2028\u2029]+\s*")
# A shorter secret is not looked for: it cannot be told from ordinary words ("t" in "can't")
# and no real access token is that short; `Bearer <it>` is still taken out.
_MIN_SECRET = 8

_secrets_lock = threading.Lock()
_secrets: frozenset[str] = frozenset()
_secret_pattern: re.Pattern[str] | None = None


def register_secret(secret: str) -> None:
    """From now on `scrub` replaces SECRET (the access token) wherever it appears, for the
    rest of the process (a secret once seen stays one)."""
    global _secrets, _secret_pattern
    secret = secret.strip()
    if len(secret) < _MIN_SECRET:
        return
    with _secrets_lock:
        if secret in _secrets:
            return
        _secrets = _secrets | {secret}
        ordered = sorted(_secrets, key=len, reverse=True)  # a longer one first: no half left
        _secret_pattern = re.compile("|".join(re.escape(known) for known in ordered))


def scrub(text: str) -> str:
    """TEXT without the registered secrets, `Bearer <credential>` and terminal controls.

    Line breaks and tabs stay (a message may have several lines); `server_text` folds them.
    Controls go first: a secret split by one is whole again before it is looked for."""
    if not text.isprintable():
        text = _ESCAPES.sub("", text.replace("\r\n", "\n"))
        text = _CONTROLS.sub("", text.replace("\r", "\n").replace("\x85", "\n"))
        text = _ESCAPES.sub("", text)  # an escape whose halves a control kept apart
    pattern = _secret_pattern
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    return _BEARER.sub(_redact_bearer, text)


def _redact_bearer(match: re.Match[str]) -> str:
    credential = match.group(2)
    if credential.lower().rstrip(".:!?") in _NOT_CREDENTIALS:  # "missing bearer token."
        return match.group(0)
    return f"Bearer {REDACTED}"


def server_text(text: Any, limit: int = 300) -> str:
    """Text a server sent, fit for a one-line message: scrubbed, on one line, at most LIMIT
    characters (cut before scrubbing would leave half a secret; cut after)."""
    one_line = _LINE_BREAKS.sub(" ", scrub(str(text))).replace("\t", " ").strip()
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."


class DevportalError(Exception):
    """An expected failure. `str(err)` is the one line shown to the user; never holds a secret
    (it is scrubbed here, whatever it quotes)."""

    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(scrub(message))
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(DevportalError):
    """Missing or unsafe configuration (no token, token over plain http to a remote host, ...)."""

    exit_code = 2


class ApiError(DevportalError):
    """The API answered in a way that retrying cannot fix (401/403/404/422, retries exhausted)."""


class IntegrityError(DevportalError):
    """What was read does not add up (row count differs from `total`, list moved while paging)."""


class WarehouseBusy(DevportalError):
    """Another sync holds the warehouse lock."""

    exit_code = 3


class HeldByAnotherProgram(DevportalError):
    """A program other than devportal (a `duckdb` shell, a GUI, a notebook's read-write
    connection) holds the warehouse file open for writing: every run fails until someone
    closes it, so unlike exit 3 (another devportal run, which does the work) it is a failure
    to be told of: recorded, alerted, and mailed by the README's cron line."""

    exit_code = 4


class LockOutlivedItsHolder(DevportalError):
    """The writer lock is held, but the devportal run that took it (the pid it wrote) is gone:
    a process it started holds the lock file still (an inherited descriptor), and every run
    fails until that process ends. Unlike exit 3 (a live run, doing the work) a failure to be
    told of: recorded, alerted, and mailed by the README's cron line."""

    exit_code = 5


class NotFound(ApiError):
    """404: the resource does not exist (callers decide whether that is a failure)."""


class PackageSetAside(DevportalError):
    """A load package failed to load; the warehouse was put back and the package kept aside."""

    def __init__(self, message: str, load_id: str) -> None:
        super().__init__(message)
        self.load_id = load_id


class DataTestsFailed(DevportalError):
    """Data tests of a committed build failed (the build itself stands)."""


class ManifestUnreadable(DevportalError):
    """The input is not a readable JSON object; `validate` and `load` exit 2."""

    exit_code = 2


def causes(err: BaseException) -> list[BaseException]:
    """`err` and what caused it, outermost first (dlt's step errors keep theirs in `exception`)."""
    chain: list[BaseException] = []
    current: Any = err
    while isinstance(current, BaseException) and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__ or getattr(current, "exception", None)
    return chain


def devportal_cause(err: BaseException) -> DevportalError | None:
    return next((e for e in causes(err) if isinstance(e, DevportalError)), None)


def first_line(err: BaseException) -> str:
    """The innermost cause's first line: dlt's wrappers say where, the cause says what."""
    inner = causes(err)[-1]
    text = str(inner).strip().splitlines()
    return (text[0][:300] if text else "") or type(inner).__name__


class Stopped(DevportalError):
    """The run was ended by a signal: SIGTERM (a scheduler, a CI timeout, systemd), SIGHUP (a
    closed terminal). A failure like any other: recorded, posted, one line; the exit code is
    128 + the signal's number, as a shell reports a program that signal ended (143, 129).

    `received` is the first such signal this process got (None: none): once set, what is still
    running winds down without waiting for requests in flight (`client.paging`)."""

    received: int | None = None

    def __init__(self, signum: int, message: str | None = None) -> None:
        self.signum = signum
        self.name = signal_name(signum)
        super().__init__(message or f"stopped by {self.name}", exit_code=128 + signum)

    def during(self, what: str) -> Stopped:
        """The same stop, saying what it stopped and what it left (`what`)."""
        return Stopped(self.signum, f"stopped by {self.name} {what}")


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def stop_signal(err: BaseException) -> int | None:
    """The signal that stopped the run ERR ended: a `Stopped` among its causes, or dlt's
    `SignalReceivedException` (dlt holds SIGINT and SIGTERM back while it normalizes and loads,
    then raises that); None when no signal did."""
    for cause in causes(err):
        if isinstance(cause, Stopped):
            return cause.signum
        code = getattr(cause, "signal_code", None)
        if type(cause).__name__ == "SignalReceivedException" and isinstance(code, int):
            return code
    return None
