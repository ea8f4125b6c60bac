"""What a verified sweep closes: the current subscriptions it did not read, each confirmed
before it is closed (asked one by one, or the list read again until two reads agree), so a
sweep never closes a subscription the API still has; and the mass-close guard.

A verified read is still not a snapshot: a subscription created while another is removed keeps
the `total`, and the rows behind the removed one slide back one place, so the row that crosses
a page boundary is never seen. In a list ordered by id the read notices that itself and is read
again (`list_read._check_edges`); in any other order it cannot. Hence `confirm_closes`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from devportal.base.api import SUBSCRIPTIONS_PATH
from devportal.base.coercion import to_int
from devportal.base.errors import ApiError, IntegrityError
from devportal.base.progress import Progress
from devportal.extract import extra_fields, transform
from devportal.extract.reading.subscription_list import Partition, SubscriptionsRead, read_into
from devportal.http import ApiClient, NotFound
from devportal.settings.config import DevportalConfig

log = logging.getLogger("devportal.reading")


def check_mass_close(
    read: SubscriptionsRead, current_ids: Callable[[bool], np.ndarray], cfg: DevportalConfig
) -> None:
    """Refuse a verified sweep that would close more than `mass_close_max_share` of the
    current rows (`current_ids(is_test)`: the open versions the destination holds), once
    `confirm_closes` has decided what it closes.

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


# -- confirmation what a sweep closes --------------------------------------------------------------

LISTED, GONE, UNCLEAR = "listed", "gone", "unclear"


@dataclass
class CloseConfirmation:
    """How the current subscriptions one verified read did not list were confirmed; recorded as
    the read's `closing` in `sync_runs.sweeps` (the id lists hold at most `confirm_closes_max`
    ids: only ids asked about one by one are named)."""

    missing: int = 0  # current subscriptions the first read did not list
    asked: int = 0  # of them, asked about one by one (`?id=N`)
    listed: list[int] = field(default_factory=list)  # the API still has them: loaded
    gone: list[int] = field(default_factory=list)  # it answered 404: closed
    unclear: list[int] = field(default_factory=list)  # the answer confirmed nothing
    reads: int = 1  # reads of the list in all
    agreed: bool | None = None  # the last two reads listed the same ids (None: one read)
    kept: int = 0  # left current because nothing confirmed them (a later sweep will)
    closes: int = 0  # current versions this sweep closes

    def record(self) -> dict[str, Any]:
        return dict(vars(self))


def confirm_closes(
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
    closed); an answer that does not say for sure confirms nothing (`judge_answer`). What is left
    unconfirmed, or every missing id when there are more than `confirm_closes_max`, is confirmed by
    reading the partition again until two reads in a row list the same ids (at most
    `sweep_attempts` reads in all): the last read is then a snapshot, and what it does not list
    is gone. Without agreement nothing unconfirmed is closed; a later sweep will. Each partition's
    report records how (`closing`). Reads that cannot be verified close nothing and are left.
    """
    for n, part in enumerate(parts):
        if not read.spools[n].report.verified:
            continue
        other = [s.ids for s in read.spools if s.is_test != part.is_test]
        shared = np.concatenate([current_ids(not part.is_test), *other])
        _confirm(client, read, n, part, current_ids(part.is_test), shared, cfg, spool_dir, progress)


def _confirm(
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
    """Confirm partition `n`'s missing ids (see `confirm_closes`); `shared`: the ids the other
    partition holds, whose answers cannot say which partition they come from."""
    spool = read.spools[n]
    confirmation = CloseConfirmation()
    missing = np.setdiff1d(current, spool.ids)
    confirmation.missing = int(missing.size)
    unconfirmed = missing
    extra: pa.Table | None = None
    confirmed = extra_fields.FieldStats(spool.fields.ignored)
    if 0 < missing.size <= cfg.confirm_closes_max:
        confirmation.asked = int(missing.size)
        found: list[dict[str, Any]] = []
        asked = _ask_each(client, part.is_test, missing, shared)
        what = "subscriptions to confirm" + (" (is_test)" if part.is_test else "")
        for done, (sub_id, (verdict, row)) in enumerate(asked, start=1):
            progress.items(what, done, confirmation.asked)
            getattr(confirmation, verdict).append(sub_id)
            if row is not None:
                found.append(row)
        if found:
            extra, _ = transform.subscriptions_table(found, part.is_test, spool.dq, confirmed)
        unconfirmed = np.array(confirmation.unclear, dtype=np.int64)
    if unconfirmed.size:
        confirmation.reads, confirmation.agreed = _read_until_agreed(
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
    if unconfirmed.size and not confirmation.agreed:
        # no snapshot: the last read may have missed rows too; only a 404 closes
        gone = np.array(confirmation.gone, dtype=np.int64)
        spool.kept = np.setdiff1d(current, np.concatenate([spool.staying(), gone]))
        if spool.kept.size > cfg.confirm_closes_max:
            # too many to name in the merge: this read closes none of what it did not list
            spool.closes_missing = False
    if spool.closes_missing:
        confirmation.closes = int(np.isin(current, spool.staying(), invert=True).sum())
        confirmation.kept = int(spool.kept.size)
    else:
        read_or_confirmed = np.concatenate([spool.ids, spool.extra_ids])
        confirmation.kept = int(np.isin(current, read_or_confirmed, invert=True).sum())
    spool.report.closing = confirmation.record()
    if confirmation.kept:
        log.warning(
            "subscriptions%s: %d current subscription(s) the list did not show could not be "
            "confirmed gone; they stay current until a later sweep confirms them",
            " (is_test)" if part.is_test else "",
            confirmation.kept,
        )


def _ask_each(
    client: ApiClient, is_test: bool, ids: np.ndarray, shared: np.ndarray
) -> Iterator[tuple[int, tuple[str, dict[str, Any] | None]]]:
    """(id, `judge_answer`'s verdict) for each id, asked `?id=N` as many at a time as the
    client allows. A 404 is gone; an error (after the client's retries) confirms nothing."""
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
    """Read partition `n` again until two reads in a row list the same ids (the later one may
    list more: a list that grew), `sweep_attempts` reads in all; the last verified read
    replaces the spool. (reads, agreed)."""
    reads, agreed = 1, False
    while reads < cfg.sweep_attempts and not agreed:
        before = read.spools[n]
        try:
            fresh = read_into(client, read, part, cfg, spool_dir, progress, None)
        except IntegrityError as err:  # the list keeps moving: the verified read stands
            log.warning("subscriptions: reading the list again to confirm closes: %s", err)
            break
        reads += 1
        if not fresh.report.verified:
            fresh.discard()
            break
        # the same ids, or more (a list that only grew: every row read before is still there)
        agreed = bool(np.isin(before.ids, fresh.ids).all())
        read.spools[n] = fresh
        before.discard()
    return reads, agreed
