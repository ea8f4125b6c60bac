"""Row storage for the sandbox's subscriptions: columns, indexes, cached JSON, page reads.

`SubscriptionStore` holds every subscription row ever created and answers the reads the API
and the tests make. It knows nothing about how rows are generated or how the clock changes
them; it offers the primitives both use (bulk load, append, field edits, the expiry queue).
Not locked here: `World` holds its lock around every call.

Storage is columnar (`array('q')` / `bytearray`, one slot per row ever created) so a million
subscriptions fit in some tens of megabytes, and serving a page costs O(page):
- live and test rows are two separate id-ordered index lists, so `is_test` is free;
- each list carries a parallel list of creation times: while creation times rise with ids
  (always true for the generated world and the clock) a `start`/`end` window is two bisects;
  scripted back-dated rows switch that list to a cached O(matches) fallback;
- `service_id` -> row list per class for `user_id`;
- each row's JSON is serialised once and cached until the row changes.

The columns are public so the clock's hot loops can read them through local names; every
change goes through a method here so caches, indexes and `version` stay in step.
"""

from __future__ import annotations

import bisect
import heapq
import json
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from devportal.sandbox.clock import fmt

# Row flags (one byte per row).
CANCELED = 1
TEST = 2
GONE = 4

LIVE, TESTC = 0, 1  # class index: live rows, test rows
_MASK = (1 << 32) - 1  # heap key = expires_at << 32 | row index

STATUS = ("active", "canceled")


class Drop:
    """Sentinel type for `set_raw(..., field=World.DROP)`: leave the field out."""

    def __repr__(self) -> str:
        return "World.DROP"


DROP = Drop()


@dataclass(frozen=True)
class SubscriptionFilter:
    """Which rows a list read covers: test or live ones, optionally one user's, optionally
    created within [start, end] (epoch seconds, both inclusive; None: unbounded)."""

    test: bool = False
    user_id: int | None = None
    start: int | None = None
    end: int | None = None


class SubscriptionStore:
    """Every subscription row plus the indexes that make page reads O(page)."""

    def __init__(self, now: int) -> None:
        # The world's current time: decides which expiries are still ahead (queued) and which
        # canceled rows are still usable. Only the clock moves it.
        self.now = now
        self.version = 0  # bumped on every change; lets readers notice drift
        self.ids = array("q")
        self.svc = array("q")
        self.created = array("q")
        self.expires = array("q")
        self.period = bytearray()  # months: 1 or 12
        self.flags = bytearray()
        self.raw: dict[int, dict[str, Any]] = {}  # rows served verbatim; the clock skips them
        self.heap: list[int] = []  # expiry queue; entries go stale instead of being removed
        self._cache: list[bytes | None] = []
        self._order = (array("q"), array("q"))  # row indexes, id ascending, per class
        self._ckeys = (array("q"), array("q"))  # creation times parallel to _order
        self._monotone = [True, True]
        self._by_user: tuple[dict[int, list[int]], dict[int, list[int]]] = ({}, {})
        self._window_cache: dict[tuple[int, int, int], tuple[int, list[int]]] = {}

    # ------------------------------------------------------------------ building

    def load(
        self,
        ids: list[int],
        svcs: list[int],
        created: list[int],
        exps: list[int],
        periods: bytearray,
        flags: bytearray,
    ) -> None:
        """Replace the (empty) store with whole columns at once; `created` must be ascending."""
        n = len(ids)
        self.ids = array("q", ids)
        self.svc = array("q", svcs)
        self.created = array("q", created)
        self.expires = array("q", exps)
        self.period = periods
        self.flags = flags
        self._cache = [None] * n
        for c in (LIVE, TESTC):
            want = TEST if c == TESTC else 0
            rows = [i for i in range(n) if flags[i] & TEST == want]
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
        now = self.now
        self.heap = [e << 32 | i for i, e in enumerate(exps) if e > now]
        heapq.heapify(self.heap)

    def append(
        self,
        sub_id: int,
        svc: int,
        created: int,
        expires: int,
        period: int,
        canceled: bool,
        test: bool,
    ) -> int:
        """Add one row (id above every existing id) and return its index; `version` unchanged."""
        idx = len(self.ids)
        self.ids.append(sub_id)
        self.svc.append(svc)
        self.created.append(created)
        self.expires.append(expires)
        self.period.append(period)
        self.flags.append((CANCELED if canceled else 0) | (TEST if test else 0))
        self._cache.append(None)
        c = TESTC if test else LIVE
        keys = self._ckeys[c]
        if keys and created < keys[-1]:
            self._monotone[c] = False
        self._order[c].append(idx)
        keys.append(created)
        self._by_user[c].setdefault(svc, []).append(idx)
        if expires > self.now:
            heapq.heappush(self.heap, expires << 32 | idx)
        return idx

    # ------------------------------------------------------------------ row edits

    def touch(self, idx: int) -> None:
        """Forget the row's cached JSON and count a change."""
        self._cache[idx] = None
        self.version += 1

    def set_canceled(self, idx: int, canceled: bool) -> None:
        if canceled:
            self.flags[idx] |= CANCELED
        else:
            self.flags[idx] &= ~CANCELED & 0xFF
        self.touch(idx)

    def set_expires(self, idx: int, expires: int) -> None:
        """Change `expires_at` without queueing it: callers decide whether it is still ahead."""
        self.expires[idx] = expires
        self.touch(idx)

    def schedule(self, idx: int) -> None:
        """Queue the row's current `expires_at`; older entries for it become stale."""
        heapq.heappush(self.heap, self.expires[idx] << 32 | idx)

    def remove(self, idx: int) -> None:
        """Take the row out of every list and lookup (its slot stays, flagged gone)."""
        self.flags[idx] |= GONE
        c = TESTC if self.flags[idx] & TEST else LIVE
        pos = bisect.bisect_left(self._order[c], idx)
        del self._order[c][pos]
        del self._ckeys[c][pos]
        self._by_user[c][self.svc[idx]].remove(idx)
        self.raw.pop(idx, None)
        self.touch(idx)

    def set_raw(self, idx: int, fields: dict[str, Any]) -> None:
        self.raw.setdefault(idx, {}).update(fields)
        self.touch(idx)

    def drop_raw(self, idx: int, key: str) -> None:
        """A modelled edit of `key` replaces a verbatim value set earlier."""
        raw = self.raw.get(idx)
        if raw is not None:
            raw.pop(key, None)
            if not raw:
                del self.raw[idx]

    def due(self, until: int) -> Iterator[int]:
        """Rows whose queued `expires_at` is <= `until`, soonest first, stale entries skipped.

        Lazy on purpose: a row the caller re-queues while iterating (a renewal still due) is
        seen again in the same pass.
        """
        heap, flags, expires = self.heap, self.flags, self.expires
        while heap and heap[0] >> 32 <= until:
            key = heapq.heappop(heap)
            i = key & _MASK
            if flags[i] & GONE or expires[i] != key >> 32:
                continue  # the row changed or left since it was queued
            yield i

    # ------------------------------------------------------------------ lookups

    @property
    def last_id(self) -> int:
        return self.ids[-1] if len(self.ids) else 0

    def find(self, sub_id: int) -> int | None:
        # Row indexes are id-ordered (ids only grow), so the id column is bisectable.
        pos = bisect.bisect_left(self.ids, sub_id)
        if pos < len(self.ids) and self.ids[pos] == sub_id and not self.flags[pos] & GONE:
            return pos
        return None

    def need(self, sub_id: int) -> int:
        idx = self.find(sub_id)
        if idx is None:
            raise KeyError(f"no subscription with id {sub_id}")
        return idx

    def row_obj(self, idx: int) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "id": self.ids[idx],
            "service_id": self.svc[idx],
            "status": STATUS[self.flags[idx] & CANCELED],
            "expires_at": fmt(self.expires[idx]),
        }
        raw = self.raw.get(idx)
        if raw:
            for key, value in raw.items():
                if value is DROP:
                    obj.pop(key, None)
                else:
                    obj[key] = value
        return obj

    def row_bytes(self, idx: int) -> bytes:
        b = self._cache[idx]
        if b is None:
            if idx in self.raw:
                b = json.dumps(self.row_obj(idx), separators=(",", ":")).encode()
            else:
                # Formatting by hand is ~5x faster than json.dumps and the values need no escaping.
                b = b'{"id":%d,"service_id":%d,"status":"%s","expires_at":"%s"}' % (
                    self.ids[idx],
                    self.svc[idx],
                    STATUS[self.flags[idx] & CANCELED].encode(),
                    fmt(self.expires[idx]).encode(),
                )
            self._cache[idx] = b
        return b

    # ------------------------------------------------------------------ reads

    def page(self, where: SubscriptionFilter, offset: int, limit: int) -> tuple[list[bytes], int]:
        """One page of the filtered list (id ascending) and the filtered total."""
        c = TESTC if where.test else LIVE
        user_id, start, end = where.user_id, where.start, where.end
        windowed = start is not None or end is not None
        lo = start if start is not None else -(1 << 62)
        hi = end if end is not None else 1 << 62
        rows: Sequence[int]
        page: Sequence[int]
        if user_id is not None:
            rows = self._by_user[c].get(user_id, [])
            if windowed:
                created = self.created
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
        return [self.row_bytes(i) for i in page], total

    def _window_matches(self, c: int, lo: int, hi: int) -> list[int]:
        # Fallback once scripted edits back-dated a row: O(rows) once per world version.
        key = (c, lo, hi)
        hit = self._window_cache.get(key)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        created = self.created
        matches = [i for i in self._order[c] if lo <= created[i] <= hi]
        if len(self._window_cache) > 64:
            self._window_cache.clear()
        self._window_cache[key] = (self.version, matches)
        return matches

    def truth(self, is_test: bool) -> list[dict[str, Any]]:
        """Every row of one class exactly as served, plus `is_test`; id ascending."""
        out = []
        for idx in self._order[TESTC if is_test else LIVE]:
            obj = json.loads(self.row_bytes(idx))
            obj["is_test"] = is_test
            out.append(obj)
        return out

    def get(self, sub_id: int) -> dict[str, Any] | None:
        """One row as served plus `is_test` and the hidden `created_at`; None when unknown."""
        idx = self.find(sub_id)
        if idx is None:
            return None
        obj: dict[str, Any] = json.loads(self.row_bytes(idx))
        obj["is_test"] = bool(self.flags[idx] & TEST)
        obj["created_at"] = fmt(self.created[idx])
        return obj

    def counts(self) -> dict[str, int]:
        """Row counts by class and state; O(rows)."""
        now = self.now
        live = len(self._order[LIVE])
        test = len(self._order[TESTC])
        canceled = usable = 0
        expires = self.expires
        for idx in self._order[LIVE]:
            if self.flags[idx] & CANCELED:
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
        }
