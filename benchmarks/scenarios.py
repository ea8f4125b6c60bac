"""What `make bench` runs, in run order, by phase against a sandbox world of one size: `round`
(per latency, round after round, every scenario whose `when` holds), `accounts` (once per size),
`big` (once at `--big-size`), `growth` (once per `--growth-sizes` world: a first sweep, hourly
windows with the sandbox clock advanced an hour before each, a nightly sweep). `on`/`after` name
the scenario whose warehouse a run reuses. The models worlds (issue 35: `devportal models` on
PostgreSQL beside DuckDB on the same data) are played by `run.Bench.run_models_worlds` with the
`WORLD_*` scenarios below."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.records import Settings


@dataclass(frozen=True)
class Scenario:
    name: str  # the JSON `scenario`; `{pinned}` becomes `--pinned-workers`
    contender: str = "devportal"  # devportal (`sync`) | peer | floor | models (`devportal models`)
    phase: str = "round"  # round | accounts | big
    at: str = ""  # "0": only at 0 ms; ">0": only above 0 ms
    needs: str = ""  # a setting that must be set (`models_rss`, `server_ms`, `pinned`, ...)
    rate_rounds: bool = False  # only in the first `--rate-rounds` rounds, with a rate limit
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
    window: bool = False  # `--window`: from the last run's cursor minus the lookback
    advance: str = ""  # hour | night: move the sandbox clock (an hour; to NIGHTLY_AT) first
    hourly: bool = False  # growth phase: once per hourly run of the world (else once)
    disk: bool = False  # record the warehouse file and the dlt folder beside it after the run
    verbose: bool = False  # `--verbose` (`devportal models`: each model's time, `model_seconds`)

    def when(self, s: Settings, latency: float, round_no: int) -> bool:
        """Whether it runs in this round at this latency."""
        at = {"": True, "0": latency == 0, ">0": latency > 0}[self.at]
        rate = not self.rate_rounds or (bool(s.rate_limit) and round_no <= s.rate_rounds)
        return at and rate and (not self.needs or bool(getattr(s, self.needs)))


ACCOUNTS = "user_accounts"
NIGHTLY_AT = (3, 40)  # the growth scenario's nightly sweep: the README's cron (`40 3 * * *`)
SCENARIOS: list[Scenario] = [
    Scenario("sweep"),
    Scenario("sweep_postgres", at="0", postgres=True),
    Scenario("sweep", contender="peer"),
    Scenario("sweep", contender="floor"),
    # issue 31's "near the floor": the same sweep with its models, judged against the floor
    # (0 ms) and the peer (50 ms) of the same round
    Scenario("sweep_models", models=True),
    Scenario("sweep_speedups_off", speedups="off"),  # every latency: the early start pays at 50 ms
    Scenario("sweep_workers{pinned}", pinned=True, at=">0", needs="pinned"),
    Scenario("second_sweep", on="sweep"),
    Scenario("window", on="sweep", since=True, check=False),
    Scenario("sync_models", at="0", needs="models_rss", resources=None, models=True),
    Scenario(
        "sync_models_speedups_off",
        at="0",
        needs="models_rss",
        resources=None,
        models=True,
        speedups="off",
    ),
    Scenario("slow_server", at="0", needs="server_ms", throttle="server_ms"),
    Scenario("slow_server", contender="floor", at="0", needs="server_ms", throttle="server_ms"),
    Scenario("rate_limited", at="0", rate_rounds=True, throttle="rate_limit"),
    Scenario(
        "rate_limited_workers{pinned}",
        pinned=True,
        at="0",
        rate_rounds=True,
        needs="pinned",
        throttle="rate_limit",
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
    # growth: the README's cron on one warehouse, every run a plain `devportal sync` (every
    # resource, its models, default settings); after a failed window the next still runs
    Scenario("growth_first_sweep", phase="growth", resources=None, models=True, disk=True),
    Scenario(
        "growth_window",
        phase="growth",
        resources=None,
        models=True,
        after="growth_first_sweep",
        window=True,
        advance="hour",
        hourly=True,
        check=False,
        disk=True,
    ),
    Scenario(
        "growth_nightly_sweep",
        phase="growth",
        resources=None,
        models=True,
        after="growth_first_sweep",
        advance="night",
        disk=True,
    ),
]


# The models worlds (`--models-worlds`, issue 35), each with a sandbox of its own: the world is
# synced into a DuckDB warehouse and a PostgreSQL database in lockstep (`WORLD_SYNC`,
# `WORLD_SYNC_POSTGRES`, the clock advanced between syncs), optionally carried over by `devportal
# migrate` into another database (`WORLD_MIGRATE`), then each round builds the models on each
# engine from nothing (`WORLD_MODELS`: a fresh copy of the warehouse; the database's
# `analytics` dropped first), `--verbose`, so every model's time is in the run's record.
WORLD_SYNC = Scenario("world_sync", phase="world", resources=None, check=False)
WORLD_SYNC_POSTGRES = Scenario(
    "world_sync_postgres", phase="world", resources=None, check=False, postgres=True
)
WORLD_MIGRATE = Scenario("world_migrate", contender="migrate", phase="world", postgres=True)
WORLD_MODELS = [
    Scenario("world_models", contender="models", phase="world", verbose=True),
    Scenario(
        "world_models_postgres", contender="models", phase="world", postgres=True, verbose=True
    ),
    Scenario(
        "world_models_migrated", contender="models", phase="world", postgres=True, verbose=True
    ),
]
