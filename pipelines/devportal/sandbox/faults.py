"""Fault injection: which API request fails, how, and the bodies of the failures.

Deterministic under a seed: the injector draws from its own `random.Random(seed)` exactly three
numbers per API request, in arrival order, so the n-th request after `set_faults` always meets
the same fate (with concurrent clients "arrival order" is the order the server took them).
A queue of scripted faults (`queue`) is served first, one per request, for tests that need
"fail once, then succeed".

Kinds (what the client sees):
- "429": status 429, JSON `{"message": "Too Many Attempts."}`, `Retry-After: <seconds>`.
- "500" / "502" / "503": that status with an HTML body (framework error page / nginx page).
- "reset": the connection is closed without any response (RST).
- "cut": headers promising the full Content-Length, half the body, then the connection drops.
- "truncated": status 200, a proper prefix of the real body, Content-Length equal to what is
  sent, so HTTP is fine and JSON parsing fails.
- "malformed": status 200 and a body that is not JSON: `{"data": [`, an HTML page, or empty.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FAULT_KINDS = ("429", "500", "502", "503", "reset", "cut", "truncated", "malformed")
DEFAULT_KINDS = ("429", "500", "502", "503", "reset", "truncated", "malformed")


@dataclass(frozen=True)
class FaultConfig:
    """A fault rate over a set of kinds. `rate` is the chance that one API request fails."""

    rate: float = 0.1
    kinds: tuple[str, ...] = DEFAULT_KINDS
    seed: int = 1
    retry_after: int = 1

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be between 0 and 1, got {self.rate}")
        kinds = tuple(str(k).strip() for k in self.kinds)
        unknown = [k for k in kinds if k not in FAULT_KINDS]
        if unknown or not kinds:
            raise ValueError(f"fault kinds must be among {', '.join(FAULT_KINDS)}; got {unknown}")
        object.__setattr__(self, "kinds", kinds)
        if int(self.retry_after) < 0:
            raise ValueError("retry_after must be >= 0 seconds")
        object.__setattr__(self, "retry_after", int(self.retry_after))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> FaultConfig:
        kinds = data.get("kinds", DEFAULT_KINDS)
        if isinstance(kinds, str):
            kinds = [k for k in kinds.split(",") if k.strip()]
        return cls(
            rate=float(data.get("rate", 0.1)),
            kinds=tuple(kinds),
            seed=int(data.get("seed", 1)),
            retry_after=int(data.get("retry_after", 1)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "kinds": list(self.kinds),
            "seed": self.seed,
            "retry_after": self.retry_after,
        }


@dataclass(frozen=True)
class Fault:
    """One decided fault: its kind and a number in [0, 1) choosing its variant."""

    kind: str
    variant: float
    retry_after: int = 1


class FaultInjector:
    """Decides, per API request, whether and how it fails. Thread-safe."""

    def __init__(self, config: FaultConfig | None = None) -> None:
        self._lock = threading.Lock()
        self._queue: deque[str | None] = deque()
        self.config: FaultConfig | None = None
        self._rng = random.Random(0)
        self.configure(config)

    def configure(self, config: FaultConfig | None) -> None:
        with self._lock:
            self.config = config if config is not None and config.rate > 0 else None
            self._rng = random.Random(config.seed if config is not None else 0)

    def queue(self, kinds: Iterable[str | None]) -> None:
        """Scripted faults for the next requests, in order (None = that request succeeds)."""
        items = list(kinds)
        bad = [k for k in items if k is not None and k not in FAULT_KINDS]
        if bad:
            raise ValueError(f"fault kinds must be among {', '.join(FAULT_KINDS)}; got {bad}")
        with self._lock:
            self._queue.extend(items)

    def clear_queue(self) -> None:
        with self._lock:
            self._queue.clear()

    def draw(self) -> Fault | None:
        with self._lock:
            cfg = self.config
            retry_after = cfg.retry_after if cfg is not None else 1
            if self._queue:
                kind = self._queue.popleft()
                return None if kind is None else Fault(kind, 0.5, retry_after)
            if cfg is None:
                return None
            rnd = self._rng.random
            u, k, v = rnd(), rnd(), rnd()  # always three draws: the sequence stays aligned
            if u >= cfg.rate:
                return None
            return Fault(cfg.kinds[int(k * len(cfg.kinds))], v, retry_after)


_HTML_500 = b"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Server Error</title></head>
<body><div class="flex-center"><div class="code">500</div><div class="message">Server Error</div></div></body>
</html>
"""

_HTML_502 = b"""<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx</center>
</body>
</html>
"""

_HTML_503 = b"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Service Unavailable</title></head>
<body><div class="code">503</div><div class="message">Service Unavailable</div></body>
</html>
"""

_HTML_200 = b"""<!DOCTYPE html>
<html><head><title>Just a moment...</title></head>
<body><h1>Checking your browser before accessing the site.</h1></body></html>
"""

HTML_BODIES = {500: _HTML_500, 502: _HTML_502, 503: _HTML_503}
MALFORMED_BODIES = (
    (b'{"data": [', "application/json"),
    (_HTML_200, "text/html; charset=UTF-8"),
    (b"", "application/json"),
)


def truncate(body: bytes, variant: float) -> bytes:
    """A proper, non-empty prefix of `body` (10% to 90% of it): never valid JSON for an object."""
    if len(body) <= 1:
        return b""
    cut = int(len(body) * (0.1 + 0.8 * variant))
    return body[: min(max(cut, 1), len(body) - 1)]
