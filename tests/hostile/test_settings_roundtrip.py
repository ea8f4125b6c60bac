"""Property: any settings object the API sends is stored exactly, and its leaves are listed once.

Hypothesis generates settings with case variants, dots, slashes, tildes, unicode and empty keys,
mixed types, and nesting up to 200 levels; each example is a real `devportal sync` of the
settings list from the hostile server into a fresh DuckDB file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devportal.cli import main
from tests.helpers import query
from tests.hostile.server import HostileApi

EXAMPLES = int(os.environ.get("DEVPORTAL_FUZZ_EXAMPLES", "8"))  # make soak: 200

# valid Unicode: a lone surrogate (`\udc00` pairing with nothing) cannot be kept in UTF-8 text,
# nor U+0000 in PostgreSQL text; both become U+FFFD and are counted (test_odd_answers.py)
characters = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
text = st.text(characters, max_size=12)
keys = st.one_of(
    st.sampled_from(
        ["theme", "Theme", "THEME", "a.b", "a", "b", "a/b", "~", "~1", "", "ключ", "🎛"]
    ),
    st.text(characters, max_size=6),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),  # beyond 64 bits too
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def settings_objects(draw: Any) -> dict[str, Any]:
    obj = draw(st.dictionaries(keys, values, max_size=6))
    depth = draw(st.sampled_from([0, 0, 1, 5, 60, 200]))
    for level in range(depth):  # a deep chain, with a sibling now and then
        obj = {draw(keys): obj} if level % 7 else {draw(keys): obj, "sibling": level}
    return obj


def leaves(value: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(RFC 6901 pointer, leaf) pairs, written independently of devportal."""
    out: list[tuple[str, Any]] = []
    for key, child in value.items():
        path = prefix + "/" + key.replace("~", "~0").replace("/", "~1")
        if isinstance(child, dict) and child:
            out.extend(leaves(child, path))
        else:
            out.append((path, child))
    return out


def as_text(leaf: Any) -> str | None:
    if leaf is None or isinstance(leaf, str):
        return leaf
    if isinstance(leaf, bool):
        return "true" if leaf else "false"
    return None  # numbers, arrays, {}: compared as parsed JSON below


@pytest.mark.fuzz
@pytest.mark.timeout(60 + 10 * EXAMPLES)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
@given(objects=st.lists(settings_objects(), min_size=1, max_size=4))
def test_any_settings_object_round_trips_exactly(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    objects: list[dict[str, Any]],
) -> None:
    warehouse = tmp_path_factory.mktemp("settings") / "w.duckdb"
    with HostileApi(per_page=2) as api:
        api.settings = [
            {"user": {"service": {"id": 1 + n}}, "settings": obj} for n, obj in enumerate(objects)
        ]
        monkeypatch.setenv("SOURCES__DEVPORTAL__ACCESS_TOKEN", api.token)
        argv = ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse)]
        code = main([*argv, "--resources", "user_settings", "--no-models", "--progress", "off"])
    assert code == 0
    stored = dict(query(Path(warehouse), "SELECT user_id, settings FROM devportal.user_settings"))
    has_values = query(
        Path(warehouse),
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'user_setting_values'",
    )[0][0]
    rows = (
        query(
            Path(warehouse),
            "SELECT user_id, key, value FROM devportal.user_setting_values ORDER BY user_id",
        )
        if has_values
        else []  # no user had a single leaf: dlt creates no table for no rows
    )
    for n, sent in enumerate(objects):
        # the object itself: same keys in the same order, same values, null kept, none added
        assert json.loads(stored[1 + n], object_pairs_hook=list) == json.loads(
            json.dumps(sent), object_pairs_hook=list
        )
        # its leaves: one row per pointer, nothing collided, nothing invented
        got = [(key, value) for uid, key, value in rows if uid == 1 + n]
        expected = leaves(sent)
        assert sorted(k for k, _ in got) == sorted(k for k, _ in expected)
        by_key = dict(got)
        for key, leaf in expected:
            text = as_text(leaf)
            if text is not None or leaf is None:
                assert by_key[key] == text
            else:
                assert json.loads(by_key[key]) == leaf
