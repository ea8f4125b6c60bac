"""Table-driven validation cases: each changes the complete bundle in one way and states exactly
which findings (severity, JSON pointer, rule) must come out, no more and no fewer."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devportal.manifest.validate import validate_path
from tests.manifest.manifest_helpers import FIXTURES, Bundle, remove_at, set_at, write_png

Expected = tuple[str, str, str]  # (severity, pointer, rule)


@dataclass(frozen=True)
class Case:
    id: str
    change: Callable[[Bundle], None]
    expected: list[Expected]
    message: str = ""  # a fragment the (first) finding's message must contain


def setv(ptr: str, value: Any) -> Callable[[Bundle], None]:
    return lambda b: b.edit(lambda d: set_at(d, ptr, value))


def rm(ptr: str) -> Callable[[Bundle], None]:
    return lambda b: b.edit(lambda d: remove_at(d, ptr))


def both(*changes: Callable[[Bundle], None]) -> Callable[[Bundle], None]:
    def run(b: Bundle) -> None:
        for change in changes:
            change(b)

    return run


def delete_file(rel: str) -> Callable[[Bundle], None]:
    return lambda b: (b.root / rel).unlink()


def png(rel: str, width: int, height: int) -> Callable[[Bundle], None]:
    return lambda b: write_png(b.root / rel, width, height) and None


def text_file(rel: str, text: str) -> Callable[[Bundle], None]:
    return lambda b: (b.root / rel).write_text(text) and None


def symlink_outside(rel: str) -> Callable[[Bundle], None]:
    def run(b: Bundle) -> None:
        outside = b.root.parent / "outside-secret.html"
        outside.write_text("<p>not part of the bundle</p>")
        os.symlink(outside, b.root / rel)

    return run


E, W = "error", "warning"

CASES = [
    # --- JSON Schema: required, types, lengths, enums ---------------------------------------
    Case("missing-name", rm("/name"), [(E, "/name", "schema.required")], "'name' is missing"),
    Case("missing-version", rm("/version"), [(E, "/version", "schema.required")]),
    Case(
        "missing-platforms",
        rm("/supportedPlatforms"),
        [(E, "/supportedPlatforms", "schema.required")],
    ),
    Case(
        "no-platform",
        setv("/supportedPlatforms", []),
        [(E, "/supportedPlatforms", "schema.minItems")],
        "at least 1 element",
    ),
    Case(
        "repeated-platform",
        setv("/supportedPlatforms/-", "twitch"),
        [(E, "/supportedPlatforms", "schema.uniqueItems")],
        "'twitch' more than once",
    ),
    Case(
        "unknown-platform",
        setv("/supportedPlatforms/-", "tiktok"),
        [(E, "/supportedPlatforms/4", "schema.enum")],
        "allowed values: twitch, youtube, facebook, mixer",
    ),
    Case("empty-name", setv("/name", ""), [(E, "/name", "schema.minLength")], "must not be empty"),
    Case("name-not-string", setv("/name", 5), [(E, "/name", "schema.type")], "must be a string"),
    Case(
        "short-source-id",
        setv("/sources/1/id", "goal"),
        [(E, "/sources/1/id", "schema.minLength")],
        "'goal' is 4 characters long; at least 6",
    ),
    Case(
        "missing-description",
        rm("/sources/0/about/description"),
        [(E, "/sources/0/about/description", "schema.required")],
    ),
    Case("missing-about", rm("/sources/1/about"), [(E, "/sources/1/about", "schema.required")]),
    Case("missing-source-file", rm("/sources/1/file"), [(E, "/sources/1/file", "schema.required")]),
    Case("missing-source-type", rm("/sources/1/type"), [(E, "/sources/1/type", "schema.required")]),
    Case("missing-source-name", rm("/sources/1/name"), [(E, "/sources/1/name", "schema.required")]),
    Case("missing-source-id", rm("/sources/1/id"), [(E, "/sources/1/id", "schema.required")]),
    Case(
        "sources-not-array",
        setv("/sources", {"id": "alert-box"}),
        [(E, "/sources", "schema.type")],
        "must be an array, not an object",
    ),
    Case(
        "bullet-not-string",
        setv("/sources/0/about/bullets/0", 7),
        [(E, "/sources/0/about/bullets/0", "schema.type")],
    ),
    Case(
        "initial-size-type",
        setv("/sources/0/initialSize/type", "pixels"),
        [(E, "/sources/0/initialSize/type", "schema.enum")],
        "allowed values: absolute, relative",
    ),
    Case(
        "initial-size-height-missing",
        rm("/sources/0/initialSize/height"),
        [(E, "/sources/0/initialSize/height", "schema.required")],
    ),
    Case(
        "redirect-not-boolean",
        setv("/sources/0/redirectPropertiesToTopNavSlot", "true"),
        [(E, "/sources/0/redirectPropertiesToTopNavSlot", "schema.type")],
        "must be true or false",
    ),
    Case("missing-slot", rm("/pages/1/slot"), [(E, "/pages/1/slot", "schema.required")]),
    Case("missing-page-file", rm("/pages/1/file"), [(E, "/pages/1/file", "schema.required")]),
    Case(
        "persistent-not-boolean",
        setv("/pages/1/persistent", "no"),
        [(E, "/pages/1/persistent", "schema.type")],
    ),
    Case(
        "allow-popout-not-boolean",
        setv("/pages/1/allowPopout", 1),
        [(E, "/pages/1/allowPopout", "schema.type")],
    ),
    Case(
        "popout-width-not-number",
        setv("/pages/0/popOutSize/width", "800"),
        [(E, "/pages/0/popOutSize/width", "schema.type")],
        "must be a number, not a string",
    ),
    Case(
        "malformed-permission",
        setv("/permissions/-", "streaming"),
        [(E, "/permissions/9", "schema.pattern")],
        "<namespace>.<name>",
    ),
    Case(
        "urls-not-array",
        setv("/authorizationUrls", "https://a.example/"),
        [(E, "/authorizationUrls", "schema.type")],
    ),
    Case("domain-not-string", setv("/mediaDomains/0", 42), [(E, "/mediaDomains/0", "schema.type")]),
    Case("icon-not-string", setv("/icon", True), [(E, "/icon", "schema.type")]),
    Case("build-path-not-string", setv("/buildPath", ["dist"]), [(E, "/buildPath", "schema.type")]),
    Case(
        "unknown-top-level-property",
        setv("/colour", "red"),
        [(W, "/colour", "unknown-property")],
        "known properties here: authorizationUrls, buildPath",
    ),
    Case(
        "unknown-nested-property",
        setv("/pages/0/popOutSize/depth", 3),
        [(W, "/pages/0/popOutSize/depth", "unknown-property")],
    ),
    # --- identity and layout ----------------------------------------------------------------
    Case(
        "duplicate-source-id",
        setv("/sources/1/id", "alert-box"),
        [(E, "/sources/1/id", "unique-source-id")],
        "already used by /sources/0/id",
    ),
    Case(
        "two-pages-one-slot",
        setv("/pages/1/slot", "top_nav"),
        [(E, "/pages/1/slot", "one-page-per-slot")],
        "already holds the page /pages/0",
    ),
    # --- files --------------------------------------------------------------------------------
    Case(
        "source-file-missing",
        delete_file("dist/source.html"),
        [(E, "/sources/0/file", "file-exists")],
        "'dist/source.html' (resolved under buildPath 'dist') does not exist",
    ),
    Case(
        "banner-missing",
        delete_file("dist/images/banner.png"),
        [(E, "/sources/0/about/bannerImage", "file-exists")],
    ),
    Case("page-file-missing", delete_file("dist/chat.html"), [(E, "/pages/1/file", "file-exists")]),
    Case("icon-missing", delete_file("dist/images/icon.png"), [(E, "/icon", "file-exists")]),
    Case(
        "file-is-a-folder",
        setv("/sources/1/file", "widgets"),
        [(E, "/sources/1/file", "file-exists")],
        "is a folder, not a file",
    ),
    Case(
        "file-outside-build-path",
        setv("/pages/1/file", "manifest.json"),
        [(E, "/pages/1/file", "file-exists")],
    ),
    Case(
        "file-name-too-long-for-the-os",
        setv("/pages/1/file", "a" * 300 + ".html"),
        [(E, "/pages/1/file", "file-exists")],
    ),
    Case(
        "nul-in-path",
        setv("/pages/1/file", "chat.html\u0000.png"),
        [(E, "/pages/1/file", "path-escapes-bundle"), (W, "", "nul-character")],
        "contains a NUL character",
    ),
    Case(
        "build-folder-missing",
        setv("/buildPath", "build"),
        [(E, "/buildPath", "file-exists")],
        "buildPath folder 'build' does not exist",
    ),
    Case(
        "absolute-path",
        setv("/sources/0/file", "/etc/hostname"),
        [(E, "/sources/0/file", "path-escapes-bundle")],
        "is an absolute path",
    ),
    Case(
        "windows-absolute-path",
        setv("/icon", "C:\\icons\\icon.png"),
        [(E, "/icon", "path-escapes-bundle")],
    ),
    Case(
        "dotdot-escape",
        setv("/pages/2/file", "../../secret.html"),
        [(E, "/pages/2/file", "path-escapes-bundle")],
        "outside the bundle folder",
    ),
    Case(
        "backslash-dotdot-escape",
        setv("/sources/0/about/bannerImage", "..\\..\\banner.png"),
        [(E, "/sources/0/about/bannerImage", "path-escapes-bundle")],
    ),
    Case("dotdot-inside-bundle-is-fine", setv("/icon", "../dist/./images/icon.png"), []),
    Case(
        "url-as-file",
        setv("/pages/0/file", "https://cdn.example.com/settings.html"),
        [(E, "/pages/0/file", "path-escapes-bundle")],
        "is a URL",
    ),
    Case(
        "symlink-out-of-bundle",
        both(symlink_outside("dist/leak.html"), setv("/pages/1/file", "leak.html")),
        [(E, "/pages/1/file", "path-escapes-bundle")],
        "symlink leading outside the bundle",
    ),
    Case(
        "build-path-escapes",
        setv("/buildPath", "../elsewhere"),
        [(E, "/buildPath", "path-escapes-bundle")],
    ),
    Case(
        "build-path-absolute",
        setv("/buildPath", "/dist"),
        [(E, "/buildPath", "path-escapes-bundle")],
    ),
    # --- sizes --------------------------------------------------------------------------------
    Case(
        "relative-width-above-one",
        setv("/sources/0/initialSize/width", 1.5),
        [(E, "/sources/0/initialSize/width", "initial-size-range")],
        "above 0 and at most 1",
    ),
    Case(
        "relative-height-zero",
        setv("/sources/0/initialSize/height", 0),
        [(E, "/sources/0/initialSize/height", "initial-size-range")],
    ),
    Case(
        "absolute-width-negative",
        setv("/sources/1/initialSize/width", -5),
        [(E, "/sources/1/initialSize/width", "initial-size-range")],
        "positive number of pixels",
    ),
    Case(
        "popout-width-zero",
        setv("/pages/0/popOutSize/width", 0),
        [(E, "/pages/0/popOutSize/width", "popout-size")],
    ),
    Case(
        "popout-min-width-above-width",
        setv("/pages/0/popOutSize/minWidth", 900),
        [(E, "/pages/0/popOutSize/minWidth", "popout-size")],
        "minWidth 900 is larger than width 800",
    ),
    Case(
        "popout-min-height-above-height",
        setv("/pages/0/popOutSize/minHeight", 641),
        [(E, "/pages/0/popOutSize/minHeight", "popout-size")],
    ),
    Case(
        "popout-below-default-min",
        setv("/pages/0/popOutSize", {"width": 400, "height": 500}),
        [(W, "/pages/0/popOutSize/width", "popout-size")],
        "below the client's default minWidth 600",
    ),
    # --- URLs and hostnames --------------------------------------------------------------------
    Case(
        "authorization-url-ftp",
        setv("/authorizationUrls/-", "ftp://files.example.com/auth"),
        [(E, "/authorizationUrls/2", "authorization-url")],
        "not an absolute http(s) URL",
    ),
    Case(
        "authorization-url-relative",
        setv("/authorizationUrls/0", "/oauth/authorize"),
        [(E, "/authorizationUrls/0", "authorization-url")],
    ),
    Case(
        "authorization-url-no-host",
        setv("/authorizationUrls/1", "https://"),
        [(E, "/authorizationUrls/1", "authorization-url")],
    ),
    Case(
        "authorization-url-same-but-query",
        setv("/authorizationUrls/-", "https://ID.twitch.tv/oauth2/authorize?client_id=other"),
        [(W, "/authorizationUrls/2", "duplicate-entry")],
        "the query is ignored when matching",
    ),
    Case(
        "media-domain-scheme",
        setv("/mediaDomains/0", "https://cdn.streamwidgets.example"),
        [(E, "/mediaDomains/0", "media-domain")],
        "has a scheme",
    ),
    Case(
        "media-domain-path",
        setv("/mediaDomains/1", "cdn.example.com/videos"),
        [(E, "/mediaDomains/1", "media-domain")],
        "has a path",
    ),
    Case(
        "media-domain-port",
        setv("/mediaDomains/-", "cdn.example.com:8443"),
        [(E, "/mediaDomains/2", "media-domain")],
        "has a port",
    ),
    Case(
        "media-domain-wildcard",
        setv("/mediaDomains/0", "*.streamwidgets.example"),
        [(E, "/mediaDomains/0", "media-domain")],
        "wildcard",
    ),
    Case(
        "media-domain-space",
        setv("/mediaDomains/0", "cdn streamwidgets.example"),
        [(E, "/mediaDomains/0", "media-domain")],
    ),
    Case(
        "media-domain-repeated",
        setv("/mediaDomains/-", "CDN.streamwidgets.example"),
        [(W, "/mediaDomains/2", "duplicate-entry")],
    ),
    # --- icon -----------------------------------------------------------------------------------
    Case(
        "icon-too-small",
        png("dist/images/icon.png", 128, 128),
        [(W, "/icon", "icon-size")],
        "icon is 128 x 128: smaller than the recommended 256 x 256",
    ),
    Case(
        "icon-not-square",
        png("dist/images/icon.png", 320, 256),
        [(W, "/icon", "icon-size")],
        "not square",
    ),
    Case(
        "icon-unreadable-format",
        both(text_file("dist/images/icon.svg", "<svg/>"), setv("/icon", "images/icon.svg")),
        [(W, "/icon", "icon-format")],
    ),
    # --- known values (warnings) ---------------------------------------------------------------
    Case(
        "unknown-permission",
        setv("/permissions/-", "slobs.teleport"),
        [(W, "/permissions/9", "unknown-permission")],
        "known permissions: slobs.scenes-sources, slobs.obs-settings",
    ),
    Case(
        "unknown-slot",
        setv("/pages/1/slot", "sidebar"),
        [(W, "/pages/1/slot", "unknown-slot")],
        "known slots: top_nav, chat, background",
    ),
    Case(
        "unknown-source-type",
        setv("/sources/1/type", "video_source"),
        [(W, "/sources/1/type", "unknown-source-type")],
        "known types: browser_source",
    ),
    Case(
        "repeated-permission",
        setv("/permissions/-", "slobs.streaming"),
        [(W, "/permissions/9", "duplicate-entry")],
    ),
    Case(
        "client-needs-permissions",
        rm("/permissions"),
        [(W, "/permissions", "client-requires-property")],
        "desktop client refuses a manifest without it",
    ),
    Case(
        "redirect-without-top-nav",
        rm("/pages/0"),
        [(W, "/sources/0/redirectPropertiesToTopNavSlot", "redirect-needs-top-nav")],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, complete: Bundle) -> None:
    case.change(complete)
    report = validate_path(complete.root)
    got = [(f.severity, f.pointer, f.rule) for f in report.findings]
    assert got == case.expected, report.findings
    if case.message:
        assert case.message in report.findings[0].message
    assert report.ok == all(severity == W for severity, _, _ in case.expected)


def test_complete_bundle_has_no_finding(complete: Bundle) -> None:
    report = validate_path(complete.root)
    assert report.findings == []
    assert report.ok and report.name == "Stream Widgets" and report.version == "1.4.0"


def test_defaults_bundle_has_no_finding(defaults: Bundle) -> None:
    assert validate_path(defaults.manifest_path).findings == []


def test_every_error_is_reported_not_just_the_first(complete: Bundle) -> None:
    def break_everything(d: dict[str, Any]) -> None:
        d["sources"][1]["id"] = "alert-box"
        d["sources"][0]["about"].pop("description")
        d["pages"][2]["slot"] = "chat"
        d["supportedPlatforms"] = ["twitch", "myspace"]
        d["mediaDomains"] = ["https://cdn.example.com"]
        d["authorizationUrls"] = ["mailto:dev@example.com"]
        d["sources"][1]["initialSize"]["width"] = 0

    complete.edit(break_everything)
    got = {(f.pointer, f.rule) for f in validate_path(complete.root).errors}
    assert got == {
        ("/sources/1/id", "unique-source-id"),
        ("/sources/0/about/description", "schema.required"),
        ("/pages/2/slot", "one-page-per-slot"),
        ("/supportedPlatforms/1", "schema.enum"),
        ("/mediaDomains/0", "media-domain"),
        ("/authorizationUrls/0", "authorization-url"),
        ("/sources/1/initialSize/width", "initial-size-range"),
    }


def test_platform_removal_against_previous_platforms(complete: Bundle) -> None:
    complete.edit(lambda d: d["supportedPlatforms"].remove("mixer"))
    report = validate_path(complete.root, previous_platforms={"twitch", "mixer"})
    assert [(f.severity, f.pointer, f.rule) for f in report.findings] == [
        ("error", "/supportedPlatforms", "platform-removed")
    ]
    assert report.findings[0].message.startswith(
        "a platform cannot be removed once the application is live: 'mixer'"
    )
    # Adding platforms is always allowed.
    assert validate_path(complete.root, previous_platforms={"twitch"}).findings == []


def test_pointer_escapes_slash_and_tilde(complete: Bundle) -> None:
    complete.edit(lambda d: d.update({"a/b~c": 1}))
    assert [f.pointer for f in validate_path(complete.root).findings] == ["/a~1b~0c"]


def test_findings_sorted_errors_first_in_document_order(complete: Bundle, tmp_path: Path) -> None:
    complete.edit(
        lambda d: d.update(
            colour="red",
            permissions=["slobs.x"] * 1,
            sources=[
                *d["sources"],
                *[dict(d["sources"][1], id=f"source-{i:02d}") for i in range(11)],
            ],
        )
    )
    for i in (2, 10):
        complete.edit(lambda d, i=i: set_at(d, f"/sources/{i}/file", "missing.html"))
    findings = validate_path(complete.root).findings
    assert [f.pointer for f in findings] == [
        "/sources/2/file",
        "/sources/10/file",
        "/colour",
        "/permissions/0",
    ]


def test_a_near_miss_names_what_was_probably_meant(tmp_path: Path) -> None:
    """A platform in another case, a property one letter short, a permission cut short: each
    finding names the value probably meant; a version that is no string is shown as sent in
    the report's heading, not as none (issue 35)."""
    import json as _json

    from devportal.manifest.output import _title

    bundle = tmp_path / "app"
    shutil.copytree(FIXTURES / "complete", bundle, symlinks=True)
    manifest = bundle / "manifest.json"
    document = _json.loads(manifest.read_text(encoding="utf-8"))
    document["supportedPlatform"] = ["Youtube", *document.pop("supportedPlatforms")[1:]]
    document["permissions"] = ["slobs.streamin"]
    document["version"] = 2
    manifest.write_text(_json.dumps(document), encoding="utf-8")
    report = validate_path(bundle)
    said = {f.pointer: f.message for f in report.findings}
    assert "is it meant to be it?" in said["/supportedPlatforms"]
    assert "'supportedPlatform' is written" in said["/supportedPlatforms"]
    assert "(did you mean 'supportedPlatforms'?)" in said["/supportedPlatform"]
    assert "(did you mean 'slobs.streaming'?)" in said["/permissions/0"]
    assert _title(report).endswith("(version 2, not a string)")

    document["supportedPlatforms"] = document.pop("supportedPlatform")
    manifest.write_text(_json.dumps(document), encoding="utf-8")
    said = {f.pointer: f.message for f in validate_path(bundle).findings}
    assert "(did you mean 'youtube'?)" in said["/supportedPlatforms/0"]
    # nothing close: no guess
    document["supportedPlatforms"] = ["myspace"]
    manifest.write_text(_json.dumps(document), encoding="utf-8")
    said = {f.pointer: f.message for f in validate_path(bundle).findings}
    assert "did you mean" not in said["/supportedPlatforms/0"]
