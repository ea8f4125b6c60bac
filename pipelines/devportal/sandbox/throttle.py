"""Load the sandbox can push back with: a per-token rate limit and a serial server cost.

Rate limit (`RateLimit`, `RateLimiter`), modelled on Laravel's `throttle` middleware but as a
token bucket: every bearer token has its own bucket of `burst` tokens (default max(1, R)),
refilled continuously at `per_second` (R) tokens per second of *real* time (the simulated clock
plays no part). An API request takes one token; one that finds fewer than one gets
`429 Too Many Requests` with `Retry-After` = whole seconds until a token is there (at least 1).
While a limit is set, answers carry Laravel's headers:

- `X-RateLimit-Limit`: R, **per second** (as Laravel's `Limit::perSecond` reports it; not the
  per-minute figure of `throttle:60,1`), written like `20` or `0.5`;
- `X-RateLimit-Remaining`: whole tokens left in the bucket after this request (0 on a 429;
  it can exceed the limit when `burst` > R);
- on a 429 also `X-RateLimit-Reset`, the epoch second of `Date` + `Retry-After`.

The bucket is checked after authentication and routing, as Laravel's middleware is: 401s,
404s of unknown paths and 405s take no token and carry no headers, and control endpoints
(/__sandbox/) are never limited. Admitted requests then meet the fault draw as before: an
answer the API handler built (200, 404, 422, truncated or cut) gets the headers, a fault that
replaces it (injected 429, 5xx page, malformed body, reset) does not. Reconfiguring the limit empties every bucket's history (all
start full).

Server cost (`SerialCost`): every admitted API request holds one process-wide lock for X ms, so
requests are served one after another like a single-worker backend: N concurrent requests take
at least N*X ms in total. The sandbox's `latency_ms` is different: it delays each request on its
own thread, so concurrent requests overlap and N of them take about X ms.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RateLimit:
    """R requests per second per bearer token, bursts of up to `burst` (default max(1, R))."""

    per_second: float
    burst: float | None = None

    def __post_init__(self) -> None:
        rate = float(self.per_second)
        if not (rate > 0 and math.isfinite(rate)):
            raise ValueError(f"rate limit must be > 0 requests per second, got {self.per_second}")
        burst = float(self.burst) if self.burst is not None else max(1.0, rate)
        if not (burst >= 1 and math.isfinite(burst)):
            raise ValueError(f"rate limit burst must be >= 1 request, got {self.burst}")
        object.__setattr__(self, "per_second", rate)
        object.__setattr__(self, "burst", burst)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RateLimit | None:
        """`{"per_second": R, "burst": B}`; no, null or 0 `per_second` means no limit."""
        rate = data.get("per_second", data.get("rate"))
        burst = data.get("burst")
        if rate is None and burst is not None:
            raise ValueError("burst needs per_second")
        if rate is None or float(rate) == 0:
            return None
        return cls(float(rate), None if burst is None else float(burst))

    @property
    def capacity(self) -> float:
        return float(self.burst) if self.burst is not None else max(1.0, self.per_second)

    def to_dict(self) -> dict[str, Any]:
        return {"per_second": self.per_second, "burst": self.capacity}


@dataclass(frozen=True)
class Decision:
    """One request's fate under a limit: admitted or not, and what the headers say."""

    allowed: bool
    limit: float
    remaining: int
    retry_after: int = 0  # seconds; 0 when admitted

    def headers(self) -> tuple[tuple[str, str], ...]:
        return (
            ("X-RateLimit-Limit", f"{self.limit:g}"),
            ("X-RateLimit-Remaining", str(self.remaining)),
        )


class RateLimiter:
    """Token buckets by key (the bearer token). Thread-safe; `take` is O(1)."""

    def __init__(
        self, config: RateLimit | None = None, clock: Callable[[], float] | None = None
    ) -> None:
        # CLOCK: real monotonic time unless a test passes its own
        self.clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at monotonic)
        self.config: RateLimit | None = None
        self.configure(config)

    def configure(self, config: RateLimit | None) -> None:
        with self._lock:
            self.config = config
            self._buckets.clear()

    def take(self, key: str) -> Decision | None:
        """Take a token from KEY's bucket; None when no limit is set."""
        with self._lock:
            cfg = self.config
            if cfg is None:
                return None
            rate, capacity = cfg.per_second, cfg.capacity
            now = self.clock()
            tokens, at = self._buckets.get(key, (capacity, now))
            tokens = min(capacity, tokens + (now - at) * rate)
            if tokens >= 1.0:
                tokens -= 1.0
                self._buckets[key] = (tokens, now)
                return Decision(True, rate, int(tokens))
            self._buckets[key] = (tokens, now)
        wait = max(1, math.ceil((1.0 - tokens) / rate))
        return Decision(False, rate, 0, wait)


class SerialCost:
    """X ms of server time per request under one lock: a single-worker backend."""

    def __init__(self, ms: float = 0.0, sleep: Callable[[float], None] | None = None) -> None:
        # SLEEP: the real one unless a test passes its own
        self.sleep = sleep or time.sleep
        self._lock = threading.Lock()
        self.ms = 0.0
        self.set(ms)

    def set(self, ms: float) -> None:
        ms = float(ms)
        if not (ms >= 0 and math.isfinite(ms)):
            raise ValueError(f"server cost must be >= 0 ms, got {ms}")
        self.ms = ms

    def spend(self) -> None:
        ms = self.ms
        if ms > 0:
            with self._lock:
                self.sleep(ms / 1000.0)
