"""Known-answer worlds: scripted edits, raw values, user edits, the page hook and override."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from devportal.sandbox import Sandbox
from devportal.sandbox.testing import SETTINGS, SUBSCRIPTIONS, USERS, fetch_all
from devportal.sandbox.world import World


def twelve(sb: Sandbox) -> list[int]:
    """Twelve live subscriptions (ids 1..12) and one test one (13)."""
    w = sb.world
    out = [
        w.add_subscription(
            100 + i % 4,
            expires_at=f"2026-12-{i + 1:02d} 10:00:00",
            created_at=f"2026-0{1 + i % 9}-15",
        )
        for i in range(12)
    ]
    w.add_subscription(999, is_test=True, expires_at="2027-01-01 00:00:00")
    return out


def test_scripted_world_serves_exactly_what_was_added(
    scripted: Sandbox, scripted_api: requests.Session
) -> None:
    ids = twelve(scripted)
    assert ids == list(range(1, 13))
    rows = fetch_all(scripted_api, scripted.base_url + SUBSCRIPTIONS)
    assert [r["id"] for r in rows] == ids
    assert rows[4] == {
        "id": 5,
        "service_id": 100,
        "status": "active",
        "expires_at": "2026-12-05 10:00:00",
    }
    test_rows = fetch_all(scripted_api, scripted.base_url + SUBSCRIPTIONS, {"is_test": 1})
    assert test_rows == [
        {"id": 13, "service_id": 999, "status": "active", "expires_at": "2027-01-01 00:00:00"}
    ]
    assert [
        r["id"]
        for r in fetch_all(scripted_api, scripted.base_url + SUBSCRIPTIONS, {"user_id": 101})
    ] == [2, 6, 10]
    # back-dated rows: the window filter still finds them (created Jan 15 and Jan 15)
    got = fetch_all(
        scripted_api,
        scripted.base_url + SUBSCRIPTIONS,
        {"start": "2026-01-01", "end": "2026-01-31"},
    )
    assert [r["id"] for r in got] == [1, 10]


def test_cancel_reactivate_renew_remove(scripted: Sandbox, scripted_api: requests.Session) -> None:
    twelve(scripted)
    w = scripted.world
    url = scripted.base_url + SUBSCRIPTIONS

    def one(sub_id: int) -> requests.Response:
        return scripted_api.get(url, params={"id": sub_id})

    w.cancel(3)
    assert one(3).json()["status"] == "canceled"
    w.reactivate(3)
    assert one(3).json()["status"] == "active"
    w.renew(4, "2027-02-28 12:00:00")
    assert one(4).json()["expires_at"] == "2027-02-28 12:00:00"
    w.remove_subscription(7)
    assert one(7).status_code == 404
    body = scripted_api.get(url).json()
    assert body["total"] == 11 and 7 not in [r["id"] for r in body["data"]]
    assert [r["id"] for r in fetch_all(scripted_api, url, {"user_id": 102})] == [3, 11]
    with pytest.raises(KeyError):
        w.cancel(7)
    assert w.add_subscription(5, id=40) == 40
    with pytest.raises(ValueError):
        w.add_subscription(5, id=39)  # ids only grow: list order is id order
    assert w.add_subscription(5) == 41


def test_set_raw_serves_values_verbatim(scripted: Sandbox, scripted_api: requests.Session) -> None:
    twelve(scripted)
    w = scripted.world
    w.set_raw(2, expires_at="0000-00-00 00:00:00", status="paused")
    w.set_raw(3, service_id="x", extra={"nested": [1, None]})
    w.set_raw(4, expires_at=World.DROP)
    w.set_raw(5, id="5")
    rows = {
        r["service_id"] if r["id"] == 3 else r["id"]: r
        for r in fetch_all(scripted_api, scripted.base_url + SUBSCRIPTIONS)
    }
    assert rows[2] == {
        "id": 2,
        "service_id": 101,
        "status": "paused",
        "expires_at": "0000-00-00 00:00:00",
    }
    assert rows["x"]["extra"] == {"nested": [1, None]}
    assert "expires_at" not in rows[4]
    raw_id = [r for r in scripted.truth() if r["id"] == "5"]
    assert raw_id and raw_id[0]["service_id"] == 100
    # truth() is what the API serves
    assert [{k: v for k, v in r.items() if k != "is_test"} for r in scripted.truth()] == fetch_all(
        scripted_api, scripted.base_url + SUBSCRIPTIONS
    )
    # the clock leaves raw rows alone
    scripted.advance(days=60)
    assert (
        scripted_api.get(scripted.base_url + SUBSCRIPTIONS, params={"id": 2}).json()["expires_at"]
        == "0000-00-00 00:00:00"
    )


def test_user_edits(scripted: Sandbox, scripted_api: requests.Session) -> None:
    w = scripted.world
    w.add_user(50, "Alpha", settings={"theme": "dark", "nested": {"a": [1, 2]}})
    w.add_user(51, "Beta", settings=None, platforms=("twitch", "youtube"))
    w.add_user(52, "Gamma", settings={})
    w.add_user(53, "Delta", settings={"x": 1}, platforms=("youtube",))
    entries = fetch_all(scripted_api, scripted.base_url + SETTINGS)
    assert [e["user"]["service"]["id"] for e in entries] == [50, 52]  # 51: no record, 53: no twitch
    assert entries[0]["settings"] == {"theme": "dark", "nested": {"a": [1, 2]}}
    assert entries[1]["settings"] == {}
    profile = scripted_api.get(f"{scripted.base_url}{USERS}51").json()
    assert profile["primary"] == "twitch" and set(profile) == {"primary", "twitch", "youtube"}
    w.set_settings(51, {"k": "v"})
    w.remove_user(50)
    entries = fetch_all(scripted_api, scripted.base_url + SETTINGS)
    assert [e["user"]["service"]["id"] for e in entries] == [51, 52]
    assert scripted_api.get(f"{scripted.base_url}{USERS}50").status_code == 404


def test_page_hook_mutates_the_world_between_pages(
    scripted: Sandbox, scripted_api: requests.Session
) -> None:
    w = scripted.world
    for i in range(450):  # three pages
        w.add_subscription(i + 1)
    calls: list[tuple[str, int]] = []

    def hook(world: World, endpoint: str, page: int) -> None:
        calls.append((endpoint, page))
        if endpoint == SUBSCRIPTIONS and page == 2:
            world.remove_subscription(1)  # everything after shifts left by one
            world.add_subscription(7)

    scripted.set_page_hook(hook)
    rows = fetch_all(scripted_api, scripted.base_url + SUBSCRIPTIONS)
    scripted.set_page_hook(None)
    assert calls == [(SUBSCRIPTIONS, 1), (SUBSCRIPTIONS, 2), (SUBSCRIPTIONS, 3)]
    ids = [r["id"] for r in rows]
    assert len(ids) == 450  # 200 + 200 + 50: page 2 skipped id 201, page 3 holds the new id
    assert 201 not in ids and 451 in ids
    assert ids.count(1) == 1


def test_page_override_replaces_or_mutilates_bodies(
    scripted: Sandbox, scripted_api: requests.Session
) -> None:
    twelve(scripted)
    url = scripted.base_url + SUBSCRIPTIONS

    seen: set[str] = set()

    def override(endpoint: str, page: int, body: dict[str, Any]) -> dict[str, Any] | bytes | None:
        seen.add(endpoint)  # the request path of the list
        if endpoint == SETTINGS:
            return None
        if page == 2:
            return b'{"oops": true'
        if page == 3:
            return None
        body["per_page"] = str(body["per_page"])  # some deployments serialise it as a string
        del body["next_page_url"]
        return body

    scripted.set_page_override(override)
    first = scripted_api.get(url).json()
    assert first["per_page"] == "200" and "next_page_url" not in first
    assert scripted_api.get(url, params={"page": 2}).text == '{"oops": true'
    assert scripted_api.get(url, params={"page": 3}).json()["current_page"] == 3
    assert scripted_api.get(scripted.base_url + SETTINGS).json()["per_page"] == 20
    assert seen == {SUBSCRIPTIONS, SETTINGS}
    scripted.set_page_override(None)
    assert scripted_api.get(url).json()["per_page"] == 200


def test_a_failing_hook_answers_500_json_naming_the_error(
    scripted: Sandbox, scripted_api: requests.Session
) -> None:
    def hook(world: World, endpoint: str, page: int) -> None:
        raise RuntimeError("boom in hook")

    scripted.set_page_hook(hook)
    response = scripted_api.get(scripted.base_url + SUBSCRIPTIONS)
    scripted.set_page_hook(None)
    assert response.status_code == 500
    assert "boom in hook" in response.json()["message"]
    assert scripted_api.get(scripted.base_url + SUBSCRIPTIONS).status_code == 200
