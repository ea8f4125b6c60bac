"""The sandbox's users: service accounts, their linked platform profiles and stored settings.

Owns the generation of users from a seed and the two user endpoints' data: the settings list
(`/users/settings`, spec 2.3) and the Profiles object (`/users/{id}`, spec 2.4). Not locked
here: `World` holds its lock around every call.

Shapes where the spec is silent (decisions, see the package docstring):
- Profiles: `{"primary": <platform>, "twitch": {7 fields}, "youtube": {"id", "title"},
  "mixer": {"id", "name"}, "facebook": {"id", "name"}}`, only the linked platforms present.
- The settings list holds users that have a twitch profile and a settings record, ordered by
  service id; some records are empty (`{}`), some users have no record at all.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

_T = TypeVar("_T")

PLATFORMS = ("twitch", "youtube", "mixer", "facebook")

_ADJECTIVES = [
    "Pixel",
    "Night",
    "Lucky",
    "Crimson",
    "Silent",
    "Rapid",
    "Cosmic",
    "Frosty",
    "Golden",
    "Hidden",
    "Mighty",
    "Neon",
    "Quiet",
    "Rusty",
    "Solar",
    "Turbo",
    "Velvet",
    "Wild",
    "Zen",
    "Arctic",
    "Blazing",
    "Clever",
    "Dusty",
    "Electric",
    "Fuzzy",
    "Happy",
    "Iron",
    "Jolly",
    "Lunar",
    "Misty",
    "Noble",
    "Odd",
    "Proud",
    "Royal",
    "Shadow",
    "Tiny",
    "Ultra",
    "Vivid",
    "Witty",
]
_NOUNS = [
    "Panda",
    "Owl",
    "Fox",
    "Wizard",
    "Knight",
    "Gamer",
    "Pilot",
    "Ninja",
    "Tiger",
    "Otter",
    "Falcon",
    "Raven",
    "Wolf",
    "Dragon",
    "Badger",
    "Comet",
    "Golem",
    "Kraken",
    "Lynx",
    "Moose",
    "Nova",
    "Pirate",
    "Ranger",
    "Samurai",
    "Sloth",
    "Titan",
    "Viking",
    "Yeti",
    "Bard",
    "Cactus",
    "Donut",
    "Echo",
    "Ghost",
    "Hamster",
    "Koala",
    "Llama",
    "Mango",
    "Noodle",
    "Pickle",
    "Waffle",
]
_THEMES = ("dark", "light", "night", "high-contrast")
_SOUNDS = ("chime", "coin", "airhorn", "none", "custom")
_WIDGETS = ("chat", "goal", "ticker", "tip_jar", "viewer_count", "poll", "emote_wall")
_LANGS = ("en", "de", "es", "fr", "pt-BR", "ja", "ko", "ru")
_WORDS = ("spoiler", "spam", "bot", "link", "caps", "scam", "promo")


@dataclass
class User:
    """One service account. `settings` None means no settings record (absent from the list)."""

    service_id: int
    profiles: dict[str, Any]
    settings: dict[str, Any] | None
    _entry: bytes | None = field(default=None, repr=False)
    _profile: bytes | None = field(default=None, repr=False)

    @property
    def name(self) -> str | None:
        twitch = self.profiles.get("twitch")
        return None if twitch is None else str(twitch["name"])

    def entry(self) -> dict[str, Any]:
        """The settings-list element exactly as served (spec 2.3)."""
        return {
            "user": {"service": {"id": self.service_id}, "twitch": self.profiles["twitch"]},
            "settings": self.settings if self.settings is not None else {},
        }

    def entry_bytes(self) -> bytes:
        if self._entry is None:
            self._entry = _dumps(self.entry())
        return self._entry

    def profile_bytes(self) -> bytes:
        if self._profile is None:
            self._profile = _dumps(self.profiles)
        return self._profile

    def touch(self) -> None:
        self._entry = None
        self._profile = None


def _dumps(obj: Any) -> bytes:
    # Compact like the PHP backend's json_encode; non-ASCII kept as UTF-8.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class UserBook:
    """All users plus the indexes the settings list needs (by name, by platform)."""

    def __init__(self, users: list[User], deleted_ids: list[int]) -> None:
        self.users: dict[int, User] = {u.service_id: u for u in users}
        # Service ids that subscriptions may point at but which have no account (404).
        self.deleted_ids = deleted_ids
        self.reindex()

    def reindex(self) -> None:
        """Rebuild the settings-list indexes; O(users), only after scripted user edits."""
        listed = [
            u
            for _, u in sorted(self.users.items())
            if u.settings is not None and "twitch" in u.profiles
        ]
        self.listed: list[User] = listed
        self.by_name: dict[str, User] = {str(u.name).lower(): u for u in listed}
        self.by_platform: dict[str, list[User]] = {
            p: [u for u in listed if p in u.profiles] for p in PLATFORMS
        }

    def ids(self) -> list[int]:
        return sorted(self.users)

    def select(
        self, usernames: list[str] | None, platform: str | None
    ) -> list[User] | tuple[User, ...]:
        """The filtered settings list, in list order (service id ascending)."""
        base: list[User] = self.listed
        if platform is not None:
            base = self.by_platform.get(platform.lower(), [])
        if usernames is None:
            return base
        wanted = {n.lower() for n in usernames}
        picked = [self.by_name[n] for n in wanted if n in self.by_name]
        if platform is not None:
            allowed = {u.service_id for u in base}
            picked = [u for u in picked if u.service_id in allowed]
        return sorted(picked, key=lambda u: u.service_id)


def scripted_profiles(user_id: int, name: str, platforms: Sequence[str]) -> dict[str, Any]:
    """Profiles of an account added by a test: fixed, readable values derived from the id."""
    profiles: dict[str, Any] = {"primary": platforms[0] if platforms else "twitch"}
    for p in platforms:
        if p == "twitch":
            profiles["twitch"] = {
                "twitch_id": 10_000_000 + user_id,
                "display_name": name,
                "name": name.lower(),
                "partnered": 0,
                "icon_url": f"https://static-cdn.jtvnw.net/jtv_user_pictures/{user_id}-profile_image-300x300.png",
                "profile_background_color": None,
                "profile_banner_url": None,
            }
        elif p == "youtube":
            profiles["youtube"] = {"id": f"UC{user_id:022d}", "title": f"{name} TV"}
        else:
            profiles[p] = {"id": user_id, "name": name}
    return profiles


def generate_users(count: int, rng: random.Random) -> UserBook:
    """`count` users with ascending, gapped service ids; ~2% extra ids are deleted accounts."""
    users: list[User] = []
    deleted: list[int] = []
    if count <= 0:
        return UserBook(users, deleted)
    n_deleted = max(1, count // 50)
    total = count + n_deleted
    deleted_slots = set(rng.sample(range(total), n_deleted))
    names: set[str] = set()
    twitch_ids = rng.sample(range(20_000_000, 900_000_000), total)
    service_id = rng.randrange(100, 1000)
    for slot in range(total):
        # Gaps: accounts deleted long ago and ids of other applications' users.
        service_id += 1 if rng.random() < 0.8 else rng.randrange(2, 40)
        if slot in deleted_slots:
            deleted.append(service_id)
            continue
        users.append(_make_user(service_id, twitch_ids[slot], names, rng))
    return UserBook(users, deleted)


def _unique_name(names: set[str], rng: random.Random) -> str:
    plain = 0.3 if len(names) < 500 else 0.0  # only ~1,700 names without digits exist
    while True:
        display = _pick(rng, _ADJECTIVES) + _pick(rng, _NOUNS)
        if rng.random() >= plain:
            display += str(1 + int(rng.random() * 99_999))
        if display.lower() not in names:
            names.add(display.lower())
            return display


def _hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _make_user(service_id: int, twitch_id: int, names: set[str], rng: random.Random) -> User:
    display = _unique_name(names, rng)
    profiles: dict[str, Any] = {}
    has_twitch = rng.random() < 0.96
    linked = [
        p
        for p, share in (("youtube", 0.3), ("mixer", 0.08), ("facebook", 0.12))
        if rng.random() < share
    ]
    if not has_twitch and not linked:
        linked = ["youtube"]
    primary = "twitch" if has_twitch else linked[0]
    if has_twitch and linked and rng.random() < 0.1:
        primary = linked[0]
    profiles["primary"] = primary
    if has_twitch:
        profiles["twitch"] = {
            "twitch_id": twitch_id,
            "display_name": display,
            "name": display.lower(),
            "partnered": 0,
            "icon_url": "https://static-cdn.jtvnw.net/jtv_user_pictures/"
            f"{_hex(rng, 8)}-{_hex(rng, 4)}-{_hex(rng, 4)}-profile_image-300x300.png",
            "profile_background_color": None if rng.random() < 0.6 else f"#{_hex(rng, 6)}",
            "profile_banner_url": None
            if rng.random() < 0.5
            else f"https://static-cdn.jtvnw.net/jtv_user_pictures/{_hex(rng, 12)}-profile_banner-480.png",
        }
    for platform in linked:
        if platform == "youtube":
            profiles["youtube"] = {"id": "UC" + _hex(rng, 22), "title": f"{display} TV"}
        elif platform == "mixer":
            profiles["mixer"] = {"id": rng.randrange(10_000, 99_999_999), "name": display.lower()}
        else:
            profiles["facebook"] = {"id": str(rng.randrange(10**14, 10**15)), "name": display}
    roll = rng.random()
    settings: dict[str, Any] | None
    if roll < 0.15:
        settings = None  # never saved anything: absent from the settings list
    elif roll < 0.25:
        settings = {}
    else:
        settings = _make_settings(rng)
    return User(service_id=service_id, profiles=profiles, settings=settings)


def _make_settings(rng: random.Random) -> dict[str, Any]:
    """Free-form per-user settings: varied keys, nested objects, lists, nulls."""
    keys = _subset(rng, _SETTING_KEYS) or [_SETTING_KEYS[int(rng.random() * len(_SETTING_KEYS))]]
    return {k: _SETTING_MAKERS[k](rng) for k in keys}


def _subset(rng: random.Random, items: Sequence[str]) -> list[str]:
    """Each item with probability 1/2, in a stable order; one draw instead of random.sample."""
    bits = rng.getrandbits(len(items))
    return [item for n, item in enumerate(items) if bits >> n & 1]


def _pick(rng: random.Random, items: Sequence[_T]) -> _T:
    return items[int(rng.random() * len(items))]


def _alerts(rng: random.Random) -> dict[str, Any]:
    return {
        "enabled": rng.random() < 0.8,
        "sound": _pick(rng, _SOUNDS),
        "min_amount": _pick(rng, (1, 2, 5, 10, 25)),
        "duration_ms": _pick(rng, (3000, 5000, 8000)),
    }


def _layout(rng: random.Random) -> dict[str, Any]:
    return {
        "position": {"x": rng.randrange(0, 1920), "y": rng.randrange(0, 1080)},
        "scale": round(rng.uniform(0.5, 2.0), 2),
    }


# Only the chosen keys draw random numbers: generating 200k users stays around a second.
_SETTING_MAKERS: dict[str, Callable[[random.Random], Any]] = {
    "theme": lambda rng: _pick(rng, _THEMES),
    "volume": lambda rng: round(rng.random(), 2),
    "alerts": _alerts,
    "widgets": lambda rng: _subset(rng, _WIDGETS),
    "language": lambda rng: _pick(rng, _LANGS),
    "layout": _layout,
    "onboarding_done": lambda rng: rng.random() < 0.7,
    "blocked_words": lambda rng: _subset(rng, _WORDS),
    "custom_css": lambda rng: (
        None if rng.random() < 0.8 else f".alert {{ color: #{_hex(rng, 6)}; }}"
    ),
    "goal": lambda rng: {"title": "New mic", "target": rng.randrange(50, 2000), "currency": "USD"},
    "counter": lambda rng: rng.randrange(0, 100_000),
}
_SETTING_KEYS = list(_SETTING_MAKERS)
