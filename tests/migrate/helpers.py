"""What the migrate tests share: argv for the real CLI, and reading a dataset on either engine
into plain, comparable rows (read with the engines' own drivers, not with devportal.operations.migrate)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import psycopg2

from tests.helpers import REPO

MANIFEST = REPO / "examples" / "demo-app" / "manifest.json"
# the columns every load stamps anew: equal only between two copies of the same loads
LOAD_COLUMNS = ("_dlt_load_id", "_dlt_id")


def token_env(sb: Any) -> dict[str, str]:
    return {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}


def sync_argv(sb: Any, warehouse: Path, *, postgres: bool = False) -> list[str]:
    """`devportal sync` of everything the sandbox serves (test subscriptions and the demo
    app's manifest included) into WAREHOUSE, or PostgreSQL with its dlt folder beside it."""
    argv = ["sync", "--base-url", sb.base_url, "--warehouse", str(warehouse)]
    argv += ["--include-test", "--no-models", "--manifest", str(MANIFEST)]
    return argv + (["--destination", "postgres"] if postgres else [])


def _plain(value: Any, is_json: bool) -> Any:
    """One value as a comparable Python value: instants in UTC, JSON parsed, decimals exact."""
    if is_json and isinstance(value, str):
        return json.loads(value)
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, Decimal):
        return value.normalize()
    return value


class Dataset:
    """The dataset `devportal` (or another schema) on one engine, read for comparison."""

    def __init__(self, warehouse: Path | None = None, uri: str | None = None) -> None:
        self.warehouse, self.uri = warehouse, uri

    def _rows(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        if self.uri is not None:
            con = psycopg2.connect(self.uri)
            try:
                with con.cursor() as cursor:
                    cursor.execute(sql)
                    return [d[0] for d in cursor.description], cursor.fetchall()
            finally:
                con.close()
        con = duckdb.connect(str(self.warehouse), read_only=True)
        try:
            cursor = con.execute(sql)
            return [d[0] for d in cursor.description], cursor.fetchall()
        finally:
            con.close()

    def tables(self, schema: str = "devportal") -> dict[str, list[str]]:
        """Base tables of SCHEMA -> their JSON columns."""
        _, rows = self._rows(
            "select c.table_name, c.column_name, lower(c.data_type) "
            "from information_schema.columns c join information_schema.tables t "
            "on t.table_schema = c.table_schema and t.table_name = c.table_name "
            f"where c.table_schema = '{schema}' and t.table_type = 'BASE TABLE'"
        )
        found: dict[str, list[str]] = {}
        for table, column, sql_type in rows:
            found.setdefault(table, [])
            if sql_type in ("json", "jsonb"):
                found[table].append(column)
        return found

    def rows(
        self, table: str, without: tuple[str, ...] = (), schema: str = "devportal"
    ) -> list[tuple[Any, ...]]:
        """Every row of TABLE, its columns in name order (WITHOUT left out), sorted."""
        json_columns = set(self.tables(schema).get(table, []))
        names, rows = self._rows(f'select * from {schema}."{table}"')
        keep = sorted(i for i, n in enumerate(names) if n not in without)
        keep.sort(key=lambda i: names[i])
        plain = [tuple(_plain(row[i], names[i] in json_columns) for i in keep) for row in rows]
        return sorted(plain, key=repr)

    def columns(self, table: str) -> list[str]:
        names, _ = self._rows(f'select * from devportal."{table}" limit 0')
        return sorted(names)

    def count(self, table: str) -> int:
        _, rows = self._rows(f'select count(*) from devportal."{table}"')
        return int(rows[0][0])

    def texts(self) -> str:
        """Every value of every table of every schema but the engine's own, as text: what a
        secret would show in."""
        if self.uri is not None:
            _, tables = self._rows(
                "select table_schema, table_name from information_schema.tables where "
                "table_schema not in ('pg_catalog', 'information_schema') "
                "and table_type = 'BASE TABLE'"
            )
            return "\n".join(
                str(self._rows(f'select t::text from "{s}"."{t}" t')[1]) for s, t in tables
            )
        _, tables = self._rows(
            "select table_schema, table_name from information_schema.tables "
            "where table_type = 'BASE TABLE'"
        )
        return "\n".join(str(self._rows(f'select * from "{s}"."{t}"')[1]) for s, t in tables)

    def states(self) -> list[dict[str, Any]]:
        """The pipeline states dlt stored in the dataset, decoded."""
        from dlt.common.versioned_state import decompress_state

        _, rows = self._rows("select state from devportal._dlt_pipeline_state")
        return [decompress_state(r[0]) for r in rows]


def history_problems(dataset: Dataset) -> list[tuple[Any, ...]]:
    """Versions that break SCD2: two versions of one subscription from the same moment, or two
    current versions of one subscription."""
    _, same_start = dataset._rows(
        "select id, is_test, _dlt_valid_from, count(*) from devportal.subscriptions "
        "group by 1, 2, 3 having count(*) > 1"
    )
    _, two_current = dataset._rows(
        "select id, is_test, count(*) from devportal.subscriptions "
        "where _dlt_valid_to is null group by 1, 2 having count(*) > 1"
    )
    return [*same_start, *two_current]
