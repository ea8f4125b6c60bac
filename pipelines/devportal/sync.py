"""One sync run end to end: lock, finish any interrupted load, extract, load, summarise.

A run is one dlt load package: the subscriptions read, user settings, the user accounts due
for refresh, and the run's own records (`sync_runs`, `data_quality`) travel together, so a run
is either in the warehouse whole or not at all. A process killed mid-run leaves either nothing
(killed while extracting: dlt never commits the package) or a complete package that the next
run loads first.

History time: SCD2 versions are stamped with the API server's clock (its `Date` header) at the
start of the run, not this machine's. With the real API the two agree; with the sandbox, whose
clock is simulated, history follows the simulated time, which is what the analytics need.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import dlt
import numpy as np
from dlt.common.configuration.exceptions import (
    ConfigFieldMissingException,
    ConfigValueCannotBeCoercedException,
)
from dlt.common.configuration.resolve import resolve_configuration
from dlt.pipeline.exceptions import PipelineStepFailed

from devportal.client import (
    SUBSCRIPTIONS_PATH,
    USER_SETTINGS_PATH,
    ApiClient,
    is_loopback,
    server_time,
)
from devportal.errors import ConfigError, DevportalError, devportal_cause, first_line
from devportal.pipeline import (
    DATASET,
    PackageSetAside,
    load_whole,
    open_pipeline,
    pipelines_dir,
    warehouse_lock,
)
from devportal.source import (
    RESOURCES,
    DevportalConfig,
    RunContext,
    run_record_resources,
    subscriptions_resource,
    user_accounts_resources,
    user_settings_resources,
    window_bounds,
)

log = logging.getLogger("devportal.sync")

STATE_KEY = "devportal_sync"
# The sandbox marks its `Date` as a simulated clock; believed only from a loopback address.
SIMULATED_CLOCK_HEADER = "X-Sandbox-Clock"
# seconds between progress lines: "auto" speaks only on long runs
PROGRESS_PERIOD = {"auto": 10.0, "on": 2.0}


def _dlt_progress(progress: str) -> Any:
    """dlt's own collector (normalize and load progress) for the same setting."""
    period = PROGRESS_PERIOD.get(progress)
    return dlt.progress.log(log_period=period, logger=sys.stderr) if period else None


@dataclass
class SyncResult:
    run_id: str
    mode: str
    rows: dict[str, int]
    new_versions: int
    closed_versions: int
    retries: int
    requests: int
    seconds: float
    observed_at: datetime | None
    data_quality_problems: int
    resumed_packages: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        parts = [f"{table} {n}" for table, n in self.rows.items()]
        return (
            f"sync ok ({self.mode}) in {self.seconds:.1f}s: "
            + (", ".join(parts) or "no rows")
            + f"; subscription history +{self.new_versions} versions, {self.closed_versions} closed"
            + f"; {self.requests} requests, {self.retries} retries"
            + f"; {self.data_quality_problems} data-quality problems"
            + (f"; as of {self.observed_at:%Y-%m-%d %H:%M:%S}" if self.observed_at else "")
            + (
                f"; the package of an interrupted run could not load and was set aside "
                f"({', '.join(self.extra['set_aside'])}: see `devportal packages`)"
                if self.extra.get("set_aside")
                else ""
            )
            + (
                "; stamped with this machine's clock (the API's Date header was too far off)"
                if self.extra.get("clock") == "machine"
                else ""
            )
            + (
                "; the subscription list could not be verified against a total, so no "
                "subscription was closed"
                if self.extra.get("unverified")
                else ""
            )
        )


def resolve_config(**overrides: Any) -> DevportalConfig:
    """`[sources.devportal]` from config/secrets/env, with non-None `overrides` on top."""
    explicit = {k: v for k, v in overrides.items() if v is not None}
    try:
        cfg = resolve_configuration(
            DevportalConfig(), sections=("sources", "devportal"), explicit_value=explicit or None
        )
    except ConfigFieldMissingException as err:
        raise ConfigError(
            f"missing configuration {err.fields}: see README 'Configuration'"
        ) from None
    except ConfigValueCannotBeCoercedException as err:
        raise ConfigError(_bad_value(err.field_name, err.field_value, err.hint)) from None
    if not cfg.base_url:
        raise ConfigError(
            "no base_url: set [sources.devportal] base_url in .dlt/config.toml, "
            "SOURCES__DEVPORTAL__BASE_URL, or pass --base-url"
        )
    if not cfg.access_token:
        raise ConfigError(
            "no access token: set SOURCES__DEVPORTAL__ACCESS_TOKEN or access_token under "
            "[sources.devportal] in .dlt/secrets.toml"
        )
    return cfg


def _bad_value(name: str, value: Any, hint: Any) -> str:
    kind = {int: "a whole number", float: "a number", bool: "true or false"}.get(
        hint, getattr(hint, "__name__", str(hint))
    )
    shown = "the value given" if "token" in name else repr(value)
    return (
        f"configuration {name} = {shown} is not {kind}: fix [sources.devportal] {name} in "
        f".dlt/config.toml or SOURCES__DEVPORTAL__{name.upper()}"
    )


def _server_clock(headers: Any, base_url: str, max_skew_hours: float) -> datetime | None:
    """The API's clock from its `Date` header, or None to use this machine's.

    A clock far from this machine's (a misconfigured server, a proxy's cached answer) would
    stamp the run's history in another year, and every later run after it: it is ignored with
    a warning. The sandbox's simulated clock is believed when it says so from loopback.
    """
    told = server_time(headers)
    if told is None or max_skew_hours <= 0:
        return told
    if headers.get(SIMULATED_CLOCK_HEADER) and is_loopback(urlsplit(base_url).hostname or ""):
        return told
    local = datetime.now(UTC).replace(tzinfo=None)
    if abs(told - local) > timedelta(hours=max_skew_hours):
        log.warning(
            "the API's clock says %s, %.1f hours from this machine's (%s); the run is stamped "
            "with this machine's clock (max_clock_skew_hours = %g)",
            f"{told:%Y-%m-%d %H:%M:%S}",
            (told - local).total_seconds() / 3600,
            f"{local:%Y-%m-%d %H:%M:%S}",
            max_skew_hours,
        )
        return None
    return told


class _Sql:
    """One session on the destination dataset for a few bookkeeping queries."""

    def __init__(self, pipeline: Any) -> None:
        self._pipeline = pipeline
        self._client: Any = None

    def __enter__(self) -> _Sql:
        try:
            self._client = self._pipeline.sql_client()
            self._client.open_connection()
        except Exception:  # no dataset yet (fresh warehouse): every query answers None
            self._client = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close_connection()

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]] | None:
        """Rows, or None when the table does not exist yet; a real failure shows in the load."""
        if self._client is None:
            return None
        try:
            return list(self._client.execute_sql(sql, *params) or [])
        except Exception:
            return None

    def int_column(self, sql: str, *params: Any) -> np.ndarray:
        """The first column as an int64 array (DuckDB's numpy fetch: a million ids in ms)."""
        empty = np.zeros(0, dtype=np.int64)
        if self._client is None:
            return empty
        try:
            with self._client.execute_query(sql, *params) as cursor:
                native: Any = getattr(cursor, "native_cursor", None)
                if hasattr(native, "fetchnumpy"):
                    columns = native.fetchnumpy()
                    return np.asarray(next(iter(columns.values()), empty), dtype=np.int64)
                return np.array([r[0] for r in cursor.fetchall()], dtype=np.int64)
        except Exception:  # no table yet: nothing is current
            return empty


def _history_counts(sql: _Sql) -> tuple[int, int]:
    rows = sql.query(
        f"SELECT count(*), count(*) FILTER (WHERE _dlt_valid_to IS NULL) FROM {DATASET}.subscriptions",
    )
    return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)


def _finish_pending(
    pipeline: Any, warehouse: str | Path, destination: Any, set_aside_ids: list[str]
) -> int:
    """Settle what a killed run left, before reading anything new.

    A normalized package is complete and carries its own schema (with its SCD2 boundary): load
    it, all or nothing (see `load_whole`); one that cannot load is set aside and this run goes on.
    An extracted package never reached the warehouse; normalizing it now would use the
    pipeline's current schema, whose boundary hint belongs to another run, so it is discarded
    (dlt restores the local state it had started from) and its data is simply read again.
    """
    settled = 0
    normalized = pipeline.list_normalized_load_packages()
    if normalized:
        log.warning("finishing %d load package(s) left by an interrupted run", len(normalized))
        try:
            load_whole(pipeline, warehouse, destination)
        except PackageSetAside as aside:
            log.warning("%s; this run goes on", aside)
            set_aside_ids.append(aside.load_id)
        settled += len(normalized)
    extracted = pipeline.list_extracted_load_packages()
    if extracted:
        log.warning(
            "discarding %d unloaded package(s) of an interrupted run; their data is read again",
            len(extracted),
        )
        pipeline.abort_packages()
        settled += len(extracted)
    return settled


def _boundary(sql: _Sql, server_time: datetime | None) -> datetime:
    """The time stamped on this run's history: the server's clock, never before the last run."""
    now = server_time or datetime.now(UTC).replace(tzinfo=None)
    rows = sql.query(f"SELECT max(observed_at) FROM {DATASET}.sync_runs")
    last = rows[0][0] if rows and rows[0][0] is not None else None
    if last is not None:
        last = last.replace(tzinfo=None)
        if now <= last:
            now = last + timedelta(seconds=1)
    return now


def _current_ids(pipeline: Any, is_test: bool) -> Any:
    """Ids of the current subscription versions of one partition (numpy), for the guard."""
    with _Sql(pipeline) as sql:
        return sql.int_column(
            f"SELECT id FROM {DATASET}.subscriptions WHERE _dlt_valid_to IS NULL AND is_test = %s",
            is_test,
        )


def _accounts_due(pipeline: Any, seen: set[int], as_of: datetime, ttl_days: float) -> list[int]:
    """Users seen now or before whose accounts are missing or older than the TTL."""
    everyone = set(seen)
    with _Sql(pipeline) as sql:
        fresh_rows = sql.query(
            f"SELECT user_id FROM {DATASET}.user_accounts WHERE fetched_at > %s",
            as_of - timedelta(days=ttl_days),
        )
        # each table on its own: either may not exist yet
        for known in (
            sql.query(
                f"SELECT DISTINCT service_id FROM {DATASET}.subscriptions "
                "WHERE service_id IS NOT NULL"
            ),
            sql.query(f"SELECT user_id FROM {DATASET}.user_settings"),
        ):
            everyone.update(int(r[0]) for r in known or ())
    fresh = {int(r[0]) for r in fresh_rows or ()}
    return sorted(everyone - fresh)


def sync(
    warehouse: str | Path,
    *,
    base_url: str | None = None,
    access_token: str | None = None,
    resources: Sequence[str] = RESOURCES,
    since: datetime | None = None,
    window: bool = False,
    include_test: bool | None = None,
    destination: Any = None,
    progress: str = "off",
    build_models: bool = True,
    **config: Any,
) -> SyncResult:
    """Run one sync into `warehouse`. Raises DevportalError with a one-line cause on failure."""
    unknown = set(resources) - set(RESOURCES)
    if unknown:
        raise ConfigError(
            f"unknown resources {sorted(unknown)}; choose from {', '.join(RESOURCES)}"
        )
    cfg = resolve_config(
        base_url=base_url, access_token=access_token, include_test=include_test, **config
    )
    started = time.monotonic()
    with warehouse_lock(warehouse):
        pipeline = open_pipeline(warehouse, destination, _dlt_progress(progress))
        dlt.config["extract.next_item_mode"] = "fifo"  # run records after the data
        set_aside_ids: list[str] = []
        resumed = _finish_pending(pipeline, warehouse, destination, set_aside_ids)
        client = ApiClient(cfg.client_config())
        try:
            result = _run(
                pipeline,
                client,
                cfg,
                tuple(resources),
                since,
                window,
                warehouse,
                destination,
                progress,
            )
        finally:
            client.close()
        result.resumed_packages = resumed
        if set_aside_ids:
            result.extra["set_aside"] = set_aside_ids
        result.seconds = time.monotonic() - started
    if build_models:
        _build_models(warehouse, destination, result)
    result.seconds = time.monotonic() - started
    return result


def _build_models(warehouse: str | Path, destination: Any, result: SyncResult) -> None:
    if destination is None:  # the models are DuckDB SQL
        from devportal import models

        result.extra["models"] = models.build(warehouse)


def _run(
    pipeline: Any,
    client: ApiClient,
    cfg: DevportalConfig,
    resources: tuple[str, ...],
    since: datetime | None,
    window: bool,
    warehouse: str | Path,
    destination: Any,
    progress: str,
) -> SyncResult:
    mode: Literal["sweep", "window"] = "window" if (window or since is not None) else "sweep"
    ctx = RunContext(
        mode=mode,
        include_test=cfg.include_test,
        resources=resources,
        progress_every_s=PROGRESS_PERIOD.get(progress),
        current_ids=lambda is_test: _current_ids(pipeline, is_test),
        client_stats=client.stats,
    )
    # The first page of the first list tells the server's clock; it becomes the history boundary.
    probe_path = SUBSCRIPTIONS_PATH if "subscriptions" in resources else USER_SETTINGS_PATH
    probe_params: dict[str, str] = {"page": "1"}
    if probe_path == SUBSCRIPTIONS_PATH and mode == "window":
        probe_params = {"start": "1970-01-01", "end": "1970-01-02"}
    replaced = client.stats.replaced_surrogates
    _, headers = client.get_json(probe_path, probe_params)
    client.stats.replaced_surrogates = replaced  # the page is read again: count it once
    with _Sql(pipeline) as sql:
        clock = _server_clock(headers, client.base_url, cfg.max_clock_skew_hours)
        ctx.extra["clock"] = "server" if clock is not None else "machine"
        ctx.observed_at = _boundary(sql, clock)
        before_total, before_current = _history_counts(sql)
    if mode == "window":
        state = pipeline.state.get("sources", {}).get(STATE_KEY, {})
        cursor = state.get("window_cursor")
        ctx.window_start, ctx.window_end = window_bounds(
            since, datetime.fromisoformat(cursor) if cursor else None, ctx.observed_at, cfg
        )
    spool = pipelines_dir(warehouse) / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    for stale in spool.glob("*.arrow"):  # left by a killed run (we hold the warehouse lock)
        stale.unlink(missing_ok=True)

    data: list[Any] = []
    if "subscriptions" in resources:
        data.append(subscriptions_resource(client, ctx, cfg, spool))
    if "user_settings" in resources:
        data.extend(user_settings_resources(client, ctx, cfg))
    if "user_accounts" in resources:
        observed = ctx.observed_at
        data.extend(
            user_accounts_resources(
                client,
                ctx,
                lambda: _accounts_due(pipeline, ctx.seen_user_ids, observed, cfg.accounts_ttl_days),
            )
        )
    data.extend(run_record_resources(ctx))

    @dlt.source(name=STATE_KEY, max_table_nesting=0)
    def run_source() -> list[Any]:
        return data

    try:
        pipeline.extract(run_source())
        pipeline.normalize()
    except PipelineStepFailed as err:
        cause = devportal_cause(err)
        if cause is not None:
            raise cause from None
        raise DevportalError(f"sync failed in {err.step}: {first_line(err)}") from None
    load_whole(pipeline, warehouse, destination)
    if mode == "sweep" and not ctx.retire:
        ctx.extra["unverified"] = True
    with _Sql(pipeline) as sql:
        after_total, after_current = _history_counts(sql)
    new_versions = after_total - before_total
    return SyncResult(
        run_id=ctx.run_id,
        mode=mode,
        rows=dict(ctx.rows),
        new_versions=new_versions,
        closed_versions=before_current + new_versions - after_current,
        retries=client.stats.retries,
        requests=client.stats.requests,
        seconds=0.0,
        observed_at=ctx.observed_at,
        data_quality_problems=ctx.dq.total(),
        extra=dict(ctx.extra),
    )
