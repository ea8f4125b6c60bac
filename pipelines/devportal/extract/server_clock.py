"""The run's clock: the API server's time, from the `Date` header of the run's first page.

History is stamped with it (never with this machine's clock, unless the server's is far off),
so the first page a run asks for is one whose `Date` it can trust.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from devportal.base.api import SIMULATED_CLOCK_HEADER
from devportal.http import SUBSCRIPTIONS_PATH, USER_SETTINGS_PATH, ApiClient, Page, is_loopback

log = logging.getLogger("devportal.source")


def clock_page(client: ApiClient, resources: tuple[str, ...], mode: str) -> tuple[Page, bool]:
    """A first page whose `Date` header tells the server's clock, and whether it is page 1 of
    the first list the run reads (then it is not fetched again). A window run asks for an empty
    window: its bounds depend on the clock."""
    if "subscriptions" not in resources:
        return client.fetch_page(USER_SETTINGS_PATH, {}, 1), True
    if mode == "sweep":
        return client.first_page(SUBSCRIPTIONS_PATH, {}), True
    # nothing of this page is kept: what its text had replaced is not counted
    return client.peek_page(SUBSCRIPTIONS_PATH, {"start": "1970-01-01", "end": "1970-01-02"}), False


def server_clock(page: Page, base_url: str, max_skew_hours: float) -> datetime | None:
    """The API's clock from its `Date` header, or None to use this machine's.

    A clock far from this machine's (a misconfigured server, a proxy's cached answer) would
    stamp the run's history in another year, and every later run after it: it is ignored with
    a warning. The sandbox's simulated clock is believed when it says so from loopback.
    """
    told = page.server_time
    if told is None or max_skew_hours <= 0:
        return told
    if page.headers.get(SIMULATED_CLOCK_HEADER) and is_loopback(urlsplit(base_url).hostname or ""):
        return told
    local = datetime.now(UTC).replace(tzinfo=None)
    if abs(told - local) > timedelta(hours=max_skew_hours):
        log.warning(
            "the API's clock says %s, %.1f hours from this machine's (%s); the run is stamped "
            "with this machine's clock (max_clock_skew_hours = %g)",
            f"{told:%Y-%m-%d %H:%M:%S}",
            (told - local).total_seconds() / 3600,
            f"{local:%Y-%m-%d %H:%M:%S}",
            max_skew_hours,
        )
        return None
    return told
