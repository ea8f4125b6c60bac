"""Platforms of the versions of an app already recorded in the warehouse (platform removal).

"Live" is approximated by "recorded without errors": a version recorded with errors was
rejected by this validator and could not have shipped, so a platform it happened to list does
not lock the app in. The version being validated is excluded by its content hash, so reloading
the same manifest never reports against itself.

Reading is optional and read-only: a warehouse that does not exist yet, or has no manifest
tables yet, simply has no history. The file is opened through `devportal.models.open_duckdb`
(no extension autoload, one-line errors: not a DuckDB database, busy, damaged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devportal.errors import DevportalError
from devportal.manifest.resource import MANIFESTS, PLATFORMS
from devportal.pipeline import DATASET

_HISTORY_SQL = """
select distinct p.platform
from {manifests} as m
join {platforms} as p on p.content_hash = m.content_hash
where m.name = {param} and m.error_count = 0 and m.content_hash <> {param}
"""


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def recorded_platforms(
    warehouse: str | Path, name: str, *, exclude_hash: str | None = None
) -> set[str]:
    """Platforms of error-free versions of app NAME in the DuckDB file WAREHOUSE."""
    from devportal.models import locate_warehouse, open_duckdb

    # One-line errors for a path that cannot be a warehouse; the name check is for writers
    # (this reader qualifies every table with its catalog).
    path = locate_warehouse(warehouse, check_name=False)
    if path is None:
        return set()
    import duckdb  # deferred: keeps `devportal --help` fast

    conn = open_duckdb(path, read_only=True)
    try:
        (catalog,) = conn.execute("select current_database()").fetchone() or ("",)
        # Three-part names: the default warehouse file is devportal.duckdb, so its catalog and
        # the dataset schema are both called `devportal` and a two-part name is ambiguous.
        manifests, platforms = (
            ".".join(_quote(part) for part in (catalog, DATASET, table))
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
            ) from None
    finally:
        conn.close()
    return {row[0] for row in rows}


def pipeline_platforms(pipeline: Any, name: str, *, exclude_hash: str | None = None) -> set[str]:
    """Same as `recorded_platforms`, through the dlt pipeline's own SQL client (any SQL
    destination, not only a DuckDB file)."""
    from dlt.destinations.exceptions import DatabaseUndefinedRelation

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
