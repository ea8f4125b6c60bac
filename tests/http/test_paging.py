"""Walking a list (http/paging.py): pages in order, concurrently or by next_page_url, and
never to another origin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devportal.base.errors import ApiError
from devportal.http import SUBSCRIPTIONS_PATH
from devportal.load.sync import sync
from tests.helpers import current_rows, truth_rows
from tests.http.conftest import client_for


def test_pages_concurrently_in_order(sandbox_factory: Any) -> None:
    sb = sandbox_factory(subscriptions=2100, users=10, seed=61)
    with client_for(sb, workers=4) as client:
        pages = list(client.iter_pages(SUBSCRIPTIONS_PATH))
    assert [p.number for p in pages] == list(range(1, pages[0].last_page + 1))  # type: ignore[operator]
    ids = [row["id"] for p in pages for row in p.data]
    assert ids == [r["id"] for r in sb.truth()]


def test_follows_next_page_url_without_last_page_and_accepts_string_per_page(
    sandbox_factory: Any, warehouse: Path
) -> None:
    sb = sandbox_factory(subscriptions=900, users=10, seed=62)

    def no_last_page(endpoint: str, number: int, body: dict[str, Any]) -> dict[str, Any]:
        body = dict(body)
        body.pop("last_page", None)
        body["per_page"] = str(body["per_page"])
        return body

    sb.set_page_override(no_last_page)
    with client_for(sb) as client:
        pages = list(client.iter_pages(SUBSCRIPTIONS_PATH))
    assert len(pages) == 5 and pages[-1].next_page_url is None
    assert sum(len(p.data) for p in pages) == len(sb.truth())
    sync(warehouse, base_url=sb.base_url, access_token=sb.token)
    assert current_rows(warehouse) == truth_rows(sb)


def test_page_url_on_another_origin_is_refused(sandbox_factory: Any) -> None:
    sb = sandbox_factory(subscriptions=450, users=10, seed=63)

    def elsewhere(endpoint: str, number: int, body: dict[str, Any]) -> dict[str, Any]:
        body = dict(body)
        body.pop("last_page", None)
        if body.get("next_page_url"):
            body["next_page_url"] = "http://attacker.invalid/steal?page=2"
        return body

    sb.set_page_override(elsewhere)
    with client_for(sb) as client, pytest.raises(ApiError, match="another origin"):
        list(client.iter_pages(SUBSCRIPTIONS_PATH))
