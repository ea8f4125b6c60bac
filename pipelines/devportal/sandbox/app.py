"""The Developer API itself: routing, parameter validation, the pagination wrapper.

Pure request -> `Response` logic with no sockets, so the HTTP layer (`server.py`) stays a thin
shell. Authentication, faults and latency happen in the HTTP layer before these handlers run.

Laravel conventions are followed where the spec is silent, because the real backend's
wrapper is Laravel's length-aware paginator (see desktop-client-facts.md):
- `page` that is not an integer >= 1 counts as page 1; a page past the end answers `data: []`,
  `from`/`to` null, with `total` and `last_page` still right; `last_page` >= 1.
- Page URLs keep every query parameter the client sent, in its order, with `page` replaced in
  place (or appended), urlencoded like PHP's http_build_query; they are absolute and use the
  `Host` the client used.
- Validation failures answer 422 `{"message": ..., "errors": {field: [messages]}}`; empty
  query values count as absent (Laravel's ConvertEmptyStringsToNull).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from devportal.base.api import SUBSCRIPTIONS_PATH, USER_ACCOUNTS_PREFIX, USER_SETTINGS_PATH
from devportal.sandbox.clock import parse_bound
from devportal.sandbox.store import SubscriptionFilter
from devportal.sandbox.world import World

SUBSCRIPTIONS_PER_PAGE = 200
SETTINGS_PER_PAGE = 20
MAX_USERNAMES = 20

# What page hooks and overrides receive as `endpoint`: the request path of the list.
ENDPOINT_SUBSCRIPTIONS = SUBSCRIPTIONS_PATH
ENDPOINT_SETTINGS = USER_SETTINGS_PATH
ENDPOINT_USER = USER_ACCOUNTS_PREFIX + "{id}"

_DIGITS = re.compile(r"^[0-9]+$")
_INT = re.compile(r"^[+-]?[0-9]+$")
_TRUE = {"1", "true"}
_FALSE = {"0", "false"}

PageHook = Callable[[World, str, int], None]
# Reads one page of a list from the world: (offset, limit) -> (rows, total).
PageRead = Callable[[int, int], tuple[list[bytes], int]]
PageOverride = Callable[[str, int, dict[str, Any]], "dict[str, Any] | bytes | None"]


@dataclass(frozen=True)
class Response:
    """What to send: status, body bytes, content type, extra headers; `endpoint` for stats."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    endpoint: str | None = None


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def json_response(status: int, obj: Any, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    return Response(status, dumps(obj), headers=headers)


def message(status: int, text: str) -> Response:
    return json_response(status, {"message": text})


def validation_error(errors: dict[str, list[str]]) -> Response:
    """Laravel's 422 shape: first message, '(and N more errors)', all messages by field."""
    msgs = [m for field_msgs in errors.values() for m in field_msgs]
    text = msgs[0]
    if len(msgs) > 1:
        more = len(msgs) - 1
        text += f" (and {more} more error{'s' if more > 1 else ''})"
    return json_response(422, {"message": text, "errors": errors})


def parse_page(value: str | None) -> int:
    """Laravel's rule: an integer >= 1, anything else is page 1."""
    if value is None or not _INT.match(value.strip()):
        return 1
    page = int(value)
    return page if page >= 1 else 1


def _parse_int(value: str) -> int | None:
    value = value.strip()
    return int(value) if _INT.match(value) else None


class Api:
    """Routes GET requests of the three Developer API endpoints to the world."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.page_hook: PageHook | None = None
        self.page_override: PageOverride | None = None

    def handle(self, path: str, params: dict[str, str], host: str) -> Response:
        """`params` is the query, last value wins, in first-seen order (PHP semantics)."""
        if path == SUBSCRIPTIONS_PATH:
            return self.subscriptions(params, host)
        if path == USER_SETTINGS_PATH:
            return self.settings(params, host)
        if path.startswith(USER_ACCOUNTS_PREFIX):
            return self.user(path[len(USER_ACCOUNTS_PREFIX) :])
        return message(404, "Not Found")

    @staticmethod
    def is_route(path: str) -> bool:
        return path in (SUBSCRIPTIONS_PATH, USER_SETTINGS_PATH) or (
            path.startswith(USER_ACCOUNTS_PREFIX) and "/" not in path[len(USER_ACCOUNTS_PREFIX) :]
        )

    # ------------------------------------------------------------------ endpoints

    def subscriptions(self, params: dict[str, str], host: str) -> Response:
        q = {k: v for k, v in params.items() if v.strip() != ""}
        if "id" in q:
            sub_id = _parse_int(q["id"])
            if sub_id is None:
                return validation_error({"id": ["The id field must be an integer."]})
            body = self.world.subscription_bytes(sub_id)
            if body is None:
                return message(404, f"Subscription {sub_id} not found.")
            return Response(200, body)

        errors: dict[str, list[str]] = {}
        start = end = user_id = None
        if "start" in q:
            start = parse_bound(q["start"], is_end=False)
            if start is None:
                errors["start"] = ["The start field must be a valid date."]
        if "end" in q:
            end = parse_bound(q["end"], is_end=True)
            if end is None:
                errors["end"] = ["The end field must be a valid date."]
        elif "start" in q:
            errors["end"] = ["The end field is required when start is present."]
        if "user_id" in q:
            user_id = _parse_int(q["user_id"])
            if user_id is None:
                errors["user_id"] = ["The user id field must be an integer."]
        test = False
        if "is_test" in q:
            flag = q["is_test"].strip().lower()
            if flag in _TRUE:
                test = True
            elif flag not in _FALSE:
                errors["is_test"] = ["The is test field must be true or false."]
        if errors:
            return validation_error(errors)

        where = SubscriptionFilter(test=test, user_id=user_id, start=start, end=end)
        return self._list_page(
            ENDPOINT_SUBSCRIPTIONS,
            SUBSCRIPTIONS_PER_PAGE,
            params,
            host,
            lambda offset, limit: self.world.subscription_page(where, offset, limit),
        )

    def settings(self, params: dict[str, str], host: str) -> Response:
        q = {k: v for k, v in params.items() if v.strip() != ""}
        usernames: list[str] | None = None
        if "usernames" in q:
            usernames = [n.strip() for n in q["usernames"].split(",") if n.strip()]
            if len(usernames) > MAX_USERNAMES:
                return validation_error(
                    {
                        "usernames": [
                            f"The usernames field must not have more than {MAX_USERNAMES} items."
                        ]
                    }
                )
        platform = q.get("platform")
        return self._list_page(
            ENDPOINT_SETTINGS,
            SETTINGS_PER_PAGE,
            params,
            host,
            lambda offset, limit: self.world.settings_page(
                usernames=usernames,
                platform=platform.strip() if platform is not None else None,
                offset=offset,
                limit=limit,
            ),
        )

    def user(self, rest: str) -> Response:
        rest = rest.rstrip("/")
        if not _DIGITS.match(rest):
            return message(404, "User not found.")
        body = self.world.profile_bytes(int(rest))
        if body is None:
            return message(404, "User not found.")
        return Response(200, body, endpoint=ENDPOINT_USER)

    def _list_page(
        self, endpoint: str, per_page: int, params: dict[str, str], host: str, read: PageRead
    ) -> Response:
        """The requested page of the list at ENDPOINT (its request path): the page hook runs
        first, then READ, then the pagination wrapper and any page override."""
        page = parse_page(params.get("page"))
        if self.page_hook is not None:
            self.page_hook(self.world, endpoint, page)
        rows, total = read((page - 1) * per_page, per_page)
        body = paginate(rows, total, page, per_page, f"http://{host}{endpoint}", params)
        return self._page(endpoint, page, body)

    def _page(self, endpoint: str, page: int, body: bytes) -> Response:
        override = self.page_override
        if override is not None:
            replaced = override(endpoint, page, json.loads(body))
            if isinstance(replaced, bytes | bytearray):
                body = bytes(replaced)
            elif replaced is not None:
                body = dumps(replaced)
        return Response(200, body, endpoint=endpoint)


def page_url(base: str, params: dict[str, str], page: int) -> str:
    """`base?<params with page=N>`: page replaced where the client put it, else appended."""
    query = dict(params)
    query["page"] = str(page)
    return f"{base}?{urlencode(query)}"


def paginate(
    rows: list[bytes], total: int, page: int, per_page: int, base: str, params: dict[str, str]
) -> bytes:
    """The 12-field wrapper of spec 2.2, built around pre-serialised rows (O(page))."""
    last_page = max(1, math.ceil(total / per_page))
    n = len(rows)
    if n:
        first = (page - 1) * per_page + 1
        frm, to = b"%d" % first, b"%d" % (first + n - 1)
    else:
        frm = to = b"null"

    def url(k: int) -> bytes:
        return dumps(page_url(base, params, k))

    next_url = url(page + 1) if page < last_page else b"null"
    prev_url = url(page - 1) if page > 1 else b"null"
    return b"".join(
        (
            b'{"current_page":%d,"data":[' % page,
            b",".join(rows),
            b'],"first_page_url":',
            url(1),
            b',"from":',
            frm,
            b',"last_page":%d,"last_page_url":' % last_page,
            url(last_page),
            b',"next_page_url":',
            next_url,
            b',"path":',
            dumps(base),
            b',"per_page":%d,"prev_page_url":' % per_page,
            prev_url,
            b',"to":',
            to,
            b',"total":%d}' % total,
        )
    )
