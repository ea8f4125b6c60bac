"""Reading the subscription list: its partitions (live, test, a `start`/`end` window), each
read again until it adds up (at most `sweep_attempts`), verified and spooled."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

from devportal.base.api import SUBSCRIPTIONS_PATH, TIMESTAMP_FORMAT
from devportal.base.progress import Progress
from devportal.extract import extra_fields, transform
from devportal.extract.reading.list_read import ListRead, read_until_it_adds_up, verify_ids
from devportal.extract.reading.subscription_spool import Spool, spool_pages
from devportal.http import ApiClient, Page
from devportal.settings.config import DevportalConfig, history_ignore

log = logging.getLogger("devportal.reading")

_Merged = TypeVar("_Merged", transform.DataQuality, extra_fields.FieldStats)


def _merged(into: _Merged, parts: Iterable[_Merged]) -> _Merged:
    """INTO with each of PARTS merged into it, in order."""
    for part in parts:
        into.merge(part)
    return into


@dataclass
class SubscriptionsRead:
    """Every partition read, verified and spooled; what the resource and the run record need.

    `user_ids`: the users (`service_id`) of live subscriptions: a test subscription's user is
    not a user of the live app (their accounts are not fetched)."""

    spools: list[Spool]
    user_ids: set[int]

    @property
    def dq(self) -> transform.DataQuality:
        return _merged(transform.DataQuality(), (spool.dq for spool in self.spools))

    @property
    def rows(self) -> int:
        return sum(spool.rows for spool in self.spools)

    @property
    def fields(self) -> extra_fields.FieldStats:
        """The paths of every row handed to dlt, first seen first (live before test)."""
        return _merged(extra_fields.FieldStats(), (spool.fields for spool in self.spools))

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
            params.update(start=window[0].strftime(TIMESTAMP_FORMAT))
            params.update(end=window[1].strftime(TIMESTAMP_FORMAT))
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
            read.spools.append(read_into(client, read, part, cfg, spool_dir, progress, first_page))
    except BaseException:
        read.discard()
        raise
    return read


def read_into(
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
    report = ListRead(endpoint=SUBSCRIPTIONS_PATH, params=part.params)
    what = "subscriptions (is_test)" if part.is_test else "subscriptions"
    ignored = extra_fields.ignore_matcher(history_ignore(cfg))

    def read_once(pages: Iterator[Page]) -> tuple[Spool, set[int]]:
        dq = transform.DataQuality()
        fields, statuses = extra_fields.FieldStats(ignored), Counter[str]()
        try:
            ids, services = spool_pages(
                pages,
                part.is_test,
                dq,
                spool_path,
                cfg.batch_rows,
                lambda page, rows: progress.page(
                    what, report.pages, page.last_page, rows, report.attempts
                ),
                fields,
                statuses,
            )
            verify_ids(ids, report, dq.count("subscriptions", "id", transform.ID_DROPPED))
        except BaseException:  # a read that did not add up (or failed) leaves no spool file
            spool_path.unlink(missing_ok=True)
            raise
        return Spool(spool_path, ids, part.is_test, report, dq, fields, statuses), services

    spool, services = read_until_it_adds_up(
        "subscription", client, report, cfg.sweep_attempts, read_once, first
    )
    user_ids.update(services)
    if not report.verified:
        log.warning(
            "subscriptions%s: %s; its rows are loaded but no subscription is closed "
            "(only a list that adds up to its total may retire history)",
            " (is_test)" if part.is_test else "",
            report.note,
        )
    return spool


def window_bounds(
    since: datetime | None, cursor: datetime | None, observed_at: datetime, cfg: DevportalConfig
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
        start = observed_at - timedelta(hours=cfg.lookback_hours)
    return start, observed_at + timedelta(days=cfg.window_horizon_days)
