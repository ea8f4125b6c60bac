"""Concurrent keep-alive clients while the clock moves: every page is consistent by itself."""

from __future__ import annotations

import threading
from typing import Any

import requests

from devportal.sandbox import Sandbox
from devportal.sandbox.testing import SETTINGS, SUBSCRIPTIONS, api_session


def check_page(body: dict[str, Any], per_page: int) -> None:
    data = body["data"]
    assert body["per_page"] == per_page
    assert body["last_page"] == max(1, -(-body["total"] // per_page))
    if data:
        assert body["from"] == (body["current_page"] - 1) * per_page + 1
        assert body["to"] == body["from"] + len(data) - 1
        assert body["to"] <= body["total"]
    else:
        assert body["from"] is None and body["to"] is None
    if "id" in (data[0] if data else {}):
        ids = [r["id"] for r in data]
        assert ids == sorted(set(ids))


def test_eight_clients_paging_while_the_clock_moves(fresh: Sandbox) -> None:
    errors: list[BaseException] = []
    pages = [0]
    lock = threading.Lock()

    def client(k: int) -> None:
        try:
            with api_session(fresh) as s:
                for round_ in range(12):
                    page = (k + round_) % 7 + 1
                    path, per_page = (SETTINGS, 20) if k == 7 else (SUBSCRIPTIONS, 200)
                    params: dict[str, Any] = {"page": page}
                    if k % 3 == 1:
                        params |= {"start": "2026-01-01", "end": "2027-12-31"}
                    response = s.get(fresh.base_url + path, params=params, timeout=30)
                    assert response.status_code == 200
                    check_page(response.json(), per_page)
                    with lock:
                        pages[0] += 1
        except BaseException as err:  # reported in the main thread
            errors.append(err)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    moves = 0
    while any(t.is_alive() for t in threads) and moves < 50:
        fresh.advance(hours=12)
        moves += 1
    for t in threads:
        t.join(60)
    assert not errors, errors[0]
    assert pages[0] == 96
    assert fresh.stats["pages"] == 96
    # After the storm the API still equals the truth.
    with api_session(fresh) as s:
        body = s.get(fresh.base_url + SUBSCRIPTIONS, params={"page": 3}).json()
    assert body["data"] == [
        {k: v for k, v in r.items() if k != "is_test"} for r in fresh.truth()[400:600]
    ]


def test_parallel_sessions_see_one_consistent_total(sb: Sandbox) -> None:
    totals = set()

    def fetch(page: int) -> None:
        with requests.Session() as s:
            s.headers["Authorization"] = f"Bearer {sb.token}"
            totals.add(s.get(sb.base_url + SUBSCRIPTIONS, params={"page": page}).json()["total"])

    threads = [threading.Thread(target=fetch, args=(p,)) for p in range(1, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert totals == {len(sb.truth())}
