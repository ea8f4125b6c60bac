"""HTTP bounds against a hostile server, through the real `devportal sync`.

A request is bounded in total by `timeout_s` (a dripping body cannot stretch it), a `get_json()`
by `max_wait_s` (no sleep past it, whatever `Retry-After` says), redirects stay on the
configured origin, and a token pasted with its line ending still works. Each failure is one
line on stderr that says what happened, never the token, and leaves nothing partial behind.

No test measures the run with a clock of its own: a bound is shown by what the server saw (how
many attempts, whether a dripping answer was cut off before its end) and by the client's
one-line message (which limit ended it, how long the call took by its own count), against
limits far apart (a drip of minutes against a `timeout_s` of one second, a `Retry-After` of an
hour against a budget of seconds), so a slow machine cannot make them fail and an ignored
bound cannot make them pass.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import duckdb
import pytest

from tests.helpers import rows_if_loaded
from tests.hostile.conftest import CliResult, token_env
from tests.hostile.server import SUBSCRIPTIONS, Answer, HostileApi, Request

ROWS = [
    {"id": i, "service_id": 10, "status": "active", "expires_at": "2026-12-01 10:00:00"}
    for i in range(1, 8)
]


def loaded(warehouse: Path) -> int:
    """Subscription rows in the warehouse (0 when the sync never created the table)."""
    rows = rows_if_loaded(warehouse, "SELECT count(*) FROM devportal.subscriptions")
    return int(rows[0][0]) if rows else 0


def spent_s(line: str, attempts: int) -> float:
    """The seconds the failed call took by the client's own count ("after N attempts in X.Xs")."""
    plural = "s" if attempts != 1 else ""
    found = re.search(rf"still failing after {attempts} attempt{plural} in (\d+\.\d)s", line)
    assert found, line
    return float(found.group(1))


def timed_out_after_s(line: str, bound: str) -> float:
    """The deadline an attempt had, as the message gives it: "within X.Xs, BOUND"."""
    found = re.search(rf"timeout \(no complete answer within (\d+\.\d)s, {bound}\)", line)
    assert found, line
    return float(found.group(1))


def cut_off(api: HostileApi, attempts: int) -> None:
    """Each of the ATTEMPTS dripped answers ended before its last byte: the client hung up on
    it (a drip of minutes was not waited out), and no other answer dripped."""
    drips = api.wait_drips(attempts)
    assert len(drips) == attempts, drips
    assert all(sent < total for sent, total in drips), drips


def error_line(r: CliResult, token: str) -> str:
    """The one-line error of a failed run (checked: exit code, one line, no trace, no token)."""
    assert r.code != 0, r.out
    line = r.err.strip()
    assert line.startswith("devportal: error: "), r.err
    assert "\n" not in line and "Traceback" not in line, r.err
    assert token not in r.err and token not in r.out
    return line


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "wh" / "warehouse.duckdb"


@pytest.fixture
def sync_subscriptions(
    api: HostileApi, devportal: Callable[..., CliResult], sync_args: Callable[..., list[str]]
) -> Callable[..., CliResult]:
    """`sync_subscriptions(env)`: the real CLI syncing subscriptions."""

    def run(env: dict[str, str]) -> CliResult:
        return devportal(*sync_args("--resources", "subscriptions"), env=env)

    return run


# -- 1. a request is bounded in total, the retries by max_wait_s ---------------------------------


@pytest.mark.parametrize(
    "drip",
    [
        # about 700 bytes at one byte per 0.2 s: minutes, though no single read ever waits long
        pytest.param("drip_s", id="body"),
        # the same for the status line and headers: the client hangs up before they end
        pytest.param("drip_head_s", id="status-line-and-headers"),
    ],
)
def test_a_dripping_answer_times_out_after_timeout_s_in_total(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path, drip: str
) -> None:
    api.subscriptions = ROWS
    api.route(
        SUBSCRIPTIONS, lambda req: Answer(200, api.page(req, api.subscriptions), **{drip: 0.2})
    )
    r = sync_subscriptions(token_env(api, timeout_s=1, max_attempts=2, max_wait_s=60))
    line = error_line(r, api.token)
    assert "still failing after 2 attempts" in line
    # each attempt's deadline was timeout_s (1 s) from its start, not the default (30 s) nor
    # what was left of max_wait_s (60 s); "1.0s", or a hair more if the machine stalled
    # between the two clock reads the message is made of
    assert 1.0 <= timed_out_after_s(line, "timeout_s") < 5
    assert api.hits(SUBSCRIPTIONS) == 2
    cut_off(api, 2)  # no hang: both answers were given up long before their end
    assert loaded(warehouse) == 0


def test_max_wait_s_bounds_the_attempts_even_with_a_long_timeout(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path
) -> None:
    api.subscriptions = ROWS
    api.route(SUBSCRIPTIONS, lambda req: Answer(200, api.page(req, api.subscriptions), drip_s=0.2))
    r = sync_subscriptions(token_env(api, timeout_s=60, max_attempts=8, max_wait_s=2))
    line = error_line(r, api.token)
    # the one attempt's deadline was the budget's end (2 s), not its own timeout_s (60 s)
    assert timed_out_after_s(line, "what was left of max_wait_s") <= 2.0
    assert "the 2s retry budget (max_wait_s) is spent" in line
    assert api.hits(SUBSCRIPTIONS) == 1
    cut_off(api, 1)
    assert spent_s(line, attempts=1) < 60  # the call ended with its budget, not its timeout_s
    assert loaded(warehouse) == 0


def test_slow_but_steady_body_within_timeout_loads(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path
) -> None:
    api.subscriptions = ROWS
    api.route(
        SUBSCRIPTIONS, lambda req: Answer(200, api.page(req, api.subscriptions), drip_s=0.0005)
    )
    # each page takes ~700 reads; a timeout_s far above what a loaded machine needs for them
    r = sync_subscriptions(token_env(api, timeout_s=120, max_wait_s=240))
    assert r.code == 0, r.err
    assert loaded(warehouse) == len(ROWS)
    assert api.hits(SUBSCRIPTIONS) == 3  # each page whole on its first attempt
    assert all(sent == total for sent, total in api.wait_drips(3))


def test_server_errors_forever_end_within_max_wait_s(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path
) -> None:
    api.route(SUBSCRIPTIONS, lambda req: Answer(503, {"message": "Service Unavailable"}))
    # a budget of seconds against sleeps of hundredths: room for many attempts on any machine
    # (three need two requests and 0.03 s of sleep), never for the 1000 max_attempts allows
    env = token_env(
        api, max_attempts=1000, max_wait_s=4, backoff_initial_s=0.01, backoff_max_s=0.05
    )
    r = sync_subscriptions(env)
    line = error_line(r, api.token)
    # the last attempt gets only what is left of the budget: on a loaded machine it may time
    # out instead of meeting the 503 again; either way the message says which
    assert "retry budget (max_wait_s)" in line
    assert "last: 503 server error" in line or "last: timeout" in line
    assert "max_attempts" not in line  # the budget ended it, and the message says so
    hits = api.hits(SUBSCRIPTIONS)
    assert 2 < hits < 1000
    # the attempts the message counts are the requests the server saw (the last attempt,
    # given only what was left of the budget, may have ended before the server read it)
    found = re.search(r"still failing after (\d+) attempts", line)
    assert found and hits <= int(found.group(1)) <= hits + 1, (hits, line)
    assert loaded(warehouse) == 0


# -- 2. Retry-After longer than the budget: stop at once and say so --------------------------------


def test_retry_after_past_the_budget_stops_at_once(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path
) -> None:
    api.route(
        SUBSCRIPTIONS,
        lambda req: Answer(429, {"message": "Too Many Attempts."}, {"Retry-After": "3600"}),
    )
    env = token_env(api, max_attempts=8, max_wait_s=10, retry_after_cap_s=30)
    r = sync_subscriptions(env)
    line = error_line(r, api.token)
    assert (
        "429 rate limited, server asked to wait 3600s (Retry-After), more than the 10s retry "
        "budget (max_wait_s) even shortened to 30s (retry_after_cap_s)"
    ) in line
    assert api.hits(SUBSCRIPTIONS) == 1  # no second try
    # no sleep either: by the client's own count the call took one local request, well under
    # half the budget, where any sleep it could plan takes the budget whole (10 s) or the cap
    assert spent_s(line, attempts=1) < 5
    assert loaded(warehouse) == 0


@pytest.mark.parametrize(("retry_after", "cap"), [("1", 30), ("3600", 0.2)])
def test_retry_after_that_fits_is_honoured_and_the_sync_loads(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path, retry_after: str, cap: float
) -> None:
    api.subscriptions = ROWS
    answers: Iterator[Answer] = iter(
        [Answer(429, {"message": "Too Many Attempts."}, {"Retry-After": retry_after})]
    )

    arrived: list[float] = []

    def once_limited(req: Request) -> Answer:
        arrived.append(time.monotonic())
        return next(answers, None) or Answer(200, api.page(req, api.subscriptions))

    api.route(SUBSCRIPTIONS, once_limited)
    r = sync_subscriptions(token_env(api, max_wait_s=10, retry_after_cap_s=cap))
    assert r.code == 0, r.err
    assert loaded(warehouse) == len(ROWS)
    # honoured: the retry came no sooner than the wait (the Retry-After, or the cap); and that
    # is the wait it planned, recorded exactly, not an hour: bounds no machine's speed moves
    wait = min(float(retry_after), cap)
    assert arrived[1] - arrived[0] >= wait
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT paused_s FROM devportal.sync_runs").fetchall() == [(wait,)]


# -- 3. redirects stay on the configured origin ----------------------------------------------------


@pytest.fixture
def foreign() -> Iterator[HostileApi]:
    """Another origin, with the same data: loading from it would look like success."""
    with HostileApi() as server:
        server.subscriptions = ROWS
        yield server


def test_redirect_to_another_origin_is_refused_and_no_token_leaves(
    api: HostileApi, foreign: HostileApi, sync_subscriptions: Any, warehouse: Path
) -> None:
    api.subscriptions = ROWS
    api.route(
        SUBSCRIPTIONS,
        lambda req: Answer(
            302, b"", {"Location": f"{foreign.base_url}{SUBSCRIPTIONS}?{urlencode(req.query)}"}
        ),
    )
    r = sync_subscriptions(token_env(api, max_attempts=3))
    line = error_line(r, api.token)
    assert f"redirected GET {SUBSCRIPTIONS}" in line
    assert f"to another origin ({foreign.base_url})" in line
    assert "access token rejected" not in line
    assert not any(api.token in str(req.headers) for req in foreign.requests)
    assert foreign.requests == []  # nothing at all went there
    assert api.hits(SUBSCRIPTIONS) == 1  # an answer, not an accident: not retried
    assert loaded(warehouse) == 0


def test_redirect_without_location_is_an_error(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path
) -> None:
    api.route(SUBSCRIPTIONS, lambda req: Answer(307, b""))
    r = sync_subscriptions(token_env(api))
    line = error_line(r, api.token)
    assert "307 redirect without a Location header" in line
    assert loaded(warehouse) == 0


def test_same_origin_redirect_is_followed_and_loads(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path
) -> None:
    api.subscriptions = ROWS
    moved = "/api/v2/developer/subscriptions"
    api.route(
        SUBSCRIPTIONS,
        lambda req: Answer(301, b"", {"Location": f"{moved}?{urlencode(req.query)}"}),
    )
    api.route(moved, lambda req: Answer(200, api.page(req, api.subscriptions)))
    r = sync_subscriptions(token_env(api))
    assert r.code == 0, r.err
    assert loaded(warehouse) == len(ROWS)
    assert api.hits(moved) >= api.hits(SUBSCRIPTIONS) >= 3  # every page went via the redirect


def test_redirect_loop_on_the_same_origin_ends(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path
) -> None:
    api.route(SUBSCRIPTIONS, lambda req: Answer(302, b"", {"Location": SUBSCRIPTIONS}))
    r = sync_subscriptions(token_env(api))
    line = error_line(r, api.token)
    assert "redirected more than 5 times" in line
    assert api.hits(SUBSCRIPTIONS) == 6
    assert loaded(warehouse) == 0


# -- 4. the token as a file gives it: with its line ending -----------------------------------------


@pytest.mark.parametrize("ending", ["\r\n", "\n", " \t"])
def test_token_with_surrounding_whitespace_is_stripped_and_works(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path, ending: str
) -> None:
    api.subscriptions = ROWS
    env = token_env(api)
    env["SOURCES__DEVPORTAL__ACCESS_TOKEN"] = api.token + ending
    r = sync_subscriptions(env)
    assert r.code == 0, r.err
    assert loaded(warehouse) == len(ROWS)
    assert {req.headers.get("authorization") for req in api.requests} == {f"Bearer {api.token}"}


@pytest.mark.parametrize(
    ("inner", "problem"),
    [("\n", "a line break"), ("\r", "a line break"), ("\x1b", "a control character")],
)
def test_token_with_an_inner_line_break_is_a_config_error(
    api: HostileApi, sync_subscriptions: Any, warehouse: Path, inner: str, problem: str
) -> None:
    head, tail = api.token[:10], api.token[10:]
    env = token_env(api)
    env["SOURCES__DEVPORTAL__ACCESS_TOKEN"] = f"{head}{inner}{tail}\r\n"
    r = sync_subscriptions(env)
    line = error_line(r, api.token)
    assert r.code == 2
    assert f"the access token contains {problem}" in line
    assert head not in line and tail not in line
    assert api.requests == []  # refused before anything was sent
    assert loaded(warehouse) == 0
