"""The dlt source `devportal` and its resources.

Tables written (dataset `devportal`):

- `subscriptions`: SCD2 history keyed on `id` (`_dlt_valid_from`/`_dlt_valid_to`, NULL = current),
  versioned by `_row_version` (hash of service_id, status, expires_at, is_test).
- `user_settings` (merge on `user_id`) and `user_setting_values` (long form, replaced per user).
- `user_accounts` and `user_account_profiles` (merge on `user_id`; 404 -> status `missing`).
- `sync_runs` (one row per run) and `data_quality` (one row per problem kind per run).

A *sweep* reads the whole list and is checked before anything reaches dlt: every page must
report the same `total`, and the unique ids read plus the rows set aside for lacking an id must
equal it. Rows are spooled to a local Arrow file while paging (memory stays flat); if the list
moved while paging, the sweep is read again, and after `sweep_attempts` the run fails having
loaded nothing. A verified sweep retires (closes) the versions of ids the list no longer holds,
within the partitions it read (live, and test with `include_test`), unless that would close more
than `mass_close_max_share` of the current rows (refused unless allowed). A sweep whose pages
carry no `total` cannot be verified: its rows load, nothing is retired. A *window* read
(`start`/`end`) only ever closes versions of ids it read.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import dlt
import numpy as np
import pyarrow as pa
from dlt.common.configuration import configspec
from dlt.common.configuration.specs import BaseConfiguration
from dlt.common.typing import TSecretStrValue

from devportal import transform
from devportal.client import (
    SUBSCRIPTIONS_PATH,
    USER_ACCOUNTS_PATH,
    USER_SETTINGS_PATH,
    ApiClient,
    ClientConfig,
    NotFound,
    Page,
)
from devportal.errors import IntegrityError
from devportal.pipeline import RESOURCES

log = logging.getLogger("devportal.source")

SECTION = "devportal"
API_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@configspec
class DevportalConfig(BaseConfiguration):
    """`[sources.devportal]` in .dlt/config.toml; the token in secrets.toml or the environment."""

    base_url: str | None = None
    access_token: TSecretStrValue | None = None
    # HTTP settings: their defaults live in ClientConfig, the one place that uses them
    workers: int = ClientConfig.workers
    timeout_s: float = ClientConfig.timeout_s
    max_attempts: int = ClientConfig.max_attempts
    max_wait_s: float = ClientConfig.max_wait_s
    backoff_initial_s: float = ClientConfig.backoff_initial_s
    backoff_max_s: float = ClientConfig.backoff_max_s
    retry_after_cap_s: float = ClientConfig.retry_after_cap_s
    include_test: bool = False
    lookback_hours: float = 48.0
    window_horizon_days: float = 366.0
    accounts_ttl_days: float = 7.0
    sweep_attempts: int = 3
    # a sweep that would close more than this share of current subscriptions is refused
    mass_close_max_share: float = 0.2
    allow_mass_close: bool = False
    # a server `Date` further than this from this machine's clock is ignored (0: never check)
    max_clock_skew_hours: float = 24.0
    batch_rows: int = 20_000
    manifest_path: str | None = None

    def client_config(self) -> ClientConfig:
        """The HTTP settings of this configuration (every ClientConfig field it has)."""
        shared = {
            f.name: getattr(self, f.name) for f in fields(ClientConfig) if hasattr(self, f.name)
        }
        return ClientConfig(
            **{**shared, "base_url": self.base_url or "", "access_token": self.access_token or ""}
        )


@dataclass
class SweepReport:
    """What one list read saw; goes into `sync_runs.sweeps`.

    `verified`: the pages reported a `total` and the rows read add up to it (unique ids plus
    rows set aside for lacking an id). Only a verified sweep may retire history.
    """

    endpoint: str
    params: dict[str, str]
    total: int | None = None
    rows: int = 0
    unique_ids: int = 0
    dropped: int = 0
    pages: int = 0
    attempts: int = 0
    complete: bool = False
    verified: bool = False
    note: str | None = None


@dataclass
class RunContext:
    """State of one sync run shared by its resources (counts, data quality, clock)."""

    mode: Literal["sweep", "window"] = "sweep"
    include_test: bool = False
    window_start: datetime | None = None
    window_end: datetime | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC).replace(tzinfo=None))
    observed_at: datetime | None = None
    dq: transform.DataQuality = field(default_factory=transform.DataQuality)
    rows: dict[str, int] = field(default_factory=dict)
    sweeps: list[SweepReport] = field(default_factory=list)
    resources: tuple[str, ...] = RESOURCES
    seen_user_ids: set[int] = field(default_factory=set)
    # current (open) subscription ids in the warehouse for a partition (is_test), for the guard
    current_ids: Callable[[bool], np.ndarray] | None = None
    retire: bool = True  # False when a read could not prove it saw the whole list
    client_stats: Any = None  # the client's counters (lone surrogates replaced in answers)
    extra: dict[str, Any] = field(default_factory=dict)
    progress_every_s: float | None = None  # None: no page progress lines
    _last_progress: float = 0.0

    def page_progress(self, what: str, page: Page, report: SweepReport, rows: int) -> None:
        """A line on stderr every `progress_every_s` while a list is paged (dlt sees rows only
        once a read is verified, so its own progress would stay silent meanwhile)."""
        if self.progress_every_s is None:
            return
        now = time.monotonic()
        if now - self._last_progress < self.progress_every_s:
            return
        self._last_progress = now
        last = page.last_page or "?"
        print(
            f"progress: {what} page {report.pages}/{last}, {rows} rows read"
            + (f" (read {report.attempts})" if report.attempts > 1 else ""),
            file=sys.stderr,
            flush=True,
        )

    def count(self, table: str, n: int) -> None:
        self.rows[table] = self.rows.get(table, 0) + n


# -- list reading with integrity ----------------------------------------------------------


class ListMoved(Exception):
    """The list changed while it was paged; the read is not a snapshot of anything."""


def _check_pages(pages: Iterator[Page], report: SweepReport) -> Iterator[Page]:
    """Pass pages through, failing as soon as they disagree about the list's size."""
    first_total: int | None = None
    first_last: int | None = None
    report.pages = 0
    for page in pages:
        report.pages += 1
        if report.pages == 1:
            first_total, first_last = page.total, page.last_page
            report.total = page.total
        elif page.total != first_total or (first_last is not None and page.last_page != first_last):
            raise ListMoved(f"total went from {first_total} to {page.total} while paging")
        if not page.data and page.next_page_url:
            report.note = f"page {page.number} was empty but pointed to a next page"
        yield page


def _verify_ids(ids: np.ndarray, report: SweepReport, dropped: int = 0) -> None:
    """Check the ids of one read against the wrapper's `total`.

    Rows set aside for lacking a usable id (`dropped`, counted as data quality) are part of the
    total: a list with such a row adds up, and re-reading it would not change anything.
    """
    unique = int(np.unique(ids).size) if ids.size else 0
    report.rows, report.unique_ids, report.dropped = int(ids.size), unique, dropped
    if unique != ids.size:
        raise ListMoved(f"{ids.size - unique} ids appeared twice while paging")
    if report.total is None:
        report.verified = False
        report.note = report.note or "the pages carry no total to check the rows against"
        return
    if unique + dropped != report.total:
        extra = f" and {dropped} rows without a usable id" if dropped else ""
        raise ListMoved(
            f"read {unique} unique rows{extra} but the API reports total {report.total}"
        )
    report.verified = True


@dataclass
class _Spool:
    """One verified read of a partition, on disk until it is handed to dlt."""

    path: Path
    ids: np.ndarray
    is_test: bool
    report: SweepReport


def _read_verified(
    client: ApiClient,
    ctx: RunContext,
    params: dict[str, str],
    is_test: bool,
    attempts: int,
    batch_rows: int,
    spool_dir: Path,
) -> _Spool:
    """Read one partition of the subscription list into a spool file until it adds up."""
    report = SweepReport(endpoint=SUBSCRIPTIONS_PATH, params=params)
    ctx.sweeps.append(report)
    last_error = ""
    for attempt in range(1, attempts + 1):
        report.attempts = attempt
        report.note = None
        dq = transform.DataQuality()
        spool_path = spool_dir / f"{ctx.run_id}-{int(is_test)}-{attempt}.arrow"
        id_chunks: list[np.ndarray] = []
        rows_read = 0
        try:
            with (
                pa.OSFile(str(spool_path), "wb") as sink,
                pa.ipc.new_stream(sink, transform.SUBSCRIPTIONS_SCHEMA) as writer,
            ):
                buffer: list[dict[str, Any]] = []
                for page in _check_pages(client.iter_pages(SUBSCRIPTIONS_PATH, params), report):
                    buffer.extend(page.data)
                    ctx.page_progress("subscriptions", page, report, rows_read + len(buffer))
                    if len(buffer) >= batch_rows:
                        table, ids = transform.subscriptions_table(buffer, is_test, dq)
                        writer.write_table(table)
                        id_chunks.append(ids)
                        rows_read += len(buffer)
                        buffer = []
                if buffer:
                    table, ids = transform.subscriptions_table(buffer, is_test, dq)
                    writer.write_table(table)
                    id_chunks.append(ids)
            all_ids = np.concatenate(id_chunks) if id_chunks else np.zeros(0, np.int64)
            _verify_ids(all_ids, report, dq.count("subscriptions", "id", transform.ID_DROPPED))
        except ListMoved as moved:
            spool_path.unlink(missing_ok=True)
            last_error = str(moved)
            log.warning(
                "subscription list did not add up (%s); reading it again (%d/%d)",
                moved,
                attempt,
                attempts,
            )
            continue
        except BaseException:
            spool_path.unlink(missing_ok=True)
            raise
        report.complete = True
        ctx.dq.merge(dq)
        ctx.count("subscriptions", report.unique_ids)
        if not report.verified:
            log.warning(
                "subscriptions%s: %s; its rows are loaded but no subscription is closed "
                "(only a list that adds up to its total may retire history)",
                " (is_test)" if is_test else "",
                report.note,
            )
        return _Spool(spool_path, all_ids, is_test, report)
    raise IntegrityError(
        f"the subscription list kept changing or did not add up in {attempts} reads "
        f"({last_error}); nothing was loaded: run the sync again later, and if it keeps "
        "failing the API's pages disagree with their own `total`"
    )


def _yield_spool(spool: _Spool, ctx: RunContext) -> Iterator[pa.Table]:
    # a plain read, not a memory map: mapped pages would count as resident memory
    with pa.OSFile(str(spool.path), "rb") as source:
        reader = pa.ipc.open_stream(source)
        for batch in reader:
            services = batch.column("service_id").drop_null().unique()
            ctx.seen_user_ids.update(services.to_pylist())
            yield pa.Table.from_batches([batch], schema=transform.SUBSCRIPTIONS_SCHEMA)


def check_mass_close(ctx: RunContext, spools: Sequence[_Spool], cfg: DevportalConfig) -> None:
    """Refuse a sweep that would close more than `mass_close_max_share` of current rows.

    An API that suddenly lists a fraction of what it listed before is far more often broken
    (a wrong filter, an outage answering 200 with an empty list) than a business that lost most
    of its subscribers overnight; closing them would write that outage into the history.
    """
    if ctx.mode != "sweep" or not ctx.retire or cfg.allow_mass_close or ctx.current_ids is None:
        return
    current_total = closing = 0
    for spool in spools:
        current = ctx.current_ids(spool.is_test)
        current_total += int(current.size)
        if current.size:
            closing += int(np.isin(current, spool.ids, invert=True).sum())
    if current_total and closing > cfg.mass_close_max_share * current_total:
        share = closing / current_total
        raise IntegrityError(
            f"this sweep would close {closing} of {current_total} current subscriptions "
            f"({share:.0%}, more than the {cfg.mass_close_max_share:.0%} guard): nothing was "
            "loaded. If the API really dropped them, run again with --allow-mass-close"
        )


def _api_time(value: datetime) -> str:
    return value.strftime(API_TIME_FORMAT)


# -- resources ------------------------------------------------------------------------------


def subscriptions_resource(
    client: ApiClient, ctx: RunContext, cfg: DevportalConfig, spool_dir: Path
) -> Any:
    """SCD2 history of subscriptions.

    Every partition is read and verified (spooled to disk) when this function is called, before
    the resource exists, so its write disposition (which rows a sweep may retire) is decided on
    what was read, and a refused read never starts a load package: a verified sweep
    retires absent ids of the partitions it read; a window, or a read that cannot prove it saw
    the whole list, only ever closes versions of ids it read.
    """

    def disposition() -> dict[str, Any]:
        hints: dict[str, Any] = {
            "disposition": "merge",
            "strategy": "scd2",
            "row_version_column_name": "_row_version",
        }
        if ctx.observed_at is not None:  # history follows the server's clock
            hints["boundary_timestamp"] = ctx.observed_at
        if ctx.mode == "window" or not ctx.retire:
            hints["destination_scope"] = "{table}.id IN (SELECT id FROM {staging_table})"
        elif not ctx.include_test:
            hints["destination_scope"] = "{table}.is_test = false"  # live sweep: test rows stay
        return hints

    # Read (and verify) before the resource exists: its disposition depends on what was read.
    spools: list[_Spool] = []
    try:
        for is_test in [False, True] if ctx.include_test else [False]:
            params: dict[str, str] = {"is_test": "true"} if is_test else {}
            if ctx.mode == "window":
                assert ctx.window_start is not None and ctx.window_end is not None
                params.update(start=_api_time(ctx.window_start), end=_api_time(ctx.window_end))
            spool = _read_verified(
                client, ctx, params, is_test, cfg.sweep_attempts, cfg.batch_rows, spool_dir
            )
            spools.append(spool)
        ctx.retire = all(spool.report.verified for spool in spools)
        check_mass_close(ctx, spools, cfg)
    except BaseException:
        for spool in spools:
            spool.path.unlink(missing_ok=True)
        raise

    def rows() -> Iterator[pa.Table]:
        try:
            for spool in spools:
                yield from _yield_spool(spool, ctx)
        finally:
            for spool in spools:
                spool.path.unlink(missing_ok=True)

    return dlt.resource(  # type: ignore[call-overload]
        rows(),
        name="subscriptions",
        write_disposition=disposition(),
        columns=transform.SUBSCRIPTIONS_COLUMNS,
        primary_key="id",
    )


def user_settings_resources(client: ApiClient, ctx: RunContext, cfg: DevportalConfig) -> list[Any]:
    """`user_settings` (one row per user) and `user_setting_values` (one row per leaf key)."""
    values: list[dict[str, Any]] = []

    def settings_rows() -> Iterator[list[dict[str, Any]]]:
        report = SweepReport(endpoint=USER_SETTINGS_PATH, params={})
        ctx.sweeps.append(report)
        last_error = ""
        for attempt in range(1, cfg.sweep_attempts + 1):
            report.attempts = attempt
            users: list[dict[str, Any]] = []
            values.clear()
            dq = transform.DataQuality()
            try:
                for page in _check_pages(client.iter_pages(USER_SETTINGS_PATH), report):
                    if ctx.observed_at is None and page.server_time is not None:
                        ctx.observed_at = page.server_time
                    seen_at = ctx.observed_at or ctx.started_at
                    page_users, page_values = transform.user_settings_records(
                        page.data, dq, seen_at
                    )
                    users.extend(page_users)
                    values.extend(page_values)
                _verify_ids(
                    np.array([u["user_id"] for u in users], dtype=np.int64),
                    report,
                    dq.count("user_settings", "user_id", transform.USER_ID_DROPPED),
                )
            except ListMoved as moved:
                last_error = str(moved)
                log.warning("user settings list moved while paging (%s); reading it again", moved)
                continue
            report.complete = True
            ctx.dq.merge(dq)
            ctx.seen_user_ids.update(u["user_id"] for u in users)
            ctx.count("user_settings", len(users))
            ctx.count("user_setting_values", len(values))
            yield users
            return
        raise IntegrityError(
            f"the user settings list kept changing while it was read ({last_error}); "
            "nothing was loaded: run the sync again"
        )

    def value_rows() -> Iterator[list[dict[str, Any]]]:
        yield values

    return _per_user_tables(
        settings_rows(),
        "user_settings",
        transform.USER_SETTINGS_COLUMNS,
        value_rows(),
        "user_setting_values",
        transform.USER_SETTING_VALUES_COLUMNS,
    )


def _per_user_tables(
    rows: Iterator[Any],
    name: str,
    columns: dict[str, Any],
    child_rows: Iterator[Any],
    child_name: str,
    child_columns: dict[str, Any],
) -> list[Any]:
    """A table with one row per `user_id` (upserted) and its child rows, replaced per user.

    delete-insert on merge_key `user_id` replaces a user's children as a whole, so a settings
    key or a linked platform that went away disappears here too. Both load as jsonl: DuckDB's
    default `insert_values` for dicts costs several times the memory and time.
    """
    return [
        dlt.resource(
            rows,
            name=name,
            file_format="jsonl",
            write_disposition={"disposition": "merge", "strategy": "upsert"},
            columns=columns,
            primary_key="user_id",
        ),
        dlt.resource(
            child_rows,
            name=child_name,
            file_format="jsonl",
            write_disposition={"disposition": "merge", "strategy": "delete-insert"},
            columns=child_columns,
            merge_key="user_id",
        ),
    ]


def user_accounts_resources(
    client: ApiClient, ctx: RunContext, due: Callable[[], Sequence[int]]
) -> list[Any]:
    """Profiles of the users `due()` names, fetched with bounded concurrency.

    `due` runs when the resource is extracted, after subscriptions and settings (fifo), so it
    sees the users this run found. A 404 is recorded as status `missing`, not raised.
    """
    profile_rows: list[dict[str, Any]] = []

    def fetch(user_id: int) -> Any:
        try:
            body, _ = client.get_json(USER_ACCOUNTS_PATH.format(user_id=user_id))
        except NotFound:
            return None
        return body

    def account_rows() -> Iterator[list[dict[str, Any]]]:
        fetched_at = ctx.observed_at or ctx.started_at
        batch: list[dict[str, Any]] = []
        user_ids = list(due())
        ctx.extra["accounts_due"] = len(user_ids)
        for user_id, body in client.map_concurrent(fetch, user_ids):
            account, profiles = transform.account_records(user_id, body, fetched_at, ctx.dq)
            batch.append(account)
            profile_rows.extend(profiles)
            if len(batch) >= 1000:
                ctx.count("user_accounts", len(batch))
                yield batch
                batch = []
        ctx.count("user_accounts", len(batch))
        yield batch

    def profile_rows_gen() -> Iterator[list[dict[str, Any]]]:
        ctx.count("user_account_profiles", len(profile_rows))
        yield profile_rows

    return _per_user_tables(
        account_rows(),
        "user_accounts",
        transform.USER_ACCOUNTS_COLUMNS,
        profile_rows_gen(),
        "user_account_profiles",
        transform.USER_ACCOUNT_PROFILES_COLUMNS,
    )


SYNC_RUNS_COLUMNS: dict[str, dict[str, Any]] = {
    "run_id": {"data_type": "text", "nullable": False, "primary_key": True},
    "mode": {"data_type": "text"},
    "include_test": {"data_type": "bool"},
    "resources": {"data_type": "text"},
    "started_at": {"data_type": "timestamp", "timezone": False},
    "observed_at": {"data_type": "timestamp", "timezone": False},
    "window_start": {"data_type": "timestamp", "timezone": False},
    "window_end": {"data_type": "timestamp", "timezone": False},
    "rows_read": {"data_type": "json"},
    "sweeps": {"data_type": "json"},
    "data_quality_problems": {"data_type": "bigint"},
    # whose clock stamped the run: `server` (its Date header) or `machine` (it was too far off)
    "clock_source": {"data_type": "text"},
}

DATA_QUALITY_COLUMNS: dict[str, dict[str, Any]] = {
    "run_id": {"data_type": "text", "nullable": False},
    "table_name": {"data_type": "text"},
    "column_name": {"data_type": "text"},
    "problem": {"data_type": "text"},
    "row_count": {"data_type": "bigint"},
    "sample_ids": {"data_type": "text"},
    "sample_values": {"data_type": "text"},
}


def run_record_resources(ctx: RunContext) -> list[Any]:
    """`sync_runs` and `data_quality`; extracted last (fifo), after every data resource.

    Dict resources load as jsonl: DuckDB's default `insert_values` for dicts costs several
    times the memory and time (measured in benchmarks/results/profile-*.md).
    """

    def run_rows() -> Iterator[dict[str, Any]]:
        # the window cursor travels in the same package as the data it describes
        dlt.current.source_state()["window_cursor"] = (
            ctx.observed_at or ctx.started_at
        ).isoformat()
        yield {
            "run_id": ctx.run_id,
            "mode": ctx.mode,
            "include_test": ctx.include_test,
            "resources": ",".join(ctx.resources),
            "started_at": ctx.started_at,
            "observed_at": ctx.observed_at or ctx.started_at,
            "window_start": ctx.window_start,
            "window_end": ctx.window_end,
            "rows_read": dict(ctx.rows),
            "sweeps": [vars(s) for s in ctx.sweeps],
            "data_quality_problems": ctx.dq.total(),
            "clock_source": ctx.extra.get("clock"),
        }

    def dq_rows() -> Iterator[list[dict[str, Any]]]:
        # extracted after every data resource (fifo): the client's counts are final here
        replaced = getattr(ctx.client_stats, "replaced_surrogates", 0)
        if replaced:
            ctx.dq.add_count("api", "text", "lone_surrogate_replaced", replaced, "U+FFFD")
        yield ctx.dq.records(ctx.run_id)

    return [
        dlt.resource(
            dq_rows(),
            name="data_quality",
            file_format="jsonl",
            write_disposition="append",
            columns=DATA_QUALITY_COLUMNS,
        ),
        dlt.resource(
            run_rows(),
            name="sync_runs",
            file_format="jsonl",
            write_disposition="append",
            columns=SYNC_RUNS_COLUMNS,
        ),
    ]


def window_bounds(
    since: datetime | None, cursor: datetime | None, now: datetime, cfg: DevportalConfig
) -> tuple[datetime, datetime]:
    """`start`/`end` for window mode: `--since`, else the last run's start minus the lookback.

    `end` lies far ahead: which timestamp the API filters on is not documented, and a generous
    end can only include more rows, never fewer.
    """
    if since is not None:
        start = since
    elif cursor is not None:
        start = cursor - timedelta(hours=cfg.lookback_hours)
    else:
        start = now - timedelta(hours=cfg.lookback_hours)
    return start, now + timedelta(days=cfg.window_horizon_days)


@dlt.source(name="devportal", section=SECTION, max_table_nesting=0)
def devportal_source(
    base_url: str = dlt.config.value,
    access_token: TSecretStrValue = dlt.secrets.value,
    include_test: bool = False,
    workers: int = 8,
) -> list[Any]:
    """The Developer API as a plain dlt source (full sweep of subscriptions and user settings).

    For use in your own dlt pipelines; `devportal sync` adds locking, window mode, user accounts,
    run records and models around the same resources.
    """
    cfg = DevportalConfig(
        base_url=base_url, access_token=access_token, include_test=include_test, workers=workers
    )
    client = ApiClient(cfg.client_config())
    ctx = RunContext(include_test=include_test)
    spool = Path(tempfile.mkdtemp(prefix="devportal-spool-"))
    return [
        subscriptions_resource(client, ctx, cfg, spool),
        *user_settings_resources(client, ctx, cfg),
    ]
