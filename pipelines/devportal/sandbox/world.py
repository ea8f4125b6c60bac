"""The sandbox's data: subscriptions and users, their indexes, scripted edits and the clock.

`World` owns every row the API serves and the simulated clock that changes them. It is built
deterministically from (seed, sizes, test share, clock start) and is safe to use from several
threads: one re-entrant lock guards all state, and a list page is read under one hold of it,
so each page is consistent by itself.

Storage is columnar (`array('q')` / `bytearray`, one slot per row ever created) so a million
subscriptions fit in some tens of megabytes, and serving a page costs O(page):
- live and test rows are two separate id-ordered index lists, so `is_test` is free;
- each list carries a parallel list of creation times: while creation times rise with ids
  (always true for the generated world and the clock) a `start`/`end` window is two bisects;
  scripted back-dated rows switch that list to a cached O(matches) fallback;
- `service_id` -> row list per class for `user_id`;
- each row's JSON is serialised once and cached until the row changes.

Assumption (the spec does not say): `start`/`end` filter on each subscription's creation time,
which the response does not carry; both bounds are inclusive and a date-only `end` covers its
whole day.

The clock (`advance`) moves in steps of at most one day. Per step: random cancellations of
active rows and reactivations of canceled-but-usable rows (geometric skipping, so the cost is
O(events) rather than O(rows)), new subscriptions (Poisson), then every row whose `expires_at`
was reached, taken from a heap: active ones renew (`expires_at` += period), canceled ones
expire. Rows edited with `set_raw` are frozen: the clock leaves them alone.
"""

from __future__ import annotations

import bisect
import gc
import heapq
import json
import math
import random
import threading
from array import array
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from devportal.sandbox.clock import (
    AVG_MONTH,
    DAY,
    Rates,
    add_months,
    fmt,
    from_epoch,
    period_end_after,
    to_epoch,
)
from devportal.sandbox.users import User, UserBook, generate_users

# Row flags (one byte per row).
_CANCELED = 1
_TEST = 2
_GONE = 4

_LIVE, _TESTC = 0, 1  # class index: live rows, test rows
_MASK = (1 << 32) - 1  # heap key = expires_at << 32 | row index

HISTORY_MONTHS = 18  # generated subscriptions were created over this many months
GROWTH = 3.0  # the business sells GROWTH times more per day at the end of the history
GEN_CANCEL_PER_MONTH = 0.05  # hazard used to generate history: gives roughly 70% active

STATUS = ("active", "canceled")


class _Drop:
    """Sentinel type for `set_raw(..., field=World.DROP)`: leave the field out."""

    def __repr__(self) -> str:
        return "World.DROP"


class World:
    """Subscriptions + users + simulated clock. See the module docstring."""

    DROP = _Drop()

    def __init__(
        self,
        *,
        subscriptions: int = 1000,
        users: int = 200,
        seed: int = 7,
        test_share: float = 0.05,
        start: datetime | str = "2026-11-01 00:00:00",
        rates: Rates | None = None,
    ) -> None:
        if subscriptions < 0 or users < 0:
            raise ValueError("subscriptions and users must be >= 0")
        if not 0.0 <= test_share <= 1.0:
            raise ValueError("test_share must be between 0 and 1")
        self.lock = threading.RLock()
        self.seed = seed
        self.test_share = test_share
        self._now = to_epoch(start)
        # Scripted worlds (no generated subscriptions) only change when told to.
        self.rates = rates if rates is not None else (Rates() if subscriptions else Rates.static())
        self.version = 0  # bumped on every change; lets readers notice drift

        self._ids = array("q")
        self._svc = array("q")
        self._created = array("q")
        self._expires = array("q")
        self._period = bytearray()  # months: 1 or 12
        self._flags = bytearray()
        self._cache: list[bytes | None] = []
        self._raw: dict[int, dict[str, Any]] = {}
        self._order = (array("q"), array("q"))  # row indexes, id ascending, per class
        self._ckeys = (array("q"), array("q"))  # creation times parallel to _order
        self._monotone = [True, True]
        self._by_user: tuple[dict[int, list[int]], dict[int, list[int]]] = ({}, {})
        self._heap: list[int] = []
        self._window_cache: dict[tuple[int, int, int], tuple[int, list[int]]] = {}

        gen = random.Random(seed)
        self._clock_rng = random.Random(seed * 1_000_003 + 101)
        self._base_new_per_day = 0.0
        # Generation allocates millions of small objects and frees none: the cyclic GC would
        # rescan them again and again (a third of the time at a million rows) for nothing.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self.users: UserBook = generate_users(users, gen)
            self._user_pool = self.users.ids()
            self._generate(subscriptions, gen)
        finally:
            if gc_was_enabled:
                gc.enable()

    # ------------------------------------------------------------------ generation

    def _pick_service_id(self, rng: random.Random) -> int:
        deleted = self.users.deleted_ids
        pool = self._user_pool
        # int(random() * n) rather than randrange: a third of the cost, same determinism.
        if pool and (not deleted or rng.random() >= 0.02):
            return pool[int(rng.random() * len(pool))]
        if deleted:
            return deleted[int(rng.random() * len(deleted))]
        # No users at all: ids that resolve to no account (404 on /users/{id}).
        return rng.randrange(1_000_000, 2_000_000)

    def _generate(self, n: int, rng: random.Random) -> None:
        if n == 0:
            return
        now = self._now
        span = HISTORY_MONTHS * AVG_MONTH
        g = math.log(GROWTH) / span  # exponential growth per second
        scale = math.expm1(g * span)
        origin = now - span
        rnd = rng.random
        # Inverse CDF of a density growing like exp(g t) on [origin, now).
        created = sorted(int(origin + math.log1p(rnd() * scale) / g) for _ in range(n))
        # The daily sales rate at the end of the history keeps the business growing on the clock.
        self._base_new_per_day = n * g * GROWTH / scale * DAY
        hazard = -math.log1p(-GEN_CANCEL_PER_MONTH) / AVG_MONTH  # per second
        yearly = self.rates.yearly_share
        test_share = self.test_share
        expo = rng.expovariate
        pick = self._pick_service_id
        # Columns are built as lists and converted once: ~2x faster than row-by-row appends.
        ids: list[int] = []
        svcs: list[int] = []
        exps: list[int] = []
        periods = bytearray()
        flags = bytearray()
        sub_id = 1 + int(rnd() * 49)
        for c in created:
            sub_id += 1 if rnd() < 0.95 else 2 + int(rnd() * 4)
            period = 12 if rnd() < yearly else 1
            flag = _TEST if rnd() < test_share else 0
            svc = pick(rng)
            cancel_at = c + expo(hazard)
            if cancel_at < now:
                expires = period_end_after(c, period, int(cancel_at))
                flag |= _CANCELED
            else:
                expires = period_end_after(c, period, now)
            ids.append(sub_id)
            svcs.append(svc)
            exps.append(expires)
            periods.append(period)
            flags.append(flag)
        self._ids = array("q", ids)
        self._svc = array("q", svcs)
        self._created = array("q", created)
        self._expires = array("q", exps)
        self._period = periods
        self._flags = flags
        self._cache = [None] * n
        for c in (_LIVE, _TESTC):
            want = _TEST if c == _TESTC else 0
            rows = [i for i in range(n) if flags[i] & _TEST == want]
            self._order[c].extend(rows)
            self._ckeys[c].extend(created[i] for i in rows)
            by_user = self._by_user[c]
            for i in rows:
                svc = svcs[i]
                lst = by_user.get(svc)
                if lst is None:
                    by_user[svc] = [i]
                else:
                    lst.append(i)
        self._heap = [e << 32 | i for i, e in enumerate(exps) if e > now]
        heapq.heapify(self._heap)

    def _append(
        self,
        sub_id: int,
        svc: int,
        created: int,
        expires: int,
        period: int,
        canceled: bool,
        test: bool,
        *,
        push: bool = True,
    ) -> int:
        idx = len(self._ids)
        self._ids.append(sub_id)
        self._svc.append(svc)
        self._created.append(created)
        self._expires.append(expires)
        self._period.append(period)
        self._flags.append((_CANCELED if canceled else 0) | (_TEST if test else 0))
        self._cache.append(None)
        c = _TESTC if test else _LIVE
        keys = self._ckeys[c]
        if keys and created < keys[-1]:
            self._monotone[c] = False
        self._order[c].append(idx)
        keys.append(created)
        self._by_user[c].setdefault(svc, []).append(idx)
        if push and expires > self._now:
            heapq.heappush(self._heap, expires << 32 | idx)
        return idx

    # ------------------------------------------------------------------ row access

    def _row_obj(self, idx: int) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "id": self._ids[idx],
            "service_id": self._svc[idx],
            "status": STATUS[self._flags[idx] & _CANCELED],
            "expires_at": fmt(self._expires[idx]),
        }
        raw = self._raw.get(idx)
        if raw:
            for key, value in raw.items():
                if value is World.DROP:
                    obj.pop(key, None)
                else:
                    obj[key] = value
        return obj

    def _row_bytes(self, idx: int) -> bytes:
        b = self._cache[idx]
        if b is None:
            if idx in self._raw:
                b = json.dumps(self._row_obj(idx), separators=(",", ":")).encode()
            else:
                # Formatting by hand is ~5x faster than json.dumps and the values need no escaping.
                b = b'{"id":%d,"service_id":%d,"status":"%s","expires_at":"%s"}' % (
                    self._ids[idx],
                    self._svc[idx],
                    STATUS[self._flags[idx] & _CANCELED].encode(),
                    fmt(self._expires[idx]).encode(),
                )
            self._cache[idx] = b
        return b

    def _touch(self, idx: int) -> None:
        self._cache[idx] = None
        self.version += 1

    def _find(self, sub_id: int) -> int | None:
        pos = bisect.bisect_left(self._ids, sub_id)
        if pos < len(self._ids) and self._ids[pos] == sub_id and not self._flags[pos] & _GONE:
            return pos
        return None

    def _need(self, sub_id: int) -> int:
        idx = self._find(sub_id)
        if idx is None:
            raise KeyError(f"no subscription with id {sub_id}")
        return idx

    # ------------------------------------------------------------------ reads (API)

    @property
    def now(self) -> datetime:
        return from_epoch(self._now)

    @property
    def now_ts(self) -> int:
        return self._now

    def subscription_bytes(self, sub_id: int) -> bytes | None:
        """The single Subscription object for `?id=` (live or test), None when unknown."""
        with self.lock:
            idx = self._find(sub_id)
            return None if idx is None else self._row_bytes(idx)

    def subscription_page(
        self,
        *,
        test: bool,
        user_id: int | None,
        start: int | None,
        end: int | None,
        offset: int,
        limit: int,
    ) -> tuple[list[bytes], int]:
        """One page of the filtered list (id ascending) and the filtered total, consistently."""
        c = _TESTC if test else _LIVE
        with self.lock:
            windowed = start is not None or end is not None
            lo = start if start is not None else -(1 << 62)
            hi = end if end is not None else 1 << 62
            rows: Sequence[int]
            page: Sequence[int]
            if user_id is not None:
                rows = self._by_user[c].get(user_id, [])
                if windowed:
                    created = self._created
                    rows = [i for i in rows if lo <= created[i] <= hi]
                total = len(rows)
                page = rows[offset : offset + limit]
            elif not windowed:
                order = self._order[c]
                total = len(order)
                page = order[offset : offset + limit]
            elif self._monotone[c]:
                keys = self._ckeys[c]
                a = bisect.bisect_left(keys, lo)
                b = bisect.bisect_right(keys, hi)
                total = max(0, b - a)
                page = self._order[c][a + offset : b] if offset < total else []
                page = page[:limit]
            else:
                matches = self._window_matches(c, lo, hi)
                total = len(matches)
                page = matches[offset : offset + limit]
            return [self._row_bytes(i) for i in page], total

    def _window_matches(self, c: int, lo: int, hi: int) -> list[int]:
        # Fallback once scripted edits back-dated a row: O(rows) once per world version.
        key = (c, lo, hi)
        hit = self._window_cache.get(key)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        created = self._created
        matches = [i for i in self._order[c] if lo <= created[i] <= hi]
        if len(self._window_cache) > 64:
            self._window_cache.clear()
        self._window_cache[key] = (self.version, matches)
        return matches

    def truth(self, is_test: bool = False) -> list[dict[str, Any]]:
        """Every row of one class exactly as served, plus `is_test`; id ascending."""
        with self.lock:
            out = []
            for idx in self._order[_TESTC if is_test else _LIVE]:
                obj = json.loads(self._row_bytes(idx))
                obj["is_test"] = is_test
                out.append(obj)
            return out

    def get(self, sub_id: int) -> dict[str, Any] | None:
        """One row as served plus `is_test` and the hidden `created_at`; None when unknown."""
        with self.lock:
            idx = self._find(sub_id)
            if idx is None:
                return None
            obj: dict[str, Any] = json.loads(self._row_bytes(idx))
            obj["is_test"] = bool(self._flags[idx] & _TEST)
            obj["created_at"] = fmt(self._created[idx])
            return obj

    def counts(self) -> dict[str, int]:
        """Row counts by class and state (O(rows); for the state endpoint and reports)."""
        with self.lock:
            now = self._now
            live = len(self._order[_LIVE])
            test = len(self._order[_TESTC])
            canceled = usable = 0
            expires = self._expires
            for idx in self._order[_LIVE]:
                if self._flags[idx] & _CANCELED:
                    canceled += 1
                    if expires[idx] > now:
                        usable += 1
            return {
                "live": live,
                "test": test,
                "active": live - canceled,
                "canceled": canceled,
                "canceled_usable": usable,
                "canceled_expired": canceled - usable,
                "users": len(self.users.users),
                "users_listed": len(self.users.listed),
                "max_id": self._ids[-1] if len(self._ids) else 0,
            }

    # users ----------------------------------------------------------------------

    def settings_page(
        self, *, usernames: list[str] | None, platform: str | None, offset: int, limit: int
    ) -> tuple[list[bytes], int]:
        with self.lock:
            rows = self.users.select(usernames, platform)
            return [u.entry_bytes() for u in rows[offset : offset + limit]], len(rows)

    def profile_bytes(self, user_id: int) -> bytes | None:
        with self.lock:
            user = self.users.users.get(user_id)
            return None if user is None else user.profile_bytes()

    def truth_users(self) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(u.entry_bytes()) for u in self.users.listed]

    def user_ids(self) -> list[int]:
        with self.lock:
            return self.users.ids()

    def profiles(self, user_id: int) -> dict[str, Any] | None:
        with self.lock:
            user = self.users.users.get(user_id)
            return None if user is None else json.loads(user.profile_bytes())

    def set_settings(self, user_id: int, settings: dict[str, Any] | None) -> None:
        """Store (or with None: delete) a user's settings record; unknown user -> KeyError."""
        with self.lock:
            user = self.users.users[user_id]
            user.settings = settings
            user.touch()
            self.users.reindex()
            self.version += 1

    def add_user(
        self,
        user_id: int,
        name: str,
        *,
        settings: dict[str, Any] | None = None,
        platforms: Sequence[str] = ("twitch",),
    ) -> None:
        """Add an account with the given twitch name (known-answer tests)."""
        with self.lock:
            if user_id in self.users.users:
                raise ValueError(f"user {user_id} exists")
            profiles: dict[str, Any] = {"primary": platforms[0] if platforms else "twitch"}
            for p in platforms:
                if p == "twitch":
                    profiles["twitch"] = {
                        "twitch_id": 10_000_000 + user_id,
                        "display_name": name,
                        "name": name.lower(),
                        "partnered": 0,
                        "icon_url": f"https://static-cdn.jtvnw.net/jtv_user_pictures/{user_id}-profile_image-300x300.png",
                        "profile_background_color": None,
                        "profile_banner_url": None,
                    }
                elif p == "youtube":
                    profiles["youtube"] = {"id": f"UC{user_id:022d}", "title": f"{name} TV"}
                else:
                    profiles[p] = {"id": user_id, "name": name}
            self.users.users[user_id] = User(user_id, profiles, settings)
            self.users.reindex()
            self._user_pool = self.users.ids()
            self.version += 1

    def remove_user(self, user_id: int) -> None:
        """Delete an account: /users/{id} answers 404 and it leaves the settings list."""
        with self.lock:
            del self.users.users[user_id]
            self.users.deleted_ids.append(user_id)
            self.users.reindex()
            self._user_pool = self.users.ids()
            self.version += 1

    # ------------------------------------------------------------------ scripted edits

    def add_subscription(
        self,
        service_id: int,
        status: str = "active",
        expires_at: datetime | str | None = None,
        created_at: datetime | str | None = None,
        is_test: bool = False,
        *,
        period_months: int = 1,
        id: int | None = None,
    ) -> int:
        """Add one subscription and return its id (max id + 1 unless `id` is given).

        `created_at` defaults to the clock's now, `expires_at` to created + one period.
        An explicit `id` must exceed every existing id: list order is id order.
        """
        if status not in STATUS:
            raise ValueError(f"status must be one of {STATUS}; use set_raw for other values")
        if period_months not in (1, 12):
            raise ValueError("period_months must be 1 or 12")
        with self.lock:
            last = self._ids[-1] if len(self._ids) else 0
            sub_id = last + 1 if id is None else id
            if sub_id <= last or sub_id <= 0:
                raise ValueError(f"id must be a positive int above the current max id {last}")
            created = self._now if created_at is None else to_epoch(created_at)
            expires = (
                add_months(created, period_months) if expires_at is None else to_epoch(expires_at)
            )
            self._append(
                sub_id, service_id, created, expires, period_months, status == "canceled", is_test
            )
            self.version += 1
            return sub_id

    def cancel(self, sub_id: int) -> None:
        """active -> canceled; `expires_at` stays (usable until then)."""
        with self.lock:
            idx = self._need(sub_id)
            self._drop_raw(idx, "status")
            self._flags[idx] |= _CANCELED
            self._touch(idx)

    def reactivate(self, sub_id: int) -> None:
        """canceled -> active; `expires_at` stays, the clock renews it when reached."""
        with self.lock:
            idx = self._need(sub_id)
            self._drop_raw(idx, "status")
            self._flags[idx] &= ~_CANCELED & 0xFF
            self._touch(idx)

    def renew(self, sub_id: int, expires_at: datetime | str) -> None:
        """Set a new `expires_at` (status unchanged)."""
        with self.lock:
            idx = self._need(sub_id)
            self._drop_raw(idx, "expires_at")
            self._expires[idx] = to_epoch(expires_at)
            if self._expires[idx] > self._now:
                heapq.heappush(self._heap, self._expires[idx] << 32 | idx)
            self._touch(idx)

    def remove_subscription(self, sub_id: int) -> None:
        """The row disappears from every list and from `?id=` (hard delete upstream)."""
        with self.lock:
            idx = self._need(sub_id)
            self._flags[idx] |= _GONE
            c = _TESTC if self._flags[idx] & _TEST else _LIVE
            pos = bisect.bisect_left(self._order[c], idx)
            del self._order[c][pos]
            del self._ckeys[c][pos]
            self._by_user[c][self._svc[idx]].remove(idx)
            self._raw.pop(idx, None)
            self._touch(idx)

    def set_raw(self, sub_id: int, **fields: Any) -> None:
        """Serve these values verbatim (any JSON value, or `World.DROP` to omit a field).

        For bad-input tests: `expires_at="0000-00-00 00:00:00"`, `status="paused"`,
        `service_id="x"`, extra keys... Filters keep using the row's modelled values and the
        clock no longer touches the row.
        """
        with self.lock:
            idx = self._need(sub_id)
            self._raw.setdefault(idx, {}).update(fields)
            self._touch(idx)

    def _drop_raw(self, idx: int, key: str) -> None:
        raw = self._raw.get(idx)
        if raw is not None:
            raw.pop(key, None)
            if not raw:
                del self._raw[idx]

    # ------------------------------------------------------------------ the clock

    def new_per_day(self) -> float:
        r = self.rates.new_per_day
        return self._base_new_per_day if r is None else r

    def advance(self, *, days: float = 0, hours: float = 0, seconds: float = 0) -> dict[str, int]:
        """Move the clock forward and apply what happened; returns counts of each change."""
        delta = round(days * DAY + hours * 3600 + seconds)
        if delta < 0:
            raise ValueError("the clock only moves forward")
        changes = {"canceled": 0, "renewed": 0, "new": 0, "expired": 0, "reactivated": 0}
        with self.lock:
            end = self._now + delta
            t = self._now
            while t < end:
                t1 = min(end, t + DAY)
                self._step(t, t1, changes)
                t = t1
                self._now = t
            self._now = end
            self.version += 1
        return changes

    def _hits(self, n: int, p: float) -> Iterator[int]:
        """Row indexes in [0, n) each picked with probability p, in O(n * p) draws."""
        if p <= 0.0 or n == 0:
            return
        if p >= 1.0:
            yield from range(n)
            return
        log_q = math.log1p(-p)
        rnd = self._clock_rng.random
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
        rng = self._clock_rng
        if lam > 50:
            return max(0, round(rng.gauss(lam, math.sqrt(lam))))
        limit, k, p = math.exp(-lam), 0, rng.random()
        while p > limit:
            k += 1
            p *= rng.random()
        return k

    def _renew_idx(self, idx: int) -> None:
        new = add_months(self._expires[idx], self._period[idx])
        self._expires[idx] = new
        heapq.heappush(self._heap, new << 32 | idx)
        self._touch(idx)

    def _step(self, t: int, t1: int, changes: dict[str, int]) -> None:
        rng = self._clock_rng
        rates = self.rates
        frac = (t1 - t) / DAY
        flags = self._flags
        expires = self._expires
        raw = self._raw
        n = len(self._ids)

        # Daily hazards from monthly shares: 1 - (1 - m)^(days / month).
        month_frac = (t1 - t) / AVG_MONTH
        p_cancel = 1.0 - (1.0 - rates.cancel_per_month) ** month_frac
        for i in self._hits(n, p_cancel):
            if flags[i] & (_GONE | _CANCELED) or i in raw:
                continue
            when = t + rng.random() * (t1 - t)
            if expires[i] <= when:
                # The period ended before the user canceled: it renewed first.
                self._renew_idx(i)
                changes["renewed"] += 1
            flags[i] |= _CANCELED
            self._touch(i)
            changes["canceled"] += 1

        p_back = 1.0 - (1.0 - rates.reactivate_per_month) ** month_frac
        for i in self._hits(n, p_back):
            if not flags[i] & _CANCELED or flags[i] & _GONE or i in raw or expires[i] <= t:
                continue
            flags[i] &= ~_CANCELED & 0xFF
            self._touch(i)
            changes["reactivated"] += 1

        k = self._poisson(self.new_per_day() * frac)
        if k:
            yearly = rates.yearly_share
            times = sorted(int(t + rng.random() * (t1 - t)) for _ in range(k))
            for created in times:
                last = self._ids[-1] if len(self._ids) else 0
                sub_id = last + (1 if rng.random() < 0.95 else rng.randrange(2, 6))
                period = 12 if rng.random() < yearly else 1
                test = rng.random() < self.test_share
                svc = self._pick_service_id(rng)
                self._append(sub_id, svc, created, add_months(created, period), period, False, test)
            self.version += 1
            changes["new"] += k

        heap = self._heap
        while heap and heap[0] >> 32 <= t1:
            key = heapq.heappop(heap)
            i = key & _MASK
            if flags[i] & _GONE or expires[i] != key >> 32 or i in raw:
                continue  # stale entry: the row changed or left since it was queued
            if flags[i] & _CANCELED:
                changes["expired"] += 1
            else:
                self._renew_idx(i)
                changes["renewed"] += 1
