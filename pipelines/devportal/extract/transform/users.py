"""Settings entries and account profiles to dict rows: `user_settings` with its
`user_setting_values`, `user_accounts` with its `user_account_profiles`, and the tombstones
that empty a user's child rows. Fields beyond the shown ones land in columns of their own
(`extras.Columns`); every field seen is recorded (`extras.FieldStats`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import orjson

from devportal.base.coercion import json_type, to_int
from devportal.extract import extra_fields
from devportal.extract.transform.quality import USER_ID_DROPPED, DataQuality, json_text, raw_text

TWITCH_FIELDS = (
    "twitch_id",
    "display_name",
    "name",
    "partnered",
    "icon_url",
    "profile_banner_url",
    "profile_background_color",
)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else raw_text(value)


def pointer_token(key: str) -> str:
    """One RFC 6901 JSON Pointer token: `~` -> `~0`, `/` -> `~1`."""
    return key.replace("~", "~0").replace("/", "~1")


def flatten_settings(settings: Any) -> Iterable[tuple[str, str | None, str]]:
    """(JSON Pointer, text value, JSON type) for each leaf of a settings object, in order.

    The path is an RFC 6901 JSON Pointer: `{"a.b": 1, "a": {"b": 2}}` gives `/a.b` and `/a/b`,
    so no two keys collide, and `json_extract(settings, key)` finds the value again. Empty
    objects and arrays are leaves (`{}`, `[]`). Iterative: any depth the page parser accepted.
    """
    if not isinstance(settings, dict):
        return
    for keys, value in extra_fields.flatten(settings, empty_leaves=True):
        path = "".join(f"/{pointer_token(key)}" for key in keys)
        if isinstance(value, bool):
            text: str | None = "true" if value else "false"
        elif isinstance(value, str):
            text = value
        elif value is None:
            text = None
        else:
            text = json_text(value)
        yield path, text, json_type(value)


def settings_columns(
    naming: extra_fields.Naming, known: Mapping[str, Any] | None = None
) -> extra_fields.Columns:
    """Where each field of a settings entry lands in `user_settings`."""
    spec: dict[extra_fields.Path, str] = {
        ("user", "service", "id"): "user_id",
        ("settings",): "settings",
    }
    for name in TWITCH_FIELDS:
        spec[("user", "twitch", name)] = name if name.startswith("twitch_") else f"twitch_{name}"
    return extra_fields.Columns(naming, USER_SETTINGS_COLUMNS, known, spec)


def _leaves(
    path: extra_fields.Path, value: Any, columns: extra_fields.Columns
) -> Iterator[tuple[extra_fields.Path, Any]]:
    """The leaves of VALUE at PATH; a map (`Columns.whole_reason`) is one leaf, whole."""
    if type(value) is not dict or (value and columns.whole_reason(path, value) is not None):
        yield path, value
    else:
        yield from extra_fields.flatten(value, path, whole=lambda p, v: _whole(columns, p, v))


def _whole(columns: extra_fields.Columns, path: extra_fields.Path, value: dict[str, Any]) -> bool:
    return columns.whole_reason(path, value) is not None


def _entry_extras(
    entry: dict[str, Any],
    user: dict[str, Any],
    stats: extra_fields.FieldStats,
    columns: extra_fields.Columns,
) -> Iterator[tuple[extra_fields.Path, Any]]:
    """The leaves of a settings entry beyond the shown ones (the shown ones are seen in STATS):
    its own extra fields, `user.service` and `user.twitch` fields beyond the spec's, and every
    field of any other platform's profile (or any other value under `user`). A map among them
    is one leaf, kept whole (COLUMNS decides)."""
    for key, value in entry.items():
        if key == "settings":
            stats.see(("settings",), value)
        elif key != "user":
            yield from _leaves((key,), value, columns)
    for key, value in user.items():
        if key in ("service", "twitch") and type(value) is dict:
            shown = ("id",) if key == "service" else TWITCH_FIELDS
            for name, inner in value.items():
                if name in shown:
                    stats.see(("user", key, name), inner)
                else:
                    yield from _leaves(("user", key, name), inner, columns)
        else:
            yield from _leaves(("user", key), value, columns)


def user_settings_records(
    rows: Sequence[dict[str, Any]],
    dq: DataQuality,
    observed_at: datetime,
    stats: extra_fields.FieldStats | None = None,
    columns: extra_fields.Columns | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(user_settings rows, user_setting_values rows) for one page of settings entries.

    Fields beyond the shown ones land in columns of their own (`extras.Columns`), typed by dlt;
    STATS records every path seen."""
    users: list[dict[str, Any]] = []
    values: list[dict[str, Any]] = []
    stats = stats if stats is not None else extra_fields.FieldStats()
    columns = columns if columns is not None else settings_columns(extra_fields.Naming())
    for entry in rows:
        user: dict[str, Any] = entry["user"] if isinstance(entry.get("user"), dict) else {}
        service: dict[str, Any] = user["service"] if isinstance(user.get("service"), dict) else {}
        user_id = to_int(service.get("id"))
        if user_id is None:
            dq.add("user_settings", "user_id", USER_ID_DROPPED, "?", entry)
            continue
        twitch: dict[str, Any] | None = (
            user["twitch"] if isinstance(user.get("twitch"), dict) else None
        )
        settings = entry.get("settings")
        if settings is not None and not isinstance(settings, dict):
            dq.add("user_settings", "settings", "settings_not_an_object", user_id, settings)
        platforms = sorted(k for k, v in user.items() if k != "service" and isinstance(v, dict))
        record: dict[str, Any] = {
            "user_id": user_id,
            "platforms": ",".join(platforms) or None,
            "has_twitch": twitch is not None,
            # exactly the object the API sent (JSON text): absent keys stay absent
            "settings": None if settings is None else json_text(settings),
            "settings_count": len(settings) if isinstance(settings, dict) else 0,
            "last_seen_at": observed_at,
        }
        for name in TWITCH_FIELDS:
            raw = twitch.get(name) if twitch else None
            record[f"twitch_{name}" if not name.startswith("twitch_") else name] = raw
        record["twitch_id"] = (
            to_int(record["twitch_id"]) if record["twitch_id"] is not None else None
        )
        record["twitch_partnered"] = to_int(record["twitch_partnered"])
        for name in (
            "twitch_display_name",
            "twitch_name",
            "twitch_icon_url",
            "twitch_profile_banner_url",
            "twitch_profile_background_color",
        ):
            record[name] = _text_or_none(record[name])
        leaves = _entry_extras(entry, user, stats, columns)
        record.update(extra_fields.flat_extras(leaves, stats, columns))
        users.append(record)
        for key, text, kind in flatten_settings(settings):
            values.append({"user_id": user_id, "key": key, "value": text, "value_type": kind})
    return users, values


# the fields of a settings row that say when it was written, not what the user has
_WRITTEN_FIELDS = ("last_seen_at", "_row_version")


def settings_version(user: Mapping[str, Any], values: Sequence[Mapping[str, Any]]) -> int:
    """`user_settings._row_version`: a 64-bit hash of everything a user's rows would store (the
    row but its write time, and its `user_setting_values`). A read whose version equals the one
    held changes nothing, so it is not loaded: an hourly read of an unchanged list adds no rows.
    """
    row = {k: v for k, v in user.items() if k not in _WRITTEN_FIELDS}
    text = orjson.dumps(
        [row, [(v["key"], v["value"], v["value_type"]) for v in values]],
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=str,
    )
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little", signed=True)


USER_SETTINGS_COLUMNS: dict[str, dict[str, Any]] = {
    "user_id": {"data_type": "bigint", "nullable": False, "primary_key": True},
    "platforms": {"data_type": "text"},
    "has_twitch": {"data_type": "bool"},
    "settings": {"data_type": "text"},
    "settings_count": {"data_type": "bigint"},
    "last_seen_at": {"data_type": "timestamp", "timezone": False},
    "twitch_id": {"data_type": "bigint"},
    "twitch_display_name": {"data_type": "text"},
    "twitch_name": {"data_type": "text"},
    "twitch_partnered": {"data_type": "bigint"},
    "twitch_icon_url": {"data_type": "text"},
    "twitch_profile_banner_url": {"data_type": "text"},
    "twitch_profile_background_color": {"data_type": "text"},
    "_row_version": {"data_type": "bigint"},
}

# A child row (user_setting_values, user_account_profiles) that only says "this user has none
# now": dlt's `hard_delete` hint makes delete-insert delete the user's rows (merge_key) and not
# insert this one. NULL on every stored row.
TOMBSTONE = "_tombstone"
TOMBSTONE_COLUMN: dict[str, Any] = {"data_type": "bool", "nullable": True, "hard_delete": True}


def tombstones(
    parents: Iterable[int], children: Sequence[dict[str, Any]], columns: dict[str, Any]
) -> list[dict[str, Any]]:
    """One tombstone per parent `user_id` without a child row; the other NOT NULL columns of
    `columns` hold '' (the row is never stored, but staging checks them)."""
    required = {
        name: ""
        for name, column in columns.items()
        if column.get("nullable") is False and name != "user_id"
    }
    have = {child["user_id"] for child in children}
    return [
        {"user_id": user_id, **required, TOMBSTONE: True} for user_id in sorted(set(parents) - have)
    ]


USER_SETTING_VALUES_COLUMNS: dict[str, dict[str, Any]] = {
    "user_id": {"data_type": "bigint", "nullable": False, "merge_key": True},
    "key": {"data_type": "text", "nullable": False},
    "value": {"data_type": "text"},
    "value_type": {"data_type": "text"},
    TOMBSTONE: {**TOMBSTONE_COLUMN},
}

# `user_settings_unlisted`: users the latest verified settings read no longer listed (their
# `user_settings` rows stay as last read); a user listed again gets a tombstone that deletes it
USER_SETTINGS_UNLISTED_COLUMNS: dict[str, dict[str, Any]] = {
    "user_id": {"data_type": "bigint", "nullable": False, "primary_key": True},
    "unlisted_at": {"data_type": "timestamp", "timezone": False},
    TOMBSTONE: {**TOMBSTONE_COLUMN},
}


# -- user accounts ---------------------------------------------------------------------------

PROFILE_ID_KEYS = ("id", "twitch_id", "youtube_id", "mixer_id", "facebook_id", "channel_id")
PROFILE_NAME_KEYS = ("name", "title", "username", "login")


def account_columns(
    naming: extra_fields.Naming, known: Mapping[str, Any] | None = None
) -> extra_fields.Columns:
    """Where the top-level fields of a Profiles object land in `user_accounts`."""
    return extra_fields.Columns(
        naming, USER_ACCOUNTS_COLUMNS, known, {("primary",): "primary_platform"}
    )


def account_records(
    user_id: int,
    profiles: Any,
    observed_at: datetime,
    dq: DataQuality,
    stats: extra_fields.FieldStats | None = None,
    columns: extra_fields.Columns | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(user_accounts row, user_account_profiles rows); `profiles` None means the API said 404.

    Each linked platform's profile is kept whole (`profile`); the Profiles object's other
    top-level fields land in `user_accounts` columns of their own; STATS records them."""
    if profiles is None:
        return (
            {
                "user_id": user_id,
                "status": "missing",
                "primary_platform": None,
                "platforms": None,
                "fetched_at": observed_at,
            },
            [],
        )
    if not isinstance(profiles, dict):
        dq.add("user_accounts", "profiles", "profiles_not_an_object", user_id, profiles)
        profiles = {}
    primary = profiles.get("primary")
    linked = {k: v for k, v in profiles.items() if isinstance(v, dict)}
    stats = stats if stats is not None else extra_fields.FieldStats()
    columns = columns if columns is not None else account_columns(extra_fields.Naming())
    if "primary" in profiles:
        stats.see(("primary",), primary)
    top = (((k,), v) for k, v in profiles.items() if k != "primary" and not isinstance(v, dict))
    account_extras = extra_fields.flat_extras(top, stats, columns)
    rows = []
    for platform, profile in sorted(linked.items()):
        platform_user_id = next(
            (profile[k] for k in PROFILE_ID_KEYS if profile.get(k) is not None), None
        )
        name = next((profile[k] for k in PROFILE_NAME_KEYS if profile.get(k) is not None), None)
        rows.append(
            {
                "user_id": user_id,
                "platform": platform,
                "platform_user_id": _text_or_none(platform_user_id),
                "name": _text_or_none(name),
                "display_name": _text_or_none(profile.get("display_name")),
                "profile": json_text(profile),
            }
        )
    return (
        {
            "user_id": user_id,
            "status": "found",
            "primary_platform": primary if isinstance(primary, str) else None,
            "platforms": ",".join(sorted(linked)) or None,
            "fetched_at": observed_at,
            **account_extras,
        },
        rows,
    )


USER_ACCOUNTS_COLUMNS: dict[str, dict[str, Any]] = {
    "user_id": {"data_type": "bigint", "nullable": False, "primary_key": True},
    "status": {"data_type": "text"},
    "primary_platform": {"data_type": "text"},
    "platforms": {"data_type": "text"},
    "fetched_at": {"data_type": "timestamp", "timezone": False},
}

USER_ACCOUNT_PROFILES_COLUMNS: dict[str, dict[str, Any]] = {
    "user_id": {"data_type": "bigint", "nullable": False, "merge_key": True},
    "platform": {"data_type": "text", "nullable": False},
    "platform_user_id": {"data_type": "text"},
    "name": {"data_type": "text"},
    "display_name": {"data_type": "text"},
    "profile": {"data_type": "text"},
    TOMBSTONE: {**TOMBSTONE_COLUMN},
}
