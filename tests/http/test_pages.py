"""One page's wrapper checked (http/pages.py): `parse_page` on a recorded page of the
subscription list (`pages/subscriptions_page_2.json`, spec 2.2) and on malformed copies of it,
each refused in one line at once (an `ApiError`, never retried); `PageGuard` holding later pages
against page 1."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from devportal.base.errors import ApiError
from devportal.http.failures import RetryableError
from devportal.http.pages import Page, PageGuard, page_parser, parse_page, server_time

RECORDED = Path(__file__).parent / "pages" / "subscriptions_page_2.json"
PATH = "/api/v1/developer/subscriptions"
NOT_A_PAGE = "the answer is not a page of the list: check that base_url is the Developer API"
INCONSISTENT = "the API's paging is inconsistent, so the list was not read (nothing was loaded)"


def body(**changes: Any) -> dict[str, Any]:
    """The recorded page 2 (7 rows, 3 a page), with CHANGES."""
    recorded: dict[str, Any] = json.loads(RECORDED.read_text("utf-8"))
    return {**recorded, **changes}


def test_a_recorded_page_is_read_with_its_wrapper() -> None:
    page = parse_page(body(), 2, None, PATH)
    assert [row["id"] for row in page.data] == [104, 105, 106]
    assert (page.number, page.total, page.last_page, page.per_page) == (2, 7, 3, 3)
    assert page.next_page_url == "https://api.example.test/api/v1/developer/subscriptions?page=3"
    assert page.fingerprint != 0


def test_numbers_sent_as_digits_are_numbers() -> None:
    page = parse_page(body(total="7", per_page="3", last_page="3", current_page="2"), 2, None, PATH)
    assert (page.total, page.per_page, page.last_page) == (7, 3, 3)


def test_the_last_page_may_hold_fewer_rows_and_links_nothing() -> None:
    last = body(current_page=3, data=body()["data"][:1], next_page_url=None)
    page = parse_page(last, 3, None, PATH)
    assert len(page.data) == 1 and page.next_page_url is None


def test_an_empty_next_page_url_is_none() -> None:
    assert parse_page(body(next_page_url=""), 2, None, PATH).next_page_url is None


def test_data_keyed_by_row_position_is_read_in_position_order() -> None:
    rows = body()["data"]
    keyed = {"2": rows[2], "0": rows[0], "1": rows[1]}  # a Laravel collection, keys kept
    page = parse_page(body(data=keyed), 2, None, PATH)
    assert [row["id"] for row in page.data] == [104, 105, 106]
    gaps = parse_page(body(data={"0": rows[0], "2": rows[2]}, total=None), 2, None, PATH)
    assert [row["id"] for row in gaps.data] == [104, 106]  # no total to fall short of


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ([1, 2], "expected a JSON object (a page of the list), got a JSON array"),
        ("<html>", "expected a JSON object (a page of the list), got a string"),
        ({"total": 7}, "`data` is missing, not a list of rows"),
        (body(data=None), "`data` is null, not a list of rows"),
        (body(data="rows"), "`data` is a string, not a list of rows"),
        (body(data=[{"id": 1}, 5, "x"]), "`data` holds 2 items that are not objects"),
        (body(data={"a": {"id": 1}}), "`data` is an object keyed by 'a', not a list of rows"),
    ],
)
def test_an_answer_that_is_no_page_is_refused(answer: Any, said: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_page(answer, 2, None, PATH)
    assert str(err.value) == f"{PATH} page 2: {said}; {NOT_A_PAGE} (nothing was loaded)"
    assert not isinstance(err.value, RetryableError)  # the same request brings the same


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"current_page": 1}, "the API answered with current_page 1: it does not serve the page"),
        ({"total": -1}, "total is -1"),
        ({"per_page": 0}, "per_page is 0"),
        ({"last_page": -1}, "last_page is -1"),
        ({"last_page": 4}, "last_page is 4, but total 7 at per_page 3 makes 3 pages"),
        ({"total": 70}, "last_page is 3, but total 70 at per_page 3 makes 24 pages"),
        (
            {"data": body()["data"] * 2},
            "it holds 6 rows, more than its per_page of 3",
        ),
        (
            {"data": body()["data"][:2]},
            "it holds 2 rows, but total 7 at per_page 3 makes 3 pages: a page before the last "
            "holds 3",
        ),
        (
            {"data": {"0": {"id": 1}, "2": {"id": 3}}},
            "`data` is an object keyed by row position (0, 2), not a list, with 1 position(s) "
            "missing",
        ),
    ],
)
def test_a_wrapper_that_contradicts_itself_is_refused(changes: dict[str, Any], said: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_page(body(**changes), 2, None, PATH)
    message = str(err.value)
    assert message.startswith(f"{PATH} page 2: {said}")
    assert message.endswith(f"{INCONSISTENT}: report it to whoever runs the API")


def test_a_last_page_that_links_a_next_one_is_refused() -> None:
    last = body(current_page=3, data=body()["data"][:1])  # the recorded next_page_url kept
    with pytest.raises(ApiError, match="page 3: it links a next page, but total 7 at per_page 3"):
        parse_page(last, 3, None, PATH)


def test_the_servers_clock_comes_from_its_date_header() -> None:
    assert server_time({"Date": "Tue, 01 Apr 2025 10:00:00 GMT"}) == datetime(2025, 4, 1, 10)
    assert server_time({"Date": "Tue, 01 Apr 2025 12:00:00 +0200"}) == datetime(2025, 4, 1, 10)
    assert server_time({"Date": "yesterday"}) is None
    assert server_time({}) is None
    parse = page_parser(2, PATH)
    page = parse(body(), {"Date": "Tue, 01 Apr 2025 10:00:00 GMT"})
    assert (page.number, page.server_time) == (2, datetime(2025, 4, 1, 10))


# -- PageGuard: later pages held against page 1 ---------------------------------------------------


def pages() -> tuple[Page, Page]:
    second = parse_page(body(), 2, None, PATH)
    first = replace(second, number=1, data=[{"id": i} for i in (101, 102, 103)], fingerprint=1)
    return first, second


def test_a_page_that_repeats_an_earlier_one_is_refused() -> None:
    first, second = pages()
    guard = PageGuard(first, PATH)
    guard.check(second, 3)
    again = replace(second, number=3)  # page 3 holds page 2's rows: `page` is ignored
    with pytest.raises(
        ApiError, match="page 3: it holds the same rows as page 2: the API does not"
    ):
        guard.check(again, 3)


def test_an_empty_page_before_the_last_is_refused() -> None:
    first, second = pages()
    with pytest.raises(ApiError, match="page 2: it is empty, but last_page is 3"):
        PageGuard(first, PATH).check(replace(second, data=[], fingerprint=0), 3)
    PageGuard(first, PATH).check(replace(second, number=3, data=[], fingerprint=0), 3)  # last


def test_a_page_whose_wrapper_moved_is_left_to_the_reading() -> None:
    """The list changed while it was paged: not the pager's to refuse (`reading` reads it
    again), even when the page repeats an earlier one."""
    first, second = pages()
    guard = PageGuard(first, PATH)
    guard.check(second, 3)
    guard.check(replace(second, number=3, total=8), 3)


def test_without_per_page_page_ones_rows_are_the_size() -> None:
    first, second = pages()
    first, second = replace(first, per_page=None), replace(second, per_page=None)
    guard = PageGuard(first, PATH)
    guard.check(second, 3)
    short = replace(second, number=2, data=second.data[:2], fingerprint=2)
    with pytest.raises(ApiError, match="it holds 2 rows, but total 7 at per_page 3 makes 3"):
        PageGuard(first, PATH).check(short, 3)
