"""Which proxy a request to the API goes through, found the way requests finds it (the
environment's `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` and `NO_PROXY`, lower case first; on macOS
and Windows the system's settings), and named for messages: its `host:port` and the variable
that set it, never the user name or password a proxy URL may hold.

A failure on the way to the API through a proxy is the proxy's to explain: a dead proxy is not
"the API refused the connection", and a proxy refusing its credentials (407) is not an API that
is down (`errors.connection_failure`, `session`)."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from requests.utils import get_environ_proxies, prepend_scheme_if_needed, select_proxy

from devportal.base.errors import register_secret

SYSTEM_SETTINGS = "the system's proxy settings"


@dataclass(frozen=True)
class Proxy:
    """The proxy requests to the API go through: `where` (host:port, no credentials),
    `setting` (the variable that set it), whether its URL holds credentials."""

    where: str
    setting: str
    has_credentials: bool

    def __str__(self) -> str:
        return f"the proxy {self.where} ({self.setting})"

    def fix(self, api_host: str) -> str:
        """How to go around it: the variable to change, or NO_PROXY for the API alone."""
        return f"fix or unset {self.setting}, or set NO_PROXY={api_host} to reach the API directly"


def proxy_for(url: str) -> Proxy | None:
    """The proxy requests would use for URL, or None. Its password (and the Basic credentials
    made of it) are registered as secrets: no message or log line can quote them."""
    try:
        chosen = select_proxy(url, get_environ_proxies(url))
    except (ValueError, OSError):  # a NO_PROXY or system setting requests cannot read
        return None
    if not chosen:
        return None
    scheme = urlsplit(url).scheme
    setting = _variable(chosen, scheme)
    parts = urlsplit(prepend_scheme_if_needed(chosen, "http"))
    user, password = _credentials(parts.netloc)
    for secret in (password, unquote(password)):
        register_secret(secret)
    if user or password:
        basic = f"{unquote(user)}:{unquote(password)}".encode()
        register_secret(base64.b64encode(basic).decode())
    return Proxy(_where(parts.netloc, parts.scheme), setting, bool(user or password))


def _variable(value: str, scheme: str) -> str:
    """The environment variable holding VALUE for SCHEME (requests prefers the lower-case
    name, then the scheme's over `all_proxy`); the system's settings when none does."""
    for key in (scheme, "all"):
        names = [f"{key}_proxy", f"{key.upper()}_PROXY"]
        names += sorted(n for n in os.environ if n.lower() == f"{key}_proxy" and n not in names)
        for name in names:
            if os.environ.get(name) == value:
                return name
    return SYSTEM_SETTINGS


def _credentials(netloc: str) -> tuple[str, str]:
    if "@" not in netloc:
        return "", ""
    userinfo = netloc.rpartition("@")[0]
    user, _, password = userinfo.partition(":")
    return user, password


def _where(netloc: str, scheme: str) -> str:
    """host:port of a proxy's NETLOC, without credentials (the scheme's port when none)."""
    hostport = netloc.rpartition("@")[2]
    parts = urlsplit(f"//{hostport}")
    try:
        port = parts.port
    except ValueError:  # a port that is no number: shown as written (no credentials in it)
        return hostport or "?"
    host = parts.hostname or "?"
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port or (443 if scheme == 'https' else 80)}"
