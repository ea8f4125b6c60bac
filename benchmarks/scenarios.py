"""What `make bench` runs, as one list, in run order.

Phases, each against a sandbox world of one size: `round`, per latency, round after round,
every scenario whose `when` holds (interleaved, seconds apart); `accounts`, once per size;
`big`, once at `--big-size`. A scenario that reuses another's warehouse or database names it in
`on` (as it is) or `after` (only when that run succeeded).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.records import Settings

When = Callable[[Settings, float, int], bool]  # (settings, latency ms, round) -> runs?


def always(s: Settings, latency: float, round_no: int) -> bool:
    return True


def at_0ms(s: Settings, latency: float, round_no: int) -> bool:
    return latency == 0


def models_rss(s: Settings, latency: float, round_no: int) -> bool:
    return latency == 0 and s.models_rss


def slow(s: Settings, latency: float, round_no: int) -> bool:
    return latency == 0 and bool(s.server_ms)


def rate_rounds(s: Settings, latency: float, round_no: int) -> bool:
    return latency == 0 and bool(s.rate_limit) and round_no <= s.rate_rounds


@dataclass(frozen=True)
class Scenario:
    name: str  # the JSON `scenario`; `{pinned}` becomes `--pinned-workers`
    contender: str = "devportal"  # devportal (`sync`) | peer | floor | models (`devportal models`)
    phase: str = "round"  # round | accounts | big
    when: When = always
    latency: float | None = None  # None: the phase's
    repeat: bool = False  # accounts phase: once per round (else once)
    resources: str | None = "subscriptions"  # `--resources`; None: every resource
    on: str = ""  # the scenario (same round or phase) whose warehouse or database this one uses
    after: str = ""  # the same, only when that scenario's last run succeeded
    copy: bool = False  # on a copy of that warehouse (each round its own)
    since: bool = False  # `--since` the window date
    models: bool = False  # no `--no-models`
    pinned: bool = False  # `--workers` the pinned comparison
    throttle: str = ""  # server_ms | rate_limit: the sandbox's load during the run
    postgres: bool = False  # into a fresh database of the throwaway PostgreSQL server
    check: bool = True  # compare the rows read and held with the API's count
    count_table: str = "subscriptions"  # the summary's row count reported as `rows`
    speedups: str | None = None  # DEVPORTAL_SPEEDUPS for the run (None: unset, all on)


ACCOUNTS = "user_accounts"
SCENARIOS: list[Scenario] = [
    Scenario("sweep"),
    Scenario("sweep_postgres", when=at_0ms, postgres=True),
    Scenario("sweep", contender="peer"),
    Scenario("sweep", contender="floor"),
    Scenario("sweep_speedups_off", speedups="off"),  # every latency: the early start pays at 50 ms
    Scenario(
        "sweep_workers{pinned}", pinned=True, when=lambda s, lat, _: lat > 0 and bool(s.pinned)
    ),
    Scenario("second_sweep", on="sweep"),
    Scenario("window", on="sweep", since=True, check=False),
    Scenario("sync_models", when=models_rss, resources=None, models=True),
    Scenario(
        "sync_models_speedups_off", when=models_rss, resources=None, models=True, speedups="off"
    ),
    Scenario("slow_server", when=slow, throttle="server_ms"),
    Scenario("slow_server", contender="floor", when=slow, throttle="server_ms"),
    Scenario("rate_limited", when=rate_rounds, throttle="rate_limit"),
    Scenario(
        "rate_limited_workers{pinned}",
        pinned=True,
        throttle="rate_limit",
        when=lambda s, lat, r: rate_rounds(s, lat, r) and bool(s.pinned),
    ),
    # accounts: set up once, then each round reads every account into its own copy
    Scenario(
        "accounts_setup", phase="accounts", resources="subscriptions,user_settings", check=False
    ),
    Scenario(
        "user_accounts",
        phase="accounts",
        repeat=True,
        after="accounts_setup",
        copy=True,
        resources=ACCOUNTS,
        count_table=ACCOUNTS,
        check=False,
    ),
    Scenario("models", contender="models", phase="accounts", latency=0.0, after="user_accounts"),
    # the same three resources into PostgreSQL, at 0 ms, once
    Scenario(
        "models_setup_postgres",
        phase="accounts",
        latency=0.0,
        postgres=True,
        check=False,
        resources="subscriptions,user_settings,user_accounts",
    ),
    Scenario(
        "models_postgres",
        contender="models",
        phase="accounts",
        latency=0.0,
        postgres=True,
        after="models_setup_postgres",
    ),
    Scenario("sweep", phase="big"),
    Scenario("sweep", contender="floor", phase="big"),
    Scenario(
        "models_setup",
        phase="big",
        after="sweep",
        resources="user_settings,user_accounts",
        count_table=ACCOUNTS,
        check=False,
    ),
    Scenario("models", contender="models", phase="big", after="models_setup"),
]
