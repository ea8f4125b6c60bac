"""Every query filter of spec 4.1 and 4.2, the single-object `id` response and the 422 cases."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import requests

from devportal.sandbox import Sandbox
from devportal.sandbox.testing import SETTINGS, SUBSCRIPTIONS, USERS, fetch_all


def ids(rows: list[dict[str, Any]]) -> list[int]:
    return [r["id"] for r in rows]


def created_at(sb: Sandbox, rows: list[dict[str, Any]]) -> dict[int, str]:
    out = {}
    for r in rows:
        row = sb.world.get(r["id"])
        assert row is not None
        out[r["id"]] = row["created_at"]
    return out


def test_start_end_dates_filter_on_creation_time_inclusive(
    sb: Sandbox, api: requests.Session
) -> None:
    truth = sb.truth()
    created = created_at(sb, truth)
    expected = [r["id"] for r in truth if "2026-03-01" <= created[r["id"]][:10] <= "2026-03-31"]
    assert 20 < len(expected) < len(truth)
    got = fetch_all(api, sb.base_url + SUBSCRIPTIONS, {"start": "2026-03-01", "end": "2026-03-31"})
    assert ids(got) == expected


def test_start_end_datetimes_filter_to_the_second(sb: Sandbox, api: requests.Session) -> None:
    truth = sb.truth()
    created = created_at(sb, truth)
    lo, hi = "2026-05-10 12:00:00", "2026-06-20 18:30:00"
    expected = [r["id"] for r in truth if lo <= created[r["id"]] <= hi]
    assert expected
    got = fetch_all(api, sb.base_url + SUBSCRIPTIONS, {"start": lo, "end": hi})
    assert ids(got) == expected


def test_date_only_end_covers_the_whole_day(
    scripted: Sandbox, scripted_api: requests.Session
) -> None:
    w = scripted.world
    inside = w.add_subscription(5, created_at="2026-03-10 23:59:59")
    w.add_subscription(5, created_at="2026-03-11 00:00:00")
    before = w.add_subscription(5, created_at="2026-03-09 23:59:59")
    url = scripted.base_url + SUBSCRIPTIONS
    assert ids(fetch_all(scripted_api, url, {"start": "2026-03-10", "end": "2026-03-10"})) == [
        inside
    ]
    # end without start is allowed: everything created up to the end of that day
    assert ids(fetch_all(scripted_api, url, {"end": "2026-03-10"})) == [inside, before]
    # start after end: nothing, not an error
    body = scripted_api.get(url, params={"start": "2026-03-11", "end": "2026-03-10"}).json()
    assert body["total"] == 0 and body["data"] == []


def test_user_id_filters_by_service_id(sb: Sandbox, api: requests.Session) -> None:
    truth = sb.truth()
    service_id, count = Counter(r["service_id"] for r in truth).most_common(1)[0]
    assert count >= 2
    got = fetch_all(api, sb.base_url + SUBSCRIPTIONS, {"user_id": service_id})
    assert ids(got) == [r["id"] for r in truth if r["service_id"] == service_id]
    body = api.get(sb.base_url + SUBSCRIPTIONS, params={"user_id": 1}).json()
    assert body["total"] == 0


def test_user_id_combines_with_the_window(sb: Sandbox, api: requests.Session) -> None:
    truth = sb.truth()
    created = created_at(sb, truth)
    by_user = Counter(r["service_id"] for r in truth)
    service_id = by_user.most_common(1)[0][0]
    mine = [r for r in truth if r["service_id"] == service_id]
    cut = sorted(created[r["id"]] for r in mine)[len(mine) // 2]
    expected = [r["id"] for r in mine if created[r["id"]] >= cut]
    got = fetch_all(
        api,
        sb.base_url + SUBSCRIPTIONS,
        {"user_id": service_id, "start": cut, "end": "2030-01-01"},
    )
    assert ids(got) == expected


@pytest.mark.parametrize("value", ["true", "1", "TRUE"])
def test_is_test_true_returns_only_test_subscriptions(
    sb: Sandbox, api: requests.Session, value: str
) -> None:
    test_rows = sb.truth(is_test=True)
    assert test_rows
    got = fetch_all(api, sb.base_url + SUBSCRIPTIONS, {"is_test": value})
    assert got == [{k: v for k, v in r.items() if k != "is_test"} for r in test_rows]
    live_ids = set(ids(sb.truth()))
    assert not live_ids & set(ids(got))


@pytest.mark.parametrize("value", ["false", "0", None])
def test_is_test_false_or_absent_returns_only_live(
    sb: Sandbox, api: requests.Session, value: str | None
) -> None:
    params = {} if value is None else {"is_test": value}
    got = fetch_all(api, sb.base_url + SUBSCRIPTIONS, params)
    assert ids(got) == ids(sb.truth())


def test_id_returns_the_single_object_without_wrapper(sb: Sandbox, api: requests.Session) -> None:
    live = sb.truth()[37]
    test = sb.truth(is_test=True)[0]
    for row in (live, test):
        response = api.get(sb.base_url + SUBSCRIPTIONS, params={"id": row["id"]})
        assert response.status_code == 200
        body = response.json()
        assert list(body) == ["id", "service_id", "status", "expires_at"]
        assert body == {k: v for k, v in row.items() if k != "is_test"}


def test_unknown_id_is_404_json(sb: Sandbox, api: requests.Session) -> None:
    response = api.get(sb.base_url + SUBSCRIPTIONS, params={"id": 99_999_999})
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/json"
    assert isinstance(response.json()["message"], str)


def test_row_shapes_and_values(sb: Sandbox) -> None:
    rows = sb.truth() + sb.truth(is_test=True)
    statuses = Counter(r["status"] for r in rows)
    assert set(statuses) == {"active", "canceled"}
    assert 0.6 < statuses["active"] / len(rows) < 0.8  # "realistic mix": ~70% active
    now = sb.now.strftime("%Y-%m-%d %H:%M:%S")
    canceled = [r for r in rows if r["status"] == "canceled"]
    assert any(r["expires_at"] <= now for r in canceled)  # churned, already expired
    assert any(r["expires_at"] > now for r in canceled)  # canceled, still usable
    assert all(r["expires_at"] > now for r in rows if r["status"] == "active")
    for r in rows:
        assert isinstance(r["id"], int) and r["id"] > 0
        assert isinstance(r["service_id"], int)
        assert len(r["expires_at"]) == 19 and r["expires_at"][10] == " "
    assert 0.02 < len(sb.truth(is_test=True)) / len(rows) < 0.1


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"start": "2026-01-01"}, "end"),
        ({"start": "2026-13-01", "end": "2026-12-01"}, "start"),
        ({"start": "2026-01-01", "end": "2026-02-30"}, "end"),
        ({"start": "yesterday", "end": "2026-02-01"}, "start"),
        ({"start": "2026-01-01T00:00:00", "end": "2026-02-01"}, "start"),
        ({"end": "2026-02-01 25:00:00"}, "end"),
        ({"user_id": "abc"}, "user_id"),
        ({"is_test": "maybe"}, "is_test"),
        ({"id": "x1"}, "id"),
    ],
)
def test_invalid_parameters_are_422_naming_the_field(
    sb: Sandbox, api: requests.Session, params: dict[str, str], field: str
) -> None:
    response = api.get(sb.base_url + SUBSCRIPTIONS, params=params)
    assert response.status_code == 422
    body = response.json()
    assert isinstance(body["message"], str) and body["message"]
    assert field in body["errors"]
    assert all(isinstance(m, str) for m in body["errors"][field])


def test_usernames_filter_by_twitch_name(sb: Sandbox, api: requests.Session) -> None:
    truth = sb.truth_users()
    picked = [truth[3], truth[10], truth[25]]
    names = [e["user"]["twitch"]["name"] for e in picked]
    names[1] = names[1].upper()  # twitch logins are case-insensitive
    body = api.get(
        sb.base_url + SETTINGS, params={"usernames": ",".join([*names, "nobody-here"])}
    ).json()
    assert body["data"] == picked
    assert body["total"] == 3
    assert "usernames=" in body["first_page_url"]


def test_usernames_limit_is_twenty(sb: Sandbox, api: requests.Session) -> None:
    names = [e["user"]["twitch"]["name"] for e in sb.truth_users()[:21]]
    ok = api.get(sb.base_url + SETTINGS, params={"usernames": ",".join(names[:20])})
    assert ok.status_code == 200 and ok.json()["total"] == 20
    bad = api.get(sb.base_url + SETTINGS, params={"usernames": ",".join(names)})
    assert bad.status_code == 422
    assert "usernames" in bad.json()["errors"]


def test_platform_filter(sb: Sandbox, api: requests.Session) -> None:
    truth = sb.truth_users()
    with_youtube = [
        e for e in truth if "youtube" in (sb.profiles(e["user"]["service"]["id"]) or {})
    ]
    assert 0 < len(with_youtube) < len(truth)
    assert fetch_all(api, sb.base_url + SETTINGS, {"platform": "youtube"}) == with_youtube
    assert fetch_all(api, sb.base_url + SETTINGS, {"platform": "twitch"}) == truth
    unknown = api.get(sb.base_url + SETTINGS, params={"platform": "myspace"}).json()
    assert unknown["total"] == 0 and unknown["data"] == []


def test_settings_entries_shape(sb: Sandbox) -> None:
    truth = sb.truth_users()
    assert any(e["settings"] == {} for e in truth)
    assert any(isinstance(v, dict) for e in truth for v in e["settings"].values())
    assert any(isinstance(v, list) for e in truth for v in e["settings"].values())
    ids_listed = [e["user"]["service"]["id"] for e in truth]
    assert ids_listed == sorted(ids_listed)
    # Some existing users are not in the list at all (no settings record, or no twitch).
    assert set(ids_listed) < set(sb.user_ids())
    for e in truth:
        assert list(e) == ["user", "settings"]
        assert list(e["user"]) == ["service", "twitch"]
        twitch = e["user"]["twitch"]
        assert set(twitch) == {
            "twitch_id",
            "display_name",
            "name",
            "partnered",
            "icon_url",
            "profile_background_color",
            "profile_banner_url",
        }
        assert isinstance(twitch["twitch_id"], int) and twitch["partnered"] == 0
        assert twitch["name"] == twitch["display_name"].lower()


def test_profiles_endpoint(sb: Sandbox, api: requests.Session) -> None:
    for user_id in sb.user_ids()[:25]:
        response = api.get(f"{sb.base_url}{USERS}{user_id}")
        assert response.status_code == 200
        body = response.json()
        assert body == sb.profiles(user_id)
        assert body["primary"] in body
        assert set(body) - {"primary"} <= {"twitch", "youtube", "mixer", "facebook"}


def test_some_subscribers_are_deleted_users(sb: Sandbox, api: requests.Session) -> None:
    users = set(sb.user_ids())
    service_ids = {r["service_id"] for r in sb.truth()}
    deleted = service_ids - users
    assert deleted and len(deleted) < len(service_ids) * 0.1
    response = api.get(f"{sb.base_url}{USERS}{min(deleted)}")
    assert response.status_code == 404
    assert "message" in response.json()
