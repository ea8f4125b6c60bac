"""The read of one sync: its clock, then every list it wants, read, verified and spooled, and
its record (the row of `sync_runs`), before anything reaches dlt.

`read_api` does the whole read and returns `Reads`, what the dlt resources hand over
(`source.devportal_source(reads=...)`): the read never runs inside dlt's extract, and the
extract never calls it back. A list that does not add up, or a sweep that would close most of
the history, fails here, before a load package exists.

A verified sweep retires (closes) the versions of ids the list no longer holds, within the
partitions it read (live, and test with `include_test`), once each of them is confirmed gone
(`reading.confirm_closes`: a busy API shifts pages under a sweep); a window read, or a read that
cannot prove it saw the whole list, only ever closes versions of ids it read. A window run on a
destination that holds no verified sweep of a partition it reads runs a sweep instead (a window
alone would leave the warehouse holding a sliver of the list). History is stamped with the API
server's clock (its `Date` header), never earlier than the last run's.
"""

from __future__ import annotations

import logging
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from dlt.common.schema.typing import TSchemaContract

from devportal.base.api import UNTIMED
from devportal.base.errors import ConfigError
from devportal.extract import extra_fields, schema_drift, transform
from devportal.extract.destination_state import DatasetReader, Holdings
from devportal.extract.reading import (
    Progress,
    SubscriptionsRead,
    check_mass_close,
    confirm_closes,
    partitions,
    read_accounts,
    read_settings,
    read_subscriptions,
    window_bounds,
)
from devportal.extract.resources import (
    ACCOUNTS_TABLES,
    SETTINGS_TABLES,
    Formats,
    PerUserHandover,
    Rows,
    SubscriptionsHandover,
    formats_for,
)
from devportal.extract.server_clock import clock_page, server_clock
from devportal.extract.sync_record import SyncRecord
from devportal.http import RESOURCES, ApiClient, Page
from devportal.settings.config import DevportalConfig, schema_contract
from devportal.warehouse.paths import spool_root

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

log = logging.getLogger("devportal.source")

# The source's name is its dlt schema's and state's name; it predates this module's shape, and
# existing warehouses keep their schema and window cursor under it.
SOURCE_NAME = "devportal_sync"


def wanted_resources(resources: Sequence[str]) -> tuple[str, ...]:
    """The resources a run reads, each one the API has (else one line naming them)."""
    unknown = set(resources) - set(RESOURCES)
    if unknown:
        raise ConfigError(
            f"unknown resources {sorted(unknown)}; choose from {', '.join(RESOURCES)}"
        )
    return tuple(resources)


def window_cursor(pipeline: Pipeline) -> str | None:
    """The window cursor kept in PIPELINE's state by its last run (the clock of that run),
    what a window run starts from when the destination holds no `sync_runs` row."""
    sources = pipeline.state.get("sources", {}) if pipeline is not None else {}
    cursor = sources.get(SOURCE_NAME, {}).get("window_cursor")
    return str(cursor) if cursor else None


@dataclass
class Reads:
    """What one run read, verified, as its resources hand it over: the subscriptions (None: not
    read), the rows and child rows of each per-user table read (by table name), the run's record
    and its data-quality rows."""

    record: SyncRecord
    problems: Rows
    subscriptions: SubscriptionsHandover | None = None
    per_user: dict[str, PerUserHandover] = field(default_factory=dict)
    unlisted: Rows = field(default_factory=list)  # `user_settings_unlisted` rows


@dataclass(frozen=True)
class Asked:
    """What the caller asked of the run: the resources, and a window (`since`, or `window`:
    from the last run's clock, else `cursor`) instead of a sweep."""

    resources: tuple[str, ...]
    since: datetime | None = None
    window: bool = False
    cursor: str | None = None  # the window cursor in the pipeline's state (its last run's clock)


@dataclass
class ReadInputs:
    """What a run needs of its pipeline and destination, made once and passed in: what the
    destination holds, the folder this run spools to (its own: nothing else in it is touched),
    the file formats for the destination, and the naming and stored columns that decide where
    fields land. `of(None)`: no pipeline (a bare source): nothing held, dlt's formats and a
    temporary spool folder."""

    holdings: Holdings
    spool_dir: Path
    formats: Formats
    naming: extra_fields.Naming
    stored: dict[str, dict[str, Any]]
    has_state: bool  # a pipeline whose state holds the window cursor

    @classmethod
    def of(cls, pipeline: Pipeline | None, session: DatasetReader | None = None) -> ReadInputs:
        """What a run of PIPELINE reads against, its holdings read in SESSION when given."""
        return cls(
            holdings=Holdings.read(pipeline, session),
            spool_dir=_spool_dir(pipeline),
            formats=formats_for(pipeline),
            naming=extra_fields.naming_of(pipeline, SOURCE_NAME),
            stored={
                t: extra_fields.stored_columns(pipeline, SOURCE_NAME, t)
                for t in ("subscriptions", "user_settings", "user_accounts")
            },
            has_state=pipeline is not None,
        )


@dataclass
class _Shape:
    """What decides where fields land and how they are typed: the destination's naming, the
    columns its tables have (its stored dlt schema), the paths earlier runs saw (their
    columns are kept), and the schema contract of the API's tables."""

    naming: extra_fields.Naming
    contract: TSchemaContract
    known: Mapping[str, Any] = field(default_factory=dict)
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class ReadPlan:
    """Who, when and what of one run: fixed before the lists are read."""

    run_id: str
    started_at: datetime
    observed_at: datetime  # the history boundary: the server's clock, after the last run's
    clock_source: str  # `server` (its Date header) or `machine` (the header was too far off)
    mode: str  # `sweep` or `window`
    requested_mode: str  # what was asked; `window` with mode `sweep`: no verified sweep yet
    include_test: bool
    resources: tuple[str, ...]
    window: tuple[datetime, datetime] | None
    first_page: Page | None  # page 1 of the first list to read, when the clock came from it
    # the lists without a time filter this run reads whole (`SyncRecord.refreshed`): a sweep
    # reads them all; a window only those due (`_due`)
    refreshes: frozenset[str] = frozenset()

    @classmethod
    def start(
        cls,
        client: ApiClient,
        cfg: DevportalConfig,
        held: Holdings,
        resources: tuple[str, ...],
        since: datetime | None,
        window: bool,
        cursor: str | None,
    ) -> ReadPlan:
        requested = "window" if (window or since is not None) else "sweep"
        mode = requested
        needed = {False, True} if cfg.include_test else {False}
        if mode == "window" and "subscriptions" in resources and not needed <= held.swept:
            mode = "sweep"
            lists = " and ".join("test" if t else "live" for t in sorted(needed - held.swept))
            log.warning(
                "the destination holds no verified sweep of the %s subscription list: this run "
                "sweeps the whole list instead of a window",
                lists,
            )
        first, reusable = clock_page(client, resources, mode)
        clock = server_clock(first, client.base_url, cfg.max_clock_skew_hours)
        started_at = datetime.now(UTC).replace(tzinfo=None)
        last = held.last_observed
        observed_at = clock or started_at
        if last is not None and observed_at <= last:
            observed_at = last + timedelta(seconds=1)
        bounds = None
        if mode == "window":
            last_run = held.last_observed or (datetime.fromisoformat(cursor) if cursor else None)
            bounds = window_bounds(since, last_run, observed_at, cfg)
        refreshes = {
            name
            for name in UNTIMED
            if name in resources and _due(name, mode, resources, held, observed_at, cfg)
        }
        return cls(
            run_id=uuid.uuid4().hex,
            started_at=started_at,
            observed_at=observed_at,
            clock_source="server" if clock is not None else "machine",
            mode=mode,
            requested_mode=requested,
            include_test=cfg.include_test,
            resources=resources,
            window=bounds,
            first_page=first if reusable else None,
            refreshes=frozenset(refreshes),
        )


def _due(
    name: str,
    mode: str,
    resources: tuple[str, ...],
    held: Holdings,
    observed_at: datetime,
    cfg: DevportalConfig,
) -> bool:
    """Whether this run reads NAME, a list without a time filter, whole: a sweep always; a
    window run (which reads subscriptions: the window is theirs) when the last run that read
    it is `settings_refresh_hours` / `accounts_refresh_hours` old or more, when none did, and
    for the settings, when the table lacks what this version writes. Paging 200,000 users'
    settings every hour cost 10,000 requests for rows that rarely change."""
    if mode == "sweep" or "subscriptions" not in resources:
        return True
    if name == "user_settings" and not held.settings_current:
        return True
    hours = cfg.settings_refresh_hours if name == "user_settings" else cfg.accounts_refresh_hours
    last = held.refreshed.get(name)
    return hours <= 0 or last is None or observed_at - last >= timedelta(hours=hours)


def read_api(
    client: ApiClient, cfg: DevportalConfig, inputs: ReadInputs, asked: Asked, progress: Progress
) -> Reads:
    """The run: its clock, then every list it wants, read and verified, and its record."""
    held = inputs.holdings
    shape_of = _Shape(inputs.naming, api_contract(cfg), held.known_fields, inputs.stored)
    run = ReadPlan.start(
        client, cfg, held, asked.resources, asked.since, asked.window, asked.cursor
    )
    reads = Reads(SyncRecord(), [])
    dq = transform.DataQuality()
    rows: dict[str, int] = {}
    list_reads: list[dict[str, Any]] = []
    seen: set[int] = set()
    fields: extra_fields.Fields = {}
    statuses: dict[str, int] = {}
    first = run.first_page
    if "subscriptions" in run.resources:
        parts = partitions(run.include_test, run.window)
        subs = read_subscriptions(client, parts, cfg, inputs.spool_dir, progress, first)
        first = None
        try:
            if run.mode == "sweep":
                confirm_closes(
                    client, subs, parts, held.current_ids, cfg, inputs.spool_dir, progress
                )
                check_mass_close(subs, held.current_ids, cfg)
            columns = transform.subscription_columns(
                shape_of.naming, shape_of.known.get("subscriptions")
            )
            seen_fields = subs.fields
            plan = _subscriptions_plan(subs, seen_fields, columns, shape_of)
        except BaseException:
            subs.discard()
            raise
        stored = shape_of.stored.get("subscriptions")
        reads.subscriptions = SubscriptionsHandover(
            subs, run.mode, run.observed_at, plan, stored, inputs.spool_dir
        )
        dq.merge(subs.dq)
        rows["subscriptions"] = subs.rows
        list_reads.extend(vars(spool.report) for spool in subs.spools)
        seen.update(subs.user_ids)
        fields["subscriptions"] = seen_fields.record(columns)
        statuses = subs.statuses
    if "user_settings" in run.refreshes:
        known = shape_of.known.get("user_settings")
        settings = read_settings(
            client,
            cfg,
            run.observed_at,
            progress,
            first,
            transform.settings_columns(shape_of.naming, known),
            held.settings,
            inputs.spool_dir,
        )
        reads.per_user[SETTINGS_TABLES.name] = PerUserHandover(settings.users, settings.values)
        reads.unlisted = settings.unlisted
        dq.merge(settings.dq)
        rows.update(user_settings=settings.listed, user_setting_values=settings.values_read)
        list_reads.append(vars(settings.report))
        seen.update(settings.listed_ids.tolist())
        fields["user_settings"] = settings.fields.record(settings.columns)
    if "user_accounts" in run.resources:
        refresh = "user_accounts" in run.refreshes
        due = held.accounts_due(seen, run.observed_at, cfg.accounts_ttl_days, refresh)
        columns = transform.account_columns(shape_of.naming, shape_of.known.get("user_accounts"))
        accounts = read_accounts(client, due, run.observed_at, columns, progress, inputs.spool_dir)
        reads.per_user[ACCOUNTS_TABLES.name] = PerUserHandover(accounts.accounts, accounts.profiles)
        dq.merge(accounts.dq)
        rows.update(user_accounts=accounts.accounts.rows)
        rows.update(user_account_profiles=accounts.profiles_read)
        fields["user_accounts"] = accounts.fields.record(accounts.columns)
    if client.stats.replaced_surrogates:
        dq.add_count(
            "api", "text", "lone_surrogate_replaced", client.stats.replaced_surrogates, "U+FFFD"
        )
    if client.stats.replaced_nul:  # PostgreSQL text cannot hold U+0000
        dq.add_count("api", "text", "nul_replaced", client.stats.replaced_nul, "U+FFFD")
    record = _run_record(run, rows, list_reads, dq, client)
    record.fields, record.statuses = fields, statuses
    record.schema_changes = _schema_changes(run, held, fields, list_reads)
    reads.record, reads.problems = record, dq.records(run.run_id)
    return reads


def api_contract(cfg: DevportalConfig) -> TSchemaContract:
    """`schema_contract` as the API's tables take it: dlt's, except that a table the destination
    does not have yet is created (dlt's shorthand "freeze" would also freeze `tables` and refuse
    a first sync; docs/extra-fields.md: a contract applies to existing tables). The table form's
    own `tables` is kept."""
    contract = schema_contract(cfg)
    if contract == "evolve":
        return "evolve"
    if isinstance(contract, str):
        return cast(
            TSchemaContract, {"tables": "evolve", "columns": contract, "data_type": contract}
        )
    return cast(TSchemaContract, {"tables": "evolve", **contract})


def _schema_changes(
    run: ReadPlan, held: Holdings, fields: extra_fields.Fields, list_reads: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """What changed in the shape of the data since the runs the destination holds."""
    full = schema_drift.full_tables(run.mode, list_reads)
    return schema_drift.changes(held.known_fields, held.last_full_fields, fields, full)


def _subscriptions_plan(
    read: SubscriptionsRead,
    seen: extra_fields.FieldStats,
    columns: extra_fields.Columns,
    shape_of: _Shape,
) -> extra_fields.Plan:
    """How the extra fields of the subscriptions read are typed (`extras.plan`); where a value's
    fit depends on the value, the spooled rows are scanned once before anything is extracted."""
    plan = extra_fields.plan(seen, columns, shape_of.stored.get("subscriptions"))
    if plan.unsure:
        for spool in read.spools:
            for batch in spool.batches():
                plan.scan(batch)
    plan.choose_variants()
    return plan


def _spool_dir(pipeline: Pipeline | None) -> Path:
    """The folder this run spools its subscription reads to, its own: under the pipeline's
    working folder (`spool/run-*`; what a killed run left there is removed by the next writer,
    `transaction.writing`, under the lock), else a temporary folder."""
    if pipeline is None:
        return Path(tempfile.mkdtemp(prefix="devportal-spool-"))
    root = spool_root(pipeline)
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="run-", dir=root))


def _run_record(
    run: ReadPlan,
    rows: dict[str, int],
    list_reads: list[dict[str, Any]],
    dq: transform.DataQuality,
    client: ApiClient,
) -> SyncRecord:
    stats = client.concurrency.stats()
    return SyncRecord(
        run_id=run.run_id,
        mode=run.mode,
        requested_mode=run.requested_mode,
        include_test=run.include_test,
        resources=",".join(run.resources),
        started_at=run.started_at,
        observed_at=run.observed_at,
        refreshed=sorted(run.refreshes),
        window_start=run.window[0] if run.window else None,
        window_end=run.window[1] if run.window else None,
        rows_read=rows,
        sweeps=list_reads,
        data_quality_problems=dq.total(),
        clock_source=run.clock_source,
        requests=client.stats.requests,
        retries=client.stats.retries,
        concurrency_mode=stats.mode,
        concurrency_settled=stats.settled,
        concurrency_peak=stats.peak,
        concurrency_cuts=stats.cuts,
        rate_limited=stats.throttled,
        paused_s=stats.paused_s,
    )
