"""The manifest rules a JSON Schema cannot express, each with a stable rule id.

Errors: unique-source-id, one-page-per-slot, file-exists, path-escapes-bundle,
initial-size-range, popout-size, authorization-url, media-domain, platform-removed.
Warnings: icon-size, icon-format, unknown-permission, unknown-slot, unknown-source-type,
duplicate-entry, client-requires-property, redirect-needs-top-nav, popout-size (a size below the
client's default minimum).

The schema check runs on the same document and reports wrong types, so each rule here looks only
at values of the type it expects and skips the rest: one problem, one finding.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeGuard
from urllib.parse import SplitResult, urlsplit, urlunsplit

from devportal.manifest import bundle as bundle_paths
from devportal.manifest import facts
from devportal.manifest.findings import (
    ERROR,
    WARNING,
    Finding,
    Severity,
    did_you_mean,
    pointer,
    quoted,
)
from devportal.manifest.images import image_size

_PERMISSION_FORM = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_.-]+$")
_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def _is_number(value: Any) -> TypeGuard[int | float]:
    # bool is an int in Python but not a number in JSON.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _items(document: dict[str, Any], key: str) -> list[tuple[int, Any]]:
    value = document.get(key)
    return list(enumerate(value)) if isinstance(value, list) else []


def _objects(document: dict[str, Any], key: str) -> list[tuple[int, dict[str, Any]]]:
    return [(i, v) for i, v in _items(document, key) if isinstance(v, dict)]


def _strings(document: dict[str, Any], key: str) -> list[tuple[int, str]]:
    return [(i, v) for i, v in _items(document, key) if isinstance(v, str)]


def _string_fields(document: dict[str, Any], key: str, field: str) -> list[tuple[int, str]]:
    """(index, value) of the string FIELD of each object in the array KEY."""
    return [(i, v[field]) for i, v in _objects(document, key) if isinstance(v.get(field), str)]


def _repeats(
    entries: Iterable[tuple[int, str]], key: Callable[[str], Hashable] = lambda value: value
) -> Iterator[tuple[int, str, int]]:
    """(index, value, index of the first entry with the same key) for each later entry."""
    first: dict[Hashable, int] = {}
    for index, value in entries:
        seen = key(value)
        if seen in first:
            yield index, value, first[seen]
        else:
            first[seen] = index


def _repeat_findings(
    entries: Iterable[tuple[int, str]],
    severity: Severity,
    rule: str,
    where: tuple[str, ...],
    message: str,
    *,
    key: Callable[[str], Hashable] = lambda value: value,
    shown: Callable[[str], str] = repr,
) -> Iterator[Finding]:
    """A finding for each entry that repeats an earlier one (same KEY).

    WHERE is the array, then the field when the entries are a field of the array's objects;
    MESSAGE is a template of {value} (the entry as SHOWN) and {first} (the earlier entry's index).
    """
    array, *field = where
    for index, value, first in _repeats(entries, key):
        yield Finding(
            severity,
            pointer([array, index, *field]),
            rule,
            message.format(value=shown(value), first=first),
        )


def _known(values: Collection[str]) -> str:
    return ", ".join(values)


# --- identity and layout ----------------------------------------------------------------------


# (array, field, rule, message as in `_repeat_findings`): a value the client wants used once
_UNIQUE_FIELDS = (
    (
        "sources",
        "id",
        "unique-source-id",
        "source id {value} is already used by /sources/{first}/id; give each source its own id",
    ),
    (
        "pages",
        "slot",
        "one-page-per-slot",
        "slot {value} already holds the page /pages/{first}; the client allows one page per slot",
    ),
)


def unique_fields(document: dict[str, Any]) -> Iterator[Finding]:
    """unique-source-id and one-page-per-slot."""
    for array, name, rule, message in _UNIQUE_FIELDS:
        entries = _string_fields(document, array, name)
        yield from _repeat_findings(entries, ERROR, rule, (array, name), message)


def known_values(document: dict[str, Any]) -> Iterator[Finding]:
    # (array, field, the client's values, rule, what a value is); "known <field>s: ..."
    fields = (
        ("sources", "type", facts.KNOWN_SOURCE_TYPES, "unknown-source-type", "source type"),
        ("pages", "slot", facts.KNOWN_SLOTS, "unknown-slot", "slot"),
    )
    for key, name, known, rule, noun in fields:
        for index, value in _string_fields(document, key, name):
            if value and value not in known:
                yield Finding(
                    WARNING,
                    pointer([key, index, name]),
                    rule,
                    f"{noun} {value!r} is not known to the desktop client"
                    f"{did_you_mean(value, known)}; known {name}s: {_known(known)}",
                )
    for index, permission in _strings(document, "permissions"):
        # A malformed name is already a schema error; only well-formed unknown names warn here.
        if _PERMISSION_FORM.match(permission) and permission not in facts.KNOWN_PERMISSIONS:
            yield Finding(
                WARNING,
                pointer(["permissions", index]),
                "unknown-permission",
                f"permission {permission!r} is not known to the desktop client"
                f"{did_you_mean(permission, facts.KNOWN_PERMISSIONS)}; "
                f"known permissions: {_known(facts.KNOWN_PERMISSIONS)}",
            )


def client_requirements(document: dict[str, Any]) -> Iterator[Finding]:
    for key in facts.CLIENT_REQUIRED_TOP_LEVEL:
        if key not in document:
            yield Finding(
                WARNING,
                pointer([key]),
                "client-requires-property",
                f"the spec makes {key!r} optional but the desktop client refuses a manifest "
                f'without it; add "{key}": []',
            )


def redirect_needs_top_nav(document: dict[str, Any]) -> Iterator[Finding]:
    # Only string slots: a list or object there is a schema error (and unhashable).
    slots = {slot for _, slot in _string_fields(document, "pages", "slot")}
    if facts.TOP_NAV_SLOT in slots:
        return
    for index, source in _objects(document, "sources"):
        if source.get("redirectPropertiesToTopNavSlot") is True:
            yield Finding(
                WARNING,
                pointer(["sources", index, "redirectPropertiesToTopNavSlot"]),
                "redirect-needs-top-nav",
                "Source Properties are redirected to the top_nav page, but no page has slot "
                "'top_nav'; add that page or drop the redirect",
            )


# --- files in the bundle ----------------------------------------------------------------------


def _file_references(document: dict[str, Any]) -> Iterator[tuple[list[str | int], str]]:
    for index, source in _objects(document, "sources"):
        if isinstance(source.get("file"), str):
            yield ["sources", index, "file"], source["file"]
        about = source.get("about")
        if isinstance(about, dict) and isinstance(about.get("bannerImage"), str):
            yield ["sources", index, "about", "bannerImage"], about["bannerImage"]
    for index, page in _objects(document, "pages"):
        if isinstance(page.get("file"), str):
            yield ["pages", index, "file"], page["file"]
    if isinstance(document.get("icon"), str):
        yield ["icon"], document["icon"]


def build_path_of(document: dict[str, Any]) -> str | None:
    """The normalised buildPath, "" when unset, None when it is unusable (reported elsewhere)."""
    raw = document.get("buildPath")
    if not isinstance(raw, str):
        return "" if raw is None else None
    if _build_path_problem(raw) is not None:
        return None
    return bundle_paths.normalise_build_path(raw)


def _build_path_problem(raw: str) -> str | None:
    """Why the buildPath RAW leads outside the bundle, or None."""
    problem = bundle_paths.escape_problem(raw)
    if problem is None and bundle_paths.climbs_out(bundle_paths.normalise_build_path(raw)):
        problem = "climbs out of the bundle folder"
    return problem


def files(document: dict[str, Any], bundle: Path) -> Iterator[Finding]:
    raw_build_path = document.get("buildPath")
    if isinstance(raw_build_path, str):
        yield from _check_build_path(raw_build_path, bundle)
    build_path = build_path_of(document)
    if build_path and not bundle_paths.is_dir(bundle / build_path):
        build_path = None  # a missing build folder is one error, not one per file
    for path, value in _file_references(document):
        if not value.strip():
            continue  # empty string: schema.minLength already says so
        resolved = bundle_paths.resolve(bundle, build_path or "", value)
        if resolved.problem is not None:
            yield Finding(
                ERROR, pointer(path), "path-escapes-bundle", f"{value!r} {resolved.problem}"
            )
            continue
        if build_path is None:
            continue  # an unusable buildPath was reported once, at /buildPath
        yield from _check_exists(path, value, build_path, resolved)
        if path == ["icon"] and resolved.path is not None and bundle_paths.is_file(resolved.path):
            yield from _check_icon(value, resolved.path)


def _check_build_path(raw: str, bundle: Path) -> Iterator[Finding]:
    problem = _build_path_problem(raw)
    if problem is not None:
        yield Finding(ERROR, "/buildPath", "path-escapes-bundle", f"buildPath {raw!r} {problem}")
        return
    build_path = bundle_paths.normalise_build_path(raw)
    if build_path and not bundle_paths.is_dir(bundle / build_path):
        yield Finding(
            ERROR,
            "/buildPath",
            "file-exists",
            f"buildPath folder {build_path!r} does not exist in the bundle; build the app "
            "first or fix buildPath",
        )


def _check_exists(
    path: list[str | int], value: str, build_path: str, resolved: bundle_paths.Resolved
) -> Iterator[Finding]:
    target = resolved.path
    if target is None or bundle_paths.is_file(target):
        return
    where = f" (resolved under buildPath {build_path!r})" if build_path else ""
    what = (
        "is a folder, not a file" if bundle_paths.is_dir(target) else "does not exist in the bundle"
    )
    yield Finding(
        ERROR,
        pointer(path),
        "file-exists",
        f"{resolved.relative!r}{where} {what}; add the file or fix the path",
    )


def _check_icon(value: str, path: Path) -> Iterator[Finding]:
    size = image_size(path)
    if size is None:
        yield Finding(
            WARNING,
            "/icon",
            "icon-format",
            f"cannot read the size of {value!r} (not a PNG, JPEG, GIF, WebP, BMP or ICO "
            "image); use a square PNG of at least 256 x 256",
        )
        return
    width, height = size
    problems = []
    if width != height:
        problems.append("not square (a circular mask is applied on display)")
    if min(width, height) < facts.MIN_ICON_SIDE:
        problems.append(
            f"smaller than the recommended {facts.MIN_ICON_SIDE} x {facts.MIN_ICON_SIDE}"
        )
    if problems:
        yield Finding(
            WARNING,
            "/icon",
            "icon-size",
            f"icon is {width} x {height}: {' and '.join(problems)}; use a square image of at "
            f"least {facts.MIN_ICON_SIDE} x {facts.MIN_ICON_SIDE}",
        )


# --- sizes ------------------------------------------------------------------------------------


def _sizes(
    document: dict[str, Any], array: str, key: str
) -> Iterator[tuple[list[str | int], dict[str, Any]]]:
    """(path, object) of the object KEY of each object in the array ARRAY, where it is one."""
    for index, item in _objects(document, array):
        size = item.get(key)
        if isinstance(size, dict):
            yield [array, index, key], size


def _numbers(size: dict[str, Any], keys: Iterable[str]) -> Iterator[tuple[str, int | float]]:
    """(key, value) of each of KEYS whose value in SIZE is a number."""
    for key in keys:
        value = size.get(key)
        if _is_number(value):
            yield key, value


def initial_sizes(document: dict[str, Any]) -> Iterator[Finding]:
    for base, size in _sizes(document, "sources", "initialSize"):
        kind = size.get("type")
        for dim, value in _numbers(size, ("width", "height")):
            here = pointer([*base, dim])
            if kind == "relative" and not (0 < value <= 1):
                yield Finding(
                    ERROR,
                    here,
                    "initial-size-range",
                    f"relative {dim} {value} must be above 0 and at most 1 "
                    "(a fraction of the canvas)",
                )
            elif kind == "absolute" and not (0 < value < math.inf):
                yield Finding(
                    ERROR,
                    here,
                    "initial-size-range",
                    f"absolute {dim} {value} must be a positive number of pixels",
                )


def popout_sizes(document: dict[str, Any]) -> Iterator[Finding]:
    for base, size in _sizes(document, "pages", "popOutSize"):
        positive: dict[str, float] = {}
        for key, value in _numbers(size, ("width", "height", "minWidth", "minHeight")):
            if 0 < value < math.inf:
                positive[key] = value
            else:
                yield Finding(
                    ERROR,
                    pointer([*base, key]),
                    "popout-size",
                    f"{key} {value} must be a positive number of pixels",
                )
        for dim, min_key, default_min in (
            ("width", "minWidth", facts.DEFAULT_POPOUT_MIN_WIDTH),
            ("height", "minHeight", facts.DEFAULT_POPOUT_MIN_HEIGHT),
        ):
            if dim not in positive:
                continue
            if min_key in positive:
                if positive[min_key] > positive[dim]:
                    yield Finding(
                        ERROR,
                        pointer([*base, min_key]),
                        "popout-size",
                        f"{min_key} {positive[min_key]} is larger than {dim} "
                        f"{positive[dim]}; make {min_key} at most {dim}",
                    )
            elif min_key not in size and positive[dim] < default_min:
                # The client's default minimum then wins and the window opens larger than asked.
                yield Finding(
                    WARNING,
                    pointer([*base, dim]),
                    "popout-size",
                    f"{dim} {positive[dim]} is below the client's default {min_key} "
                    f"{default_min}, so the window opens at {default_min}; set {min_key} too",
                )


# --- URLs and hostnames -----------------------------------------------------------------------


def normalise_authorization_url(url: str) -> str | None:
    """The URL as the client matches it (query and fragment dropped, scheme and host lower
    case), or None when it is not an absolute http(s) URL."""
    parts = _split_http_url(url)
    if parts is None:
        return None
    netloc = parts.netloc.rsplit("@", 1)
    host_port = netloc[-1].lower()
    netloc[-1] = host_port
    return urlunsplit((parts.scheme.lower(), "@".join(netloc), parts.path or "/", "", ""))


def _split_http_url(url: str) -> SplitResult | None:
    if url != url.strip() or any(c.isspace() for c in url):
        return None
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return parts


def _checked_strings(
    document: dict[str, Any],
    array: str,
    rule: str,
    problem: Callable[[str], str | None],
    repeat_message: str,
    key: Callable[[str], Hashable],
) -> Iterator[Finding]:
    """An error RULE for each string in ARRAY with a PROBLEM, then a duplicate-entry warning
    for each of the others that repeats an earlier one (same KEY; REPEAT_MESSAGE as in
    `_repeat_findings`)."""
    valid: list[tuple[int, str]] = []
    for index, value in _strings(document, array):
        why = problem(value)
        if why is None:
            valid.append((index, value))
        else:
            yield Finding(ERROR, pointer([array, index]), rule, f"{_short(value)} {why}")
    yield from _repeat_findings(
        valid, WARNING, "duplicate-entry", (array,), repeat_message, key=key, shown=_short
    )


def _authorization_url_problem(url: str) -> str | None:
    if normalise_authorization_url(url) is None:
        return "is not an absolute http(s) URL; write it as https://host/path"
    return None


def media_domain_problem(value: str) -> str | None:
    """Why VALUE is not a bare hostname, or None."""
    text = value.strip()
    if text != value or not text:
        return "has surrounding spaces" if text else "is empty"
    if "://" in text or text.lower().startswith(("http:", "https:")):
        return "has a scheme; list the bare hostname (cdn.example.com)"
    if any(c in text for c in "/?#"):
        return "has a path; list the bare hostname (cdn.example.com)"
    if "@" in text:
        return "has user information; list the bare hostname (cdn.example.com)"
    if ":" in text:
        return "has a port; list the bare hostname (cdn.example.com)"
    if "*" in text:
        return "is a wildcard; list each full hostname, sub-domains included"
    try:
        ipaddress.ip_address(text)
    except ValueError:
        pass
    else:
        return "is an IP address; list the CDN's hostname"
    host = text.lower()
    if len(host) > 253 or not all(_HOST_LABEL.match(label) for label in host.split(".")):
        return (
            "is not a valid hostname (letters, digits and hyphens in dot-separated labels; "
            "write international names in punycode)"
        )
    return None


# (array, rule, the problem of one entry, repeat message, key of "the same entry")
_CHECKED_LISTS: tuple[
    tuple[str, str, Callable[[str], str | None], str, Callable[[str], Hashable]], ...
] = (
    (
        "authorizationUrls",
        "authorization-url",
        _authorization_url_problem,
        "{value} matches the same URL as /authorizationUrls/{first} "
        "(the query is ignored when matching); remove one",
        normalise_authorization_url,
    ),
    (
        "mediaDomains",
        "media-domain",
        media_domain_problem,
        "{value} is already listed at /mediaDomains/{first}; remove one",
        str.lower,
    ),
)


def address_lists(document: dict[str, Any]) -> Iterator[Finding]:
    """authorization-url and media-domain, and their duplicate entries."""
    for array, rule, problem, repeat_message, key in _CHECKED_LISTS:
        yield from _checked_strings(document, array, rule, problem, repeat_message, key)


def duplicate_permissions(document: dict[str, Any]) -> Iterator[Finding]:
    return _repeat_findings(
        _strings(document, "permissions"),
        WARNING,
        "duplicate-entry",
        ("permissions",),
        "permission {value} is already listed at /permissions/{first}; remove one",
    )


def _short(value: str) -> str:
    return quoted(value, 80)


# --- history ----------------------------------------------------------------------------------


def platform_removal(document: dict[str, Any], previous: Collection[str]) -> Iterator[Finding]:
    platforms = document.get("supportedPlatforms")
    current = {p for p in platforms if isinstance(p, str)} if isinstance(platforms, list) else set()
    name = document.get("name")
    app = f" of {name!r}" if isinstance(name, str) else ""
    for platform in sorted(set(previous) - current):
        yield Finding(
            ERROR,
            "/supportedPlatforms",
            "platform-removed",
            f"a platform cannot be removed once the application is live: {platform!r} was "
            f"supported by a recorded version{app}; add it back to supportedPlatforms",
        )


def rule_findings(
    document: dict[str, Any], bundle: Path, previous_platforms: Collection[str] | None = None
) -> list[Finding]:
    """All rules beyond the schema, in one list (order does not matter: the report sorts)."""
    findings: list[Finding] = []
    findings += unique_fields(document)
    findings += known_values(document)
    findings += client_requirements(document)
    findings += redirect_needs_top_nav(document)
    findings += files(document, bundle)
    findings += initial_sizes(document)
    findings += popout_sizes(document)
    findings += address_lists(document)
    findings += duplicate_permissions(document)
    if previous_platforms:
        findings += platform_removal(document, previous_platforms)
    return findings
