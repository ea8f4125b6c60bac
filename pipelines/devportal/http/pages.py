"""One page of a list (`Page`) and what it must agree with: `parse_page` checks one answer's
wrapper, `PageGuard` holds every later page against page 1 (`last_page` is ceil(`total` /
`per_page`), `current_page` the page asked for, no empty page before the last, no page that
repeats an earlier one). A server that breaks one is refused in one line at the page that
shows it, never retried: the same request would bring the same answer."""

from __future__ import annotations

import email.utils
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import orjson

from devportal.base.coercion import json_type, to_int
from devportal.base.errors import ApiError, server_text

# the client's one logger, whichever module of it logs: log settings and tests name it
log = logging.getLogger("devportal.client")


@dataclass(frozen=True)
class Page:
    """One page of a paginated list, with the wrapper fields the pager relies on."""

    number: int
    data: list[dict[str, Any]]
    total: int | None
    last_page: int | None
    per_page: int | None
    next_page_url: str | None
    server_time: datetime | None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    size: int = 0  # bytes of the decoded body
    fingerprint: int = 0  # the rows' (see `_fingerprint`); 0 for an empty page


def server_time(headers: Mapping[str, str]) -> datetime | None:
    value = headers.get("Date")
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when


def page_parser(number: int, path: str) -> Callable[[Any, Mapping[str, str]], Page]:
    def parse(body: Any, headers: Mapping[str, str]) -> Page:
        return parse_page(body, number, server_time(headers), path, headers)

    return parse


def parse_page(
    body: Any,
    number: int,
    server_time: datetime | None,
    path: str,
    headers: Mapping[str, str] | None = None,
) -> Page:
    """Page NUMBER of a list, checked: a wrong shape, or a wrapper that contradicts itself, is
    refused at once (ApiError, never retried: the same request brings the same answer).

    One answer must agree with itself: `current_page` is NUMBER; `total` >= 0 and `per_page`
    >= 1 (numbers or digit strings); `last_page` is max(1, ceil(total / per_page)) and the
    page holds at most `per_page` rows, exactly `per_page` on a page before the last (the last
    page is not counted exactly: a row added between the server's count and its select, a
    race no reader can avoid, is the `reading` module's to notice); a page at or past the last
    links no next page. A `data` object keyed by row position ({"0": {...}, "2": {...}}: a
    Laravel collection filtered without values()) is read in key order; when positions are
    missing and the page reports a `total`, it is refused: rows were dropped from the page
    after it was counted, so the list can never add up.
    """
    where = f"{path} page {number}"
    if not isinstance(body, dict):
        raise _not_a_page(where, f"expected a JSON object (a page of the list), got {_kind(body)}")
    total = to_int(body.get("total"))
    data = body.get("data")
    if isinstance(data, dict):
        data = _positional_rows(data, where, total)
    elif not isinstance(data, list):
        shown = "missing" if "data" not in body else _kind(data)
        raise _not_a_page(where, f"`data` is {shown}, not a list of rows")
    rows = [row for row in data if isinstance(row, dict)]
    if len(rows) != len(data):
        raise _not_a_page(where, f"`data` holds {len(data) - len(rows)} items that are not objects")
    reported = to_int(body.get("current_page"))
    if reported is not None and reported != number:
        raise refused(
            where,
            f"the API answered with current_page {reported}: it does not serve the page asked "
            "for (it ignores `page`, or a cache in front of it ignores the query)",
        )
    next_url = body.get("next_page_url")
    page = Page(
        number=number,
        data=rows,
        total=total,
        last_page=to_int(body.get("last_page")),
        per_page=to_int(body.get("per_page")),
        next_page_url=next_url if isinstance(next_url, str) and next_url else None,
        server_time=server_time,
        headers=headers if headers is not None else {},
        fingerprint=_fingerprint(rows),
    )
    _check_wrapper(page, where)
    return page


def _check_wrapper(page: Page, where: str) -> None:
    """The arithmetic of one page's wrapper (see `parse_page`)."""
    total, per_page, last = page.total, page.per_page, page.last_page
    if total is not None and total < 0:
        raise refused(where, f"total is {total}")
    if per_page is not None and per_page < 1:
        raise refused(where, f"per_page is {per_page}")
    if last is not None and last < 0:
        raise refused(where, f"last_page is {last}")
    rows = len(page.data)
    if per_page is not None and rows > per_page:
        raise refused(where, f"it holds {rows} rows, more than its per_page of {per_page}")
    if total is None or per_page is None:
        return
    proven = max(1, -(-total // per_page))
    sums = f"total {total} at per_page {per_page} makes {proven} page{'s' if proven > 1 else ''}"
    if last is not None and max(1, last) != proven:
        raise refused(where, f"last_page is {last}, but {sums}")
    if page.number < proven and rows != per_page:
        raise refused(
            where, f"it holds {rows} rows, but {sums}: a page before the last holds {per_page}"
        )
    if page.number >= proven and page.next_page_url:
        raise refused(where, f"it links a next page, but {sums}")


def _not_a_page(where: str, what: str) -> ApiError:
    """The error for an answer of the wrong shape: the same request would bring it again."""
    return ApiError(
        f"{where}: {what}; the answer is not a page of the list: check that base_url is the "
        "Developer API (nothing was loaded)"
    )


def refused(where: str, what: str) -> ApiError:
    """The error for pages that contradict themselves or each other: paging on would send
    requests without end or load rows twice, and another attempt would bring the same."""
    return ApiError(
        f"{where}: {what}; the API's paging is inconsistent, so the list was not read "
        "(nothing was loaded): report it to whoever runs the API"
    )


def _positional_rows(data: dict[str, Any], where: str, total: int | None) -> list[Any]:
    """`data` sent as an object keyed by row position: its values in position order."""
    keys = list(data)
    if not all(k.isascii() and k.isdigit() for k in keys):
        shown = ", ".join(repr(server_text(k, 20)) for k in keys[:3])
        raise _not_a_page(where, f"`data` is an object keyed by {shown}, not a list of rows")
    keys.sort(key=int)
    missing = int(keys[-1]) + 1 - len(keys) if keys else 0
    if missing and total is not None:
        shown = ", ".join(keys[:4]) + (", ..." if len(keys) > 4 else "")
        raise refused(
            where,
            f"`data` is an object keyed by row position ({shown}), not a list, with {missing} "
            "position(s) missing: rows were dropped from the page after it was counted (a "
            "Laravel collection filtered without values()), so the list cannot add up to its "
            f"total of {total}",
        )
    log.debug("%s: `data` is an object keyed by row position; read in position order", where)
    return [data[k] for k in keys]


def _kind(value: Any) -> str:
    """A JSON value's kind, for messages (never the value: it may be large)."""
    return _KIND_NAMES[json_type(value)]


_KIND_NAMES = {
    "null": "null",
    "boolean": "true/false",
    "number": "a number",
    "string": "a string",
    "array": "a JSON array",
    "object": "a JSON object",
}


def _row_key(row: Any) -> bytes:
    """A row's identity for repeat checks: its JSON (integers past 64 bits: its repr)."""
    try:
        return orjson.dumps(row)
    except TypeError:
        return repr(row).encode()


def row_keys(rows: list[dict[str, Any]]) -> set[bytes]:
    return {_row_key(row) for row in rows}


def _fingerprint(rows: list[dict[str, Any]]) -> int:
    """Which rows a page holds, cheaply (its length, first and last row): two pages with the
    same fingerprint repeat each other. 0 for an empty page."""
    if not rows:
        return 0
    return hash((len(rows), _row_key(rows[0]), _row_key(rows[-1]))) or 1


class PageGuard:
    """What page 1 of a list proves, held against every page after it, in order.

    A page that repeats an earlier one (`fingerprint`), or an empty page before `last_page`,
    shows a server that does not page (it ignores `page`, a cache ignores the query, its
    `last_page` overstates the list): refused at that page, in seconds, instead of requests
    without end or a list re-read that would repeat them. A page whose wrapper differs from
    page 1's is let through: the list moved while it was paged, which `reading` notices."""

    def __init__(self, first: Page, path: str) -> None:
        self.first, self.path = first, path
        self.seen: dict[int, int] = {first.fingerprint: first.number} if first.data else {}
        # a wrapper without `per_page`: page 1 of several is full, so its rows are the size
        self.implied: int | None = None
        if first.per_page is None and first.data and (first.last_page or 0) > 1:
            self.implied = len(first.data)
            _check_wrapper(replace(first, per_page=self.implied), f"{path} page 1")

    def check(self, page: Page, last: int | None) -> None:
        first = self.first
        if (page.total, page.last_page, page.per_page) != (
            first.total,
            first.last_page,
            first.per_page,
        ):
            return
        where = f"{self.path} page {page.number}"
        if self.implied is not None:
            _check_wrapper(replace(page, per_page=self.implied), where)
        if not page.data:
            if last is not None and page.number < last:
                raise refused(where, f"it is empty, but last_page is {last}")
            return
        earlier = self.seen.setdefault(page.fingerprint, page.number)
        if earlier != page.number:
            raise refused(
                where,
                f"it holds the same rows as page {earlier}: the API does not serve the page "
                "asked for (it ignores `page`, or a cache in front of it ignores the query)",
            )
