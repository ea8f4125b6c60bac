"""The pagination wrapper of spec 2.2: fields, arithmetic, page URLs, pages past the end."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests
from tests.helpers import WRAPPER_FIELDS

from devportal.sandbox import Sandbox
from devportal.sandbox.testing import SETTINGS, SUBSCRIPTIONS, fetch_all


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def get(api: requests.Session, url: str, **params: Any) -> dict[str, Any]:
    response = api.get(url, params=params or None)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


def strip_test(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "is_test"} for r in rows]


def test_first_page_has_exactly_the_twelve_fields_with_right_values(
    sb: Sandbox, api: requests.Session
) -> None:
    body = get(api, sb.base_url + SUBSCRIPTIONS)
    assert list(body) == WRAPPER_FIELDS
    total = len(sb.truth())
    assert total > 400  # the test needs several pages
    base = sb.base_url + SUBSCRIPTIONS
    assert body["current_page"] == 1
    assert body["per_page"] == 200 and isinstance(body["per_page"], int)
    assert body["total"] == total
    assert body["last_page"] == math.ceil(total / 200)
    assert (body["from"], body["to"]) == (1, 200)
    assert len(body["data"]) == 200
    assert body["path"] == base
    assert body["prev_page_url"] is None
    assert body["first_page_url"] == base + "?page=1"
    assert body["next_page_url"] == base + "?page=2"
    assert body["last_page_url"] == f"{base}?page={body['last_page']}"
    assert body["data"] == strip_test(sb.truth())[:200]


def test_walking_all_pages_gives_the_truth_with_consistent_arithmetic(
    sb: Sandbox, api: requests.Session
) -> None:
    truth = strip_test(sb.truth())
    url: str | None = sb.base_url + SUBSCRIPTIONS
    seen: list[dict[str, Any]] = []
    page = 0
    while url is not None:
        body = get(api, url)
        page += 1
        assert body["current_page"] == page
        assert body["from"] == (page - 1) * 200 + 1
        assert body["to"] == body["from"] + len(body["data"]) - 1
        assert body["total"] == len(truth)
        if page > 1:
            assert query_of(body["prev_page_url"]) == {"page": str(page - 1)}
        seen.extend(body["data"])
        url = body["next_page_url"]
    assert page == math.ceil(len(truth) / 200)
    assert body["to"] == len(truth)
    assert seen == truth
    ids = [r["id"] for r in seen]
    assert ids == sorted(set(ids))  # id ascending, distinct


def test_page_past_the_end_is_empty_but_keeps_totals(sb: Sandbox, api: requests.Session) -> None:
    total = len(sb.truth())
    last = math.ceil(total / 200)
    body = get(api, sb.base_url + SUBSCRIPTIONS, page=last + 5)
    assert list(body) == WRAPPER_FIELDS
    assert body["data"] == []
    assert body["from"] is None and body["to"] is None
    assert body["total"] == total
    assert body["last_page"] == last
    assert body["current_page"] == last + 5
    assert body["next_page_url"] is None
    assert query_of(body["prev_page_url"])["page"] == str(last + 4)


def test_invalid_page_numbers_mean_page_one(sb: Sandbox, api: requests.Session) -> None:
    for bad in ("0", "-3", "abc", "1.5", ""):
        body = get(api, sb.base_url + SUBSCRIPTIONS, page=bad)
        assert body["current_page"] == 1, bad
        assert body["from"] == 1


def test_page_urls_carry_every_filter_plus_page(sb: Sandbox, api: requests.Session) -> None:
    params = {"start": "2025-06-01", "end": "2026-10-31 23:00:00", "is_test": "false", "page": "2"}
    body = get(api, sb.base_url + SUBSCRIPTIONS, **params)
    assert body["total"] > 400
    for key in ("first_page_url", "last_page_url", "next_page_url", "prev_page_url"):
        query = query_of(body[key])
        assert {k: v for k, v in query.items() if k != "page"} == {
            k: v for k, v in params.items() if k != "page"
        }, key
    assert query_of(body["first_page_url"])["page"] == "1"
    assert query_of(body["next_page_url"])["page"] == "3"
    assert query_of(body["last_page_url"])["page"] == str(body["last_page"])
    # Following next_page_url keeps the filter: the same rows as asking with the filter.
    following = get(api, body["next_page_url"])
    direct = get(api, sb.base_url + SUBSCRIPTIONS, **{**params, "page": "3"})
    assert following["data"] == direct["data"]
    assert following["total"] == body["total"]


def test_page_urls_use_the_host_the_client_used(sb: Sandbox, api: requests.Session) -> None:
    host = f"localhost:{sb.port}"
    response = api.get(sb.base_url + SUBSCRIPTIONS, headers={"Host": host})
    body = response.json()
    assert body["path"] == f"http://{host}{SUBSCRIPTIONS}"
    assert body["next_page_url"].startswith(f"http://{host}{SUBSCRIPTIONS}?")


def test_settings_wrapper_pages_by_twenty_and_matches_truth(
    sb: Sandbox, api: requests.Session
) -> None:
    truth = sb.truth_users()
    assert len(truth) > 40
    body = get(api, sb.base_url + SETTINGS, page=2)
    assert list(body) == WRAPPER_FIELDS
    assert body["per_page"] == 20
    assert (body["from"], body["to"]) == (21, 40)
    assert body["total"] == len(truth)
    assert body["last_page"] == math.ceil(len(truth) / 20)
    assert body["data"] == truth[20:40]
    assert fetch_all(api, sb.base_url + SETTINGS) == truth


def test_empty_world_has_one_empty_page(scripted: Sandbox, scripted_api: requests.Session) -> None:
    for path in (SUBSCRIPTIONS, SETTINGS):
        body = get(scripted_api, scripted.base_url + path)
        assert body["data"] == [] and body["total"] == 0
        assert body["last_page"] == 1 and body["current_page"] == 1
        assert body["from"] is None and body["to"] is None
        assert body["next_page_url"] is None and body["prev_page_url"] is None
