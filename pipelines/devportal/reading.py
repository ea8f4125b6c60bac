"""Reading the API's lists so that they can be trusted: paging with integrity checks.

A *read* pages through a whole list (or a `start`/`end` window of it) and is checked before
anything reaches dlt: every page must report the same `total`, and the unique ids read plus the
rows set aside for lacking an id must equal it. If the list moved while it was paged, it is read
again; after `sweep_attempts` reads the run fails having loaded nothing. A read whose pages carry
no `total` cannot be verified: its rows may load, but it may not retire (close) history.

A verified read is still not a snapshot: a subscription created while another is removed keeps
the `total`, and the rows behind the removed one slide back one place, so the row that crosses a
page boundary is never seen. Before a sweep closes what it did not read, `settle_closes` makes
sure each of those is gone (see there): a sweep never closes a subscription the API still has.

Subscriptions are spooled to a local Arrow file while paging, so memory stays flat; user
settings and the user accounts due are small and stay in memory. Every function here returns
what it read, checked; the source (`source.py`) turns the results into dlt resources. Each
result also says which fields its rows had and the kinds of their values (`extras.FieldStats`),
and the subscriptions read how many rows had each status.
"""

from __future__ import annotations

import logging
import sys
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from devportal import extras, transform
from devportal.client import (
    SUBSCRIPTIONS_PATH,
    USER_ACCOUNTS_PATH,
    USER_SETTINGS_PATH,
    ApiClient,
    NotFound,
    Page,
)
from devportal.config import DevportalConfig, history_ignore
from devportal.errors import ApiError, IntegrityError
from devportal.values import to_int

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
    # how the current subscriptions this read did not list were settled (`Settling.record`)
    closing: dict[str, Any] | None = None


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


# decoded page bytes a spooled batch holds at most (about): the rows of a batch are Python
# objects until it is typed, so rows that carry many fields make smaller batches (20,000 rows of
# the spec's four fields are about 2 MB: unaffected; wide rows are not held 20,000 at a time)
BATCH_BYTES = 3 * 2**20


class Spool:
    """One verified read of a subscription partition, on disk until dlt has taken it.

    The file goes when `discard()` is called, or with this object (a source created but never
    run leaves nothing behind). `extra`: rows the read missed that the API confirmed one by one
    (`?id=N`), loaded after the file's. `kept`: current ids the sweep may not close although it
    did not read them (nothing settled them); `closes_missing` False: it closes none of those.
    `fields`: the paths its rows had; `statuses`: rows per status (the confirmed rows included).
    """

    def __init__(
        self,
        path: Path,
        ids: np.ndarray,
        is_test: bool,
        report: SweepReport,
        dq: transform.DataQuality,
        fields: extras.FieldStats | None = None,
        statuses: Counter[str] | None = None,
    ) -> None:
        self.path, self.ids, self.is_test, self.report, self.dq = path, ids, is_test, report, dq
        self.fields = fields if fields is not None else extras.FieldStats()
        self.statuses = statuses if statuses is not None else Counter()
        self.extra: pa.Table | None = None
        self.kept = np.zeros(0, dtype=np.int64)
        self.closes_missing = report.verified
        self._finalizer = weakref.finalize(self, path.unlink, missing_ok=True)

    @property
    def extra_ids(self) -> np.ndarray:
        if self.extra is None:
            return np.zeros(0, dtype=np.int64)
        return self.extra.column("id").to_numpy().astype(np.int64)

    @property
    def rows(self) -> int:
        """Rows handed to dlt: the unique ids read and the rows confirmed one by one."""
        return self.report.unique_ids + (self.extra.num_rows if self.extra is not None else 0)

    def staying(self) -> np.ndarray:
        """The ids this sweep leaves current: read, confirmed, or kept."""
        return np.concatenate([self.ids, self.extra_ids, self.kept])

    def batches(self) -> Iterator[pa.Table]:
        """Each spooled batch (an Arrow stream of its own: its extra columns are its own)."""
        # a plain read, not a memory map: mapped pages would count as resident memory
        with pa.OSFile(str(self.path), "rb") as source:
            size = source.size()
            while source.tell() < size:
                yield pa.ipc.open_stream(source).read_all()
        if self.extra is not None and self.extra.num_rows:
            yield self.extra

    def discard(self) -> None:
        self._finalizer()


@dataclass
class SubscriptionsRead:
    """Every partition read, verified and spooled; what the resource and the run record need.

    `user_ids`: the users (`service_id`) of live subscriptions: a test subscription's user is
    not a user of the live app (their accounts are not fetched)."""

    spools: list[Spool]
    user_ids: set[int]

    @property
    def dq(self) -> transform.DataQuality:
        merged = transform.DataQuality()
        for spool in self.spools:
            merged.merge(spool.dq)
        return merged

    @property
    def rows(self) -> int:
        return sum(spool.rows for spool in self.spools)

    @property
    def fields(self) -> extras.FieldStats:
        """The paths of every row handed to dlt, first seen first (live before test)."""
        merged = extras.FieldStats()
        for spool in self.spools:
            merged.merge(spool.fields)
        return merged

    @property
    def statuses(self) -> dict[str, int]:
        """{status as sent: rows handed to dlt}."""
        total: Counter[str] = Counter()
        for spool in self.spools:
            total.update(spool.statuses)
        return dict(total.most_common())

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
    read = SubscriptionsRead([], set())
    try:
        for n, part in enumerate(parts):
            first_page = first if n == 0 else None
            read.spools.append(_read_into(client, read, part, cfg, spool_dir, progress, first_page))
    except BaseException:
        read.discard()
        raise
    return read


def _read_into(
    client: ApiClient,
    read: SubscriptionsRead,
    part: Partition,
    cfg: DevportalConfig,
    spool_dir: Path,
    progress: Progress,
    first: Page | None,
) -> Spool:
    """One read of PART for READ: a spool file of its own, live users added to READ's."""
    user_ids = set() if part.is_test else read.user_ids
    spool_path = _spool_path(spool_dir, read, part)
    return _read_partition(client, part, cfg, spool_path, progress, user_ids, first)


def _spool_path(spool_dir: Path, read: SubscriptionsRead, part: Partition) -> Path:
    """A spool file of its own for each read of each partition (a re-read replaces a spool)."""
    path = spool_dir / f"{id(read):x}-{int(part.is_test)}.arrow"
    n = 1
    while path.exists():
        n += 1
        path = spool_dir / f"{id(read):x}-{int(part.is_test)}-{n}.arrow"
    return path


def _read_partition(
    client: ApiClient,
    part: Partition,
    cfg: DevportalConfig,
    spool_path: Path,
    progress: Progress,
    user_ids: set[int],
    first: Page | None,
) -> Spool:
    """Read one partition into a spool file until it adds up (at most `sweep_attempts`)."""
    report = SweepReport(endpoint=SUBSCRIPTIONS_PATH, params=part.params)
    last_error = ""
    ignored = extras.ignore_matcher(history_ignore(cfg))
    for attempt in range(1, cfg.sweep_attempts + 1):
        report.attempts, report.note = attempt, None
        dq = transform.DataQuality()
        fields, statuses = extras.FieldStats(ignored), Counter[str]()
        pages = client.iter_pages(SUBSCRIPTIONS_PATH, part.params, first if attempt == 1 else None)
        try:
            ids, services = _spool_pages(
                check_pages(pages, report),
                part.is_test,
                dq,
                spool_path,
                cfg.batch_rows,
                lambda page, rows: progress.page("subscriptions", page, report, rows),
                fields,
                statuses,
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
        return Spool(spool_path, ids, part.is_test, report, dq, fields, statuses)
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
    fields: extras.FieldStats | None = None,
    statuses: Counter[str] | None = None,
) -> tuple[np.ndarray, set[int]]:
    """Transform pages into Arrow batches of about `batch_rows` in a spool file, one Arrow
    stream after another (each batch has the extra columns of its own rows).

    Returns the ids written (for the integrity check) and the users (`service_id`) seen; the
    fields seen go to FIELDS, the rows per status to STATUSES."""
    id_chunks: list[np.ndarray] = []
    services: set[int] = set()
    rows_read = 0
    fields = fields if fields is not None else extras.FieldStats()
    with pa.OSFile(str(spool_path), "wb") as sink:
        buffer: list[dict[str, Any]] = []

        def flush() -> None:
            table, ids = transform.subscriptions_table(buffer, is_test, dq, fields)
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            id_chunks.append(ids)
            services.update(table.column("service_id").drop_null().unique().to_pylist())
            if statuses is not None:
                statuses.update(transform.status_counts(table.column("status")))

        buffered = 0  # decoded bytes of the pages in `buffer`: pages of huge rows flush early
        for page in pages:
            buffer.extend(page.data)
            buffered += page.size
            on_page(page, rows_read + len(buffer))
            if len(buffer) >= batch_rows or buffered >= BATCH_BYTES:
                flush()
                rows_read += len(buffer)
                buffer, buffered = [], 0
        if buffer:
            flush()
    return (np.concatenate(id_chunks) if id_chunks else np.zeros(0, np.int64)), services


def check_mass_close(
    read: SubscriptionsRead, current_ids: Callable[[bool], np.ndarray], cfg: DevportalConfig
) -> None:
    """Refuse a verified sweep that would close more than `mass_close_max_share` of the
    current rows (`current_ids(is_test)`: the open versions the destination holds), once
    `settle_closes` has decided what it closes.

    An API that suddenly lists a fraction of what it listed before is far more often broken
    (a wrong filter, an outage answering 200 with an empty list) than a business that lost most
    of its subscribers overnight; closing them would write that outage into the history.
    """
    if cfg.allow_mass_close:
        return
    current_total = closing = 0
    for spool in read.spools:
        current = current_ids(spool.is_test)
        current_total += int(current.size)
        if current.size and spool.closes_missing:  # else it closes nothing it did not read
            closing += int(np.isin(current, spool.staying(), invert=True).sum())
    if current_total and closing > cfg.mass_close_max_share * current_total:
        share = closing / current_total
        raise IntegrityError(
            f"this sweep would close {closing} of {current_total} current subscriptions "
            f"({share:.0%}, more than the {cfg.mass_close_max_share:.0%} guard): nothing was "
            "loaded. If the API really dropped them, run again with --allow-mass-close"
        )


# -- settling what a sweep closes --------------------------------------------------------------

LISTED, GONE, UNCLEAR = "listed", "gone", "unclear"


@dataclass
class Settling:
    """How the current subscriptions one verified read did not list were settled; recorded as
    the read's `closing` in `sync_runs.sweeps` (the id lists hold at most `confirm_closes_max`
    ids: only ids asked about one by one are named)."""

    missing: int = 0  # current subscriptions the first read did not list
    asked: int = 0  # of them, asked about one by one (`?id=N`)
    listed: list[int] = field(default_factory=list)  # the API still has them: loaded
    gone: list[int] = field(default_factory=list)  # it answered 404: closed
    unclear: list[int] = field(default_factory=list)  # the answer settled nothing
    reads: int = 1  # reads of the list in all
    agreed: bool | None = None  # the last two reads listed the same ids (None: one read)
    kept: int = 0  # left current because nothing settled them (a later sweep will)
    closes: int = 0  # current versions this sweep closes

    def record(self) -> dict[str, Any]:
        return dict(vars(self))


def settle_closes(
    client: ApiClient,
    read: SubscriptionsRead,
    parts: Sequence[Partition],
    current_ids: Callable[[bool], np.ndarray],
    cfg: DevportalConfig,
    spool_dir: Path,
    progress: Progress,
) -> None:
    """Make sure a sweep closes only subscriptions the API no longer has.

    What a verified read of a partition did not list of its current ids (`current_ids(is_test)`)
    is what the sweep would close. Up to `confirm_closes_max` of those are asked about one by
    one (`?id=N`, spec 4.1; `&is_test=true` for test ids): a 404 is gone (closed); an answer with
    the subscription is still there (its row is loaded: a new version if it changed, never
    closed); an answer that does not say for sure settles nothing (`judge_answer`). What is left
    unsettled, or every missing id when there are more than `confirm_closes_max`, is settled by
    reading the partition again until two reads in a row list the same ids (at most
    `sweep_attempts` reads in all): the last read is then a snapshot, and what it does not list
    is gone. Without agreement nothing unsettled is closed; a later sweep will. Each partition's
    report records how (`closing`). Reads that cannot be verified close nothing and are left.
    """
    for n, part in enumerate(parts):
        if not read.spools[n].report.verified:
            continue
        other = [s.ids for s in read.spools if s.is_test != part.is_test]
        shared = np.concatenate([current_ids(not part.is_test), *other])
        _settle(client, read, n, part, current_ids(part.is_test), shared, cfg, spool_dir, progress)


def _settle(
    client: ApiClient,
    read: SubscriptionsRead,
    n: int,
    part: Partition,
    current: np.ndarray,
    shared: np.ndarray,
    cfg: DevportalConfig,
    spool_dir: Path,
    progress: Progress,
) -> None:
    """Settle partition `n`'s missing ids (see `settle_closes`); `shared`: the ids the other
    partition holds, whose answers cannot say which partition they come from."""
    spool = read.spools[n]
    settling = Settling()
    missing = np.setdiff1d(current, spool.ids)
    settling.missing = int(missing.size)
    unsettled = missing
    extra: pa.Table | None = None
    confirmed = extras.FieldStats(spool.fields.ignored)
    if 0 < missing.size <= cfg.confirm_closes_max:
        settling.asked = int(missing.size)
        found: list[dict[str, Any]] = []
        for sub_id, (verdict, row) in _ask_each(client, part.is_test, missing, shared):
            getattr(settling, verdict).append(sub_id)
            if row is not None:
                found.append(row)
        if found:
            extra, _ = transform.subscriptions_table(found, part.is_test, spool.dq, confirmed)
        unsettled = np.array(settling.unclear, dtype=np.int64)
    if unsettled.size:
        settling.reads, settling.agreed = _read_until_agreed(
            client, read, n, part, cfg, spool_dir, progress
        )
        spool = read.spools[n]
    if extra is not None:
        # a later read that lists a confirmed row holds it already (one row per id)
        listed_again = np.isin(extra.column("id").to_numpy(), spool.ids)
        spool.extra = extra.filter(pa.array(~listed_again))
        spool.fields.merge(confirmed)
        spool.statuses.update(transform.status_counts(spool.extra.column("status")))
        if not part.is_test:
            read.user_ids.update(spool.extra.column("service_id").drop_null().to_pylist())
    if unsettled.size and not settling.agreed:
        # no snapshot: the last read may have missed rows too; only a 404 closes
        gone = np.array(settling.gone, dtype=np.int64)
        spool.kept = np.setdiff1d(current, np.concatenate([spool.staying(), gone]))
        if spool.kept.size > cfg.confirm_closes_max:
            # too many to name in the merge: this read closes none of what it did not list
            spool.closes_missing = False
    if spool.closes_missing:
        settling.closes = int(np.isin(current, spool.staying(), invert=True).sum())
        settling.kept = int(spool.kept.size)
    else:
        read_or_confirmed = np.concatenate([spool.ids, spool.extra_ids])
        settling.kept = int(np.isin(current, read_or_confirmed, invert=True).sum())
    spool.report.closing = settling.record()
    if settling.kept:
        log.warning(
            "subscriptions%s: %d current subscription(s) the list did not show could not be "
            "confirmed gone; they stay current until a later sweep settles them",
            " (is_test)" if part.is_test else "",
            settling.kept,
        )


def _ask_each(
    client: ApiClient, is_test: bool, ids: np.ndarray, shared: np.ndarray
) -> Iterator[tuple[int, tuple[str, dict[str, Any] | None]]]:
    """(id, `judge_answer`'s verdict) for each id, asked `?id=N` as many at a time as the
    client allows. A 404 is gone; an error (after the client's retries) settles nothing."""
    params = {"is_test": "true"} if is_test else {}
    both = set(np.intersect1d(ids, shared).tolist())

    def ask(sub_id: int) -> tuple[str, dict[str, Any] | None]:
        try:
            body, _ = client.get_json(SUBSCRIPTIONS_PATH, {**params, "id": sub_id})
        except NotFound:
            return GONE, None
        except ApiError as err:
            log.warning("could not confirm subscription %d: %s", sub_id, err)
            return UNCLEAR, None
        return judge_answer(sub_id, body, is_test, sub_id in both)

    yield from client.map_concurrent(ask, [int(i) for i in ids])


def judge_answer(
    sub_id: int, body: Any, is_test: bool, shared: bool
) -> tuple[str, dict[str, Any] | None]:
    """What a 200 answer to `?id=N` says about subscription N of one partition: LISTED with its
    row, or UNCLEAR.

    Spec 4.1: the body is the one Subscription object. A page holding exactly that id (an API
    that filters the list by `id`) counts as it. Anything else is unclear: another id, a page
    without it (an API that ignores `id`), not an object; and a subscription whose id the other
    partition also holds unless the answer says which it is (`is_test`): the spec does not say
    that `is_test` applies to `id`, so a test id's answer may be the live subscription's.
    """
    if isinstance(body, dict) and isinstance(body.get("data"), list):
        rows = [r for r in body["data"] if isinstance(r, dict) and to_int(r.get("id")) == sub_id]
        if len(rows) != 1:
            return UNCLEAR, None
        body = rows[0]
    if not isinstance(body, dict) or to_int(body.get("id")) != sub_id:
        return UNCLEAR, None
    flag = body.get("is_test")
    if isinstance(flag, bool):
        return (LISTED, body) if flag == is_test else (UNCLEAR, None)
    if shared:
        return UNCLEAR, None
    return LISTED, body


def _read_until_agreed(
    client: ApiClient,
    read: SubscriptionsRead,
    n: int,
    part: Partition,
    cfg: DevportalConfig,
    spool_dir: Path,
    progress: Progress,
) -> tuple[int, bool]:
    """Read partition `n` again until two reads in a row list the same ids, `sweep_attempts`
    reads in all; the last verified read replaces the spool. (reads, agreed)."""
    reads, agreed = 1, False
    while reads < cfg.sweep_attempts and not agreed:
        before = read.spools[n]
        try:
            fresh = _read_into(client, read, part, cfg, spool_dir, progress, None)
        except IntegrityError as err:  # the list keeps moving: the verified read stands
            log.warning("subscriptions: reading the list again to settle closes: %s", err)
            break
        reads += 1
        if not fresh.report.verified:
            fresh.discard()
            break
        agreed = np.array_equal(np.sort(fresh.ids), np.sort(before.ids))
        read.spools[n] = fresh
        before.discard()
    return reads, agreed


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
    """The whole user settings list, verified: one row per user and one per settings leaf;
    `fields`: the paths its entries had, `columns`: where each landed."""

    users: list[dict[str, Any]]
    values: list[dict[str, Any]]
    dq: transform.DataQuality
    report: SweepReport
    fields: extras.FieldStats = field(default_factory=extras.FieldStats)
    columns: extras.Columns = field(
        default_factory=lambda: transform.settings_columns(extras.Naming())
    )


def read_settings(
    client: ApiClient,
    cfg: DevportalConfig,
    seen_at: datetime,
    progress: Progress,
    first: Page | None = None,
    columns: extras.Columns | None = None,
) -> SettingsRead:
    """Read the settings list until it adds up (at most `sweep_attempts`); COLUMNS: where
    fields beyond the shown ones land (`transform.settings_columns`)."""
    report = SweepReport(endpoint=USER_SETTINGS_PATH, params={})
    last_error = ""
    columns = columns if columns is not None else transform.settings_columns(extras.Naming())
    for attempt in range(1, cfg.sweep_attempts + 1):
        report.attempts = attempt
        read = SettingsRead([], [], transform.DataQuality(), report, columns=columns)
        pages = client.iter_pages(USER_SETTINGS_PATH, None, first if attempt == 1 else None)
        try:
            for page in check_pages(pages, report):
                users, values = transform.user_settings_records(
                    page.data, read.dq, seen_at, read.fields, columns
                )
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
    """The accounts of the users due: one row each (404: status `missing`) and their profiles;
    `fields`: the top-level fields of the Profiles objects, `columns`: where each landed."""

    accounts: list[dict[str, Any]]
    profiles: list[dict[str, Any]]
    dq: transform.DataQuality
    fields: extras.FieldStats = field(default_factory=extras.FieldStats)
    columns: extras.Columns = field(
        default_factory=lambda: transform.account_columns(extras.Naming())
    )


def read_accounts(
    client: ApiClient,
    user_ids: Sequence[int],
    fetched_at: datetime,
    columns: extras.Columns | None = None,
) -> AccountsRead:
    """Fetch each user's account, `workers` at a time; a 404 is recorded, not raised."""

    def fetch(user_id: int) -> Any:
        try:
            body, _ = client.get_json(USER_ACCOUNTS_PATH.format(user_id=user_id))
        except NotFound:
            return None
        return body

    read = AccountsRead([], [], transform.DataQuality())
    if columns is not None:
        read.columns = columns
    for user_id, body in client.map_concurrent(fetch, list(user_ids)):
        account, profiles = transform.account_records(
            user_id, body, fetched_at, read.dq, read.fields, read.columns
        )
        read.accounts.append(account)
        read.profiles.extend(profiles)
    return read
