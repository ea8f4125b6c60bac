"""The rate limit (token bucket per bearer token, Laravel's headers) and the serial server cost.

Real servers and real HTTP. Nothing depends on how fast this machine is, and nothing measures
a duration: the bucket's arithmetic is checked on a clock the test moves (`bucket_clock`), so
what is admitted, refused and the `Retry-After` are exact; that the server cost is spent one
request at a time is shown by holding the first one's sleep until every other request waits
for the lock; that `latency_ms` delays overlap, by holding each delay until all N are under
way at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
import requests
from tests.helpers import FakeClock

from devportal.sandbox import Sandbox, throttle
from devportal.sandbox import server as sandbox_server
from devportal.sandbox.testing import SUBSCRIPTIONS, USERS, api_session, sandbox_fixture
from devportal.sandbox.throttle import RateLimit

LIMIT_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining")
HOLD_S = 20.0  # how long a held delay waits for the others: only a broken server reaches it


@pytest.fixture
def bucket_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The clock of the limiters made during the test (their default is `throttle.time`'s
    monotonic: the sandbox makes its own): it stands still until the test moves it (`now`)."""
    clock = FakeClock()
    monkeypatch.setattr(throttle, "time", clock)
    return clock


@pytest.fixture
def limited(bucket_clock: FakeClock) -> Iterator[Sandbox]:
    """A small world, limited to 0.1 request/s per token, burst 3; its bucket clock stands
    still unless the test moves it (no refill within a test)."""
    with sandbox_fixture(
        subscriptions=20,
        users=5,
        extra_tokens=("second-token",),
        rate_limit={"per_second": 0.1, "burst": 3},
    ) as sandbox:
        yield sandbox


def get(sandbox: Sandbox, path: str = SUBSCRIPTIONS, token: str | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token or sandbox.token}", "Accept": "application/json"}
    return requests.get(sandbox.base_url + path, headers=headers, timeout=30)


def control(sandbox: Sandbox, name: str, body: dict[str, Any] | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {sandbox.token}"}
    url = f"{sandbox.base_url}/__sandbox/{name}"
    if body is None:
        return requests.get(url, headers=headers, timeout=30)
    return requests.post(url, json=body, headers=headers, timeout=30)


def test_a_burst_is_admitted_then_429_with_retry_after_and_laravel_headers(
    limited: Sandbox, bucket_clock: FakeClock
) -> None:
    answers = [get(limited) for _ in range(3)]
    assert [r.status_code for r in answers] == [200, 200, 200]
    assert [r.headers["X-RateLimit-Limit"] for r in answers] == ["0.1"] * 3  # per second
    assert [r.headers["X-RateLimit-Remaining"] for r in answers] == ["2", "1", "0"]
    assert "Retry-After" not in answers[0].headers

    refused = get(limited)
    assert refused.status_code == 429
    assert refused.json() == {"message": "Too Many Attempts."}
    # a token takes 10 s at 0.1/s
    assert refused.headers["Retry-After"] == "10"
    assert refused.headers["X-RateLimit-Limit"] == "0.1"
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    date = int(parsedate_to_datetime(refused.headers["Date"]).timestamp())  # simulated clock
    reset = int(refused.headers["X-RateLimit-Reset"])
    assert reset == date + int(refused.headers["Retry-After"])

    # 9.5 s later 0.95 of a token is back: the wait is whole seconds, rounded up
    bucket_clock.now += 9.5
    again = get(limited)
    assert again.status_code == 429 and again.headers["Retry-After"] == "1"
    bucket_clock.now += 1.0  # and then a whole one
    back = get(limited)
    assert back.status_code == 200 and back.headers["X-RateLimit-Remaining"] == "0"

    stats = limited.stats
    assert stats["rate_limited"] == 2 and stats["statuses"]["429"] == 2
    assert stats["fault_429"] == 0 and stats["pages_subscriptions"] == 4


def test_retry_after_is_at_least_one_second(bucket_clock: FakeClock) -> None:
    # at 2/s a token is never more than 0.5 s away: the wait still says 1 second
    limit = RateLimit(2, burst=1)
    with sandbox_fixture(subscriptions=0, users=0, rate_limit=limit) as sb, api_session(sb) as s:
        statuses = [s.get(sb.base_url + SUBSCRIPTIONS, timeout=30) for _ in range(5)]
        bucket_clock.now += 0.45  # 0.05 s from the next token
        statuses.append(s.get(sb.base_url + SUBSCRIPTIONS, timeout=30))
    assert [r.status_code for r in statuses] == [200, 429, 429, 429, 429, 429]
    assert statuses[0].headers["X-RateLimit-Limit"] == "2"
    assert [r.headers["Retry-After"] for r in statuses[1:]] == ["1"] * 5
    assert sb.stats["rate_limited"] == 5


def test_headers_on_every_api_answer_but_not_before_routing(limited: Sandbox) -> None:
    missing_user = get(limited, USERS + "999999")
    assert missing_user.status_code == 404
    assert missing_user.headers["X-RateLimit-Remaining"] == "2"
    invalid = get(limited, SUBSCRIPTIONS + "?id=abc")
    assert invalid.status_code == 422 and invalid.headers["X-RateLimit-Remaining"] == "1"
    # an unknown path, a wrong token: no route or no user, so no bucket and no headers
    assert get(limited, "/api/v1/developer/nothing").status_code == 404
    assert get(limited, token="wrong-token").status_code == 401
    last = get(limited)
    assert last.status_code == 200 and last.headers["X-RateLimit-Remaining"] == "0"
    for r in (get(limited, "/api/v1/developer/nothing"), get(limited, token="wrong-token")):
        assert not any(h in r.headers for h in LIMIT_HEADERS)
    assert limited.stats["rate_limited"] == 0
    assert get(limited).status_code == 429


def test_admitted_requests_meet_faults_and_a_fault_spends_its_token(limited: Sandbox) -> None:
    limited.queue_faults("503", "truncated")
    replaced, damaged = get(limited), get(limited)
    assert replaced.status_code == 503 and "X-RateLimit-Remaining" not in replaced.headers
    assert damaged.status_code == 200 and damaged.headers["X-RateLimit-Remaining"] == "1"
    assert [get(limited).status_code for _ in range(2)] == [200, 429]
    assert limited.stats["faults"] == 2 and limited.stats["rate_limited"] == 1


def test_buckets_are_per_bearer_token(limited: Sandbox) -> None:
    first = [get(limited).status_code for _ in range(4)]
    assert first == [200, 200, 200, 429]
    second = [get(limited, token="second-token") for _ in range(4)]
    assert [r.status_code for r in second] == [200, 200, 200, 429]
    assert [r.headers["X-RateLimit-Remaining"] for r in second] == ["2", "1", "0", "0"]
    assert get(limited).status_code == 429  # the first token's bucket is still empty
    assert limited.stats["rate_limited"] == 3


def test_requests_over_time_are_admitted_at_r_per_second(bucket_clock: FakeClock) -> None:
    rate, burst = 20.0, 20  # burst defaults to max(1, R)
    with sandbox_fixture(subscriptions=0, users=0, rate_limit=rate) as sb, api_session(sb) as s:
        url = sb.base_url + SUBSCRIPTIONS

        def statuses(n: int) -> list[int]:
            return [s.get(url, timeout=30).status_code for _ in range(n)]

        assert statuses(burst + 1) == [200] * burst + [429]  # the burst, then nothing
        for seconds, tokens in ((0.5, 10), (0.25, 5), (2.0, burst)):  # R per second, up to B
            bucket_clock.now += seconds
            assert statuses(tokens + 1) == [200] * tokens + [429], seconds
        assert sb.stats["rate_limited"] == 4


def test_the_bucket_runs_on_real_time_not_the_simulated_clock() -> None:
    """The bucket refills with the machine's monotonic clock (a client's waits are real), never
    with the sandbox's simulated one: a month of simulated time refills nothing. (R is one
    token in 11 days of real time: no test run lasts that long.)"""
    assert throttle.RateLimiter().clock is time.monotonic
    slow = {"per_second": 1e-6, "burst": 3}
    with sandbox_fixture(subscriptions=0, users=0, rate_limit=slow) as sb, api_session(sb) as s:
        url = sb.base_url + SUBSCRIPTIONS
        assert [s.get(url, timeout=30).status_code for _ in range(4)] == [200, 200, 200, 429]
        sb.advance(days=30)
        refused = s.get(url, timeout=30)
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 86400
        assert sb.stats["rate_limited"] == 2


def test_control_endpoints_are_never_limited(limited: Sandbox) -> None:
    for _ in range(10):
        state = control(limited, "state")
        assert state.status_code == 200
        assert not any(h in state.headers for h in LIMIT_HEADERS)
    assert control(limited, "advance", {"hours": 1}).status_code == 200
    assert [get(limited).status_code for _ in range(4)] == [200, 200, 200, 429]
    state = control(limited, "state")  # still answered with the bucket empty
    assert state.status_code == 200
    body = state.json()
    assert body["rate_limit"] == {"per_second": 0.1, "burst": 3.0}
    assert body["stats"]["rate_limited"] == 1


def test_set_and_clear_through_the_control_endpoint(limited: Sandbox) -> None:
    assert [get(limited).status_code for _ in range(4)] == [200, 200, 200, 429]
    cleared = control(limited, "rate-limit", {})
    assert cleared.status_code == 200 and cleared.json() == {"rate_limit": None}
    assert limited.rate_limit is None
    answers = [get(limited) for _ in range(5)]
    assert [r.status_code for r in answers] == [200] * 5
    assert not any(h in r.headers for r in answers for h in LIMIT_HEADERS)

    set_ = control(limited, "rate-limit", {"per_second": 0.1, "burst": 1})
    assert set_.json() == {"rate_limit": {"per_second": 0.1, "burst": 1.0}}
    assert [get(limited).status_code for _ in range(2)] == [200, 429]
    assert control(limited, "rate-limit", {"per_second": 0.1}).json() == {
        "rate_limit": {"per_second": 0.1, "burst": 1.0}  # burst defaults to max(1, R)
    }
    assert get(limited).status_code == 200  # a new limit starts every bucket full
    bad_limits = (
        {"per_second": -1},
        {"per_second": 5, "burst": 0.5},
        {"per_second": "x"},
        {"burst": 2},
    )
    for bad in bad_limits:
        assert control(limited, "rate-limit", bad).status_code == 422
    limited.set_rate_limit(None)
    assert get(limited).status_code == 200 and "X-RateLimit-Limit" not in get(limited).headers


def test_bad_limits_are_refused_by_the_constructor() -> None:
    for bad in (-1.0, {"per_second": 1, "burst": 0}, float("inf")):
        with pytest.raises(ValueError):
            Sandbox(subscriptions=0, users=0, rate_limit=bad)
    with pytest.raises(ValueError):
        Sandbox(subscriptions=0, users=0, server_ms=-5)


class WatchedLock:
    """A lock that counts the threads waiting to take it (`waiting`, under `cond`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.cond = threading.Condition()
        self.waiting = 0

    def __enter__(self) -> None:
        with self.cond:
            self.waiting += 1
            self.cond.notify_all()
        self._lock.acquire()
        with self.cond:
            self.waiting -= 1
            self.cond.notify_all()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class HeldSleeps:
    """Stands in for `time.sleep`: each sleep is noted (`slept`; `most` under way at once) and
    lasts until `release()` (or HOLD_S, to fail, not hang)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.sleeping = self.most = 0
        self.slept: list[float] = []
        self.released = False

    def __call__(self, seconds: float) -> None:
        with self.cond:
            self.slept.append(seconds)
            self.sleeping += 1
            self.most = max(self.most, self.sleeping)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.released, HOLD_S)
            self.sleeping -= 1

    def release(self) -> None:
        with self.cond:
            self.released = True
            self.cond.notify_all()


def test_the_server_cost_is_spent_one_request_at_a_time() -> None:
    n = 8
    sleeps = HeldSleeps()
    cost = throttle.SerialCost(40.0, sleep=sleeps)
    lock = WatchedLock()
    cost._lock = lock  # type: ignore[assignment]  # the same lock, watched
    start = threading.Barrier(n + 1)

    def spend() -> None:
        start.wait(HOLD_S)
        cost.spend()

    threads = [threading.Thread(target=spend) for _ in range(n)]
    for t in threads:
        t.start()
    start.wait(HOLD_S)
    # one request sleeps its cost; every other one waits for the lock all that time
    with sleeps.cond:
        assert sleeps.cond.wait_for(lambda: sleeps.sleeping == 1, HOLD_S)
    with lock.cond:
        assert lock.cond.wait_for(lambda: lock.waiting == n - 1, HOLD_S)
    assert sleeps.sleeping == 1
    sleeps.release()
    for t in threads:
        t.join(HOLD_S)
    assert not any(t.is_alive() for t in threads)
    assert sleeps.most == 1 and sleeps.slept == [0.04] * n


class Rendezvous:
    """Stands in for `time` in the sandbox's server module: a `sleep` (the `latency_ms` delay)
    returns once N sleeps are under way at once (or after HOLD_S, to fail, not hang); the rest
    is the real `time`. `most`: the most sleeps seen under way at once."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.cond = threading.Condition()
        self.sleeping = 0
        self.most = 0
        self.real = time

    def sleep(self, seconds: float) -> None:
        with self.cond:
            self.sleeping += 1
            self.most = max(self.most, self.sleeping)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.most >= self.n, HOLD_S)
            self.sleeping -= 1

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)


def _concurrent(sandbox: Sandbox, n: int) -> None:
    """N threads, each on its own warmed-up connection, get one page at once (a barrier)."""
    sessions = [api_session(sandbox) for _ in range(n)]
    for s in sessions:  # connect first: the requests then meet at the server together
        assert s.get(sandbox.base_url + "/__sandbox/state", timeout=30).status_code == 200
    start = threading.Barrier(n + 1)
    statuses: list[int] = []

    def one(s: requests.Session) -> None:
        start.wait(HOLD_S)
        statuses.append(s.get(sandbox.base_url + SUBSCRIPTIONS, timeout=60).status_code)

    threads = [threading.Thread(target=one, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    start.wait(HOLD_S)
    for t in threads:
        t.join(60)
    for s in sessions:
        s.close()
    assert statuses == [200] * n


class Sleeps:
    """Stands in for `time` in the throttle module: sleeps are noted, not slept."""

    def __init__(self) -> None:
        self.slept: list[float] = []
        self.monotonic = time.monotonic

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_server_ms_is_spent_per_request_where_latency_ms_overlaps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    n, ms = 8, 40.0
    spent = Sleeps()
    monkeypatch.setattr(throttle, "time", spent)  # the sandbox's own SerialCost sleeps here
    with sandbox_fixture(subscriptions=0, users=0, server_ms=ms) as sb:
        _concurrent(sb, n)
        assert spent.slept == [ms / 1000] * n  # each request its cost (one at a time: above)
        assert control(sb, "state").json()["server_ms"] == ms
        assert control(sb, "server-ms", {"ms": 0}).json() == {"server_ms": 0.0}
        _concurrent(sb, n)
        assert spent.slept == [ms / 1000] * n  # no cost: no sleep
        sb.set_latency(200)
        # 8 delays on their own threads overlap: each is held until all 8 are under way (a
        # queue would hold the first forever, and the 8 would never be seen at once)
        delays = Rendezvous(n)
        monkeypatch.setattr(sandbox_server, "time", delays)
        _concurrent(sb, n)
        monkeypatch.undo()
        assert delays.most == n
