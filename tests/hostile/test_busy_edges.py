"""A busy list whose every count stays right while a row slides across a page edge (issue 33,
class 1), through the real `devportal sync` against the hostile API, into a real DuckDB file.

A row removed behind the reader in the same moment as a signup lands at the end keeps every
`total`: the rows behind the removed one slide back one place, the row at the edge of the next
page slides onto a page already read, and the ids read still add up. The read notices it at
the edges whose ids jump (the page before one is read again once the read is over), reads the
list again, and the warehouse ends with exactly the rows the API holds. A list that did not
move is read in one pass: no page is read again where ids are consecutive, and where they jump
the page read again is the same.

Pages are asked for one at a time (`workers=1`), so each change lands between two known pages.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import query, subscription, warehouse_of
from tests.hostile.conftest import CliResult, token_env
from tests.hostile.server import SETTINGS, Answer, HostileApi, Request

# the busy-list suite's readers of what a sync left
from tests.hostile.test_busy_list import listed_ids, page_number
from tests.hostile.test_busy_list import sweeps as sweep_of

Cli = Callable[..., CliResult]
Args = Callable[..., list[str]]


class OnceAtPage:
    """The first time page PAGE is asked for, CHANGE(rows) edits the subscription list in
    place before the page is built (atomically with it); `asked`: every page asked for, in
    order."""

    def __init__(self, page: int, change: Callable[[list[dict[str, Any]]], None]) -> None:
        self.page, self.change = page, change
        self.changed = False
        self.asked: list[int] = []

    def __call__(self, req: Request) -> None:
        number = page_number(req)
        self.asked.append(number)
        if number == self.page and not self.changed:
            self.changed = True
            self.change(self.rows)

    def serve(self, api: HostileApi) -> OnceAtPage:
        self.rows = api.subscriptions
        api.on_subscriptions_page = self
        return self


def remove_and_sign_up(index: int, *new_ids: int) -> Callable[[list[dict[str, Any]]], None]:
    """The row at INDEX (behind the reader) removed, NEW_IDS signed up at the end."""

    def change(rows: list[dict[str, Any]]) -> None:
        del rows[index]
        rows.extend(subscription(i) for i in new_ids)

    return change


def synced(devportal: Cli, api: HostileApi, args: list[str]) -> Path:
    result = devportal(*args, env=token_env(api, workers=1))
    assert result.code == 0, result.err
    return warehouse_of(args)


@pytest.mark.parametrize(
    ("index", "at_page", "slid", "edge"),
    [
        (1, 5, 13, 4),  # a row of page 1 removed while the reader is at page 5: 13 slides onto 4
        (10, 7, 19, 6),  # a row of page 4 removed at page 7: 19 slides onto page 6
        (2, 2, 4, 1),  # the last row of page 1 removed as soon as it was read: 4 slides onto it
    ],
    ids=["far-behind", "mid-list", "just-read"],
)
def test_a_removal_and_a_signup_that_keep_the_total_are_read_again(
    index: int,
    at_page: int,
    slid: int,
    edge: int,
    api: HostileApi,
    devportal: Cli,
    sync_args: Args,
) -> None:
    """30 subscriptions, 10 pages of 3; before page AT_PAGE of the first read one row behind
    the reader is removed and one signs up at the end: every page says total 30, and the row
    that was first on page AT_PAGE slides onto the page before it, already read."""
    api.subscriptions = [subscription(i) for i in range(1, 31)]
    busy = OnceAtPage(at_page, remove_and_sign_up(index, 31)).serve(api)
    warehouse = synced(devportal, api, sync_args("--resources", "subscriptions"))
    assert listed_ids(warehouse) == sorted(r["id"] for r in api.subscriptions)  # none missed
    assert slid in listed_ids(warehouse) and index + 1 not in listed_ids(warehouse)
    sweep = sweep_of(warehouse)
    assert (sweep["attempts"], sweep["verified"], sweep["total"]) == (2, True, 30)
    assert sweep["reread_because"] == [
        f"page {edge}, read again at the end, no longer holds the rows read from it: rows "
        f"before them were removed while the list was paged, and the row with id {slid} slid "
        f"back onto it from page {edge + 1} unseen"
    ]
    # read 1 asked for the page before the edge again once it was over; read 2, whose ids are
    # consecutive at every edge, for nothing more than its pages
    assert busy.asked == [*range(1, 11), edge, *range(1, 11)]
    assert sweep["edge_pages"] == 0


def test_a_removal_behind_the_reader_hidden_in_growth_is_read_again(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """One row removed and two signed up: the total grows by one, the list is read to its new
    end, and the rows behind the removed one still slid: read again."""
    api.subscriptions = [subscription(i) for i in range(1, 31)]
    OnceAtPage(5, remove_and_sign_up(1, 31, 32)).serve(api)
    warehouse = synced(devportal, api, sync_args("--resources", "subscriptions"))
    assert listed_ids(warehouse) == sorted(r["id"] for r in api.subscriptions)
    sweep = sweep_of(warehouse)
    assert (sweep["attempts"], sweep["total"]) == (2, 31)
    assert "the row with id 13 slid back onto it from page 5 unseen" in sweep["reread_because"][0]


@pytest.mark.parametrize(
    ("ids", "read_again"),
    [
        (range(1, 31), []),  # consecutive ids: nothing fits between two pages
        (range(1, 61, 2), list(range(1, 10))),  # every even id deleted long ago: every edge jumps
        (range(30, 0, -1), []),  # newest first, consecutive
        ([*range(1, 13), *range(20, 38)], [4]),  # one gap, at the edge of pages 4 and 5
    ],
    ids=["consecutive", "odd-ids", "descending", "one-gap"],
)
def test_a_list_that_did_not_move_is_read_in_one_pass(
    ids: Any, read_again: list[int], api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """No page is read again where the ids at an edge are consecutive; where they jump, the
    page before the edge is read again once, finds the same rows, and the read is kept."""
    api.subscriptions = [subscription(i) for i in ids]
    busy = OnceAtPage(0, lambda rows: None).serve(api)
    warehouse = synced(devportal, api, sync_args("--resources", "subscriptions"))
    assert listed_ids(warehouse) == sorted(ids)
    sweep = sweep_of(warehouse)
    assert (sweep["attempts"], sweep["reread_because"]) == (1, [])
    assert sweep["edge_pages"] == len(read_again)
    assert busy.asked == [*range(1, 11), *read_again]


def test_a_list_that_slides_in_every_read_is_refused_saying_so(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """Every read: before its page 5, the second row goes and a signup comes. Never a
    snapshot: refused after three reads, each naming the row that slid, nothing loaded."""
    api.subscriptions = [subscription(i) for i in range(1, 31)]
    state = {"next": 31, "changed": False}

    def every_read(req: Request) -> None:
        number = page_number(req)
        if number == 1:
            state["changed"] = False
        elif number == 5 and not state["changed"]:
            state["changed"] = True
            del api.subscriptions[1]
            api.subscriptions.append(subscription(state["next"]))
            state["next"] += 1

    api.on_subscriptions_page = every_read
    args = sync_args("--resources", "subscriptions")
    result = devportal(*args, env=token_env(api, workers=1))
    assert result.code == 1, result.err
    said = [
        f"read {k}: page 4, read again at the end, no longer holds the rows read from it: rows "
        f"before them were removed while the list was paged, and the row with id {slid} slid "
        "back onto it from page 5 unseen"
        for k, slid in ((1, 13), (2, 14), (3, 15))
    ]
    assert result.err.strip().splitlines()[-1] == (
        "devportal: error: the subscription list kept changing while it was read, in all 3 "
        f"reads ({'; '.join(said)}): rows were removed behind the reader while others were "
        "added, every time; nothing was loaded: run the sync again later"
    )
    assert listed_ids(warehouse_of(args)) == []


def test_a_settings_list_with_a_removal_and_a_new_user_is_read_again(
    api: HostileApi, devportal: Cli, sync_args: Args
) -> None:
    """The same slide on the user settings list (ordered by user id): read again, and every
    user the API lists is in the warehouse."""

    def entry(uid: int) -> dict[str, Any]:
        return {"user": {"service": {"id": uid}}, "settings": {"n": uid}}

    api.settings = [entry(uid) for uid in range(1, 31)]
    reads = {"n": 0}

    def route(req: Request) -> Any:
        number = page_number(req)
        if number == 1:
            reads["n"] += 1
        if reads["n"] == 1 and number == 5:
            del api.settings[1]
            api.settings.append(entry(31))
        return Answer(200, api.page(req, api.settings))

    api.route(SETTINGS, route)
    warehouse = synced(devportal, api, sync_args("--resources", "user_settings"))
    users = query(warehouse, "SELECT user_id FROM devportal.user_settings ORDER BY 1")
    assert [u[0] for u in users] == [e["user"]["service"]["id"] for e in api.settings]
    sweep = sweep_of(warehouse, SETTINGS)
    assert sweep["attempts"] == 2
    assert "the row with id 13 slid back onto it from page 5 unseen" in sweep["reread_because"][0]
