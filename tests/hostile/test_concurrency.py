"""The adaptive concurrency controller: its rules alone, then through a real sync over HTTP.

First the controller (`concurrency.Concurrency`) with threads and no network: it never lets
more than `max_workers` requests out, grows while answers are clean, halves on a 429 (once per
burst), holds every worker during a `Retry-After`, and stays at N when pinned. Then the real
`devportal sync` against the hostile server, which counts the requests it is serving at once
and when each arrives: the server-side count never exceeds the bounds, `--workers N` is N, and
after a 429 with `Retry-After` no worker sends anything until the pause is over. Nothing here
asserts a speed.

Nothing here depends on timing either (a busy machine must not fail a good build): a request
is held (at the server, or inside its slot) until the state the test asserts exists, with a
generous timeout that only a broken controller reaches, never for a fixed while. Where the
controller's arithmetic reads the clock (latency, "sent before the last cut"), the test gives
it a clock of its own (`FakeClock`): a busy machine's latency noise is no signal to test.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from devportal.http.concurrency import Concurrency, RequestOutcome
from tests.helpers import FakeClock, query
from tests.hostile.conftest import CliResult, token_env
from tests.hostile.server import SUBSCRIPTIONS, Answer, HostileApi, Request

# -- the controller alone ---------------------------------------------------------------------


# How long a held request waits for the state it waits for: only a broken controller (or a
# test waiting for what cannot happen) ever reaches it, so it is generous.
HOLD_S = 20.0
STARTUP_S = 240.0  # the most a test waits for a sync to reach the state it holds the server in


@pytest.fixture
def clock() -> FakeClock:
    """A clock for the controller (`Concurrency(clock=clock.monotonic)`), moved only by the
    test. Frozen, every latency is 0: flat."""
    return FakeClock()


def hammer(
    limit: Concurrency, requests: int, threads: int, outcome: Callable[[int], str] | None = None
) -> int:
    """REQUESTS attempts from THREADS threads through LIMIT; the most seen in flight at once.

    An attempt holds its slot until every slot the limit allows is taken (or no attempt is left
    to take one): the limit is filled each time, so the most in flight is the limit at its
    highest, whatever the machine's timing, and one more than allowed would be seen."""
    cond = threading.Condition()
    state = {"now": 0, "most": 0, "next": 0, "entered": 0}

    def filled() -> bool:
        return state["now"] >= limit.slots or state["entered"] >= requests

    def work() -> None:
        while True:
            with cond:
                n = state["next"]
                state["next"] += 1
            if n >= requests:
                return
            with limit.slot() as slot:
                with cond:
                    state["now"] += 1
                    state["entered"] += 1
                    state["most"] = max(state["most"], state["now"])
                    cond.notify_all()
                    assert cond.wait_for(filled, HOLD_S), "the limit was never filled"
                    state["now"] -= 1
                slot.done(outcome(n) if outcome else RequestOutcome.OK)
                with cond:  # the limit may have grown: waiters re-check
                    cond.notify_all()

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(HOLD_S * 2)
    assert not any(t.is_alive() for t in pool)
    assert state["entered"] == requests
    return state["most"]


def test_it_grows_to_max_workers_and_never_beyond(clock: FakeClock) -> None:
    limit = Concurrency(min_workers=1, max_workers=6, clock=clock.monotonic)
    assert limit.slots == 4  # starts modestly
    most = hammer(limit, requests=400, threads=20)
    assert most == 6
    stats = limit.stats()
    assert (stats.mode, stats.peak, stats.final) == ("adaptive", 6, 6)


def test_pinned_stays_at_n_whatever_the_answers() -> None:
    limit = Concurrency(min_workers=1, max_workers=32, pinned=3)
    most = hammer(
        limit, 300, 12, lambda n: RequestOutcome.CONGESTED if n % 10 == 0 else RequestOutcome.OK
    )
    assert most == 3
    stats = limit.stats()
    assert (stats.mode, stats.settled, stats.peak, stats.final, stats.cuts) == (
        "pinned",
        3,
        3,
        3,
        0,
    )


def test_a_429_halves_the_limit_once_per_burst(clock: FakeClock) -> None:
    limit = Concurrency(min_workers=2, max_workers=32, start=16, clock=clock.monotonic)
    early = [limit.acquire() for _ in range(10)]  # ten requests out at 16
    clock.now += 1
    early[0].done(RequestOutcome.CONGESTED, throttled=True)
    assert limit.slots == 8
    for slot in early[1:]:  # the rest of the burst, sent before the cut: no further cut
        slot.done(RequestOutcome.CONGESTED, throttled=True)
    assert limit.slots == 8
    clock.now += 1
    later = limit.acquire()  # sent after the cut
    later.done(RequestOutcome.CONGESTED, throttled=True)
    assert limit.slots == 4
    for _ in range(3):
        clock.now += 1
        limit.acquire().done(RequestOutcome.CONGESTED)
    assert limit.slots == 2  # never below min_workers
    stats = limit.stats()
    assert (stats.cuts, stats.throttled) == (5, 11)


def test_a_server_with_few_requests_left_caps_the_limit(clock: FakeClock) -> None:
    limit = Concurrency(min_workers=1, max_workers=32, start=16, clock=clock.monotonic)
    limit.acquire().done(RequestOutcome.OK, remaining=3)
    assert limit.slots == 3
    clock.now += 1
    limit.acquire().done(RequestOutcome.OK, remaining=0)
    assert limit.slots == 1


def waiting_for_a_slot(limit: Concurrency, clock: FakeClock, n: int) -> tuple[list[float], Any]:
    """N threads that each take a slot of LIMIT (noting CLOCK's time when they get it), started
    together (a barrier) once the test's clock stands where the test put it; returns the times
    and a function that waits for the threads to end. Returns once every thread has read the
    clock in `acquire`: from then on only the test's moving the clock can let one through."""
    got: list[float] = []
    start = threading.Barrier(n + 1)

    def take() -> None:
        start.wait(HOLD_S)
        with limit.slot() as slot:
            got.append(clock.now)
            slot.done(RequestOutcome.OK)

    pool = [threading.Thread(target=take) for _ in range(n)]
    for t in pool:
        t.start()
    clock.forget_readers()
    start.wait(HOLD_S)
    clock.wait_for_readers(pool, HOLD_S)

    def joined() -> None:
        for t in pool:
            t.join(HOLD_S)
        assert not any(t.is_alive() for t in pool)

    return got, joined


def test_retry_after_holds_every_worker(clock: FakeClock) -> None:
    limit = Concurrency(min_workers=1, max_workers=8, start=8, clock=clock.monotonic)
    paused_at = clock.now
    limit.acquire().done(RequestOutcome.CONGESTED, retry_after=0.6, throttled=True)
    sent, joined = waiting_for_a_slot(limit, clock, 5)
    clock.advance(0.6)  # the first moment the server allows
    joined()
    assert len(sent) == 5
    # nobody went while the server said wait: the clock stood at PAUSED_AT until every worker
    # had asked for its slot, and not one got it before the test moved the clock on
    assert min(sent) >= paused_at + 0.6
    stats = limit.stats()
    assert (stats.pauses, stats.paused_s) == (1, 0.6)


def test_retry_after_is_capped(clock: FakeClock) -> None:
    limit = Concurrency(pause_cap_s=0.2, clock=clock.monotonic)
    started = clock.now
    limit.acquire().done(RequestOutcome.CONGESTED, retry_after=3600)
    went, joined = waiting_for_a_slot(limit, clock, 1)
    clock.advance(0.2)  # the cap, not the hour
    joined()
    assert went == [started + 0.2]  # it waited the cap: 0.2 s on, it went
    assert limit.stats().paused_s == 0.2


# -- through a real sync, counted by the server ------------------------------------------------


class Counting:
    """Wraps the hostile server's subscriptions route: counts requests in progress at once,
    notes when each arrived, and can answer chosen arrivals with a 429.

    `gather=N`: the requests for pages after the first (page 1 is read alone, to learn how many
    there are) are held until N are in progress at once; from then on none is held. So a
    client able to send N side by side is seen doing so, whatever the machine's timing.

    With `throttle_at`, the throttled arrival is held until every other slot of a client
    pinned at `workers` is here too (held: nothing of that client is on its way), then answered
    429; the others stay held until `pause_seen()` says the client has taken the pause in
    (then every request arriving after the 429 was sent after the client knew of it).

    `clock`: the time noted for each arrival and 429 (`arrivals`, `throttled_at`);
    `throttled_after`: how many requests had arrived when each 429 went out."""

    def __init__(
        self,
        api: HostileApi,
        gather: int | None = None,
        workers: int | None = None,
        pause_seen: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.clock = clock
        self.gather = gather
        self.workers = workers
        self.pause_seen = pause_seen
        self.cond = threading.Condition()
        self.now = 0
        self.most = 0
        self.held = 0
        self.arrivals: list[float] = []
        self.pages: list[int] = []  # the page each arrival asked for
        self.throttle_at: dict[int, str] = {}  # arrival number -> Retry-After
        self.throttled_at: list[float] = []
        self.throttled_after: list[int] = []
        self.throttling = False  # a 429 is waiting for the client's other slots
        api.route(SUBSCRIPTIONS, self.answer)

    def _hold(self, until: Callable[[], bool]) -> None:
        """Wait (the lock held by the caller) until UNTIL, polled as it may watch the client."""
        self.held += 1
        self.cond.notify_all()
        deadline = time.monotonic() + HOLD_S
        while not until() and time.monotonic() < deadline:
            self.cond.wait(0.01)
        self.held -= 1

    def _gathered(self) -> bool:
        return self.gather is None or self.most >= self.gather

    def _paused(self) -> bool:
        return not self.throttling and (self.pause_seen is None or self.pause_seen())

    def answer(self, req: Request) -> Answer:
        with self.cond:
            self.now += 1
            self.most = max(self.most, self.now)
            number = len(self.arrivals)
            self.arrivals.append(self.clock())
            self.pages.append(int(req.query.get("page", "1")))
            retry_after = self.throttle_at.get(number)
            self.cond.notify_all()
            try:
                if retry_after is not None:
                    if self.workers is not None:
                        self.throttling = True
                        others = self.workers - 1
                        self._hold(lambda: self.held >= others + 1)
                        self.throttling = False
                        self.cond.notify_all()
                    self.throttled_at.append(self.clock())
                    self.throttled_after.append(len(self.arrivals))
                    return Answer(
                        429, {"message": "Too Many Attempts."}, {"Retry-After": retry_after}
                    )
                if self.workers is not None and (self.throttling or self.throttled_at):
                    self._hold(self._paused)
                if req.query.get("page", "1") != "1":
                    self._hold(self._gathered)
            finally:
                self.now -= 1
                self.cond.notify_all()
        return Answer(200, self.api.page(req, self.api.subscriptions))


@pytest.fixture
def many_pages(api: HostileApi) -> HostileApi:
    api.per_page = 2
    api.subscriptions = [
        {"id": i, "service_id": 1000 + i, "status": "active", "expires_at": "2027-01-01 00:00:00"}
        for i in range(1, 161)
    ]
    return api


RUN_FIELDS = (
    "concurrency_mode",
    "concurrency_settled",
    "concurrency_peak",
    "rate_limited",
    "paused_s",
    "requests",
)


def sync_runs(warehouse: Path) -> dict[str, Any]:
    [row] = query(warehouse, f"select {', '.join(RUN_FIELDS)} from devportal.sync_runs")
    return dict(zip(RUN_FIELDS, row, strict=True))


def run_sync(
    devportal: Callable[..., CliResult],
    api: HostileApi,
    tmp_path: Path,
    *extra: str,
    **settings: Any,
) -> tuple[CliResult, Path]:
    warehouse = tmp_path / "warehouse.duckdb"
    result = devportal(
        "sync",
        "--base-url",
        api.base_url,
        "--warehouse",
        str(warehouse),
        "--no-models",
        "--resources",
        "subscriptions",
        *extra,
        env=token_env(api, **settings),
    )
    assert result.code == 0, result.err
    return result, warehouse


def test_adaptive_sync_stays_within_max_workers(
    many_pages: HostileApi, devportal: Callable[..., CliResult], tmp_path: Path
) -> None:
    server = Counting(many_pages, gather=4)  # it starts at 4 (and grows once page 1 is in)
    result, warehouse = run_sync(devportal, many_pages, tmp_path, "--max-workers", "5")
    assert server.most <= 5
    assert server.most >= 4  # it did run requests side by side
    record = sync_runs(warehouse)
    assert record["concurrency_mode"] == "adaptive"
    assert 1 <= record["concurrency_settled"] <= record["concurrency_peak"] <= 5
    assert record["requests"] == len(server.arrivals) == 80
    assert f"concurrency settled at {record['concurrency_settled']} (adaptive" in result.out


def test_workers_n_pins_it_at_n(
    many_pages: HostileApi, devportal: Callable[..., CliResult], tmp_path: Path
) -> None:
    server = Counting(many_pages, gather=3)
    server.throttle_at = {10: "0"}  # a 429 does not move a pinned count
    result, warehouse = run_sync(devportal, many_pages, tmp_path, "--workers", "3")
    assert server.most == 3
    record = sync_runs(warehouse)
    assert (record["concurrency_mode"], record["concurrency_settled"]) == ("pinned", 3)
    assert record["concurrency_peak"] == 3 and record["rate_limited"] == 1
    assert "3 in flight (pinned), 1 rate-limited (429)" in result.out


def clients_started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The clients `devportal sync` starts early (and adopts: see the early-start test below),
    so a test can see what the client knows; the real `early.start` does the work."""
    from devportal.cli import early_start as early

    started: list[Any] = []
    real_start = early.start

    def recording_start(*args: Any, **kwargs: Any) -> Any:
        client = real_start(*args, **kwargs)
        started.append(client)
        return client

    monkeypatch.setattr(early, "start", recording_start)
    return started


def test_retry_after_pauses_all_workers_not_just_one(
    many_pages: HostileApi,
    devportal: Callable[..., CliResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    clock: FakeClock,
) -> None:
    """The client's controller runs on the test's clock, which stands still from the 429 on:
    no request may reach the server until the test moves it past the pause, which it does only
    once every request in flight has been answered (the client can then only go on through a
    slot). The throttled request's own retry still sleeps its real second."""
    from devportal.http import session

    monkeypatch.setattr(session, "Concurrency", partial(Concurrency, clock=clock.monotonic))
    clients = clients_started(monkeypatch)

    def pause_seen() -> bool:
        return bool(clients) and clients[0].concurrency.stats().pauses >= 1

    # the 429 goes out when all six slots are held here (nothing is on its way), and the other
    # five are answered once the client has taken the pause in: each of those workers then
    # asks for a slot, as the one that got the 429 does
    server = Counting(many_pages, workers=6, pause_seen=pause_seen, clock=clock.monotonic)
    server.throttle_at = {12: "1"}

    def end_the_pause() -> None:
        with server.cond:
            # the sync may take long to get there on a busy machine (its start is not timed):
            # wait for the 429 itself, then give the client HOLD_S to take the pause in
            sent = server.cond.wait_for(lambda: bool(server.throttled_at), STARTUP_S)
            idle = sent and server.cond.wait_for(lambda: pause_seen() and server.now == 0, HOLD_S)
        clock.advance(1.0)  # the pause is over (moved even if never idle: the test then fails)
        assert sent, "no 429 went out"
        assert idle, f"requests were still in flight after the 429; pages asked {server.pages}"

    mover = threading.Thread(target=end_the_pause)
    mover.start()
    result, warehouse = run_sync(devportal, many_pages, tmp_path, "--workers", "6")
    mover.join(STARTUP_S + HOLD_S)
    assert len(clients) == 1 and clients[0] is not None
    [throttled], [answered] = server.throttled_at, server.throttled_after
    later = server.arrivals[answered:]  # sent after the 429 went out
    assert later  # and then it went on
    assert min(later) >= throttled + 1.0  # none was sent until the test's second had passed
    record = sync_runs(warehouse)
    assert (record["rate_limited"], record["paused_s"]) == (1, 1.0)
    assert record["requests"] == 81  # 80 pages and the one retried
    # every page asked once, but the throttled one, asked again
    assert sorted(server.pages) == sorted([*range(1, 81), server.pages[12]])
    assert "paused 1.0s on Retry-After" in result.out


def test_bad_worker_bounds_are_one_line_errors(
    many_pages: HostileApi,
    devportal: Callable[..., CliResult],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = token_env(many_pages, min_workers=8, max_workers=4)
    result = devportal(
        "sync",
        "--base-url",
        many_pages.base_url,
        "--warehouse",
        str(tmp_path / "w.duckdb"),
        env=env,
    )
    assert result.code != 0
    assert "min_workers = 8 is above max_workers = 4" in result.err
    with pytest.raises(SystemExit) as exit_:
        devportal("sync", "--workers", "0", env=env)
    assert exit_.value.code == 2
    assert "argument --workers: 0 must be at least 1" in capsys.readouterr().err


# -- the early start: the list is read while dlt imports, and only adopted when settings agree -


def test_the_early_start_reads_each_page_once_and_is_adopted(
    many_pages: HostileApi,
    devportal: Callable[..., CliResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = clients_started(monkeypatch)
    _result, warehouse = run_sync(devportal, many_pages, tmp_path, timeout_s=7)
    [client] = started
    assert client is not None and client.config.timeout_s == 7  # read from the environment
    assert sorted(int(r.query.get("page", 1)) for r in many_pages.requests) == list(range(1, 81))
    record = sync_runs(warehouse)
    assert record["requests"] == client.stats.requests == 80  # the run used the early client


def test_an_early_client_whose_settings_disagree_is_closed_not_used(
    many_pages: HostileApi,
) -> None:
    from devportal.http import ApiClient, HttpSettings, adopt

    early = ApiClient(HttpSettings(base_url=many_pages.base_url, access_token="t0ken"))
    early.prefetch(SUBSCRIPTIONS)
    for differs in (
        {"timeout_s": 5.0},
        {"access_token": "another"},
        {"base_url": "http://127.0.0.2:1"},
        {"workers": 3},
    ):
        resolved = HttpSettings(
            **{"base_url": many_pages.base_url, "access_token": "t0ken", **differs}
        )
        fresh = ApiClient(HttpSettings(base_url=many_pages.base_url, access_token="t0ken"))
        assert adopt(fresh, resolved) is None, differs
    same = HttpSettings(base_url=many_pages.base_url + "/", access_token=" t0ken ")
    assert adopt(early, same) is early
    early.close()
