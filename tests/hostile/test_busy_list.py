"""A busy list, a list that moves, a list that contradicts itself, a rolling deploy (issue 33),
through the real `devportal sync` against the hostile API, into a real DuckDB file.

- A list that only grows while it is read (rows added at its end, or on a page not yet read)
  syncs in one read: the rows read stayed put, so the read is one moment of the list; the sweep
  records the total at its start and what was added.
- A list that truly moves (rows removed, added before the reader, reordered) is read again, and
  refused after `sweep_attempts` reads in words that say what differed.
- A list that contradicts itself the same way in every read (a row listed twice, a total that
  counts rows it does not list) is refused after two reads, naming the rows, without advising
  to try again later.
- Pages served at two sizes (a rolling deploy) are called a page-size change.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import query, rows_if_loaded, subscription, warehouse_of
from tests.hostile.conftest import CliResult, token_env
from tests.hostile.server import SETTINGS, SUBSCRIPTIONS, Answer, HostileApi, Request, sized_page

Cli = Callable[..., CliResult]
Args = Callable[..., list[str]]


def page_number(req: Request) -> int:
    return int(req.query.get("page", "1") or 1)


def listed_ids(warehouse: Path) -> list[int]:
    rows = rows_if_loaded(
        warehouse,
        "SELECT id FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL ORDER BY id",
        "subscriptions",
    )
    return [r[0] for r in rows]


def sweeps(warehouse: Path, endpoint: str = SUBSCRIPTIONS) -> dict[str, Any]:
    rows = query(warehouse, "SELECT sweeps FROM devportal.sync_runs ORDER BY observed_at")
    (sweep,) = [s for s in json.loads(rows[-1][0]) if s["endpoint"] == endpoint]
    return sweep


def error_line(result: CliResult) -> str:
    assert result.code == 1, (result.code, result.out, result.err)  # IntegrityError
    assert "Traceback" not in result.err
    return result.err.strip().splitlines()[-1]


def first_pages(api: HostileApi, path: str = SUBSCRIPTIONS) -> int:
    """Reads of the list begun: its page 1 asked for."""
    return sum(1 for r in api.requests if r.path == path and page_number(r) == 1)


class Busy:
    """Changes the subscription list before each of its pages is built (atomically with it):
    `change(rows, page, read)` edits the rows in place; `read` counts the reads begun (page 1
    asked). `reads`: how many reads it disturbs (None: every one)."""

    def __init__(
        self,
        api: HostileApi,
        change: Callable[[list[dict[str, Any]], int, int], None],
        reads: int | None = None,
    ) -> None:
        self.api, self.change, self.reads = api, change, reads
        self.read = 0
        api.on_subscriptions_page = self

    def __call__(self, req: Request) -> None:
        if req.query.get("id"):
            return
        page = page_number(req)
        if page == 1:
            self.read += 1
        if self.reads is None or self.read <= self.reads:
            self.change(self.api.subscriptions, page, self.read)


def appender(next_id: int, per_page_request: int = 1) -> Callable[..., None]:
    """Rows added at the end of the list before every page after page 1 is built."""
    state = {"id": next_id}

    def change(rows: list[dict[str, Any]], page: int, read: int) -> None:
        if page == 1:
            return
        for _ in range(per_page_request):
            rows.append(subscription(state["id"]))
            state["id"] += 1

    return change


def sync(devportal: Cli, api: HostileApi, args: list[str], **settings: Any) -> CliResult:
    return devportal(*args, env=token_env(api, **settings))


# -- growth that adds only rows the reader has not passed: one read, verified ------------------


def test_a_list_growing_at_its_end_on_every_page_syncs_in_one_read(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """The spec's page size (200): page 1 says 1000, every later page one more (a signup at the
    end before each page); the new rows spill onto a page 1 did not count."""
    api.per_page = 200
    api.subscriptions = [subscription(i) for i in range(1, 1001)]
    Busy(api, appender(5001))
    args = sync_args("--resources", "subscriptions")
    result = sync(devportal, api, args)
    assert result.code == 0, result.err
    warehouse = warehouse_of(args)
    sweep = sweeps(warehouse)
    assert sweep["attempts"] == 1 and sweep["verified"] and sweep["reread_because"] == []
    assert sweep["total_at_start"] == 1000
    assert sweep["added"] == sweep["total"] - 1000 > 0
    assert sweep["rows"] == sweep["unique_ids"] == sweep["total"]
    assert sweep["tail_pages"] >= 1
    # the read is the list as it was at one moment: its first `total` rows, in id order
    assert listed_ids(warehouse) == [r["id"] for r in api.subscriptions[: sweep["total"]]]
    assert first_pages(api) == 1

    # the next sweep of the still-busy list closes nothing and adds what came since
    result = sync(devportal, api, args)
    assert result.code == 0, result.err
    sweep = sweeps(warehouse)
    assert sweep["attempts"] == 1 and sweep["closing"]["closes"] == 0
    assert listed_ids(warehouse) == [r["id"] for r in api.subscriptions[: sweep["total"]]]


def test_a_list_growing_by_many_rows_a_page_is_read_to_its_new_end(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """50 signups before every page: the list grows by more than a page during the read."""
    api.per_page = 200
    api.subscriptions = [subscription(i) for i in range(1, 1001)]
    Busy(api, appender(5001, per_page_request=50))
    args = sync_args("--resources", "subscriptions")
    result = sync(devportal, api, args)
    assert result.code == 0, result.err
    sweep = sweeps(warehouse_of(args))
    assert sweep["attempts"] == 1 and sweep["verified"]
    assert sweep["added"] >= 200  # a whole page more than page 1 counted
    assert sweep["total"] == sweep["unique_ids"] == len(listed_ids(warehouse_of(args)))


def test_a_settings_list_growing_at_its_end_syncs_in_one_read(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """The user settings list at its page size in the spec (20), a new user at the end before
    every page: the same reading, the same record."""
    api.per_page = 20

    def entry(uid: int) -> dict[str, Any]:
        return {"user": {"service": {"id": uid}}, "settings": {"n": uid}}

    api.settings = [entry(uid) for uid in range(1, 101)]
    lock, state = threading.Lock(), {"id": 1001}

    def busy(req: Request) -> Answer:
        with lock:
            if page_number(req) > 1:
                api.settings.append(entry(state["id"]))
                state["id"] += 1
            return Answer(200, api.page(req, api.settings))

    api.route(SETTINGS, busy)
    args = sync_args("--resources", "user_settings")
    result = sync(devportal, api, args)
    assert result.code == 0, result.err
    sweep = sweeps(warehouse_of(args), SETTINGS)
    assert sweep["attempts"] == 1 and sweep["verified"]
    assert sweep["total_at_start"] == 100 and sweep["added"] > 0
    users = query(warehouse_of(args), "SELECT user_id FROM devportal.user_settings ORDER BY 1")
    expected = [e["user"]["service"]["id"] for e in api.settings[: sweep["total"]]]
    assert [u[0] for u in users] == expected


def test_a_signup_on_a_page_not_yet_read_is_read_with_it(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """A list not in id order (a new row lands in the middle): read one page at a time, a row
    added on a page the reader has not reached moves only rows it has not read."""
    api.per_page = 3
    api.subscriptions = [subscription(i) for i in range(1, 13)]  # 4 pages

    def insert_ahead(rows: list[dict[str, Any]], page: int, read: int) -> None:
        if page == 2:  # page 1 read; the new row goes onto page 3
            rows.insert(7, subscription(100 + read))

    Busy(api, insert_ahead)
    args = sync_args("--resources", "subscriptions")
    result = sync(devportal, api, args, workers=1)
    assert result.code == 0, result.err
    sweep = sweeps(warehouse_of(args))
    assert (sweep["attempts"], sweep["total_at_start"], sweep["total"]) == (1, 12, 13)
    assert listed_ids(warehouse_of(args)) == sorted([*range(1, 13), 101])


# -- lists that truly move: read again, refused in words that say what differed ----------------


def test_a_signup_on_a_page_already_read_makes_every_read_repeat_rows_and_is_refused(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Newest first: every signup lands on page 1, already read, and pushes a row the reader
    read onto the next page. Never a snapshot: refused, each read's repeated row named."""
    api.per_page = 3
    api.subscriptions = [subscription(i) for i in range(9, 0, -1)]
    state = {"id": 100}

    def newest_first(rows: list[dict[str, Any]], page: int, read: int) -> None:
        if page == 2:
            rows.insert(0, subscription(state["id"]))
            state["id"] += 1

    Busy(api, newest_first)
    args = sync_args("--resources", "subscriptions")
    line = error_line(sync(devportal, api, args, workers=1))
    assert first_pages(api) == 3
    assert line.startswith(
        "devportal: error: the subscription list kept changing while it was read, in all 3 "
        "reads (read 1: subscription 7 came on pages 1 and 2 (the total went from 9 to 10 "
        "while it was read); read 2: subscription 8 came on pages 1 and 2 (the total went "
        "from 10 to 11 while it was read); read 3: subscription 9 came on pages 1 and 2"
    ), line
    assert "between reads 1 and 2: 1 appeared (100)" in line
    assert line.endswith("nothing was loaded: run the sync again later, and if it keeps "
                         "failing the API's pages disagree with their own `total`")  # fmt: skip
    assert listed_ids(warehouse_of(args)) == []


def test_rows_removed_while_paging_are_noticed_at_once_and_refused(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """A row removed from page 1 after it was read, in every read: the total falls below
    page 1's, the read stops there, and the refusal says so."""
    api.per_page = 3
    api.subscriptions = [subscription(i) for i in range(1, 31)]

    def remove_first(rows: list[dict[str, Any]], page: int, read: int) -> None:
        if page == 2:
            rows.pop(0)

    Busy(api, remove_first)
    args = sync_args("--resources", "subscriptions")
    line = error_line(sync(devportal, api, args, workers=1))
    assert "read 1: the total went from 30 at page 1 to 29 at page 2: rows were removed" in line
    assert "read 3: the total went from 28 at page 1 to 27 at page 2" in line
    assert "kept changing while it was read, in all 3 reads" in line
    # each read stopped where the list shrank (the pages already asked for aside), not at 10
    assert api.hits(SUBSCRIPTIONS) < 3 * 10


def test_a_removal_and_a_signup_in_the_same_read_make_it_read_again_and_recorded(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """During the first read only: a row of page 1 removed and two added at the end. The
    second read, quiet, is kept; the record says why the first was thrown away."""
    api.per_page = 3
    api.subscriptions = [subscription(i) for i in range(1, 10)]

    def churn(rows: list[dict[str, Any]], page: int, read: int) -> None:
        if page == 2:
            rows.pop(0)
        if page == 3:
            rows.extend([subscription(50), subscription(51), subscription(52)])

    Busy(api, churn, reads=1)
    args = sync_args("--resources", "subscriptions")
    result = sync(devportal, api, args, workers=1)
    assert result.code == 0, result.err
    sweep = sweeps(warehouse_of(args))
    assert sweep["attempts"] == 2
    assert sweep["reread_because"] == [
        "the total went from 9 at page 1 to 8 at page 2: rows were removed while the list was paged"
    ]
    assert listed_ids(warehouse_of(args)) == [r["id"] for r in api.subscriptions]


def test_a_list_reordered_while_it_is_read_is_refused_naming_the_rows(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Its last row moved to the front before page 2, in every read (the total stays): the row
    pushed across the boundary comes twice, a different one each read."""
    api.per_page = 3
    api.subscriptions = [subscription(i) for i in range(1, 10)]

    def rotate(rows: list[dict[str, Any]], page: int, read: int) -> None:
        if page == 2:
            rows.insert(0, rows.pop())

    Busy(api, rotate)
    args = sync_args("--resources", "subscriptions")
    line = error_line(sync(devportal, api, args, workers=1))
    assert "read 1: subscription 3 came on pages 1 and 2 (total 9)" in line
    assert "read 2: subscription 2 came on pages 1 and 2 (total 9)" in line
    assert "kept changing while it was read, in all 3 reads" in line


def test_rows_that_moved_before_the_tail_was_read_again_are_noticed(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """A signup at the end before every page; and when the page holding the last row read is
    asked for again (to read what the list gained), a row of page 1 is removed and two are
    added: the counts still grow, but the rows read before are no longer where they were."""
    api.per_page = 3
    api.subscriptions = [subscription(i) for i in range(1, 11)]
    asked: dict[int, set[int]] = {}
    grow = appender(1000)

    def change(rows: list[dict[str, Any]], page: int, read: int) -> None:
        seen = asked.setdefault(read, set())
        if page in seen:
            rows.pop(0)
            grow(rows, page, read)
        grow(rows, page, read)
        seen.add(page)

    Busy(api, change)
    args = sync_args("--resources", "subscriptions")
    line = error_line(sync(devportal, api, args, workers=1, sweep_attempts=2))
    assert (
        "read 1: page 4, read again for the rows added while the list was paged, no longer "
        "holds the rows read before at positions 10 to 12: rows before them moved" in line
    ), line
    assert listed_ids(warehouse_of(args)) == []


def test_a_list_that_grows_faster_than_it_can_be_read_is_refused(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Ten signups before every page of three: the end is never reached."""
    api.per_page = 3
    api.subscriptions = [subscription(i) for i in range(1, 10)]
    Busy(api, appender(1000, per_page_request=10))
    args = sync_args("--resources", "subscriptions")
    line = error_line(sync(devportal, api, args, sweep_attempts=2))
    assert "read 1: the list grew faster than it could be read: total 9 at page 1" in line
    assert listed_ids(warehouse_of(args)) == []


# -- the same contradiction in every read: named, not "again later" ---------------------------


def duplicated(rows: list[dict[str, Any]], at: int, twice: int) -> list[dict[str, Any]]:
    """ROWS with row TWICE (an index) listed again at index AT."""
    return [*rows[:at], rows[twice], *rows[at:]]


def test_a_row_listed_twice_in_every_read_is_named_with_its_pages(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Subscription 5 listed again on page 3 (a join that doubles a row); the total counts it.
    Two identical reads are enough: the third is never made."""
    api.per_page = 3
    rows = [subscription(i) for i in range(1, 10)]
    api.subscriptions = duplicated(rows, 7, 4)
    args = sync_args("--resources", "subscriptions")
    line = error_line(sync(devportal, api, args))
    assert line == (
        "devportal: error: the subscription list lists a row twice in every read (2 reads, the "
        "same way each time): subscription 5 came on pages 2 and 3; a defect on the API's side "
        "which another run will not fix, so the list never adds up and nothing was loaded: "
        "report it to whoever runs the API"
    )
    assert "again later" not in line
    assert first_pages(api) == 2


def test_rows_listed_twice_on_one_page_while_the_list_grows_are_named(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Two rows doubled on their own pages, on a busy list: the same ids repeat in every read
    (whatever else grows), so it is the API's defect, named with each row's pages."""
    api.per_page = 4
    rows = [subscription(i) for i in range(1, 13)]
    api.subscriptions = duplicated(duplicated(rows, 2, 1), 6, 5)  # 2 twice on page 1, 5 on 2

    def grow(rows: list[dict[str, Any]], page: int, read: int) -> None:
        if page == 2:
            rows.append(subscription(100 + read))

    Busy(api, grow)
    line = error_line(sync(devportal, api, sync_args("--resources", "subscriptions")))
    assert "lists a row twice in every read (2 reads, the same way each time)" in line
    assert "subscription 2 came twice on page 1; subscription 5 came twice on page 2" in line
    assert "again later" not in line


def test_a_total_that_counts_a_row_it_never_lists_is_named_as_such(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Every page says one row more than the list holds (a soft-deleted row counted)."""
    rows = [subscription(i) for i in range(1, 10)]
    api.route(SUBSCRIPTIONS, lambda req: Answer(200, sized_page(req, rows, 3, total=10)))
    args = sync_args("--resources", "subscriptions")
    line = error_line(sync(devportal, api, args))
    assert line.startswith(
        "devportal: error: the subscription list's total counts 1 more rows than it lists, "
        "the same in all 2 reads (read 9 distinct subscriptions, but the total says 10): the API "
        "counts rows it does not serve"
    ), line
    assert "again later" not in line


# -- a rolling deploy: pages of two sizes -----------------------------------------------------


class RollingDeploy:
    """Two versions of the API behind one address, answering in turn: the old one pages at
    `old`, the new one at `new` (None: a wrapper without `per_page`). `until`: after this many
    reads (page 1 asked), only the new version answers (the deploy is over)."""

    def __init__(
        self, api: HostileApi, rows: int, old: int | None, new: int | None, until: int = 99
    ) -> None:
        self.rows = [subscription(i) for i in range(1, rows + 1)]
        self.old, self.new, self.until = old, new, until
        self.reads = self.answers = 0
        self._lock = threading.Lock()
        api.route(SUBSCRIPTIONS, self)

    def __call__(self, req: Request) -> Answer:
        with self._lock:
            if page_number(req) == 1:
                self.reads += 1
            self.answers += 1
            old = self.reads <= self.until and self.answers % 2 == 1
        return Answer(200, sized_page(req, self.rows, self.old if old else self.new))


def test_pages_of_two_sizes_are_called_a_page_size_change(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """450 rows at 50 a page from the old version, 100 from the new one: every read meets both.
    Not 'the total went from 450 to 450'."""
    RollingDeploy(api, 450, 50, 100)
    args = sync_args("--resources", "subscriptions")
    line = error_line(sync(devportal, api, args, workers=1))
    # which version answers page 1 depends on how many requests came before it (the early
    # start's among them): either way round, both sizes are named
    sizes = re.search(
        r"^devportal: error: the subscription list came in pages of different sizes in all [23] "
        r"reads \(the page size changed while paging: page 1 came with per_page (50|100), page 2 "
        r"with per_page (50|100)\): two versions of the API answer at once \(a rolling deploy",
        line,
    )
    assert sizes is not None and sizes[1] != sizes[2], line
    assert "450 to 450" not in line


def test_pages_of_two_sizes_without_per_page_are_told_by_their_page_count(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Wrappers without `per_page`: the versions count the same rows in different pages."""
    RollingDeploy(api, 12, None, None)
    # both page at 3 here: a stable list, read in one go; then the new version pages at 4
    args = sync_args("--resources", "subscriptions")
    assert sync(devportal, api, args, workers=1).code == 0

    class Four(RollingDeploy):
        def __call__(self, req: Request) -> Answer:
            answer = super().__call__(req)
            if self.answers % 2 == 0:  # the new version: 4 rows a page, no per_page either
                body = sized_page(req, self.rows, 4)
                del body["per_page"]
                answer = Answer(200, body)
            return answer

    Four(api, 12, None, None)
    line = error_line(sync(devportal, api, args, workers=1))
    # the last read's page 1 came from either version
    assert re.search(
        r"the page size changed while paging: page 1 counted (3|4) pages of the 12 rows, page 2 "
        r"counted (4|3)\): two versions of the API answer at once",
        line,
    ), line


def test_a_rolling_deploy_that_ends_is_read_again_and_synced(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    deploy = RollingDeploy(api, 450, 50, 100, until=1)
    args = sync_args("--resources", "subscriptions")
    result = sync(devportal, api, args, workers=1)
    assert result.code == 0, result.err
    sweep = sweeps(warehouse_of(args))
    assert sweep["attempts"] == 2 and sweep["verified"]
    assert sweep["reread_because"] == [
        "the page size changed while paging: page 1 came with per_page 50, page 2 with per_page 100"
    ]
    assert listed_ids(warehouse_of(args)) == [r["id"] for r in deploy.rows]
