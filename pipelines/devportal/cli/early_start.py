"""The early start of `devportal sync` (a speed-up: `cli.speedups`): the subscription list is
read while dlt and DuckDB import.

Importing dlt, DuckDB and pyarrow and opening the pipeline take about a second; the API can be
read meanwhile. The settings are `settings.http.HttpSettings`, with their types and defaults
(the one definition, `HttpSettings.looked_up`), found where dlt itself would find them for
`[sources.devportal]` without importing it (`settings.files.lookup_without_dlt`). The sync
resolves its settings with dlt afterwards and adopts this client only if they agree in every
HTTP setting, the API and the token (`client.adopt`); otherwise it is closed and its pages are
never used. So a lookup that misses something costs a few wasted requests, never a wrong
setting.

A signal that ends a run (SIGTERM, SIGHUP, Ctrl-C) while the early read runs ahead is held by
the client (`http.paging.HeldSignals`, from the moment it is made): the run is then importing
dlt or setting up its load, code that cannot take an exception at any line. The early read
ends at once, and the run meets the signal where its own read waits first, as it would meet
one sent while it reads: the same line, record and exit code.
"""

from __future__ import annotations

from typing import Any

SECTION = ("sources", "devportal")


def start(
    base_url: str | None, workers: int | None, max_workers: int | None, *, fork: bool = False
) -> Any:
    """A client already paging the subscription list, or None when the API, the token or a
    setting cannot be known without dlt (the sync then starts as usual). FORK: its requests
    run in a forked child where they can (`http.forked`), beside the imports."""
    # deferred: the early start runs before dlt imports; the parser (every command) stays light
    from devportal.base.errors import DevportalError
    from devportal.http import SUBSCRIPTIONS_PATH, ApiClient, HttpSettings
    from devportal.settings.files import lookup_without_dlt

    lookup = lookup_without_dlt(SECTION)
    try:
        settings = HttpSettings.looked_up(
            lookup, base_url=base_url, workers=workers, max_workers=max_workers
        )
    except (ValueError, TypeError):
        return None
    if not (settings.base_url and settings.access_token):
        return None
    try:
        client = ApiClient(settings)
    except (ValueError, TypeError, DevportalError):
        return None
    client.prefetch(SUBSCRIPTIONS_PATH, fork=fork)
    return client
