"""Platforms of the versions of an app already recorded in the warehouse (platform removal),
and validation against them (recording layer: reads the warehouse, passes the history into
the pure validation of validate.py).

"Live" is approximated by "recorded without errors": a version recorded with errors was
rejected by this validator and could not have shipped, so a platform it happened to list does
not lock the app in. The version being validated is excluded by its content hash, so reloading
the same manifest never reports against itself.

Reading is optional and read-only: a warehouse that does not exist yet, or has no manifest
tables yet, simply has no history. The file is opened through `devportal.warehouse.open_duckdb`
(no extension autoload, one-line errors: not a DuckDB database, busy, damaged).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from devportal.base.errors import DevportalError
from devportal.load.pipeline import DATASET
from devportal.manifest.findings import ManifestReport
from devportal.manifest.reader import ManifestInput, read_manifest
from devportal.manifest.tables import MANIFESTS, PLATFORMS
from devportal.manifest.validate import validate_manifest
from devportal.warehouse import locate_warehouse, open_duckdb, quote_ident

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

_HISTORY_SQL = """
select distinct p.platform
from {manifests} as m
join {platforms} as p on p.content_hash = m.content_hash
where m.name = {param} and m.error_count = 0 and m.content_hash <> {param}
"""


def recorded_platforms(
    warehouse: str | Path, name: str, *, exclude_hash: str | None = None
) -> set[str]:
    """Platforms of error-free versions of app NAME in the DuckDB file WAREHOUSE."""
    # One-line errors for a path that cannot be a warehouse; the name check is for writers
    # (this reader qualifies every table with its catalog).
    path = locate_warehouse(warehouse, check_name=False)
    if path is None:
        return set()
    import duckdb  # deferred: keeps `devportal --help` fast

    conn = open_duckdb(path, read_only=True)
    try:
        (catalog,) = conn.execute("select current_database()").fetchone() or ("",)
        # Three-part names: DuckDB names the catalog after the file, so a warehouse file called
        # like the dataset (refused for writing, but a reader may be given one) would make a
        # two-part `devportal.x` ambiguous.
        manifests, platforms = (
            ".".join(quote_ident(part) for part in (catalog, DATASET, table))
            for table in (MANIFESTS, PLATFORMS)
        )
        sql = _HISTORY_SQL.format(manifests=manifests, platforms=platforms, param="?")
        try:
            rows = conn.execute(sql, [name, exclude_hash or ""]).fetchall()
        except duckdb.CatalogException:
            return set()  # no manifest recorded in this warehouse yet
        except duckdb.Error as err:
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise DevportalError(
                f"cannot read the recorded manifests in warehouse {path}: {first}; "
                "check that --warehouse is a warehouse written by devportal"
            ) from err
    finally:
        conn.close()
    return {row[0] for row in rows}


def pipeline_platforms(
    pipeline: Pipeline, name: str, *, exclude_hash: str | None = None
) -> set[str]:
    """Same as `recorded_platforms`, through the dlt pipeline's own SQL client (any SQL
    destination, not only a DuckDB file)."""
    from dlt.destinations.exceptions import DatabaseUndefinedRelation  # deferred: dlt is heavy

    with pipeline.sql_client() as client:
        sql = _HISTORY_SQL.format(
            manifests=client.make_qualified_table_name(MANIFESTS),
            platforms=client.make_qualified_table_name(PLATFORMS),
            param="%s",
        )
        try:
            with client.execute_query(sql, name, exclude_hash or "") as cursor:
                rows = cursor.fetchall()
        except DatabaseUndefinedRelation:
            return set()
    return {row[0] for row in rows}


def platform_history(
    manifest: ManifestInput,
    *,
    warehouse: str | Path | None = None,
    pipeline: Pipeline | None = None,
) -> set[str] | None:
    """Platforms recorded for MANIFEST's app by other versions, read through PIPELINE (its
    destination) or else from the DuckDB file WAREHOUSE. None, the platform-removal check
    skipped, when neither is given or the manifest has no string name."""
    name = manifest.document.get("name")
    if not isinstance(name, str):
        return None
    name = name.replace("\x00", "\ufffd")  # as recorded (resource.build_rows)
    if pipeline is not None:
        return pipeline_platforms(pipeline, name, exclude_hash=manifest.content_hash)
    if warehouse is not None:
        return recorded_platforms(warehouse, name, exclude_hash=manifest.content_hash)
    return None


def validate_with_history(
    path: str | Path,
    previous_platforms: Collection[str] | None = None,
    *,
    warehouse: str | Path | None = None,
    pipeline: Pipeline | None = None,
) -> ManifestReport:
    """Validate the manifest at PATH; unless PREVIOUS_PLATFORMS is given, check platform
    removal against the versions recorded through PIPELINE or in WAREHOUSE.

    Raises `ManifestUnreadable` (exit code 2) when PATH is not a readable JSON object."""
    manifest = read_manifest(path)
    if previous_platforms is None:
        previous_platforms = platform_history(manifest, warehouse=warehouse, pipeline=pipeline)
    return validate_manifest(manifest, previous_platforms)
