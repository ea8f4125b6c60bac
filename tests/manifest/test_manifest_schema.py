"""The shipped JSON Schema file: a valid Draft 2020-12 schema covering every property of the spec."""

from __future__ import annotations

import json
import zlib
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from devportal.manifest.schema import load_schema
from tests.manifest.manifest_helpers import FIXTURES


def test_schema_is_package_data_and_valid_draft_2020_12() -> None:
    text = resources.files("devportal.manifest").joinpath("manifest.schema.json").read_text()
    schema = json.loads(text)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert load_schema() == schema


def _props(schema: dict[str, Any], name: str | None = None) -> set[str]:
    node = schema if name is None else schema["$defs"][name]
    return set(node["properties"])


def test_schema_covers_every_spec_property() -> None:
    schema = load_schema()
    assert _props(schema) == {
        "$schema",  # where an editor finds the schema (test_manifest_workflow.py)
        "name", "version", "buildPath", "permissions", "sources", "pages", "authorizationUrls",
        "supportedPlatforms", "mediaDomains", "icon",
    }  # fmt: skip
    assert set(schema["required"]) == {"name", "version", "supportedPlatforms"}
    assert _props(schema, "source") == {
        "id", "type", "name", "about", "file", "initialSize", "redirectPropertiesToTopNavSlot"
    }  # fmt: skip
    assert set(schema["$defs"]["source"]["required"]) == {"id", "type", "name", "about", "file"}
    assert _props(schema, "about") == {"description", "bullets", "bannerImage"}
    assert _props(schema, "initialSize") == {"type", "width", "height"}
    assert _props(schema, "page") == {"slot", "file", "persistent", "allowPopout", "popOutSize"}
    assert _props(schema, "popOutSize") == {"width", "height", "minWidth", "minHeight"}
    assert schema["properties"]["supportedPlatforms"]["items"]["enum"] == [
        "twitch", "youtube", "facebook", "mixer"
    ]  # fmt: skip
    assert schema["$defs"]["source"]["properties"]["id"]["minLength"] == 6


def test_complete_fixture_uses_every_schema_property() -> None:
    """The passing fixture really exercises every property (so the happy path covers them)."""
    doc = json.loads((FIXTURES / "complete" / "manifest.json").read_text())
    schema = load_schema()
    assert set(doc) == _props(schema) - {"$schema"}  # an editor's key, not the app's
    assert set().union(*doc["sources"]) == _props(schema, "source")
    assert set().union(*(s["about"] for s in doc["sources"])) == _props(schema, "about")
    assert set().union(*doc["pages"]) == _props(schema, "page")
    assert set(doc["pages"][0]["popOutSize"]) == _props(schema, "popOutSize")
    assert {s["initialSize"]["type"] for s in doc["sources"]} == {"absolute", "relative"}


def test_fixture_icon_is_a_real_png() -> None:
    data = (FIXTURES / "complete" / "dist" / "images" / "icon.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    pos, idat = 8, b""
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        crc = int.from_bytes(data[pos + 8 + length : pos + 12 + length], "big")
        assert zlib.crc32(kind + body) == crc
        if kind == b"IHDR":
            assert int.from_bytes(body[:4], "big") == int.from_bytes(body[4:8], "big") == 256
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    assert len(zlib.decompress(idat)) == 256 * (1 + 256 * 3)
