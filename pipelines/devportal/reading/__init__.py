"""Reading the API's lists so that they can be trusted: paging with integrity checks.

A *read* pages through a whole list (or a `start`/`end` window of it) and is checked before
anything reaches dlt; a list that only grew while it was paged (the rows read stayed put) is
read to its new end; if it moved, it is read again, and after `sweep_attempts` reads (or two
that failed the same way) the run fails having loaded nothing, saying what differed. Every function here returns what it
read, checked, with the fields its rows had (`extras.FieldStats`); the source (`source.py`)
turns the results into dlt resources.

One job per module, imports running one way (moves <- checks <- spool <- subscriptions <-
closes; checks, rowspool <- users):

    moves          what a read's pages said (`PageLog`), why reads did not add up, the refusal
    checks         `ListRead`, the page and id checks a read must pass, a grown list's tail
    rowspool       dict rows spooled to a local file, handed over a batch at a time
    spool          a subscription read spooled to a local Arrow file, batch by batch
    subscriptions  the partitions of the subscription list, each read until it adds up
    closes         settling what a sweep would close (`settle_closes`); the mass-close guard
    users          the user settings list (what changed) and the accounts of the users due

Each read reports its pages and requests to the run's `Progress` (devportal.progress).

Callers use the names below (`from devportal.reading import read_subscriptions`).
"""

from devportal.progress import Progress  # what a read reports its pages to
from devportal.reading.checks import ListMoved, ListRead, check_pages, verify_ids
from devportal.reading.closes import (
    GONE,
    LISTED,
    UNCLEAR,
    Settling,
    check_mass_close,
    judge_answer,
    settle_closes,
)
from devportal.reading.rowspool import RowSpool
from devportal.reading.spool import BATCH_BYTES, Spool
from devportal.reading.subscriptions import (
    Partition,
    SubscriptionsRead,
    partitions,
    read_subscriptions,
    window_bounds,
)
from devportal.reading.users import (
    AccountsRead,
    HeldSettings,
    SettingsRead,
    read_accounts,
    read_settings,
)

__all__ = [
    "BATCH_BYTES",
    "GONE",
    "LISTED",
    "UNCLEAR",
    "AccountsRead",
    "HeldSettings",
    "ListMoved",
    "ListRead",
    "Partition",
    "Progress",
    "RowSpool",
    "SettingsRead",
    "Settling",
    "Spool",
    "SubscriptionsRead",
    "check_mass_close",
    "check_pages",
    "judge_answer",
    "partitions",
    "read_accounts",
    "read_settings",
    "read_subscriptions",
    "settle_closes",
    "verify_ids",
    "window_bounds",
]
