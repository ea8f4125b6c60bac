"""Posting one message to incoming webhooks: the JSON both Slack and Discord accept, and a post
that can only warn.

The payload carries the message twice, once per service, and each service reads its own key
and ignores the other's: Slack's incoming webhooks read `text` (with only `content` nothing is
posted), Discord's read `content` (a payload with only `text` is refused with 50006 "Cannot
send an empty message": the unknown key is ignored, not refused). So no `/slack` suffix is
needed on a Discord URL (its Slack-compatible endpoint reads `text` and works as well). Discord's
`allowed_mentions: {"parse": []}` keeps a quoted `@everyone` from pinging a channel; Slack's
copy has its control characters `&`, `<`, `>` escaped as Slack's formatting rules ask (else a
quoted `<!channel>` would notify everyone). The message is cut to Discord's 2000 characters.

dlt's `dlt.common.runtime.slack.send_slack_message` is not used: it calls `requests.post`
without a timeout (a webhook that accepts the connection and never answers would hold a
nightly sync for ever), it logs a warning of its own and raises on an HTTP error (two lines
where one is wanted), and its payload (`text`, `mrkdwn`) is one Discord refuses. The post here
is the same call (`requests`, JSON, UTF-8) with a timeout, and a failure is one warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from devportal.base.errors import causes, server_text

log = logging.getLogger("devportal.alerts")

# Discord's limit for `content`; Slack's for `text` is far above it
MAX_CHARS = 2000


def payload(message: str) -> dict[str, Any]:
    """The JSON body for MESSAGE that both Slack and Discord incoming webhooks accept."""
    if len(message) > MAX_CHARS:
        message = message[: MAX_CHARS - 3] + "..."
    slack = message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return {"text": slack, "content": message, "allowed_mentions": {"parse": []}}


def host(url: str) -> str:
    """`host:port` of URL: what a warning names (the path of a webhook is its secret)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


def post(urls: Sequence[str], message: str, timeout_s: float) -> int:
    """Post MESSAGE to each of URLS; how many took it. A webhook that refuses the connection,
    answers an error or no answer within TIMEOUT_S is one warning line on stderr, never an
    exception: an alert never fails the run it reports on."""
    # deferred: loads requests, kept out of startup
    import requests  # here: `devportal --help` never imports it

    body = payload(message)
    sent = 0
    for url in urls:
        try:
            answer = requests.post(
                url, json=body, timeout=(timeout_s, timeout_s), allow_redirects=False
            )
        except requests.Timeout:
            _warn(url, f"no answer within {timeout_s:g}s")
            continue
        except requests.RequestException as err:
            _warn(url, _connection_failure(err))
            continue
        if answer.status_code >= 300:
            said = server_text(answer.text, 120)
            _warn(url, f"HTTP {answer.status_code}" + (f" ({said})" if said else ""))
            continue
        sent += 1
    return sent


def _connection_failure(err: BaseException) -> str:
    """Why a request failed, without the exception's text (it quotes the URL's path)."""
    for cause in causes(err):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, OSError) and cause.strerror:
            return str(cause.strerror).lower()
    return type(err).__name__


def _warn(url: str, why: str) -> None:
    log.warning("alert not posted to the webhook at %s: %s (the run goes on)", host(url), why)
