"""What the pages of one list read said (`PageLog`: each page's total, size and row ids, in page
order), why a read did not add up (`ListMoved`, a `Failure`), and the words of the refusal when
no read did (`refusal`): which ids were repeated and on which pages, the totals, which ids
vanished or appeared between reads, and whether every read failed the same way (a defect of
the API, which another run will not fix) or the list kept moving (a busy API: run it again)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from devportal.base.coercion import to_int
from devportal.http import Page

NO_ID = np.iinfo(np.int64).min  # a row without a usable id, in `PageLog.ids`
NAMED = 5  # ids named in a message at most

RowId = Callable[[dict[str, Any]], int | None]

# why a read did not add up (`ListMoved.kind`)
REPEAT = "repeat"  # an id came twice
COUNT = "count"  # the distinct rows read differ from the total
SHRANK = "shrank"  # a page reported fewer rows than page 1: rows were removed while paging
PAGE_SIZE = "page_size"  # pages of two sizes
WRAPPER = "wrapper"  # some pages carry a total, others none
SHIFTED = "shifted"  # a page read again at the end no longer held the rows read before
OUTRUN = "outrun"  # the list grew faster than its tail could be read
SLID = "slid"  # a page read again at the end moved: a row could have slid across its edge unseen
COMPLETE_KINDS = (REPEAT, COUNT)  # kinds found only once the whole list was read


def subscription_id(row: dict[str, Any]) -> int | None:
    return to_int(row.get("id"))


def settings_user_id(entry: dict[str, Any]) -> int | None:
    """The user id of a settings list entry (`user.service.id`)."""
    user = entry.get("user")
    service = user.get("service") if isinstance(user, dict) else None
    return to_int(service.get("id")) if isinstance(service, dict) else None


class ListMoved(Exception):
    """The list changed while it was paged, or its pages contradict each other; the read is
    not a snapshot of anything. `kind`: one of the kinds above."""

    def __init__(self, message: str, kind: str = COUNT) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class PageLog:
    """What one read's pages said, in page order: each page's number, `total`, `per_page` and
    the ids of its rows (`NO_ID` for a row without a usable one). About 8 bytes a row."""

    row_id: RowId = subscription_id
    numbers: list[int] = field(default_factory=list)
    totals: list[int | None] = field(default_factory=list)
    sizes: list[int | None] = field(default_factory=list)
    ids: list[np.ndarray] = field(default_factory=list)
    rows: int = 0  # rows logged: the next row's position in the list

    def add(self, page: Page) -> None:
        ids = [self.row_id(row) for row in page.data]
        self.numbers.append(page.number)
        self.totals.append(page.total)
        self.sizes.append(page.per_page)
        self.ids.append(np.array([NO_ID if i is None else i for i in ids], dtype=np.int64))
        self.rows += len(ids)

    def ids_between(self, start: int, stop: int) -> np.ndarray:
        """The ids logged at positions START to STOP (excluded)."""
        every = np.concatenate(self.ids) if self.ids else np.zeros(0, np.int64)
        return every[start:stop]

    def unique_ids(self) -> np.ndarray:
        every = np.concatenate(self.ids) if self.ids else np.zeros(0, np.int64)
        return np.unique(every[every != NO_ID])

    def repeats(self) -> dict[int, list[int]]:
        """{id: the pages it came on, once per time} for each id listed more than once."""
        if not self.ids:
            return {}
        every = np.concatenate(self.ids)
        pages = np.repeat(np.array(self.numbers, dtype=np.int64), [a.size for a in self.ids])
        found, counts = np.unique(every, return_counts=True)
        twice = found[(counts > 1) & (found != NO_ID)]
        if not twice.size:
            return {}
        where = np.isin(every, twice)
        out: dict[int, list[int]] = {int(i): [] for i in twice.tolist()}
        for row_id, page in zip(every[where].tolist(), pages[where].tolist(), strict=True):
            out[row_id].append(page)
        return out


@dataclass(frozen=True)
class Failure:
    """One read that did not add up: why (`kind`, `reason`), its totals (`first`: page 1's,
    `last`: the largest), the ids it repeated with their pages, and its distinct ids when it
    read the whole list (`complete`), to tell what differed from the next read."""

    kind: str
    reason: str
    first: int | None
    last: int | None
    repeated: tuple[tuple[int, tuple[int, ...]], ...]
    rows: int
    unique: int
    dropped: int
    complete: bool
    ids: np.ndarray = field(compare=False, repr=False)

    @classmethod
    def of(cls, moved: ListMoved, log: PageLog, first: int | None, last: int | None,
           dropped: int) -> Failure:  # fmt: skip
        repeated = tuple((i, tuple(p)) for i, p in sorted(log.repeats().items()))
        ids = log.unique_ids()
        complete = moved.kind in COMPLETE_KINDS
        return cls(moved.kind, str(moved), first, last, repeated, log.rows, int(ids.size),
                   dropped, complete, ids if complete else np.zeros(0, np.int64))  # fmt: skip

    @property
    def short(self) -> int:
        """Rows the total counts beyond those read (negative: more rows read than counted)."""
        return (self.last or 0) - self.unique - self.dropped

    def describe(self, noun: str) -> str:
        """What this read saw, in a few words."""
        grew = _grew(self.first, self.last)
        if self.kind == REPEAT:
            return f"{_repeats(self.repeated, noun)}{grew}"
        if self.kind == COUNT:
            dropped = f" and {self.dropped} rows without a usable id" if self.dropped else ""
            grew = grew if self.first != self.last else ""
            return f"read {self.unique} distinct {noun}s{dropped}, but the total says {self.last}{grew}"
        return self.reason


def _grew(first: int | None, last: int | None) -> str:
    if first is None or last is None or first == last:
        return f" (total {last})" if last is not None else ""
    return f" (the total went from {first} to {last} while it was read)"


def _pages(pages: Sequence[int]) -> str:
    if len(set(pages)) == 1:
        times = "twice" if len(pages) == 2 else f"{len(pages)} times"
        return f"{times} on page {pages[0]}"
    shown = [str(p) for p in pages]
    listed = ", ".join(shown[:-1]) + f" and {shown[-1]}"
    return f"on pages {listed}"


def _repeats(repeated: Sequence[tuple[int, Sequence[int]]], noun: str) -> str:
    named = [f"{noun} {i} came {_pages(p)}" for i, p in repeated[:NAMED]]
    more = len(repeated) - NAMED
    return "; ".join(named) + (f" (and {more} more ids came twice)" if more > 0 else "")


def _ids(ids: np.ndarray) -> str:
    shown = ", ".join(str(i) for i in ids[:NAMED].tolist())
    return shown + (f" and {ids.size - NAMED} more" if ids.size > NAMED else "")


def differences(failures: Sequence[Failure], noun: str) -> list[str]:
    """What differed between each two whole reads in a row: ids that vanished, appeared."""
    said = []
    whole = [(n, f) for n, f in enumerate(failures, start=1) if f.complete]
    for (a, before), (b, after) in itertools.pairwise(whole):
        gone = np.setdiff1d(before.ids, after.ids)
        new = np.setdiff1d(after.ids, before.ids)
        parts = [f"{gone.size} {noun}s vanished ({_ids(gone)})" if gone.size else ""]
        parts.append(f"{new.size} appeared ({_ids(new)})" if new.size else "")
        change = " and ".join(p for p in parts if p) or "the same ids"
        said.append(f"between reads {a} and {b}: {change}")
    return said


def deterministic(failures: Sequence[Failure]) -> bool:
    """Every read (two or more) failed the same way: the same ids repeated, or the total off
    by the same count: the API's pages contradict themselves, whatever moves on it."""
    if len(failures) < 2:
        return False
    kinds = {f.kind for f in failures}
    if kinds == {REPEAT}:
        return len({tuple(i for i, _ in f.repeated) for f in failures}) == 1
    if kinds == {COUNT}:
        return len({f.short for f in failures}) == 1
    return False


def refusal(what: str, noun: str, failures: Sequence[Failure]) -> str:
    """The one-line refusal of a list none of whose reads (FAILURES) added up."""
    n = len(failures)
    reads = f"{n} read{'s' if n > 1 else ''}"
    if deterministic(failures):
        last = failures[-1]
        if last.kind == REPEAT:
            return (
                f"the {what} list lists a row twice in every read ({reads}, the same way each "
                f"time): {_repeats(last.repeated, noun)}; a defect on the API's side which "
                "another run will not fix, so the list never adds up and nothing was loaded: "
                "report it to whoever runs the API"
            )
        counted = (
            f"{last.short} more rows than it lists"
            if last.short > 0
            else f"{-last.short} fewer rows than it lists"
        )
        return (
            f"the {what} list's total counts {counted}, the same in all {reads} "
            f"({last.describe(noun)}): the API counts rows it does not serve (or serves rows "
            "it does not count), a defect on its side which another run will not fix; nothing "
            "was loaded: report it to whoever runs the API"
        )
    if {f.kind for f in failures} == {PAGE_SIZE}:
        return (
            f"the {what} list came in pages of different sizes in all {reads} "
            f"({failures[-1].reason}): two versions of the API answer at once (a rolling "
            "deploy, or a load balancer in front of both), and rows paged at two sizes cannot "
            "be told apart from rows that moved; nothing was loaded: run the sync again once "
            "the deploy is over, and if it keeps failing, tell whoever runs the API"
        )
    said = [f"read {k}: {f.describe(noun)}" for k, f in enumerate(failures, start=1)]
    said += differences(failures, noun)
    if {f.kind for f in failures} == {SLID}:  # the totals were right every time
        return (
            f"the {what} list kept changing while it was read, in all {reads} "
            f"({'; '.join(said)}): rows were removed behind the reader while others were "
            "added, every time; nothing was loaded: run the sync again later"
        )
    return (
        f"the {what} list kept changing while it was read, in all {reads} ({'; '.join(said)}); "
        "nothing was loaded: run the sync again later, and if it keeps failing the API's "
        "pages disagree with their own `total`"
    )
