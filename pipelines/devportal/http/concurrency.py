"""How many requests one client keeps in flight: an AIMD controller shared by all its workers.

Every attempt of every request (`client.ApiClient`) takes a slot from one `Concurrency` before it
is sent and gives it back with what happened. The limit on slots moves like TCP's window:

- **slow start**: it begins at `start` (modest) and grows by one per answered request, which
  doubles it every round trip, up to `max_workers`, until the first sign of congestion;
- **additive increase** afterwards: one more slot per `limit` answered requests (one round
  trip's worth), while answers come back clean and latency stays flat;
- **multiplicative decrease** on congestion: a 429, a 503, a timeout, or a latency that has
  risen well above the best seen (`LATENCY_RISE` times, smoothed) halves it (latency: cuts it by
  a quarter), never below `min_workers`. Requests sent before the last cut cannot trigger
  another, so one burst of 429s is one cut, not ten;
- **Retry-After pauses everyone**: a 429 or 503 that names a delay stops every worker from
  sending until it has passed, not only the one that got it. The wait is capped by the
  client's `retry_after_cap_s`, as the retry sleep is.
- A server that says how many requests it has left (`X-RateLimit-Remaining`) caps the limit at
  that number (at least `min_workers`): when the bucket runs dry, few requests meet the 429.

`pinned` (the `workers` setting, `--workers N`) fixes the limit at N: no growth, no cuts; the
pause on Retry-After still applies to all. `stats()` says where the limit settled (the median
of the limits requests were sent under), its peak, the cuts and pauses; the run summary and
`sync_runs` record them.

Nothing here imports dlt, requests or the network; it is a lock, a condition and arithmetic.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

START = 4  # slots before anything is known, unless the bounds say otherwise
LATENCY_RISE = 2.0  # smoothed latency this many times the best seen (+ LATENCY_SLACK_S) is a cut
LATENCY_SLACK_S = 0.010  # jitter below 10 ms is not a signal (a 0-ms server's latency is noise)
LATENCY_CUT = 0.75  # the factor of a latency cut (gentler than a congestion cut)
CONGESTION_CUT = 0.5  # the factor of a 429/503/timeout cut
EWMA = 0.2  # weight of the newest latency in the smoothed latency
# what `Concurrency.learned` hands over besides the limits requests were sent under
_LEARNED = (
    "limit",
    "_slow_start",
    "_best_latency",
    "_smoothed",
    "_pause_until",
    "_last_cut",
    "_peak",
    "_cuts",
    "_pauses",
    "_paused_s",
    "_throttled",
)


class RequestOutcome:
    """What one attempt's answer says about the load on the server."""

    OK = "ok"  # an answer (any status that is not congestion, 4xx included)
    CONGESTED = "congested"  # 429, 503, timeout
    FAILED = "failed"  # connection errors, other 5xx: not counted either way


@dataclass(frozen=True)
class ConcurrencyStats:
    mode: str  # "adaptive" or "pinned"
    settled: int  # the median of the limits requests were sent under
    peak: int
    final: int
    cuts: int
    pauses: int
    paused_s: float  # wall time every worker stood still for Retry-After
    throttled: int  # 429 answers


class Concurrency:
    """The shared limit on requests in flight. Thread-safe."""

    def __init__(
        self,
        min_workers: int = 1,
        max_workers: int = 64,
        pinned: int | None = None,
        start: int = START,
        pause_cap_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """CLOCK: the monotonic clock of latencies, cuts and pauses (a test passes its own)."""
        if pinned is not None:
            min_workers = max_workers = max(1, int(pinned))
        self.min = max(1, int(min_workers))
        self.max = max(self.min, int(max_workers))
        self.pinned = pinned is not None
        self.limit = float(min(max(start, self.min), self.max))
        self.pause_cap_s = pause_cap_s
        self._clock = clock
        self._slow_start = not self.pinned
        self._cond = threading.Condition()
        self._in_flight = 0
        self._pause_until = 0.0
        self._last_cut = float("-inf")  # monotonic time of the last cut
        self._best_latency: float | None = None
        self._smoothed: float | None = None
        self._sent_under: Counter[int] = Counter()
        self._peak = int(self.limit)
        self._cuts = 0
        self._pauses = 0
        self._paused_s = 0.0
        self._throttled = 0
        self._stopped = False

    @property
    def slots(self) -> int:
        return max(self.min, int(self.limit))

    # -- taking and giving back a slot -----------------------------------------------------

    @contextmanager
    def slot(self) -> Iterator[Slot]:
        """One attempt: waits for a free slot (and any pause), gives it back on exit.

        The attempt reports its outcome with `Slot.done(...)`; an attempt that leaves without
        reporting (an exception nobody classified) counts as FAILED."""
        slot = self.acquire()
        try:
            yield slot
        finally:
            if not slot.reported:
                self.release(slot, RequestOutcome.FAILED)

    def acquire(self) -> Slot:
        with self._cond:
            while not self._stopped:
                wait = self._pause_until - self._clock()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                if self._in_flight < self.slots:
                    break
                self._cond.wait(0.5)
            self._in_flight += 1
            self._sent_under[self.slots] += 1
            return Slot(self, self._clock())

    def stop(self) -> None:
        """The client is stopping: no attempt waits for a slot or a pause any more (each one
        takes its slot at once and finds the client stopped)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def release(
        self,
        slot: Slot,
        outcome: str,
        retry_after: float | None = None,
        throttled: bool = False,
        remaining: int | None = None,
    ) -> None:
        """Give SLOT back with its OUTCOME and move the limit (see the module docstring)."""
        now = self._clock()
        with self._cond:
            slot.reported = True
            self._in_flight -= 1
            if throttled:
                self._throttled += 1
            if retry_after is not None and retry_after > 0:
                self._pause(now, retry_after)
            if not self.pinned:
                if outcome == RequestOutcome.CONGESTED:
                    self._cut(slot.sent_at, now, CONGESTION_CUT)
                elif outcome == RequestOutcome.OK:
                    self._answered(slot.sent_at, now, remaining)
            self._cond.notify_all()

    # -- the arithmetic (under the lock) ----------------------------------------------------

    def _pause(self, now: float, retry_after: float) -> None:
        until = now + min(retry_after, self.pause_cap_s)
        if until > self._pause_until:
            self._paused_s += until - max(now, self._pause_until)
            self._pause_until = until
            self._pauses += 1

    def _cut(self, sent_at: float, now: float, factor: float) -> None:
        if sent_at <= self._last_cut:  # sent before the last cut: already answered for
            return
        self._slow_start = False
        self.limit = max(float(self.min), self.limit * factor)
        self._last_cut = now
        self._cuts += 1
        self._smoothed = None  # the latency under the new limit is measured afresh

    def _answered(self, sent_at: float, now: float, remaining: int | None) -> None:
        latency = now - sent_at
        if remaining is not None and remaining < self.limit:
            # the server admits only so many more: no more than that in flight
            if sent_at > self._last_cut:
                self._slow_start = False
                self.limit = float(max(self.min, remaining))
                self._last_cut = now
                self._cuts += 1
            return
        best = self._best_latency
        self._best_latency = latency if best is None else min(best, latency)
        smoothed = (
            latency if self._smoothed is None else (EWMA * latency + (1 - EWMA) * self._smoothed)
        )
        self._smoothed = smoothed
        if smoothed > LATENCY_RISE * self._best_latency + LATENCY_SLACK_S:
            self._cut(sent_at, now, LATENCY_CUT)
            return
        if self._slow_start:
            self.limit = min(float(self.max), self.limit + 1.0)
        else:
            self.limit = min(float(self.max), self.limit + 1.0 / self.limit)
        self._peak = max(self._peak, self.slots)

    # -- what happened ----------------------------------------------------------------------

    def learned(self) -> dict[str, Any]:
        """What this controller learned and counted, for another one to take over (the early
        read of a forked child, `http.forked`; its clock is the system's monotonic one)."""
        with self._cond:
            state = {name: getattr(self, name) for name in _LEARNED}
            state["_sent_under"] = dict(self._sent_under)
            return state

    def take_over(self, state: dict[str, Any]) -> None:
        """Go on from what another controller `learned()`: its limit, latencies and any pause
        in force; its counts added to this one's."""
        with self._cond:
            self.limit = float(state["limit"])
            self._slow_start = bool(state["_slow_start"])
            self._best_latency, self._smoothed = state["_best_latency"], state["_smoothed"]
            self._pause_until = max(self._pause_until, float(state["_pause_until"]))
            self._last_cut = max(self._last_cut, float(state["_last_cut"]))
            self._peak = max(self._peak, int(state["_peak"]))
            for name in ("_cuts", "_pauses", "_paused_s", "_throttled"):
                setattr(self, name, getattr(self, name) + state[name])
            self._sent_under.update(state["_sent_under"])
            self._cond.notify_all()

    def stats(self) -> ConcurrencyStats:
        with self._cond:
            return ConcurrencyStats(
                mode="pinned" if self.pinned else "adaptive",
                settled=_median(self._sent_under) or self.slots,
                peak=self._peak,
                final=self.slots,
                cuts=self._cuts,
                pauses=self._pauses,
                paused_s=round(self._paused_s, 3),
                throttled=self._throttled,
            )


class Slot:
    """One attempt's hold on a slot."""

    __slots__ = ("owner", "reported", "sent_at")

    def __init__(self, owner: Concurrency, sent_at: float) -> None:
        self.owner = owner
        self.sent_at = sent_at
        self.reported = False

    def done(
        self,
        outcome: str,
        retry_after: float | None = None,
        throttled: bool = False,
        remaining: int | None = None,
    ) -> None:
        if not self.reported:
            self.owner.release(self, outcome, retry_after, throttled, remaining)


def _median(counts: Counter[int]) -> int:
    total = sum(counts.values())
    if not total:
        return 0
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen * 2 >= total:
            return value
    return max(counts)
