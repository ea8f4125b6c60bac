"""Every setting under `[sources.devportal]`: one configspec, resolved by dlt; `[analytics]`'s.

dlt looks each field up in the environment (`SOURCES__DEVPORTAL__<FIELD>`), `.dlt/secrets.toml`
and `.dlt/config.toml`, in that order, the project's `.dlt/` (in the current folder) before
dlt's global one (`settings.files` names them); `devportal_source(...)` receives them as
arguments and `resolve()` turns what is missing or malformed into a one-line `ConfigError`. The
only secret is `access_token`: it reaches the HTTP session's headers and nothing else. A key
under `[sources.devportal]`, `[analytics]` or `[alerts]` that no setting reads (a misspelt
`max_worker`) is one warning naming the closest key (`warn_unknown_keys`).
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, cast

from dlt.common.configuration import configspec
from dlt.common.configuration.exceptions import (
    ConfigFieldMissingException,
    ConfigurationException,
    ConfigValueCannotBeCoercedException,
)
from dlt.common.configuration.resolve import resolve_configuration
from dlt.common.configuration.specs import BaseConfiguration
from dlt.common.typing import TSecretStrValue
from dlt.destinations.impl.postgres.configuration import PostgresCredentials

from devportal.base.api import SPEC_STATUSES
from devportal.base.errors import ConfigError, register_secret
from devportal.settings import files
from devportal.settings.http import HttpSettings, check_base_url

log = logging.getLogger("devportal.config")

SECTION = "devportal"
SECTIONS = ("sources", SECTION)


@dataclass
class LoadSettings:
    """The DuckDB warehouse's load connection (`pipeline.open_pipeline`), fields of
    `[sources.devportal]` defined once here: resolved on their own where only they are needed
    (a manifest load must not fail on an unrelated HTTP setting)."""

    duckdb_threads: int = 1
    duckdb_memory_limit: str = "128MB"  # DuckDB spills beyond it: flat memory on big merges


@configspec
class LoadConfig(BaseConfiguration, LoadSettings):
    """`LoadSettings` as dlt resolves them, from the same section."""


@dataclass
class HomeSettings:
    """Where the warehouse lives, a field of `[sources.devportal]` defined once here (not named
    `destination`: dlt would fall back to the root table `[destination]` of the credentials):
    `duckdb`
    (the DuckDB file at --warehouse) or a dlt destination's name (`postgres`: the database of
    DESTINATION__POSTGRES__CREDENTIALS), used by every command given neither --destination
    nor --warehouse (`home_destination`)."""

    warehouse_destination: str = "duckdb"


@configspec
class HomeConfig(BaseConfiguration, HomeSettings):
    """`HomeSettings` as dlt resolves them, on their own: a command reading the warehouse
    must not fail on an unrelated HTTP setting."""


@configspec
class DevportalConfig(BaseConfiguration, HttpSettings, LoadSettings, HomeSettings):
    """`[sources.devportal]`; the token in secrets.toml or the environment.

    The HTTP settings (`base_url`, the token, workers, timeouts, retries, the body cap) are
    `client.settings.HttpSettings`'s fields and the DuckDB load connection's are `LoadSettings`',
    inherited: defined there once, with their defaults and meaning. The fields below say what a
    run reads and its guards.
    """

    access_token: TSecretStrValue | None = None  # HttpSettings' field, marked a secret for dlt
    # -- what a run reads
    include_test: bool = False
    lookback_hours: float = 48.0  # window mode: start this long before the last run
    window_horizon_days: float = 366.0  # window mode: `end` this far ahead
    accounts_ttl_days: float = 7.0  # a user account older than this is fetched again
    # The settings list and the accounts have no time filter: a window run reads the whole
    # settings list only when the last run that did is this many hours old or more, and fetches
    # the accounts due by accounts_ttl_days likewise (it always fetches the accounts of users it
    # sees for the first time). A sweep always reads both. 0: every window run reads both.
    settings_refresh_hours: float = 24.0
    accounts_refresh_hours: float = 24.0
    sweep_attempts: int = 3  # reads of a list that does not add up before giving up
    # a verified sweep asks the API about each subscription it would close (`?id=N`), up to
    # this many; with more, it reads the list again until two reads agree (sweep_attempts)
    confirm_closes_max: int = 100
    batch_rows: int = 20_000  # at most this many rows per Arrow batch spooled and handed to dlt
    # -- guards
    # a sweep that would close more than this share of current subscriptions is refused
    mass_close_max_share: float = 0.2
    allow_mass_close: bool = False
    # a server `Date` further than this from this machine's clock is ignored (0: never check)
    max_clock_skew_hours: float = 24.0
    # -- fields the spec does not show (docs/extra-fields.md)
    # dlt's schema contract for the API's tables: "evolve" (default), "freeze", "discard_value",
    # "discard_row", or a table of them per entity (tables / columns / data_type)
    schema_contract: Any = "evolve"
    # extra fields whose change alone makes no new subscription version (glob patterns matched
    # against the dotted field path and against its last name); unset: HISTORY_IGNORE_DEFAULT
    history_ignore_fields: list[str] | None = None
    # -- `devportal sync` records this app manifest with every run when set
    manifest_path: str | None = None


# Fields that by their names say when they were read or touched, not what was sold: a change in
# them alone makes no new version (a plan, a price, an interval still do). See
# docs/extra-fields.md; `history_ignore_fields = []` versions on every field.
HISTORY_IGNORE_DEFAULT = (
    "updated_at",
    "modified_at",
    "*_seen_at",
    "*fetched_at",
    "*synced_at",
    "*checked_at",
    "*refreshed_at",
    "server_time",
    "request_id",
)
CONTRACT_MODES = ("evolve", "freeze", "discard_value", "discard_row")
CONTRACT_ENTITIES = ("tables", "columns", "data_type")


def schema_contract(cfg: DevportalConfig) -> str | dict[str, str]:
    """`schema_contract` as dlt takes it; a bad value is one line naming the key."""
    value = cfg.schema_contract
    if isinstance(value, str) and value.strip().startswith("{"):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    fix = (
        "fix [sources.devportal] schema_contract in .dlt/config.toml or "
        "SOURCES__DEVPORTAL__SCHEMA_CONTRACT"
    )
    if value is None:
        return "evolve"
    if isinstance(value, str):
        if value not in CONTRACT_MODES:
            raise ConfigError(
                f"configuration schema_contract = {value!r} is not one of "
                f"{', '.join(CONTRACT_MODES)}: {fix}"
            )
        return value
    if isinstance(value, dict):
        for entity, mode in value.items():
            if entity not in CONTRACT_ENTITIES:
                raise ConfigError(
                    f"configuration schema_contract.{entity} is no entity of a schema contract "
                    f"(choose {', '.join(CONTRACT_ENTITIES)}): {fix}"
                )
            if mode not in CONTRACT_MODES:
                raise ConfigError(
                    f"configuration schema_contract.{entity} = {mode!r} is not one of "
                    f"{', '.join(CONTRACT_MODES)}: {fix}"
                )
        return {str(k): str(v) for k, v in value.items()}
    raise ConfigError(f"configuration schema_contract = {value!r} is not a mode or a table: {fix}")


def history_ignore(cfg: DevportalConfig) -> tuple[str, ...]:
    """The glob patterns of extra fields whose change alone makes no new version."""
    if cfg.history_ignore_fields is None:
        return HISTORY_IGNORE_DEFAULT
    return tuple(str(p) for p in cfg.history_ignore_fields)


# -- [analytics]: how the models read the data (issue 20 adds the price book here) ---------------

ANALYTICS_SECTIONS = ("analytics",)
STATUS_TREATMENTS = SPEC_STATUSES  # each treated as itself; status_map maps the others
# the [analytics] keys that take a number (the price book's)
ANALYTICS_NUMBERS = ("price_monthly", "price_yearly", "price_unknown", "revenue_share")


@configspec
class AnalyticsConfig(BaseConfiguration):
    """`[analytics]` in .dlt/config.toml (or `ANALYTICS__<KEY>`).

    `status_map`: how churn and renewal figures treat a status beyond `active` / `canceled`
    (e.g. `trialing = "active"`, `past_due = "canceled"`). A status not in the map is "other":
    usable until `expires_at` like any subscription, never a cancellation, shown on its own line.

    The price book (the API sends no prices; `devportal.settings.prices` validates these into the seed
    `analytics.prices`): `currency` (ISO 4217), `price_monthly`, `price_yearly`, `price_unknown`
    (a subscription whose period is not known yet; unset: `price_monthly`), `revenue_share`
    (the developer's share after the platform's cut: 1.0 is gross), `prices_file` (CSV or TOML
    rows `period, amount, valid_from[, valid_to]`, relative to the current folder; overrides
    the three flat prices). No price set: every money figure is NULL, not an error.
    """

    status_map: dict[str, str] | None = None
    currency: str | None = None
    price_monthly: float | None = None
    price_yearly: float | None = None
    price_unknown: float | None = None
    revenue_share: float = 1.0
    prices_file: str | None = None


def resolve_analytics() -> AnalyticsConfig:
    """`[analytics]` from env/config; a bad value is one line naming the key."""

    warn_unknown_keys()
    try:
        cfg = resolve_configuration(AnalyticsConfig(), sections=ANALYTICS_SECTIONS)
    except ConfigValueCannotBeCoercedException as err:
        fix = f"fix it in .dlt/config.toml or ANALYTICS__{err.field_name.upper()}"
        if err.field_name in ANALYTICS_NUMBERS:
            raise ConfigError(
                f"configuration [analytics] {err.field_name} = {err.field_value!r} is not a "
                f"number: {fix}"
            ) from err
        raise ConfigError(
            f"configuration [analytics] {err.field_name} cannot be read as {err.hint}: {fix}"
        ) from err
    for status, treated in (cfg.status_map or {}).items():
        if treated not in STATUS_TREATMENTS:
            raise ConfigError(
                f"configuration [analytics] status_map.{status} = {treated!r} must be "
                f"{' or '.join(repr(t) for t in STATUS_TREATMENTS)}: fix [analytics] status_map in "
                ".dlt/config.toml"
            )
        if status in STATUS_TREATMENTS:
            raise ConfigError(
                f"configuration [analytics] status_map.{status}: {status!r} is a status the "
                "models already know; map only other statuses"
            )
    return cfg


def resolve(*, require_api: bool = True, **explicit: Any) -> DevportalConfig:
    """`[sources.devportal]` from env/secrets/config, with the non-None `explicit` on top.

    `require_api`: fail unless a base URL and a token are set (what reading the API needs)."""

    warn_unknown_keys()
    given = {k: v for k, v in explicit.items() if v is not None}
    try:
        cfg = resolve_configuration(
            DevportalConfig(), sections=SECTIONS, explicit_value=given or None
        )
    except ConfigFieldMissingException as err:
        raise ConfigError(
            f"missing configuration {err.fields} under [sources.devportal]: {files.where_read()}"
        ) from err  # names the keys tried, never a value
    except ConfigValueCannotBeCoercedException as err:
        # from None: the cause carries the value given (`field_value`, and the coercion error
        # chained to it quotes it), which may be the access token, not yet known to the scrub
        raise ConfigError(bad_value(err.field_name, err.field_value, err.hint)) from None
    check_workers(cfg)
    schema_contract(cfg)
    return require_endpoint(cfg) if require_api else cfg


def resolve_load() -> LoadConfig:
    """Only the DuckDB load connection's settings from env/config; a bad value is one line."""

    warn_unknown_keys()
    try:
        return resolve_configuration(LoadConfig(), sections=SECTIONS)
    except ConfigValueCannotBeCoercedException as err:
        raise ConfigError(bad_value(err.field_name, err.field_value, err.hint)) from err


def home_destination() -> str | None:
    """The configured warehouse (`[sources.devportal] warehouse_destination`, or
    SOURCES__DEVPORTAL__WAREHOUSE_DESTINATION): None for the DuckDB file, else the dlt destination's name
    (lower case). A value that is no name is one line naming the key."""

    warn_unknown_keys()
    try:
        value = resolve_configuration(HomeConfig(), sections=SECTIONS).warehouse_destination
    except ConfigValueCannotBeCoercedException as err:
        raise ConfigError(bad_value(err.field_name, err.field_value, err.hint)) from err
    name = str(value or "").strip().lower()
    if not name.replace("_", "").isalnum():
        raise ConfigError(
            f"configuration warehouse_destination = {value!r} is no destination's name: write "
            'warehouse_destination = "postgres" (or "duckdb", the file at --warehouse) under '
            "[sources.devportal] in .dlt/config.toml, or SOURCES__DEVPORTAL__WAREHOUSE_DESTINATION"
        )
    return None if name == "duckdb" else name


def check_workers(cfg: DevportalConfig) -> None:
    """Concurrency bounds that make sense: 1 <= min_workers <= max_workers, workers >= 1."""
    for name in ("workers", "min_workers", "max_workers"):
        value = getattr(cfg, name)
        if value is not None and value < 1:
            raise ConfigError(
                f"configuration {name} = {value} must be at least 1: fix [sources.devportal] "
                f"{name} in .dlt/config.toml or SOURCES__DEVPORTAL__{name.upper()}"
            )
    if cfg.min_workers > cfg.max_workers:
        raise ConfigError(
            f"configuration min_workers = {cfg.min_workers} is above max_workers = "
            f"{cfg.max_workers}: fix [sources.devportal] in .dlt/config.toml"
        )


def require_endpoint(cfg: DevportalConfig) -> DevportalConfig:
    """The settings without which nothing can be read: a base URL and a token, the URL checked
    (`client.check_base_url`) before anything else is done."""
    if not cfg.base_url:
        raise ConfigError(
            "no base_url: set base_url under [sources.devportal] in .dlt/config.toml, "
            f"SOURCES__DEVPORTAL__BASE_URL, or pass --base-url; {files.where_read()}"
        )
    if not cfg.access_token:
        raise ConfigError(
            "no access token: set SOURCES__DEVPORTAL__ACCESS_TOKEN, or access_token under "
            f"[sources.devportal] in .dlt/secrets.toml; {files.where_read()}"
        )
    check_base_url(cfg.base_url, cfg.allow_insecure_remote)
    return cfg


# -- keys nobody reads -----------------------------------------------------------------------

# The sections devportal owns, with their configspec (the `[alerts]` one is imported when asked:
# `alerts_spec`). dlt ignores a key no field asks for, so a misspelt `max_worker = 64` would
# silently leave the default in place.
OWN_SECTIONS: tuple[tuple[str, ...], ...] = (SECTIONS, ANALYTICS_SECTIONS, ("alerts",))
WARNED_ENV = "DEVPORTAL_WARNED_KEYS"
_warned_lock = threading.Lock()


def alerts_spec() -> type[BaseConfiguration] | None:
    """`[alerts]`' configspec (`devportal.settings.alerts.AlertsConfig`), None where absent."""
    try:
        # deferred: loads dlt, kept out of startup
        from devportal.settings.alerts import AlertsConfig
    except ImportError:
        return None
    return cast("type[BaseConfiguration]", AlertsConfig)


def known_keys() -> dict[tuple[str, ...], set[str]]:
    """Each section devportal owns and the keys its configspec reads."""
    specs: list[type[BaseConfiguration] | None] = [DevportalConfig, AnalyticsConfig, alerts_spec()]
    return {
        section: set(spec.get_resolvable_fields())
        for section, spec in zip(OWN_SECTIONS, specs, strict=True)
        if spec is not None
    }


def _misspelt_sections(known: dict[tuple[str, ...], set[str]]) -> list[str]:
    """A section written in a settings file whose name is close to one devportal owns but is
    not it (`[source.devportal]`, `[analytic]`): dlt reads nothing from it, and what is missing
    then ("no base_url") would not say why."""
    names = {".".join(section): section for section in known}
    owned = set(names) | {section[0] for section in known}
    lines = []
    for path, section in files.sections():
        name = ".".join(section)
        if name in owned:
            continue
        close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.8)
        if close:
            lines.append(
                f"unknown section [{name}] in {path} is ignored: did you mean [{close[0]}]?"
            )
    return lines


def unknown_keys() -> list[str]:
    """One line for each key written under a section devportal owns that no setting reads:
    in a TOML file dlt reads (the project's `.dlt/` or the global one; config or secrets) or
    in the environment (`SOURCES__DEVPORTAL__<KEY>`, `ANALYTICS__<KEY>`, `ALERTS__<KEY>`).
    The closest known key is named; a value is never shown."""
    known = known_keys()
    lines = _misspelt_sections(known)
    for section, keys in known.items():
        name = f"[{'.'.join(section)}]"
        for path, table in files.written(section):
            for key in table:
                if key not in keys:
                    hint = _closest(key, section, keys, known, env=False)
                    lines.append(f"unknown key {key} under {name} in {path} is ignored{hint}")
        prefix = "__".join(section).upper() + "__"
        for variable in files.environment(prefix):
            key = variable[len(prefix) :].split("__")[0].lower()
            if key not in keys:
                hint = _closest(key, section, keys, known, env=True)
                lines.append(f"unknown environment variable {variable} is ignored{hint}")
    return lines


def warn_unknown_keys() -> None:
    """Log each unknown key (`unknown_keys`) once per run, however often settings are
    resolved: every command that reads settings calls it. A run is this process, the process
    image `devportal sync` execs for the models included (`cli.speedups`): the keys warned of
    are marked in the environment under this process id, which an exec keeps. A settings file
    dlt cannot read is said here, first, in one line (`settings.files.SettingsFileError`)."""
    try:
        lines, unreadable = unknown_keys(), ""
    except files.SettingsFileError as err:
        lines, unreadable = [], str(err)
    if unreadable:  # raised apart from the except: no context to print
        raise ConfigError(unreadable)
    if not lines:
        return
    with _warned_lock:
        owner, _, marks = os.environ.get(WARNED_ENV, "").partition(" ")
        warned = set(marks.split(",")) if owner == str(os.getpid()) else set()
        for line in lines:
            mark = hashlib.sha1(line.encode()).hexdigest()[:12]
            if mark not in warned:
                warned.add(mark)
                log.warning("%s", line)
        os.environ[WARNED_ENV] = f"{os.getpid()} {','.join(sorted(warned - {''}))}"


def _closest(
    key: str,
    section: tuple[str, ...],
    keys: set[str],
    known: dict[tuple[str, ...], set[str]],
    *,
    env: bool,
) -> str:
    """`: did you mean max_workers?` (in the environment's spelling for a variable), or where
    the key belongs when another section reads it."""
    prefix = "__".join(section).upper() + "__" if env else ""
    close = difflib.get_close_matches(key, sorted(keys), n=1)
    if close:
        return f": did you mean {prefix}{close[0].upper() if env else close[0]}?"
    for other, other_keys in known.items():
        if other != section and key in other_keys:
            where = "__".join(other).upper() + "__" + key.upper() if env else f"[{'.'.join(other)}]"
            return f": {key} belongs {'in' if env else 'under'} {where}"
    return f": [{'.'.join(section)}] has no such key (docs/configuration.md lists them)"


def bad_value(name: str, value: Any, hint: Any) -> str:
    """One line for a setting dlt could not coerce; a token's value is never shown."""
    kind = {int: "a whole number", float: "a number", bool: "true or false"}.get(
        hint, getattr(hint, "__name__", str(hint))
    )
    shown = "the value given" if "token" in name else repr(value)
    return (
        f"configuration {name} = {shown} is not {kind}: fix [sources.devportal] {name} in "
        f".dlt/config.toml or SOURCES__DEVPORTAL__{name.upper()}"
    )


# -- dlt's PostgreSQL credentials, as every command reads them ------------------------------

POSTGRES_SECTIONS = ("destination", "postgres", "credentials")
POSTGRES_FORM = "postgresql://user[:password]@host:5432/database"
POSTGRES_WHERE = (
    "DESTINATION__POSTGRES__CREDENTIALS (or [destination.postgres.credentials] in "
    ".dlt/secrets.toml)"
)


@configspec(init=False)
class PostgresLogin(PostgresCredentials):
    """dlt's credentials of its `postgres` destination, the password optional.

    dlt's `PostgresCredentials` requires one ("Missing 1 field(s) ... password"), but a server
    that trusts the connection (trust auth, a local socket) needs none, and libpq finds one in
    `~/.pgpass` or `PGPASSWORD` when the URI has none: then none is sent, as psql would do."""

    password: TSecretStrValue | None = None  # type: ignore[assignment]  # optional here


def postgres_login() -> PostgresLogin:
    """The `postgres` destination's credentials from env/secrets/config, resolved once the same
    way for every command (the sync's pipeline, the models, the report, the writer lock); what
    is missing or malformed is one line naming it, never a value."""

    warn_unknown_keys()
    try:
        login = resolve_configuration(PostgresLogin(), sections=POSTGRES_SECTIONS)
    except ConfigFieldMissingException as err:
        missing = ", ".join(err.fields)
        raise ConfigError(
            f"PostgreSQL credentials lack {missing} (a password is optional): set "
            f"{POSTGRES_WHERE} to {POSTGRES_FORM}; {files.where_read()}"
        ) from None  # dlt's error may chain the URI's parse error, which quotes its password
    except ConfigurationException:  # the URI does not parse; its text may hold the password
        raise ConfigError(
            f"DESTINATION__POSTGRES__CREDENTIALS is not a connection URI: write it as "
            f"{POSTGRES_FORM}"
        ) from None
    if login.password:  # a driver's message may quote it: every shown text is scrubbed
        register_secret(str(login.password))
    return login
