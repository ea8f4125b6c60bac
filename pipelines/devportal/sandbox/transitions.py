"""The simulated clock's effect on the subscriptions: what happens as time moves forward.

`Transitions.advance` moves the clock in steps of at most one day. Per step, in this order
(the order of the random draws is part of every seeded world's history):
1. random cancellations of active rows (a row whose period ended before the cancel renews
   first);
2. reactivations of canceled-but-still-usable rows;
3. new subscriptions (Poisson count, creation times spread over the step);
4. every row whose `expires_at` was reached, taken from the store's expiry queue: active
   ones renew (`expires_at` += period), canceled ones expire.
Steps 1 and 2 use geometric skipping, so their cost is O(events) rather than O(rows).
Rows edited with `set_raw` are frozen: the clock leaves them alone.

All draws come from one generator seeded from the world's seed, separate from generation's.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

from devportal.sandbox.clock import AVG_MONTH, DAY, Rates, add_months
from devportal.sandbox.generate import ServicePicker
from devportal.sandbox.store import CANCELED, GONE, SubscriptionStore


class Transitions:
    """Applies `Rates` to a store as its clock advances. Not locked: `World` holds the lock."""

    def __init__(
        self,
        store: SubscriptionStore,
        picker: ServicePicker,
        *,
        seed: int,
        rates: Rates,
        test_share: float,
        base_new_per_day: float,
    ) -> None:
        self.store = store
        self.picker = picker
        self.rates = rates
        self.test_share = test_share
        self.base_new_per_day = base_new_per_day
        self.rng = random.Random(seed * 1_000_003 + 101)

    def new_per_day(self) -> float:
        r = self.rates.new_per_day
        return self.base_new_per_day if r is None else r

    def advance(self, *, days: float, hours: float, seconds: float) -> dict[str, int]:
        """Move the clock forward and apply what happened; returns counts of each change."""
        delta = round(days * DAY + hours * 3600 + seconds)
        if delta < 0:
            raise ValueError("the clock only moves forward")
        changes = {"canceled": 0, "renewed": 0, "new": 0, "expired": 0, "reactivated": 0}
        store = self.store
        end = store.now + delta
        t = store.now
        while t < end:
            t1 = min(end, t + DAY)
            self._step(t, t1, changes)
            t = t1
            store.now = t
        store.now = end
        store.version += 1
        return changes

    def _step(self, t: int, t1: int, changes: dict[str, int]) -> None:
        # Daily hazards from monthly shares: 1 - (1 - m)^(days / month).
        month_frac = (t1 - t) / AVG_MONTH
        p_cancel = 1.0 - (1.0 - self.rates.cancel_per_month) ** month_frac
        self._cancellations(t, t1, p_cancel, changes)
        p_back = 1.0 - (1.0 - self.rates.reactivate_per_month) ** month_frac
        self._reactivations(t, p_back, changes)
        self._new_subscriptions(t, t1, changes)
        self._expiries(t1, changes)

    def _cancellations(self, t: int, t1: int, p: float, changes: dict[str, int]) -> None:
        store = self.store
        flags, expires, raw = store.flags, store.expires, store.raw
        for i in self._hits(len(store.ids), p):
            if flags[i] & (GONE | CANCELED) or i in raw:
                continue
            when = t + self.rng.random() * (t1 - t)
            if expires[i] <= when:
                # The period ended before the user canceled: it renewed first.
                self._renew(i)
                changes["renewed"] += 1
            store.set_canceled(i, True)
            changes["canceled"] += 1

    def _reactivations(self, t: int, p: float, changes: dict[str, int]) -> None:
        store = self.store
        flags, expires, raw = store.flags, store.expires, store.raw
        for i in self._hits(len(store.ids), p):
            if not flags[i] & CANCELED or flags[i] & GONE or i in raw or expires[i] <= t:
                continue
            store.set_canceled(i, False)
            changes["reactivated"] += 1

    def _new_subscriptions(self, t: int, t1: int, changes: dict[str, int]) -> None:
        frac = (t1 - t) / DAY  # computed apart: a different float rounding would change k
        k = self._poisson(self.new_per_day() * frac)
        if not k:
            return
        rng, store = self.rng, self.store
        yearly = self.rates.yearly_share
        times = sorted(int(t + rng.random() * (t1 - t)) for _ in range(k))
        for created in times:
            sub_id = store.last_id + (1 if rng.random() < 0.95 else rng.randrange(2, 6))
            period = 12 if rng.random() < yearly else 1
            test = rng.random() < self.test_share
            svc = self.picker.draw(rng)
            store.append(sub_id, svc, created, add_months(created, period), period, False, test)
        store.version += 1
        changes["new"] += k

    def _expiries(self, t1: int, changes: dict[str, int]) -> None:
        store = self.store
        for i in store.due(t1):
            if i in store.raw:
                continue  # frozen by set_raw
            if store.flags[i] & CANCELED:
                changes["expired"] += 1
            else:
                self._renew(i)
                changes["renewed"] += 1

    def _renew(self, idx: int) -> None:
        store = self.store
        store.set_expires(idx, add_months(store.expires[idx], store.period[idx]))
        # Queued even when still due: a long-lapsed row renews again within the same step.
        store.schedule(idx)

    def _hits(self, n: int, p: float) -> Iterator[int]:
        """Row indexes in [0, n) each picked with probability p, in O(n * p) draws."""
        if p <= 0.0 or n == 0:
            return
        if p >= 1.0:
            yield from range(n)
            return
        log_q = math.log1p(-p)
        rnd = self.rng.random
        i = -1
        while True:
            # Geometric gap to the next success: skips the rows nothing happens to.
            i += 1 + int(math.log(1.0 - rnd()) / log_q)
            if i >= n:
                return
            yield i

    def _poisson(self, lam: float) -> int:
        if lam <= 0:
            return 0
        rng = self.rng
        if lam > 50:
            return max(0, round(rng.gauss(lam, math.sqrt(lam))))
        limit, k, p = math.exp(-lam), 0, rng.random()
        while p > limit:
            k += 1
            p *= rng.random()
        return k
