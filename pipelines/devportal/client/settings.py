"""The HTTP settings the client reads (`HttpSettings`; `DefaultHttpSettings` for a client
started before dlt's configuration is imported), and the checks on the base URL and the token
made before anything is sent."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from devportal.errors import ConfigError

TOKEN_HINT = "set SOURCES__DEVPORTAL__ACCESS_TOKEN or access_token in .dlt/secrets.toml"


class HttpSettings(Protocol):
    """How to reach the API and how hard to try: the fields of `config.DevportalConfig` that
    the client reads (its defaults and their meaning are there). A protocol, so the client
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
