"""Reading the API's lists so that they can be trusted: paging with integrity checks.

A *read* pages through a whole list (or a `start`/`end` window of it) and is checked before
anything reaches dlt: every page must report the same `total`, and the unique ids read plus the
rows set aside for lacking an id must equal it. If the list moved while it was paged, it is read
again; after `sweep_attempts` reads the run fails having loaded nothing. A read whose pages carry
no `total` cannot be verified: its rows may load, but it may not retire (close) history.

Subscriptions are spooled to a local Arrow file while paging, so memory stays flat; user
settings and the user accounts due are small and stay in memory. Every function here returns
what it read, checked; the source (`source.py`) turns the results into dlt resources.
"""

from __future__ import annotations

import logging
import sys
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from devportal import transform
from devportal.client import (
    SUBSCRIPTIONS_PATH,
    USER_ACCOUNTS_PATH,
    USER_SETTINGS_PATH,
    ApiClient,
    NotFound,
    Page,
)
from devportal.config import DevportalConfig
from devportal.errors import IntegrityError

log = logging.getLogger("devportal.reading")

API_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


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


class ListMoved(Exception):
    """The list changed while it was paged; the read is not a snapshot of anything."""


@dataclass
class Progress:
    """A line on stderr every `every_s` while a list is paged (dlt sees the rows only once a
    read is verified, so its own progress would stay silent meanwhile). None: silent."""

    every_s: float | None = None
    _last: float = 0.0

    def page(self, what: str, page: Page, report: SweepReport, rows: int) -> None:
        if self.every_s is None:
            return
        now = time.monotonic()
        if now - self._last < self.every_s:
            return
        self._last = now
        print(
            f"progress: {what} page {report.pages}/{page.last_page or '?'}, {rows} rows read"
            + (f" (read {report.attempts})" if report.attempts > 1 else ""),
            file=sys.stderr,
            flush=True,
        )


def check_pages(pages: Iterator[Page], report: SweepReport) -> Iterator[Page]:
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


def verify_ids(ids: np.ndarray, report: SweepReport, dropped: int = 0) -> None:
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


# -- subscriptions ----------------------------------------------------------------------------


class Spool:
    """One verified read of a subscription partition, on disk until dlt has taken it.

    The file goes when `discard()` is called, or with this object (a source created but never
    run leaves nothing behind)."""

    def __init__(self, path: Path, ids: np.ndarray, is_test: bool, report: SweepReport) -> None:
        self.path, self.ids, self.is_test, self.report = path, ids, is_test, report
        self._finalizer = weakref.finalize(self, path.unlink, missing_ok=True)

    def batches(self) -> Iterator[pa.Table]:
        # a plain read, not a memory map: mapped pages would count as resident memory
        with pa.OSFile(str(self.path), "rb") as source:
            for batch in pa.ipc.open_stream(source):
                yield pa.Table.from_batches([batch], schema=transform.SUBSCRIPTIONS_SCHEMA)

    def discard(self) -> None:
        self._finalizer()


@dataclass
class SubscriptionsRead:
    """Every partition read, verified and spooled; what the resource and the run record need."""

    spools: list[Spool]
    dq: transform.DataQuality
    user_ids: set[int]

    @property
    def verified(self) -> bool:
        return all(spool.report.verified for spool in self.spools)

    @property
    def rows(self) -> int:
        return sum(spool.report.unique_ids for spool in self.spools)

    def discard(self) -> None:
        for spool in self.spools:
            spool.discard()


@dataclass
class Partition:
    """One slice of the subscription list a run reads: live or test rows, whole or a window."""

    is_test: bool
    params: dict[str, str] = field(default_factory=dict)


def partitions(
    include_test: bool, window: tuple[datetime, datetime] | None = None
) -> list[Partition]:
    """The live partition, and the test one with `include_test`; `window` adds start/end."""
    found = []
    for is_test in [False, True] if include_test else [False]:
        params: dict[str, str] = {"is_test": "true"} if is_test else {}
        if window is not None:
            params.update(start=window[0].strftime(API_TIME_FORMAT))
            params.update(end=window[1].strftime(API_TIME_FORMAT))
        found.append(Partition(is_test, params))
    return found


def read_subscriptions(
    client: ApiClient,
    parts: Sequence[Partition],
    cfg: DevportalConfig,
    spool_dir: Path,
    progress: Progress,
    first: Page | None = None,
) -> SubscriptionsRead:
    """Read and verify every partition; `first` is page 1 of the first one, already fetched."""
    read = SubscriptionsRead([], transform.DataQuality(), set())
    try:
        for n, part in enumerate(parts):
            spool_path = spool_dir / f"{id(read):x}-{int(part.is_test)}.arrow"
            spool, dq = _read_partition(
                client, part, cfg, spool_path, progress, read.user_ids, first if n == 0 else None
            )
            read.spools.append(spool)
            read.dq.merge(dq)
    except BaseException:
        read.discard()
        raise
    return read


def _read_partition(
    client: ApiClient,
    part: Partition,
    cfg: DevportalConfig,
    spool_path: Path,
    progress: Progress,
    user_ids: set[int],
    first: Page | None,
) -> tuple[Spool, transform.DataQuality]:
    """Read one partition into a spool file until it adds up (at most `sweep_attempts`)."""
    report = SweepReport(endpoint=SUBSCRIPTIONS_PATH, params=part.params)
    last_error = ""
    for attempt in range(1, cfg.sweep_attempts + 1):
        report.attempts, report.note = attempt, None
        dq = transform.DataQuality()
        pages = client.iter_pages(SUBSCRIPTIONS_PATH, part.params, first if attempt == 1 else None)
        try:
            ids, services = _spool_pages(
                check_pages(pages, report),
                part.is_test,
                dq,
                spool_path,
                cfg.batch_rows,
                lambda page, rows: progress.page("subscriptions", page, report, rows),
            )
            verify_ids(ids, report, dq.count("subscriptions", "id", transform.ID_DROPPED))
        except ListMoved as moved:
            spool_path.unlink(missing_ok=True)
            last_error = str(moved)
            log.warning(
                "subscription list did not add up (%s); reading it again (%d/%d)",
                moved,
                attempt,
                cfg.sweep_attempts,
            )
            continue
        except BaseException:
            spool_path.unlink(missing_ok=True)
            raise
        report.complete = True
        user_ids.update(services)
        if not report.verified:
            log.warning(
                "subscriptions%s: %s; its rows are loaded but no subscription is closed "
                "(only a list that adds up to its total may retire history)",
                " (is_test)" if part.is_test else "",
                report.note,
            )
        return Spool(spool_path, ids, part.is_test, report), dq
    raise IntegrityError(
        f"the subscription list kept changing or did not add up in {cfg.sweep_attempts} reads "
        f"({last_error}); nothing was loaded: run the sync again later, and if it keeps "
        "failing the API's pages disagree with their own `total`"
    )


def _spool_pages(
    pages: Iterator[Page],
    is_test: bool,
    dq: transform.DataQuality,
    spool_path: Path,
    batch_rows: int,
    on_page: Callable[[Page, int], None],
) -> tuple[np.ndarray, set[int]]:
    """Transform pages into Arrow batches of about `batch_rows` in a spool file.

    Returns the ids written (for the integrity check) and the users (`service_id`) seen."""
    id_chunks: list[np.ndarray] = []
    services: set[int] = set()
    rows_read = 0
    with (
        pa.OSFile(str(spool_path), "wb") as sink,
        pa.ipc.new_stream(sink, transform.SUBSCRIPTIONS_SCHEMA) as writer,
    ):
        buffer: list[dict[str, Any]] = []

        def flush() -> None:
            table, ids = transform.subscriptions_table(buffer, is_test, dq)
            writer.write_table(table)
            id_chunks.append(ids)
            services.update(table.column("service_id").drop_null().unique().to_pylist())

        for page in pages:
            buffer.extend(page.data)
            on_page(page, rows_read + len(buffer))
            if len(buffer) >= batch_rows:
                flush()
                rows_read += len(buffer)
                buffer = []
        if buffer:
            flush()
    return (np.concatenate(id_chunks) if id_chunks else np.zeros(0, np.int64)), services


def check_mass_close(
    read: SubscriptionsRead, current_ids: Callable[[bool], np.ndarray], cfg: DevportalConfig
) -> None:
    """Refuse a verified sweep that would close more than `mass_close_max_share` of the
    current rows (`current_ids(is_test)`: the open versions the destination holds).

    An API that suddenly lists a fraction of what it listed before is far more often broken
    (a wrong filter, an outage answering 200 with an empty list) than a business that lost most
    of its subscribers overnight; closing them would write that outage into the history.
    """
    if not read.verified or cfg.allow_mass_close:
        return
    current_total = closing = 0
    for spool in read.spools:
        current = current_ids(spool.is_test)
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


def window_bounds(
    since: datetime | None, cursor: datetime | None, now: datetime, cfg: DevportalConfig
) -> tuple[datetime, datetime]:
    """`start`/`end` for window mode: `--since`, else the last run's clock minus the lookback.

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


# -- user settings ----------------------------------------------------------------------------


@dataclass
class SettingsRead:
    """The whole user settings list, verified: one row per user and one per settings leaf."""

    users: list[dict[str, Any]]
    values: list[dict[str, Any]]
    dq: transform.DataQuality
    report: SweepReport


def read_settings(
    client: ApiClient,
    cfg: DevportalConfig,
    seen_at: datetime,
    progress: Progress,
    first: Page | None = None,
) -> SettingsRead:
    """Read the settings list until it adds up (at most `sweep_attempts`)."""
    report = SweepReport(endpoint=USER_SETTINGS_PATH, params={})
    last_error = ""
    for attempt in range(1, cfg.sweep_attempts + 1):
        report.attempts = attempt
        read = SettingsRead([], [], transform.DataQuality(), report)
        pages = client.iter_pages(USER_SETTINGS_PATH, None, first if attempt == 1 else None)
        try:
            for page in check_pages(pages, report):
                users, values = transform.user_settings_records(page.data, read.dq, seen_at)
                read.users.extend(users)
                read.values.extend(values)
                progress.page("user settings", page, report, len(read.users))
            verify_ids(
                np.array([u["user_id"] for u in read.users], dtype=np.int64),
                report,
                read.dq.count("user_settings", "user_id", transform.USER_ID_DROPPED),
            )
        except ListMoved as moved:
            last_error = str(moved)
            log.warning("user settings list moved while paging (%s); reading it again", moved)
            continue
        report.complete = True
        return read
    raise IntegrityError(
        f"the user settings list kept changing while it was read ({last_error}); "
        "nothing was loaded: run the sync again"
    )


# -- user accounts ----------------------------------------------------------------------------


@dataclass
class AccountsRead:
    """The accounts of the users due: one row each (404: status `missing`) and their profiles."""

    accounts: list[dict[str, Any]]
    profiles: list[dict[str, Any]]
    dq: transform.DataQuality


def read_accounts(client: ApiClient, user_ids: Sequence[int], fetched_at: datetime) -> AccountsRead:
    """Fetch each user's account, `workers` at a time; a 404 is recorded, not raised."""

    def fetch(user_id: int) -> Any:
        try:
            body, _ = client.get_json(USER_ACCOUNTS_PATH.format(user_id=user_id))
        except NotFound:
            return None
        return body

    read = AccountsRead([], [], transform.DataQuality())
    for user_id, body in client.map_concurrent(fetch, list(user_ids)):
        account, profiles = transform.account_records(user_id, body, fetched_at, read.dq)
        read.accounts.append(account)
        read.profiles.extend(profiles)
    return read
