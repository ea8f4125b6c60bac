"""Reading the API's lists so that they can be trusted: paging with integrity checks.

A *read* pages through a whole list (or a `start`/`end` window of it) and is checked before
anything reaches dlt; a list that only grew while it was paged (the rows read stayed put) is
read to its new end; if it moved (a row that slid across a page edge unseen included: the
pages before the edges whose ids jump are read again at its end), it is read again, and after
`sweep_attempts` reads (or two that failed the same way) the run fails having loaded nothing,
saying what differed. Every function here returns what it read, checked, with the fields its
rows had (`extra_fields.FieldStats`); the source (`source.py`) turns the results into dlt
resources.

One job per module, imports running one way (moves <- list_read <- subscription_spool <-
subscription_list <- closing; list_read, row_spool <- user_lists):

    moves               what a read's pages said (`PageLog`), why reads did not add up, the refusal
    list_read           `ListRead`, the page and id checks a read must pass, a grown list's tail
    row_spool           dict rows spooled to a local file, handed over a batch at a time
    subscription_spool  a subscription read spooled to a local Arrow file, batch by batch
    subscription_list   the partitions of the subscription list, each read until it adds up
    closing             confirmation what a sweep would close (`confirm_closes`); the mass-close guard
    user_lists          the user settings list (what changed) and the accounts of the users due

Each read reports its pages and requests to the run's `Progress` (devportal.base.progress).

Callers use the names below (`from devportal.extract.reading import read_subscriptions`).
"""

from devportal.base.progress import Progress  # what a read reports its pages to
from devportal.extract.reading.closing import check_mass_close, confirm_closes
from devportal.extract.reading.row_spool import RowSpool
from devportal.extract.reading.subscription_list import (
    SubscriptionsRead,
    partitions,
    read_subscriptions,
    window_bounds,
)
from devportal.extract.reading.user_lists import HeldSettings, read_accounts, read_settings

__all__ = [
    "HeldSettings",
    "Progress",
    "RowSpool",
    "SubscriptionsRead",
    "check_mass_close",
    "confirm_closes",
    "partitions",
    "read_accounts",
    "read_settings",
    "read_subscriptions",
    "window_bounds",
]
