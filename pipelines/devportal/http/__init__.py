"""All HTTP to the Developer API: one keep-alive session, the retry policy, pagination.

Nothing else in devportal opens a connection to the API. The access token lives only in the
session; it never enters a URL, a log line, an exception or a returned value, and
`errors.scrub` takes it out of any text that quotes it back. Server text (an error's `message`,
a URL it sent) reaches messages only through `errors.server_text`.

One job per module, imported one way (each only from those above it):

    concurrency  the in-flight limit one client adapts (AIMD), shared by its workers
    proxy        the proxy the environment sets for the API, named without its credentials
    failures     RetryableError (worth another attempt), NotFound (404), connection failures
    budget       one `get_json()`'s retry budget: deadlines, attempts, why the retries stopped
    watchdog     the deadline on a request's status line and headers
    body         one body read by its deadline, within its cap, gzip/deflate undone
    jsonparse    a body's JSON (BOM, big integers, lone surrogates, NUL); a server's error message
    pages        one page of a list and what it must agree with
    paging       walking a list: pages in order, concurrently or by next_page_url; prefetch
    forked       the early read in a forked child: pages and counters through a pipe
    session      `ApiClient`: the session, one GET with its retries and redirects; `adopt`

This package re-exports the names the rest of devportal uses (the API's paths and resources
from `devportal.base.api`, the one place that names them).
"""

from devportal.base.api import RESOURCES, SUBSCRIPTIONS_PATH, USER_SETTINGS_PATH
from devportal.http.failures import NotFound
from devportal.http.pages import Page
from devportal.http.session import ApiClient, adopt
from devportal.settings.http import HttpSettings, is_loopback

__all__ = [
    "RESOURCES",
    "SUBSCRIPTIONS_PATH",
    "USER_SETTINGS_PATH",
    "ApiClient",
    "HttpSettings",
    "NotFound",
    "Page",
    "adopt",
    "is_loopback",
]
