"""The deterministic initial world: subscriptions generated from a seed, and service-id draws.

`generate_subscriptions` fills an empty `SubscriptionStore` with `n` rows created over
`HISTORY_MONTHS` months by a business whose daily sales grow `GROWTH`-fold over that time;
each row cancels at a constant monthly hazard, so roughly 70% are still active at the clock
start. It returns the daily sales rate at the end of the history, which the clock keeps
using. `ServicePicker` draws the `service_id` of a new row (generated or added by the clock).

Every random draw happens in a fixed order on the generator passed in: the same seed and
sizes give the same rows, byte for byte. Changing that order changes every seeded world.
"""

from __future__ import annotations

import gc
import math
import random
from collections.abc import Iterator
from contextlib import contextmanager

from devportal.sandbox.clock import AVG_MONTH, DAY, period_end_after
from devportal.sandbox.store import CANCELED, TEST, SubscriptionStore
from devportal.sandbox.users import UserBook

HISTORY_MONTHS = 18  # generated subscriptions were created over this many months
GROWTH = 3.0  # the business sells GROWTH times more per day at the end of the history
GEN_CANCEL_PER_MONTH = 0.05  # hazard used to generate history: gives roughly 70% active


class ServicePicker:
    """Draws service ids for new subscriptions: mostly existing users, ~2% deleted accounts."""

    def __init__(self, users: UserBook) -> None:
        self._users = users
        self._pool: list[int] = []
        self.refresh()

    def refresh(self) -> None:
        """Re-read the user ids; call after adding or removing a user."""
        self._pool = self._users.ids()

    def draw(self, rng: random.Random) -> int:
        deleted = self._users.deleted_ids
        pool = self._pool
        # int(random() * n) rather than randrange: a third of the cost, same determinism.
        if pool and (not deleted or rng.random() >= 0.02):
            return pool[int(rng.random() * len(pool))]
        if deleted:
            return deleted[int(rng.random() * len(deleted))]
        # No users at all: ids that resolve to no account (404 on /users/{id}).
        return rng.randrange(1_000_000, 2_000_000)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic GC off.

    Generation allocates millions of small objects and frees none: the cyclic GC would rescan
    them again and again (a third of the time at a million rows) for nothing.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc_was_enabled:
            gc.enable()


def generate_subscriptions(
    store: SubscriptionStore,
    n: int,
    rng: random.Random,
    picker: ServicePicker,
    *,
    yearly_share: float,
    test_share: float,
) -> float:
    """Fill the empty `store` with `n` rows; returns the daily sales rate at the clock start."""
    if n == 0:
        return 0.0
    span = HISTORY_MONTHS * AVG_MONTH
    g = math.log(GROWTH) / span  # exponential growth per second
    scale = math.expm1(g * span)
    origin = store.now - span
    rnd = rng.random
    # Inverse CDF of a density growing like exp(g t) on [origin, now).
    created = sorted(int(origin + math.log1p(rnd() * scale) / g) for _ in range(n))
    _fill(store, created, rng, picker, yearly_share, test_share)
    # The daily sales rate at the end of the history keeps the business growing on the clock.
    return n * g * GROWTH / scale * DAY


def _fill(
    store: SubscriptionStore,
    created: list[int],
    rng: random.Random,
    picker: ServicePicker,
    yearly_share: float,
    test_share: float,
) -> None:
    """Draw every other column for rows created at `created` and load them into `store`."""
    now = store.now
    hazard = -math.log1p(-GEN_CANCEL_PER_MONTH) / AVG_MONTH  # per second
    rnd = rng.random
    expo = rng.expovariate
    pick = picker.draw
    # Columns are built as lists and converted once: ~2x faster than row-by-row appends.
    ids: list[int] = []
    svcs: list[int] = []
    exps: list[int] = []
    periods = bytearray()
    flags = bytearray()
    sub_id = 1 + int(rnd() * 49)
    for c in created:
        sub_id += 1 if rnd() < 0.95 else 2 + int(rnd() * 4)
        period = 12 if rnd() < yearly_share else 1
        flag = TEST if rnd() < test_share else 0
        svc = pick(rng)
        cancel_at = c + expo(hazard)
        if cancel_at < now:
            expires = period_end_after(c, period, int(cancel_at))
            flag |= CANCELED
        else:
            expires = period_end_after(c, period, now)
        ids.append(sub_id)
        svcs.append(svc)
        exps.append(expires)
        periods.append(period)
        flags.append(flag)
    store.load(ids, svcs, created, exps, periods, flags)
