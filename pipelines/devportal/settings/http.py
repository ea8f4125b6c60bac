"""The HTTP settings (`HttpSettings`, the one definition of their names, types and defaults)
and the checks on the base URL and the token made before anything is sent.

`base_url` is the API's address without its path (the spec's `{base_url}`, e.g.
`https://api.example.com`): the client adds `/api/v1/developer/...` to it; a base_url that
already ends in `/api/v1` (or goes further) is refused with the value to set."""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, get_args, get_type_hints
from urllib.parse import urlsplit

from devportal.base.api import API_PREFIX
from devportal.base.errors import ConfigError

TOKEN_HINT = "set SOURCES__DEVPORTAL__ACCESS_TOKEN or access_token in .dlt/secrets.toml"

log = logging.getLogger("devportal.client")

# What a token copied from a request's header starts with: the scheme devportal adds itself,
# optionally after the header's name (`Authorization: Bearer <token>`), any case and spacing
_PASTED_PREFIX = re.compile(r"(?i)^(?:authorization\s*:\s*)?bearer(?:\s*:\s*|\s+)(?=\S)")
_prefix_named = False  # the prefix is named once per process (the client is made twice)


@dataclass(repr=False)
class HttpSettings:
    """How to reach the API and how hard to try: every HTTP setting of `[sources.devportal]`,
    its default and its meaning, defined here once. `config.DevportalConfig` inherits these
    fields (dlt resolves them with the rest of the section); the early start of `devportal
    sync` and the benchmark's floor build this class directly, without importing dlt.

    `timeout_s` bounds one attempt in total (connect, headers, body, same-origin redirects);
    `max_attempts` and `max_wait_s` bound one request in total, attempts and sleeps included;
    `retry_after_cap_s` is the longest sleep on a server's `Retry-After`; `max_body_mb` caps one
    decoded answer (a gzip bomb is refused at it, not held). Requests in flight adapt between
    `min_workers` and `max_workers` (`concurrency.py`); `workers` pins them to that number.
    """

    base_url: str | None = None
    access_token: str | None = None  # never shown by repr; a secret in DevportalConfig
    workers: int | None = None  # pins the requests in flight; unset: adaptive
    min_workers: int = 1
    max_workers: int = 64
    timeout_s: float = 30.0
    max_attempts: int = 8
    max_wait_s: float = 120.0
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 10.0
    retry_after_cap_s: float = 30.0
    allow_insecure_remote: bool = False  # a token over plain http to a remote host
    # the most one decoded answer may hold, in MiB (a bigger one is refused, not retried);
    # unset: 64 KiB per row of the list's per_page, between 16 and 64 MiB
    max_body_mb: float | None = None

    @classmethod
    def looked_up(cls, lookup: Callable[[str], Any], **given: Any) -> HttpSettings:
        """The settings as LOOKUP finds each field's value (a string from the environment, a
        TOML value), coerced to the field's type as dlt coerces it, the field's default where
        nothing is found; GIVEN (values not None: command-line options) first. ValueError or
        TypeError when a value does not coerce."""
        kinds = get_type_hints(cls)
        values: dict[str, Any] = {}
        for f in fields(cls):
            found = given.get(f.name)
            if found is None:
                found = lookup(f.name)
            values[f.name] = _coerce(found, f.default, kinds[f.name])
        return cls(**values)

    def __repr__(self) -> str:
        """Every field but the token (a subclass's fields included)."""
        shown = (
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if f.name != "access_token" and not f.name.startswith("__")
        )
        return f"{type(self).__name__}({', '.join(shown)})"


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
    before = before_api_path(parts.path)
    if before is not None:
        # Refused, not mended: base_url keeps one meaning everywhere it is read (the early
        # start, a notebook, the user's own pipeline), and the one edit is made once, at setup
        origin = f"{parts.scheme}://{parts.netloc}"
        raise ConfigError(
            f"base_url {origin}{parts.path} holds the API's own path "
            f"{parts.path[len(before) :].rstrip('/')}: devportal adds {API_PREFIX}/... itself; "
            f"set base_url to {origin}{before} (in .dlt/config.toml, "
            "SOURCES__DEVPORTAL__BASE_URL or --base-url)"
        )
    return base_url.strip().rstrip("/")


def before_api_path(path: str) -> str | None:
    """What comes before the API's own path (`/api/v1`, `/api/v1/developer`, an endpoint's
    path) when PATH holds it, else None: `/proxy/api/v1/` -> `/proxy`, `/api/v1` -> ``.

    Only `/api/v1` and what follows it: a bare `/api` may be where a gateway mounts the API
    (`https://gateway/api` + `/api/v1/developer/...`)."""
    ours = API_PREFIX.strip("/").lower().split("/")  # api, v1, developer
    segments = path.rstrip("/").split("/")
    for at in range(len(segments)):
        tail = [s.lower() for s in segments[at : at + len(ours)]]
        if len(tail) >= 2 and tail == ours[: len(tail)]:
            return "/".join(segments[:at])
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def clean_token(token: str) -> str:
    """The token without surrounding whitespace (a file read with $(cat ...) ends in CR/LF)
    and without a pasted `Bearer ` (or `Authorization: Bearer `) before it: that is the
    header's scheme, which devportal adds itself. The prefix is stripped, not refused (no
    token starts with a scheme and a space: it cannot be part of one), and named in one warning.

    Whatever is left must be one header-safe word; the message names the problem, never the
    token.
    """
    token = (token or "").strip()
    if not token:
        raise ConfigError(f"no access token: {TOKEN_HINT}")
    token = _without_pasted_prefix(token)
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


def _without_pasted_prefix(token: str) -> str:
    """TOKEN without a leading `Bearer ` / `Authorization: Bearer ` (warned about once); a value
    that is only the prefix is no token."""
    global _prefix_named
    found = _PASTED_PREFIX.match(token)
    if found is None:
        if token.lower().rstrip(": ") in ("bearer", "authorization: bearer"):
            raise ConfigError(
                f"the access token is only the word 'Bearer', without the token: {TOKEN_HINT}"
            )
        return token
    named = "Authorization: Bearer " if found.group(0).lower().startswith("auth") else "Bearer "
    if not _prefix_named:
        _prefix_named = True
        log.warning(
            "the access token starts with %r, the scheme devportal adds itself: it is sent "
            "without it; store the token alone (%s)",
            named,
            TOKEN_HINT,
        )
    return token[found.end() :].strip()


def _coerce(value: Any, default: Any, kind: Any) -> Any:
    """VALUE as the field's type KIND (`int | None`, `float`, `bool`, ...), as dlt coerces it."""
    if value is None:
        return default
    kinds = set(get_args(kind)) or {kind}
    if bool in kinds:
        return value if isinstance(value, bool) else str(value).strip().lower() == "true"
    for number in (int, float):
        if number in kinds:
            return number(value)
    return str(value)
