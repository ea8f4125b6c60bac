"""A list read (extract/reading/list_read.py) on recorded pages: the page checks (`check_pages`),
the id check (`verify_ids`), a grown list's tail, and `read_until_it_adds_up` reading again
until a read adds up or refusing in words that say what differed. No server: the pages are
`pages/*.json`, served by `RecordedApi`."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pytest

from devportal.base.errors import IntegrityError
from devportal.extract.reading.list_read import (
    ListMoved,
    ListRead,
    check_pages,
    read_until_it_adds_up,
    verify_ids,
)
from devportal.extract.reading.moves import (
    COUNT,
    OUTRUN,
    PAGE_SIZE,
    REPEAT,
    SHIFTED,
    SHRANK,
    SLID,
    WRAPPER,
    PageLog,
)
from devportal.http.pages import Page, parse_page
from tests.extract.reading.recorded import RecordedApi, page, read_ids

WHAT = "subscriptions"


def read_whole(api: RecordedApi, report: ListRead, log: PageLog | None = None) -> list[Page]:
    """Every page `check_pages` passes on for the next recorded read (a grown list's tail
    fetched from the recording)."""
    fetch = partial(api.fetch_page, api.path, {})
    return list(check_pages(api.iter_pages(api.path), report, log, fetch))


def ids(pages: list[Page]) -> list[int]:
    return [row["id"] for p in pages for row in p.data]


def report_for(api: RecordedApi) -> ListRead:
    return ListRead(api.path, {})


# -- check_pages: what the pages of one read must agree on -------------------------------------


def test_a_consistent_read_passes_every_page_once_and_adds_up() -> None:
    api = RecordedApi("consistent")
    report, log = report_for(api), PageLog()
    pages = read_whole(api, report, log)
    assert [p.number for p in pages] == [1, 2, 3]
    assert ids(pages) == list(range(101, 108))
    assert (report.pages, report.total, report.total_at_start, report.added) == (3, 7, 7, 0)
    assert (log.numbers, log.totals, log.sizes, log.rows) == ([1, 2, 3], [7] * 3, [3] * 3, 7)
    assert api.asked == []  # nothing read again
    verify_ids(np.array(ids(pages)), report)
    assert (report.verified, report.rows, report.unique_ids, report.note) == (True, 7, 7, None)


def test_a_list_that_grew_at_its_end_is_read_to_its_new_end() -> None:
    """Page 3 reports total 10 (page 1: 9): page 3 is read again, and must still begin with the
    rows read from it; page 4 then brings the one new row, and only it."""
    api = RecordedApi("grew_at_end")
    report = report_for(api)
    pages = read_whole(api, report)
    assert ids(pages) == list(range(101, 111))  # 110 once: page 3's rows are not passed twice
    assert [p.number for p in pages] == [1, 2, 3, 4]
    assert api.asked == [(1, 3), (1, 4)]
    assert (report.total_at_start, report.total, report.added) == (9, 10, 1)
    assert (report.pages, report.tail_pages) == (5, 2)
    verify_ids(np.array(ids(pages)), report)
    assert report.verified and report.unique_ids == 10


def test_a_grown_list_whose_rows_moved_is_refused_at_the_page_read_again() -> None:
    api = RecordedApi("grew_and_shifted")
    match = "page 3, read again .* no longer holds the rows read before at positions 7 to 9"
    with pytest.raises(ListMoved, match=match) as err:
        read_whole(api, report_for(api))
    assert err.value.kind == SHIFTED
    assert api.asked == [(1, 3)]  # refused there: page 4 is never asked for


def test_a_grown_list_whose_new_page_holds_nothing_is_a_count_that_is_wrong() -> None:
    api = RecordedApi("grew_at_end")
    api.reads[0]["again"]["4"]["data"] = []  # page 4 counts 10 rows, holds none past row 9
    with pytest.raises(ListMoved, match="page 4 counts 10 rows but holds none after row 9") as err:
        read_whole(api, report_for(api))
    assert err.value.kind == COUNT


def test_a_list_that_grows_faster_than_it_is_read_is_refused() -> None:
    """Every page fetched at the end finds three more signups: the tail never catches up, and
    the read stops after 16 pages read again rather than page on forever."""
    listed = list(range(1, 8))

    def body(number: int) -> dict[str, Any]:
        rows = [{"id": i} for i in listed[(number - 1) * 3 : number * 3]]
        last = -(-len(listed) // 3)
        return {"current_page": number, "data": rows, "per_page": 3, "total": len(listed),
                "last_page": last}  # fmt: skip

    def fetch(number: int) -> Page:
        listed.extend(range(listed[-1] + 1, listed[-1] + 4))
        return parse_page(body(number), number, None, "/subscriptions")

    first = parse_page(body(1), 1, None, "/subscriptions")
    listed.append(8)  # a signup before page 2: page 2 reports total 8
    second = parse_page(body(2), 2, None, "/subscriptions")
    report = ListRead("/subscriptions", {})
    with pytest.raises(
        ListMoved, match="grew faster than it could be read: total 7 at page 1"
    ) as e:
        list(check_pages(iter([first, second]), report, PageLog(), fetch))
    assert e.value.kind == OUTRUN
    assert report.tail_pages == 16


def test_rows_removed_while_paging_fail_the_read_at_the_page_that_shows_it() -> None:
    api = RecordedApi("row_vanished")
    passed: list[Page] = []
    with pytest.raises(ListMoved, match="total went from 7 at page 1 to 6 at page 2") as err:
        for p in check_pages(api.iter_pages(api.path), report_for(api)):
            passed.append(p)
    assert err.value.kind == SHRANK
    assert [p.number for p in passed] == [1]  # page 2 never reaches the caller


def test_pages_of_two_sizes_fail_the_read() -> None:
    api = RecordedApi("per_page_changed")
    with pytest.raises(ListMoved, match="page 1 came with per_page 3, page 2 with per_page 4") as e:
        read_whole(api, report_for(api))
    assert e.value.kind == PAGE_SIZE


def test_without_per_page_a_changed_page_count_is_a_changed_page_size() -> None:
    first = {"current_page": 1, "data": [{"id": 1}] * 3, "total": 7, "last_page": 3}
    second = {"current_page": 2, "data": [{"id": 2}] * 4, "total": 7, "last_page": 2}
    pages = iter([page(first, "/s"), page(second, "/s")])
    with pytest.raises(ListMoved, match="page 1 counted 3 pages of the 7 rows, page 2 counted 2"):
        list(check_pages(pages, ListRead("/s", {})))


def test_a_total_on_some_pages_only_fails_the_read() -> None:
    api = RecordedApi("consistent")
    one, two, three = api.pages()
    with pytest.raises(ListMoved, match="page 2 carries no total and page 1 did not") as err:
        list(check_pages(iter([one, replace(two, total=None), three]), report_for(api)))
    assert err.value.kind == WRAPPER
    with pytest.raises(ListMoved, match=r"page 2 carries a total \(7\) and page 1 did not"):
        list(check_pages(iter([replace(one, total=None), two]), report_for(api)))


def test_an_empty_page_that_links_a_next_one_is_noted() -> None:
    empty = page({"current_page": 1, "data": [], "next_page_url": "https://api/?page=2"}, "/s")
    report = ListRead("/s", {})
    assert list(check_pages(iter([empty]), report)) == [empty]
    assert report.note == "page 1 was empty but pointed to a next page"


# -- verify_ids: unique ids plus rows set aside add up to the total ------------------------------


def test_an_id_read_twice_fails_the_check() -> None:
    report = ListRead("/s", {}, total=4)
    with pytest.raises(ListMoved, match="1 ids appeared twice while paging") as err:
        verify_ids(np.array([1, 2, 2, 3]), report)
    assert err.value.kind == REPEAT
    assert (report.rows, report.unique_ids, report.verified) == (4, 3, False)


def test_rows_set_aside_for_lacking_an_id_count_toward_the_total() -> None:
    report = ListRead("/s", {}, total=7)
    verify_ids(np.array([1, 2, 3, 4, 5, 6]), report, dropped=1)
    assert (report.verified, report.dropped) == (True, 1)
    short = ListRead("/s", {}, total=8)
    match = "read 6 unique rows and 1 rows without a usable id but the API reports total 8"
    with pytest.raises(ListMoved, match=match) as err:
        verify_ids(np.array([1, 2, 3, 4, 5, 6]), short, dropped=1)
    assert err.value.kind == COUNT and not short.verified


def test_a_read_without_a_total_cannot_be_verified() -> None:
    report = ListRead("/s", {})
    verify_ids(np.array([5, 6]), report)
    assert (report.verified, report.unique_ids) == (False, 2)
    assert report.note == "the pages carry no total to check the rows against"


# -- read_until_it_adds_up: read again, keep the first read that adds up, or refuse -------------


def read(name: str, attempts: int, first: Page | None = None) -> tuple[Any, ListRead, RecordedApi]:
    api = RecordedApi(name)
    report = report_for(api)
    found = read_until_it_adds_up(WHAT, api.client, report, attempts, read_ids(report), first)
    return found, report, api


def refused(name: str, attempts: int) -> tuple[str, RecordedApi]:
    api = RecordedApi(name)
    report = report_for(api)
    with pytest.raises(IntegrityError) as err:
        read_until_it_adds_up(WHAT, api.client, report, attempts, read_ids(report))
    assert not report.complete
    return str(err.value), api


def test_a_read_that_adds_up_at_once_is_kept() -> None:
    found, report, api = read("consistent", attempts=3)
    assert found == list(range(101, 108))
    assert (report.attempts, report.complete, report.verified, report.reread_because) == (
        1,
        True,
        True,
        [],
    )
    assert api.read == 1


def test_page_one_the_caller_already_has_is_the_one_read() -> None:
    api = RecordedApi("consistent")
    first = replace(api.pages()[0], data=[{"id": 100}, {"id": 102}, {"id": 103}])
    found, _, _ = read("consistent", attempts=1, first=first)
    assert found[:3] == [100, 102, 103]


def test_a_list_that_grew_while_read_adds_up_to_its_last_total(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, "devportal.reading"):
        found, report, api = read("grew_at_end", attempts=3)
    assert found == list(range(101, 111))
    assert (report.attempts, report.added, report.total_at_start, report.total) == (1, 1, 9, 10)
    assert api.asked == [(1, 3), (1, 4)]
    assert "list grew by 1 rows while it was read (total 9 at page 1, 10 at the end" in caplog.text


def test_a_read_that_saw_rows_removed_is_thrown_away_and_the_next_one_kept() -> None:
    found, report, api = read("row_vanished", attempts=3)
    assert found == [101, 103, 104, 105, 106, 107]
    assert (report.attempts, report.total, report.verified, api.read) == (2, 6, True, 2)
    assert report.reread_because == [
        "the total went from 7 at page 1 to 6 at page 2: rows were removed while the list was paged"
    ]


def test_a_busy_list_is_read_until_a_read_adds_up() -> None:
    found, report, api = read("busy_then_still", attempts=3)
    assert found == [101, 102, 103, 105, 106, 108, 109, 110]
    assert report.attempts == 3 and api.read == 3
    assert report.reread_because == [
        "read 6 distinct subscriptions, but the total says 7",
        "read 6 distinct subscriptions, but the total says 8",
    ]
    # read 3's ids jump at the edge of page 1 (103, 105): page 1 is read again, unchanged
    assert (api.asked, report.edge_pages, report.verified) == ([(3, 1)], 1, True)


def test_a_list_that_kept_changing_is_refused_saying_what_vanished_and_appeared() -> None:
    message, api = refused("busy_then_still", attempts=2)
    assert api.read == 2
    assert message.startswith("the subscriptions list kept changing while it was read, in all 2 ")
    assert (
        "read 1: read 6 distinct subscriptions, but the total says 7; read 2: read 6 distinct "
        "subscriptions, but the total says 8; between reads 1 and 2: 1 subscriptions vanished "
        "(107) and 1 appeared (108)" in message
    )
    assert message.endswith("run the sync again later, and if it keeps failing the API's pages "
                            "disagree with their own `total`")  # fmt: skip


def test_a_row_listed_twice_the_same_way_twice_stops_the_reading_early() -> None:
    """Two reads that repeat the same id are an API defect: a third read would not help."""
    message, api = refused("row_listed_twice", attempts=3)
    assert api.read == 2
    assert message == (
        "the subscriptions list lists a row twice in every read (2 reads, the same way each "
        "time): subscription 103 came on pages 1 and 2; a defect on the API's side which another "
        "run will not fix, so the list never adds up and nothing was loaded: report it to "
        "whoever runs the API"
    )


def test_a_total_that_counts_a_row_never_served_is_an_api_defect() -> None:
    message, api = refused("total_counts_a_row_never_served", attempts=3)
    assert api.read == 2
    assert message.startswith(
        "the subscriptions list's total counts 1 more rows than it lists, the same in all 2 "
        "reads (read 6 distinct subscriptions, but the total says 7): the API counts rows it "
        "does not serve"
    )


def test_pages_of_two_sizes_in_every_read_say_two_versions_answer() -> None:
    message, api = refused("per_page_changed", attempts=3)
    assert api.read == 3  # a page size that changed may hold still: every attempt is made
    assert message.startswith(
        "the subscriptions list came in pages of different sizes in all 3 reads (the page size "
        "changed while paging: page 1 came with per_page 3, page 2 with per_page 4): two "
        "versions of the API answer at once"
    )


def test_a_row_that_slid_back_across_a_page_edge_unseen_is_found() -> None:
    """102 removed and 108 signed up after page 1: the total stays 7 and 104 slides back onto
    page 1, already read; the ids add up without it. The ids jump at page 1's edge (103, 105):
    page 1, read again at the end, no longer holds the rows read from it, and names 104."""
    api = RecordedApi("removal_and_signup")
    report = report_for(api)
    with pytest.raises(ListMoved) as err:
        read_ids(report)(check_pages(api.iter_pages(api.path), report, PageLog(),
                                     partial(api.fetch_page, api.path, {})))  # fmt: skip
    assert err.value.kind == SLID
    assert str(err.value) == (
        "page 1, read again at the end, no longer holds the rows read from it: rows before "
        "them were removed while the list was paged, and the row with id 104 slid back onto it "
        "from page 2 unseen"
    )
    assert api.asked == [(1, 1)]  # page 2's edge (107, 108) is consecutive: not read again
    assert report.edge_pages == 1


def test_a_list_read_again_after_a_row_slid_keeps_every_row() -> None:
    found, report, api = read("removal_and_signup", attempts=2)
    assert found == [101, 103, 104, 105, 106, 107, 108]
    assert (report.attempts, report.verified, report.edge_pages) == (2, True, 0)
    assert api.asked == [(1, 1)]  # read 2's edges are consecutive: nothing read again
    assert report.reread_because == [
        "page 1, read again at the end, no longer holds the rows read from it: rows before "
        "them were removed while the list was paged, and the row with id 104 slid back onto it "
        "from page 2 unseen"
    ]


def test_a_read_again_starts_from_page_one() -> None:
    api = RecordedApi("row_vanished")
    report = report_for(api)
    seen: list[list[int]] = []

    def read_pages(pages: Iterator[Page]) -> int:
        seen.append([])
        got = []
        for p in pages:
            seen[-1].append(p.number)
            got += [row["id"] for row in p.data]
        verify_ids(np.array(got), report)
        return len(got)

    assert read_until_it_adds_up(WHAT, api.client, report, 2, read_pages) == 6
    assert seen == [[1], [1, 2]]  # read 1 ends at page 2 (its total fell); read 2 from page 1
