"""The checked-in `.dlt/config.toml` lists every setting, commented out, with the code's default.

The defaults live in the code (`config.DevportalConfig`, whose HTTP fields are
`client.settings.HttpSettings`', and `config.AnalyticsConfig`); the file only shows them. A key set
uncommented there would pin a default, and a default changed in code would then do nothing when
run from the checkout. These tests read the file's comments: each `# key = value   # meaning` line
is parsed with tomllib and compared with the field's default; a field whose default is None shows
an example instead, marked `(no default)`.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devportal.settings.alerts import AlertsConfig
from devportal.settings.config import HISTORY_IGNORE_DEFAULT, AnalyticsConfig, DevportalConfig

CONFIG_FILE = Path(__file__).resolve().parents[1] / ".dlt" / "config.toml"
NO_DEFAULT = "(no default)"
SECTIONS = {
    "sources.devportal": DevportalConfig,
    "analytics": AnalyticsConfig,
    "alerts": AlertsConfig,
}

# `# key = ...`: a commented setting (prose never starts with an identifier and ` = `)
KEY_LINE = re.compile(r"^#\s?(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<rest>.*)$")
SECTION_LINE = re.compile(r"^\[(?P<name>[^\]]+)\]\s*(#.*)?$")


@dataclass(frozen=True)
class Listed:
    section: str
    key: str
    value: Any
    no_default: bool
    line_no: int


def listed_keys(path: Path = CONFIG_FILE) -> list[Listed]:
    """Every commented `key = value` line of the file at PATH (default: the checked-in
    .dlt/config.toml), with its section and parsed value."""
    found = []
    section = ""
    for line_no, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if match := SECTION_LINE.match(line.strip()):
            section = match["name"].strip()
            continue
        match = KEY_LINE.match(line.strip())
        if not match:
            continue
        key, rest = match["key"], match["rest"]
        try:
            # the trailing `# meaning` is a TOML comment: tomllib reads the value exactly
            value = tomllib.loads(f"{key} = {rest}")[key]
        except tomllib.TOMLDecodeError as err:
            raise AssertionError(
                f"{path} line {line_no}: `# {key} = {rest}` is no TOML value ({err})"
            ) from err
        # the marker belongs to the line's own trailing comment, after the value
        no_default = NO_DEFAULT in _trailing_comment(key, rest)
        found.append(Listed(section, key, value, no_default, line_no))
    return found


def _trailing_comment(key: str, rest: str) -> str:
    """The `# ...` after the value: from the first `#` before which the value is whole (a `#`
    inside a string is not one)."""
    for at in (i for i, ch in enumerate(rest) if ch == "#"):
        try:
            tomllib.loads(f"{key} = {rest[:at]}")
        except tomllib.TOMLDecodeError:
            continue
        return rest[at:]
    return ""


def defaults(spec: type) -> dict[str, Any]:
    instance = spec()
    return {name: getattr(instance, name) for name in spec.get_resolvable_fields()}


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_every_field_is_listed_once_and_no_listed_key_is_stale(section: str) -> None:
    fields = defaults(SECTIONS[section])
    keys = [item.key for item in listed_keys() if item.section == section]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    assert not twice, f"[{section}] lists these keys more than once: {twice}"
    missing = sorted(set(fields) - set(keys))
    assert not missing, f"[{section}] in .dlt/config.toml does not list the fields {missing}"
    stale = sorted(set(keys) - set(fields))
    assert not stale, f"[{section}] in .dlt/config.toml lists keys that are no field: {stale}"


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_every_shown_default_is_the_codes(section: str) -> None:
    fields = defaults(SECTIONS[section])
    wrong = []
    for item in listed_keys():
        if item.section != section or item.key not in fields:
            continue  # stale keys are the other test's
        default = fields[item.key]
        where = f"line {item.line_no}: {item.key}"
        if default is None:
            if not item.no_default:
                wrong.append(f"{where} defaults to None in code: mark its example {NO_DEFAULT}")
        elif item.no_default:
            wrong.append(f"{where} is marked {NO_DEFAULT} but defaults to {default!r} in code")
        elif (type(item.value), item.value) != (type(default), default):
            wrong.append(f"{where} shows {item.value!r}, the code's default is {default!r}")
    assert not wrong, "\n".join(wrong)


def test_the_history_ignore_example_is_the_list_used_when_unset() -> None:
    """The file says the list shown is what an unset `history_ignore_fields` means."""
    (item,) = (i for i in listed_keys() if i.key == "history_ignore_fields")
    assert tuple(item.value) == HISTORY_IGNORE_DEFAULT


def test_no_devportal_setting_is_set_in_the_checked_in_file() -> None:
    """Only commented keys under [sources.devportal] and [analytics]: none pins a default."""
    data = tomllib.loads(CONFIG_FILE.read_text("utf-8"))
    devportal = data.get("sources", {}).get("devportal", {})
    assert devportal == {}, f"[sources.devportal] sets {sorted(devportal)}: comment them out"
    analytics = data.get("analytics", {})
    assert analytics == {}, f"[analytics] sets {sorted(analytics)}: comment them out"
    assert set(data.get("sources", {})) <= {"devportal"}
    # [runtime] holds dlt's settings devportal sets on purpose; none is a devportal field
    assert set(data.get("runtime", {})) == {"log_level", "dlthub_telemetry"}


def test_the_sections_checked_are_what_dlt_resolves() -> None:
    """The file is checked against the spec dlt registered for the source (not only the class
    this test names), and `LoadConfig` (the load connection's settings, resolved on their own
    from the same section) adds no key `DevportalConfig` lacks: every key dlt reads under
    [sources.devportal] is among those listed."""
    from dlt.extract.reference import SourceReference

    import devportal.extract.source
    from devportal.settings.config import LoadConfig

    registered = {
        name: ref.SPEC
        for name, ref in SourceReference.SOURCES.items()
        if name.startswith("devportal.")
    }
    source = (
        f"{devportal.extract.source.__name__}.{devportal.extract.source.devportal_source.__name__}"
    )
    assert registered == {source: SECTIONS["sources.devportal"]}
    assert set(LoadConfig.get_resolvable_fields()) <= set(defaults(DevportalConfig))
