"""New subscriptions arriving at a steady rate while the subscription list is read: a popular
app's list grows all day (`Sandbox(signups_per_s=R)`, `POST /__sandbox/signups`).

Signups arrive when a page of the live subscription list is about to be served: R a second of
wall time since the last page (fractions carried over), so a sync reading pages at 50 ms each
meets R/20 new rows a page. Each is a live, active monthly subscription of a drawn user (seeded),
created at the simulated clock's now, with the next id: the list is in id order, so every
signup lands at its end, on a page not yet read (or past the last one). A gap of more than
`IDLE_S` between pages is idle time, not reading: no signups pile up between syncs.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from devportal.sandbox.world import World

IDLE_S = 1.0  # a gap between list pages longer than this is no read: nothing arrives in it


class Signups:
    """`per_second` signups a second of reading, added to WORLD by `arrive()`; `added`: how
    many so far. `clock`: seconds (monotonic), replaceable in tests."""

    def __init__(
        self,
        world: World,
        per_second: float,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not per_second > 0:
            raise ValueError("signups per second must be > 0")
        self.world, self.per_second, self.clock = world, float(per_second), clock
        self.added = 0
        self._rng = random.Random(seed)
        self._last: float | None = None
        self._owed = 0.0
        self._lock = threading.Lock()

    def arrive(self) -> int:
        """Add the signups due since the last list page; how many were added."""
        with self._lock:
            now = self.clock()
            gap = 0.0 if self._last is None else now - self._last
            self._last = now
            if gap > IDLE_S:
                gap = 0.0
            self._owed += gap * self.per_second
            due = int(self._owed)
            self._owed -= due
            for _ in range(due):
                self.world.sign_up(self._rng)
            self.added += due
            return due
