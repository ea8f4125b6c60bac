"""The warehouse record of manifests: row building, the dlt resources and `load_manifest`.

Recording layer: validates through history.py (which passes the recorded platforms into the
pure validation of validate.py), then builds the rows and loads them. Tables (dataset
`devportal`, names in tables.py), every one keyed by `content_hash` (sha256 of the manifest's
raw bytes) so one distinct manifest content is one record however often it is loaded:

    app_manifests                     one row per distinct manifest content (loaded_at: the
                                      latest load of it, when its findings were computed)
    app_manifest_sources              one row per source, client defaults applied
    app_manifest_pages                one row per page, client defaults applied
    app_manifest_platforms            one row per supported platform
    app_manifest_permissions          one row per permission
    app_manifest_authorization_urls   one row per URL, with the query-less form the client matches
    app_manifest_media_domains        one row per media hostname (lower case)
    manifest_findings                 one row per finding of the latest load of that content

Child rows carry `ordinal`, the 0-based index in the manifest array, so `/sources/{ordinal}`
is the JSON pointer of the row. Every table merges (delete-insert) on `content_hash`: loading
the same content again replaces its rows with identical ones, a new version adds its own.
Findings can change for the same content (a missing file added to the bundle, new history), so
each load also sends a tombstone row that clears the previous findings of that content even
when there are none now (`_clear_previous`, a dlt hard-delete marker, NULL in stored rows).
Values of the wrong type (already reported as schema errors) are stored as NULL rather than
widening the column types.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devportal.load.transaction import writing
from devportal.manifest import facts
from devportal.manifest.bundle import is_file, resolve
from devportal.manifest.findings import ERROR, WARNING, ManifestReport, count
from devportal.manifest.history import validate_with_history
from devportal.manifest.images import image_size
from devportal.manifest.reader import read_manifest
from devportal.manifest.rules import build_path_of, normalise_authorization_url
from devportal.manifest.tables import (
    AUTHORIZATION_URLS,
    CLEAR_MARKER,
    FINDINGS,
    MANIFESTS,
    MEDIA_DOMAINS,
    PAGES,
    PERMISSIONS,
    PLATFORMS,
    SOURCES,
    TABLES,
)
from devportal.warehouse.target import Target, Where

if TYPE_CHECKING:
    from dlt import Pipeline
    from dlt.extract.resource import DltResource

Row = dict[str, Any]


def _columns(ddl: str, **hints: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """dlt column hints written like SQL: `name type [not null]`, comma separated; HINTS adds
    hints to a column by name."""
    columns = {}
    for column in ddl.split(","):
        name, data_type, *rest = column.split()
        columns[name] = {"data_type": data_type, "nullable": rest != ["not", "null"]}
        columns[name].update(hints.get(name, {}))
    return columns


_KEY = "content_hash text not null, ordinal bigint not null, "

COLUMNS: dict[str, dict[str, dict[str, Any]]] = {
    MANIFESTS: _columns(
        "content_hash text not null, name text, version text, build_path text, icon text, "
        "icon_width bigint, icon_height bigint, error_count bigint not null, "
        "warning_count bigint not null, loaded_at timestamp not null, manifest_path text, "
        "size_bytes bigint not null, document json"
    ),
    SOURCES: _columns(
        _KEY + "source_id text, source_type text, name text, description text, bullets json, "
        "banner_image text, file text, initial_size_type text, initial_width double, "
        "initial_height double, initial_size_is_default bool not null, "
        "redirect_properties_to_top_nav_slot bool not null"
    ),
    PAGES: _columns(
        _KEY + "slot text, file text, persistent bool not null, allow_popout bool not null, "
        "pop_out_width double, pop_out_height double, pop_out_min_width double, "
        "pop_out_min_height double"
    ),
    PLATFORMS: _columns(_KEY + "platform text"),
    PERMISSIONS: _columns(_KEY + "permission text, is_known bool"),
    AUTHORIZATION_URLS: _columns(_KEY + "url text, normalised_url text"),
    MEDIA_DOMAINS: _columns(_KEY + "media_domain text"),
    FINDINGS: _columns(
        _KEY + f"severity text, pointer text, rule text, message text, {CLEAR_MARKER} bool",
        **{CLEAR_MARKER: {"hard_delete": True}},
    ),
}


# --- defensive value readers: a wrong type was reported as an error, here it is just NULL ------


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _bool(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer literal beyond a double
        return None
    return number if math.isfinite(number) else None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# --- rows -------------------------------------------------------------------------------------


def build_rows(report: ManifestReport, loaded_at: datetime | None = None) -> dict[str, list[Row]]:
    """Rows for every table, keyed by table name (pure: no warehouse access)."""
    doc = report.document
    key = report.content_hash
    tables = {
        MANIFESTS: [_manifest_row(report, loaded_at or datetime.now(UTC))],
        SOURCES: _object_rows(key, doc.get("sources"), _source_row),
        PAGES: _object_rows(key, doc.get("pages"), _page_row),
        PLATFORMS: _string_rows(key, doc.get("supportedPlatforms"), platform=str),
        PERMISSIONS: _string_rows(
            key,
            doc.get("permissions"),
            permission=str,
            is_known=lambda p: p in facts.KNOWN_PERMISSIONS,
        ),
        AUTHORIZATION_URLS: _string_rows(
            key,
            doc.get("authorizationUrls"),
            url=str,
            normalised_url=normalise_authorization_url,
        ),
        MEDIA_DOMAINS: _string_rows(
            key, doc.get("mediaDomains"), media_domain=lambda d: d.strip().lower()
        ),
        FINDINGS: _finding_rows(report),
    }
    # U+0000 (valid JSON, see the `nul-character` warning) as U+FFFD: PostgreSQL text cannot
    # hold it, and every engine records the same text
    return {
        table: [{k: _no_nul(v) for k, v in row.items()} for row in rows]
        for table, rows in tables.items()
    }


def _no_nul(value: Any) -> Any:
    """VALUE with U+0000 as U+FFFD in every string, inside JSON columns too (PostgreSQL's jsonb
    refuses the `\\u0000` escape as well)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nul(v) for v in value]
    return value


def _child_row(key: str, ordinal: int, values: Row) -> Row:
    """A row of a child table: the manifest's hash, the element's index, then VALUES."""
    return {"content_hash": key, "ordinal": ordinal, **values}


def _object_rows(key: str, elements: Any, build: Callable[[dict[str, Any]], Row]) -> list[Row]:
    """One row per object of a manifest array. An element that is not an object (a schema
    error) has nothing to record; ordinals keep the manifest's indexes, so the gap shows
    where it was."""
    return [
        _child_row(key, i, build(element))
        for i, element in enumerate(_list(elements))
        if isinstance(element, dict)
    ]


def _string_rows(key: str, elements: Any, /, **columns: Callable[[str], Any]) -> list[Row]:
    """One row per element of a manifest array of strings: each of COLUMNS is its function of
    the element, NULL for an element that is not a string (a schema error)."""
    return [
        _child_row(
            key,
            i,
            {
                name: convert(element) if isinstance(element, str) else None
                for name, convert in columns.items()
            },
        )
        for i, element in enumerate(_list(elements))
    ]


def _finding_rows(report: ManifestReport) -> list[Row]:
    key = report.content_hash
    # The tombstone: ordinal -1 never collides with a real finding.
    tombstone = _child_row(key, -1, {CLEAR_MARKER: True})
    return [tombstone] + [_child_row(key, i, f.to_dict()) for i, f in enumerate(report.findings)]


def _manifest_row(report: ManifestReport, loaded_at: datetime) -> Row:
    doc = report.document
    icon = _str(doc.get("icon"))
    icon_size = _icon_size(report, icon)
    return {
        "content_hash": report.content_hash,
        "name": _str(doc.get("name")),
        "version": _str(doc.get("version")),
        "build_path": _str(doc.get("buildPath")),
        "icon": icon,
        "icon_width": icon_size[0] if icon_size else None,
        "icon_height": icon_size[1] if icon_size else None,
        "error_count": count(report.findings, ERROR),
        "warning_count": count(report.findings, WARNING),
        "loaded_at": loaded_at,
        "manifest_path": str(report.manifest_path.resolve()),
        "size_bytes": len(report.raw),
        "document": doc,
    }


def _icon_size(report: ManifestReport, icon: str | None) -> tuple[int, int] | None:
    build_path = build_path_of(report.document)
    if icon is None or build_path is None:
        return None
    resolved = resolve(report.bundle, build_path, icon)
    if resolved.path is None or not is_file(resolved.path):
        return None
    return image_size(resolved.path)


def _source_row(source: dict[str, Any]) -> Row:
    about = _obj(source.get("about"))
    bullets = about.get("bullets")
    size = source.get("initialSize")
    if isinstance(size, dict):
        size_type, width, height = _str(size.get("type")), size.get("width"), size.get("height")
    else:
        # The client opens a source without initialSize at 800 x 600 pixels: record that, and
        # flag it, so analysts see the size users get and can still tell it was not chosen.
        size_type = facts.DEFAULT_INITIAL_SIZE_TYPE
        width, height = facts.DEFAULT_INITIAL_WIDTH, facts.DEFAULT_INITIAL_HEIGHT
    return {
        "source_id": _str(source.get("id")),
        "source_type": _str(source.get("type")),
        "name": _str(source.get("name")),
        "description": _str(about.get("description")),
        "bullets": bullets if isinstance(bullets, list) else None,
        "banner_image": _str(about.get("bannerImage")),
        "file": _str(source.get("file")),
        "initial_size_type": size_type,
        "initial_width": _num(width),
        "initial_height": _num(height),
        "initial_size_is_default": not isinstance(size, dict),
        "redirect_properties_to_top_nav_slot": _bool(
            source.get("redirectPropertiesToTopNavSlot"), facts.DEFAULT_REDIRECT_TO_TOP_NAV
        ),
    }


def _page_row(page: dict[str, Any]) -> Row:
    size = _obj(page.get("popOutSize"))

    def dim(name: str, default: int) -> float | None:
        return _num(size[name]) if name in size else float(default)

    return {
        "slot": _str(page.get("slot")),
        "file": _str(page.get("file")),
        "persistent": _bool(page.get("persistent"), facts.DEFAULT_PERSISTENT),
        "allow_popout": _bool(page.get("allowPopout"), facts.DEFAULT_ALLOW_POPOUT),
        "pop_out_width": dim("width", facts.DEFAULT_POPOUT_WIDTH),
        "pop_out_height": dim("height", facts.DEFAULT_POPOUT_HEIGHT),
        "pop_out_min_width": dim("minWidth", facts.DEFAULT_POPOUT_MIN_WIDTH),
        "pop_out_min_height": dim("minHeight", facts.DEFAULT_POPOUT_MIN_HEIGHT),
    }


# --- dlt --------------------------------------------------------------------------------------


def resources_for_report(
    report: ManifestReport, loaded_at: datetime | None = None
) -> list[DltResource]:
    """One dlt resource per table for an already validated manifest."""
    import dlt  # deferred: keeps `devportal --help` and plain validation fast

    rows = build_rows(report, loaded_at)
    resources = []
    for table in TABLES:
        primary_key: str | tuple[str, ...] = (
            "content_hash" if table == MANIFESTS else ("content_hash", "ordinal")
        )
        resources.append(
            dlt.resource(
                rows[table],
                name=table,
                table_name=table,
                write_disposition={"disposition": "merge", "strategy": "delete-insert"},
                primary_key=primary_key,
                merge_key="content_hash",
                columns=COLUMNS[table],
                # Rows are built in full before the load and never nest: keep them flat.
                max_table_nesting=0,
            )
        )
    return resources


def manifest_resources(
    path: str | Path,
    previous_platforms: Collection[str] | None = None,
    *,
    pipeline: Pipeline | None = None,
) -> list[DltResource]:
    """Validate the manifest at PATH and return the dlt resources recording it.

    For `devportal sync`: pass the pipeline being run so the platform-removal check reads the
    history from its destination. Raises `ManifestUnreadable` (exit code 2) on unreadable
    input; a manifest with errors is still recorded, findings included.
    """
    report = validate_with_history(path, previous_platforms, pipeline=pipeline)
    return resources_for_report(report)


@dataclass
class LoadResult:
    report: ManifestReport
    warehouse: Path
    load_id: str | None


def load_manifest(path: str | Path, target: Where) -> LoadResult:
    """Validate PATH against TARGET's history and record it there (findings included).

    TARGET: a `Target`, or the DuckDB warehouse file's path. On another destination (e.g.
    `postgres`) the warehouse path only places dlt's working folder and the lock.

    Holds the warehouse lock for the whole read-validate-write so no other writer can record a
    version in between. A manifest with errors is recorded too: analysts see broken releases,
    and the caller decides the exit code from `report.ok`.
    """
    target = Target.of(target)
    warehouse = target.warehouse
    # Fail on unreadable input before touching the warehouse (no lock, no dlt folder).
    read_manifest(path)
    with writing(target) as run:
        if target.is_file:
            # the history is read from the published warehouse (read-only): what the run
            # recovered is in it, and the draft this run writes is a copy of it
            report = validate_with_history(path, warehouse=warehouse)
        else:  # the history is read through the destination's own SQL client
            report = validate_with_history(path, pipeline=run.pipeline)
        load_id = run.load(
            resources_for_report(report), what=f"recording the manifest in {warehouse}"
        )
    return LoadResult(report=report, warehouse=Path(warehouse), load_id=load_id)
