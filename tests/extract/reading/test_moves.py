"""What a read's pages said (extract/reading/moves.py): the page log (`PageLog`), why a read did
not add up (`Failure`), when reads failed the same way (`deterministic`), and the words of the
refusal (`refusal`): which ids, which pages, what vanished or appeared between reads."""

from __future__ import annotations

import numpy as np
import pytest

from devportal.extract.reading.moves import (
    COUNT,
    NO_ID,
    PAGE_SIZE,
    REPEAT,
    SHRANK,
    Failure,
    ListMoved,
    PageLog,
    deterministic,
    differences,
    refusal,
    settings_user_id,
)
from tests.extract.reading.recorded import RecordedApi, page


def test_the_page_log_keeps_each_pages_total_size_and_ids_in_order() -> None:
    api = RecordedApi("grew_at_end")
    log = PageLog()
    for p in api.pages():
        log.add(p)
    assert (log.numbers, log.totals, log.sizes, log.rows) == ([1, 2, 3], [9, 9, 10], [3] * 3, 9)
    assert log.ids_between(2, 5).tolist() == [103, 104, 105]
    assert log.unique_ids().tolist() == list(range(101, 110))
    assert log.repeats() == {}


def test_rows_without_a_usable_id_are_logged_but_never_named() -> None:
    log = PageLog()
    log.add(page({"current_page": 1, "data": [{"id": "7"}, {"id": None}, {"id": "x"}]}, "/s"))
    assert log.ids_between(0, 3).tolist() == [7, NO_ID, NO_ID]  # "7" is the id 7
    assert log.unique_ids().tolist() == [7]
    assert log.repeats() == {}  # two rows without an id are not a repeat


def test_the_page_log_names_each_repeated_id_with_its_pages() -> None:
    api = RecordedApi("row_listed_twice")
    log = PageLog()
    for p in api.pages():
        log.add(p)
    assert log.repeats() == {103: [1, 2]}
    three = PageLog()
    three.add(page({"current_page": 2, "data": [{"id": 5}, {"id": 5}, {"id": 5}]}, "/s"))
    assert three.repeats() == {5: [2, 2, 2]}


def test_a_settings_entry_is_logged_by_its_user_id() -> None:
    log = PageLog(settings_user_id)
    entries = [{"user": {"service": {"id": 42}}}, {"user": {"twitch": {}}}, {"user": "x"}]
    log.add(page({"current_page": 1, "data": entries}, "/settings"))
    assert log.ids_between(0, 3).tolist() == [42, NO_ID, NO_ID]


def failure(
    kind: str,
    first: int | None = 7,
    last: int | None = 7,
    repeated: tuple[tuple[int, tuple[int, ...]], ...] = (),
    unique: int = 7,
    dropped: int = 0,
    ids: list[int] | None = None,
    reason: str = "",
) -> Failure:
    return Failure(kind, reason, first, last, repeated, unique, unique, dropped, kind in (REPEAT,
                   COUNT), np.array(ids or [], dtype=np.int64))  # fmt: skip


def test_a_failure_is_made_from_the_page_log_of_its_read() -> None:
    api = RecordedApi("row_listed_twice")
    log = PageLog()
    for p in api.pages():
        log.add(p)
    moved = ListMoved("1 ids appeared twice while paging", REPEAT)
    found = Failure.of(moved, log, 7, 7, 0)
    assert (found.kind, found.reason, found.repeated) == (REPEAT, str(moved), ((103, (1, 2)),))
    assert (found.rows, found.unique, found.complete) == (7, 6, True)
    assert found.ids.tolist() == [101, 102, 103, 104, 105, 106]
    shrank = Failure.of(ListMoved("fell", SHRANK), log, 7, 7, 0)
    assert not shrank.complete and shrank.ids.size == 0  # a read cut short names no ids


@pytest.mark.parametrize(
    ("found", "said"),
    [
        (
            failure(REPEAT, repeated=((103, (1, 2)),)),
            "subscription 103 came on pages 1 and 2 (total 7)",
        ),
        (
            failure(REPEAT, 7, 8, repeated=((5, (2, 2, 2)),)),
            "subscription 5 came 3 times on page 2 (the total went from 7 to 8 while it was read)",
        ),
        (failure(COUNT, unique=6), "read 6 distinct subscriptions, but the total says 7"),
        (
            failure(COUNT, unique=5, dropped=1),
            "read 5 distinct subscriptions and 1 rows without a usable id, but the total says 7",
        ),
        (
            failure(COUNT, 7, 9, unique=8),
            "read 8 distinct subscriptions, but the total says 9 (the total went from 7 to 9 "
            "while it was read)",
        ),
        (failure(SHRANK, reason="the total went from 7 to 6"), "the total went from 7 to 6"),
    ],
)
def test_a_failure_says_what_its_read_saw(found: Failure, said: str) -> None:
    assert found.describe("subscription") == said


def test_at_most_five_repeated_ids_are_named() -> None:
    many = tuple((i, (1, 2)) for i in range(1, 8))
    said = failure(REPEAT, repeated=many).describe("user")
    assert said.count("came on pages 1 and 2") == 5
    assert "user 5 came" in said and "user 6" not in said
    assert "(and 2 more ids came twice)" in said


def test_reads_failed_the_same_way_only_when_the_same_ids_or_the_same_count_were_off() -> None:
    twice = failure(REPEAT, repeated=((103, (1, 2)),))
    other = failure(REPEAT, repeated=((104, (2, 3)),))
    short = failure(COUNT, unique=6)  # one short of 7
    also_short = failure(COUNT, 8, 8, unique=7)  # one short of 8
    two_short = failure(COUNT, unique=5)
    assert not deterministic([twice])  # one read proves nothing
    assert deterministic([twice, twice])
    assert not deterministic([twice, other])
    assert deterministic([short, also_short])
    assert not deterministic([short, two_short])
    assert not deterministic([twice, short])
    size = failure(PAGE_SIZE, reason="sizes")
    assert not deterministic([size, size])  # a deploy ends: worth reading again


def test_differences_name_what_vanished_and_appeared_between_whole_reads() -> None:
    before = failure(COUNT, unique=6, ids=[1, 2, 3, 4, 5, 6])
    after = failure(COUNT, unique=12, ids=[1, 2, 3, 5, *range(20, 28)])
    cut = failure(SHRANK, reason="fell")  # not a whole read: compared with nothing
    said = differences([before, cut, after], "user")
    assert said == [
        "between reads 1 and 3: 2 users vanished (4, 6) and 8 appeared (20, 21, 22, 23, 24 and "
        "3 more)"
    ]
    assert differences([before, before], "user") == ["between reads 1 and 2: the same ids"]


def test_a_total_that_counts_fewer_rows_than_listed_is_refused_as_a_defect() -> None:
    over = failure(COUNT, 5, 5, unique=6)
    message = refusal("user settings", "user", [over, over])
    assert message.startswith(
        "the user settings list's total counts 1 fewer rows than it lists, the same in all 2 "
        "reads (read 6 distinct users, but the total says 5)"
    )
    assert "report it to whoever runs the API" in message


def test_a_refusal_of_reads_that_failed_differently_lists_each_read() -> None:
    first = failure(SHRANK, reason="the total went from 7 at page 1 to 6 at page 2")
    second = failure(REPEAT, repeated=((9, (1, 3)),))
    message = refusal("subscriptions", "subscription", [first, second])
    assert (
        "in all 2 reads (read 1: the total went from 7 at page 1 to 6 at page 2; read 2: "
        "subscription 9 came on pages 1 and 3 (total 7)); nothing was loaded: run the sync "
        "again later" in message
    )
