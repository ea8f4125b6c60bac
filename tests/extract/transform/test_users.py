"""Settings entries and account profiles as rows (extract/transform/users.py), from a recorded
settings page (`pages/settings_page.json`, spec 2.3) and Profiles objects (spec 2.4): one
`user_settings` row per user with a usable id, its settings as JSON Pointer keys, extra fields
in columns of their own; the tombstones that empty a user's child rows."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from devportal.extract.extra_fields.fields import FieldStats
from devportal.extract.transform.quality import USER_ID_DROPPED, DataQuality
from devportal.extract.transform.users import (
    TOMBSTONE,
    USER_ACCOUNT_PROFILES_COLUMNS,
    USER_SETTING_VALUES_COLUMNS,
    account_records,
    settings_version,
    tombstones,
    user_settings_records,
)
from devportal.http.pages import parse_page

PAGE = Path(__file__).parent / "pages" / "settings_page.json"
SEEN = datetime(2025, 1, 1, 12)


def settings_page() -> list[dict[str, Any]]:
    body = json.loads(PAGE.read_text("utf-8"))
    return parse_page(body, 1, None, "/api/v1/developer/users/settings").data


def records() -> tuple[list[dict[str, Any]], list[dict[str, Any]], DataQuality, FieldStats]:
    dq, stats = DataQuality(), FieldStats()
    users, values = user_settings_records(settings_page(), dq, SEEN, stats)
    return users, values, dq, stats


def test_one_row_per_user_with_a_usable_id() -> None:
    users, _, dq, _ = records()
    assert [u["user_id"] for u in users] == [7, 8, 9]  # "8" is 8; the null id is dropped
    assert dq.count("user_settings", "user_id", USER_ID_DROPPED) == 1
    assert {u["last_seen_at"] for u in users} == {SEEN}


def test_twitch_fields_are_typed_and_the_platforms_listed() -> None:
    ann, other, bare = records()[0]
    assert ann["twitch_id"] == 123 and ann["twitch_partnered"] == 0  # "123": a number as text
    assert (ann["twitch_display_name"], ann["twitch_name"]) == ("Ann", "ann")
    assert ann["twitch_profile_banner_url"] is None
    assert (ann["platforms"], ann["has_twitch"]) == ("twitch", True)
    assert (other["platforms"], other["has_twitch"], other["twitch_id"]) == ("youtube", False, None)
    assert bare["platforms"] is None


def test_settings_are_stored_as_sent_and_counted() -> None:
    ann, other, bare = records()[0]
    assert json.loads(ann["settings"]) == settings_page()[0]["settings"]
    assert ann["settings_count"] == 6
    assert (other["settings"], other["settings_count"]) == ('"not an object"', 0)
    assert (bare["settings"], bare["settings_count"]) == (None, 0)  # no settings sent


def test_settings_that_are_not_an_object_are_counted() -> None:
    dq = records()[2]
    problem = dq.problems["user_settings", "settings", "settings_not_an_object"]
    assert (problem.count, problem.sample_ids, problem.sample_values) == (
        1,
        ["8"],
        ["not an object"],
    )


def test_each_setting_is_a_row_keyed_by_its_json_pointer() -> None:
    values = records()[1]
    assert values == [
        {"user_id": 7, "key": "/a~1b", "value": "1", "value_type": "number"},  # "/" is ~1
        {"user_id": 7, "key": "/t~0x", "value": "true", "value_type": "boolean"},  # "~" is ~0
        {"user_id": 7, "key": "/nested/k", "value": "v", "value_type": "string"},
        {"user_id": 7, "key": "/empty", "value": "{}", "value_type": "object"},
        {"user_id": 7, "key": "/list", "value": "[1,2]", "value_type": "array"},
        {"user_id": 7, "key": "/none", "value": None, "value_type": "null"},
    ]


def test_fields_beyond_the_shown_ones_land_in_columns_of_their_own() -> None:
    _, other, _ = records()[0]
    assert other["tier"] == 5
    assert other["user__youtube__channel_id"] == "UC1"
    stats = records()[3]
    assert ("tier",) in stats.kinds and ("user", "youtube", "channel_id") in stats.kinds
    assert stats.kinds["user", "twitch", "partnered"] == {"bigint": None}


def test_the_settings_version_ignores_when_a_row_was_written() -> None:
    users, values, _, _ = records()
    ann, mine = users[0], [v for v in values if v["user_id"] == 7]
    held = settings_version(ann, mine)
    assert settings_version({**ann, "last_seen_at": datetime(2030, 1, 1)}, mine) == held
    assert settings_version({**ann, "twitch_name": "ann2"}, mine) != held
    assert settings_version(ann, [{**mine[0], "value": "2"}, *mine[1:]]) != held
    assert settings_version(ann, mine[1:]) != held  # a setting removed


def test_a_tombstone_per_parent_without_child_rows() -> None:
    users, values, _, _ = records()
    found = tombstones([u["user_id"] for u in users], values, USER_SETTING_VALUES_COLUMNS)
    assert found == [
        {"user_id": 8, "key": "", TOMBSTONE: True},  # the NOT NULL `key` holds ''
        {"user_id": 9, "key": "", TOMBSTONE: True},
    ]
    assert tombstones([7], values, USER_SETTING_VALUES_COLUMNS) == []
    none = tombstones([3, 1, 3], [], USER_ACCOUNT_PROFILES_COLUMNS)
    assert none == [
        {"user_id": 1, "platform": "", TOMBSTONE: True},
        {"user_id": 3, "platform": "", TOMBSTONE: True},
    ]


# -- user accounts (spec 4.3: a Profiles object, its shape not shown) ------------------------

PROFILES = {
    "primary": "twitch",
    "twitch": {"twitch_id": 99, "display_name": "D", "login": "dd"},
    "youtube": {"channel_id": "UC9", "title": "Tee"},
    "level": 3,
}


def test_an_account_row_and_one_profile_row_per_linked_platform() -> None:
    account, profiles = account_records(5, PROFILES, SEEN, DataQuality())
    assert account == {
        "user_id": 5,
        "status": "found",
        "primary_platform": "twitch",
        "platforms": "twitch,youtube",
        "fetched_at": SEEN,
        "level": 3,  # a top-level field beyond the shown ones
    }
    assert [(p["platform"], p["platform_user_id"], p["name"]) for p in profiles] == [
        ("twitch", "99", "dd"),  # the id as text; `login` when there is no name
        ("youtube", "UC9", "Tee"),
    ]
    assert json.loads(profiles[1]["profile"]) == PROFILES["youtube"]  # kept whole


def test_a_404_is_a_missing_account() -> None:
    account, profiles = account_records(5, None, SEEN, DataQuality())
    assert (account["status"], account["platforms"], profiles) == ("missing", None, [])


@pytest.mark.parametrize("profiles", [["twitch"], "twitch", 3])
def test_profiles_that_are_not_an_object_are_counted_and_found_empty(profiles: Any) -> None:
    dq = DataQuality()
    account, rows = account_records(5, profiles, SEEN, dq)
    assert (account["status"], account["platforms"], rows) == ("found", None, [])
    assert dq.count("user_accounts", "profiles", "profiles_not_an_object") == 1


def test_a_primary_that_is_not_text_is_no_platform() -> None:
    account, _ = account_records(5, {"primary": 1, "twitch": {}}, SEEN, DataQuality())
    assert (account["primary_platform"], account["platforms"]) == (None, "twitch")
