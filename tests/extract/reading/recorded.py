"""Recorded pages (`pages/*.json`) served to the reading code without a server.

Each file is one list as the API served it, read by read: `reads[k].pages` are the bodies of
read k+1's pages in page order (the API's pagination wrapper, spec 2.2, as recorded), and
`reads[k].again` the bodies of the pages that read asks for again by number (a list that grew
while it was read is read to its new end). `RecordedApi` has the two calls the reading code
makes of `http.ApiClient` (`iter_pages`, `fetch_page`, and `map_concurrent` to fetch pages
again); every body goes through `http.parse_page`, as the client's would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from devportal.extract.reading.list_read import ListRead, verify_ids
from devportal.extract.reading.moves import subscription_id
from devportal.http.pages import Page, parse_page
from devportal.http.session import ApiClient

PAGES = Path(__file__).parent / "pages"


def recorded(name: str) -> dict[str, Any]:
    """The recorded list `pages/NAME.json`."""
    found: dict[str, Any] = json.loads((PAGES / f"{name}.json").read_text("utf-8"))
    return found


def page(body: dict[str, Any], path: str) -> Page:
    """One recorded body as the client hands it over: checked by `parse_page`."""
    return parse_page(body, int(body["current_page"]), None, path)


class RecordedApi:
    """A stand-in for `ApiClient` serving one recorded list (`pages/NAME.json`).

    Each `iter_pages` call starts the next recorded read; `fetch_page` serves that read's
    `again` pages. `asked` lists what was fetched again: (read, page number)."""

    def __init__(self, name: str) -> None:
        doc = recorded(name)
        self.path: str = doc["path"]
        self.reads: list[dict[str, Any]] = doc["reads"]
        self.read = 0  # reads started
        self.asked: list[tuple[int, int]] = []

    @property
    def client(self) -> ApiClient:
        """This stand-in where the reading code takes an `ApiClient`."""
        return cast(ApiClient, self)

    def pages(self, read: int = 1) -> list[Page]:
        """Read READ's pages, parsed."""
        return [page(body, self.path) for body in self.reads[read - 1]["pages"]]

    def iter_pages(
        self, path: str, params: Mapping[str, Any] | None = None, first: Page | None = None
    ) -> Iterator[Page]:
        assert path == self.path, path
        self.read += 1
        assert self.read <= len(self.reads), f"read {self.read} asked, {len(self.reads)} recorded"
        pages = self.pages(self.read)
        yield from ([first, *pages[1:]] if first is not None else pages)

    def fetch_page(
        self, path: str, params: Mapping[str, Any], number: int, per_page: int | None = None
    ) -> Page:
        assert path == self.path, path
        self.asked.append((self.read, number))
        again = self.reads[self.read - 1].get("again", {})
        assert str(number) in again, f"read {self.read} asked for page {number} again"
        return page(again[str(number)], path)

    def map_concurrent(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        """(item, fn(item)) for each item, in order, as `ApiClient.map_concurrent` hands them."""
        for item in items:
            yield item, fn(item)


def read_ids(report: ListRead) -> Callable[[Iterator[Page]], list[int]]:
    """A `read_pages` for `read_until_it_adds_up`: every row's id, in order, checked against
    the total (`verify_ids`), as the subscription read does after spooling."""

    def read(pages: Iterator[Page]) -> list[int]:
        ids = [subscription_id(row) for page in pages for row in page.data]
        verify_ids(np.array(ids, dtype=np.int64), report)
        return [int(i) for i in ids if i is not None]

    return read
