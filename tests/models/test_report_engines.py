"""The report, its HTML page and the charts' data are the same on DuckDB and on PostgreSQL.

DuckDB's side is the known-answer warehouse (`story_warehouse`). PostgreSQL's side, in a
throwaway PostgreSQL 16 database (tests/postgres.py), holds the same data two ways, and every
comparison runs on both:

- `built`: the story synced, recorded and built there (`build_story(destination="postgres")`),
  the path users take: what `devportal sync|models --destination postgres` write;
- `copied`: the story warehouse's raw tables (`devportal.*`) and model tables (`analytics.*`)
  copied row by row, typed the way PostgreSQL hands values back at their most unlike DuckDB's:
  timestamps `timestamptz` (aware datetimes, read here in a New York session), DOUBLE columns
  `numeric` (Decimal). What differs is then only the driver's types, which the report makes
  plain.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devportal.cli import main
from devportal.reporting import charts, report
from devportal.reporting.charts.registry import PAGE, QUERIES
from devportal.reporting.report.figures import _figure
from devportal.reporting.report.formats import render
from devportal.reporting.report.page import write_html
from devportal.warehouse.engines import connect
from devportal.warehouse.target import Target

# DuckDB's types in the story warehouse -> the PostgreSQL types of the copy
PG_TYPES = {
    "BIGINT": "bigint",
    "INTEGER": "integer",
    "BOOLEAN": "boolean",
    "DATE": "date",
    "DOUBLE": "numeric",
    "VARCHAR": "text",
    "JSON": "json",
    "TIMESTAMP": "timestamp with time zone",
    "TIMESTAMP WITH TIME ZONE": "timestamp with time zone",
}
SCHEMAS = ("devportal", "analytics")


def _pg_type(kind: str) -> str:
    """PostgreSQL's type for a DuckDB column type: PG_TYPES, a decimal (the price book's
    amounts) as numeric."""
    return "numeric" if kind.startswith("DECIMAL(") else PG_TYPES[kind]


NEW_YORK = "America/New_York"


def _tables(con: Any) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(schema, table) -> [(column, DuckDB type)] of every base table of SCHEMAS."""
    rows = con.execute(
        "select c.table_schema, c.table_name, c.column_name, c.data_type "
        "from information_schema.columns as c join information_schema.tables as t "
        "using (table_catalog, table_schema, table_name) "
        "where t.table_type = 'BASE TABLE' and c.table_schema in (?, ?) "
        "order by c.table_schema, c.table_name, c.ordinal_position",
        list(SCHEMAS),
    ).fetchall()
    tables: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for schema, table, column, kind in rows:
        tables.setdefault((schema, table), []).append((column, kind))
    return tables


def _as_stored(value: Any, kind: str) -> Any:
    if kind == "TIMESTAMP" and value is not None:
        return value.replace(tzinfo=UTC)  # DuckDB's naive timestamps are UTC
    return value


def copy_to_postgres(warehouse: Path, uri: str) -> int:
    """Copy every raw and model table of WAREHOUSE into the database at URI; the row count."""
    import duckdb
    import psycopg2
    from psycopg2.extras import execute_values

    copied = 0
    with duckdb.connect(str(warehouse), read_only=True) as source:
        target = psycopg2.connect(uri)
        try:
            with target.cursor() as cursor:
                for schema in SCHEMAS:
                    cursor.execute(f'create schema "{schema}"')
                for (schema, table), columns in _tables(source).items():
                    names = ", ".join(f'"{c}"' for c, _ in columns)
                    typed = ", ".join(f'"{c}" {_pg_type(k)}' for c, k in columns)
                    cursor.execute(f'create table "{schema}"."{table}" ({typed})')
                    rows = source.execute(f'select {names} from "{schema}"."{table}"').fetchall()
                    kinds = [k for _, k in columns]
                    values = [tuple(map(_as_stored, row, kinds)) for row in rows]
                    execute_values(
                        cursor, f'insert into "{schema}"."{table}" ({names}) values %s', values
                    )
                    copied += len(values)
            target.commit()
        finally:
            target.close()
    return copied


@pytest.fixture(scope="module")
def built_on_postgres(
    postgres_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A PostgreSQL database the story was synced, recorded and built into; its URI."""
    from tests.models.conftest import T1, T2, T3, build_story

    name = postgres_cluster.create_database()
    uri = postgres_cluster.uri(name)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DESTINATION__POSTGRES__CREDENTIALS", uri)
        info = build_story(tmp_path_factory.mktemp("pg") / "pg.duckdb", destination="postgres")
    assert info["clock"] == [T1, T2, T3]
    yield uri
    postgres_cluster.drop_database(name)


@pytest.fixture(scope="module")
def copied_to_postgres(story_warehouse: Path, postgres_cluster: Any) -> Iterator[str]:
    """A PostgreSQL database holding a copy of the story warehouse; its URI."""
    name = postgres_cluster.create_database()
    uri = postgres_cluster.uri(name)
    assert copy_to_postgres(story_warehouse, uri) > 0
    yield uri
    postgres_cluster.drop_database(name)


@pytest.fixture(params=["built_on_postgres", "copied_to_postgres"], ids=["built", "copied"])
def on_postgres(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """dlt's `postgres` destination set to the story there, its sessions in New York time."""
    uri: str = request.getfixturevalue(request.param)
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", uri)
    monkeypatch.setenv("PGTZ", NEW_YORK)
    return uri


def test_the_copy_hands_back_values_unlike_duckdb(
    copied_to_postgres: str, story_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparisons on the copy mean something: the driver's values differ in type (Decimal,
    zone-aware timestamps), and a client's own PGTZ does not move devportal's session off UTC."""
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", copied_to_postgres)
    monkeypatch.setenv("PGTZ", NEW_YORK)
    with connect(Target.of(story_warehouse, "postgres"), read_only=True) as engine:
        names, rows = engine.columns(
            f"select * from {engine.qualify('analytics', 'report_figures')}"
        )
    row = dict(zip(names, rows[0], strict=True))
    assert row["as_of"].utcoffset() == timedelta(0)  # not New York's -5 hours
    assert isinstance(row["last_full_month_churn_rate"], Decimal)


def test_every_format_is_identical_on_both_engines(on_postgres: str, story_warehouse: Path) -> None:
    on_duckdb = report.collect(story_warehouse)
    on_pg = report.collect(Target.of(story_warehouse, "postgres"))
    assert on_pg == on_duckdb
    for fmt in report.FORMATS:
        assert render(on_pg, fmt) == render(on_duckdb, fmt), fmt
    figures = json.loads(render(on_pg, "json"))
    assert figures["as_of"] == "2026-03-05 00:00:00"
    assert figures["last_full_month"] == "2026-02"
    # February: 1 churned of 9 at its start (test_known_answers.test_monthly_churn)
    assert figures["last_full_month_churn_rate"] == 1 / 9


def test_the_cli_prints_the_same_on_both_engines(
    on_postgres: str, story_warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for fmt in ("json", "table"):
        assert main(["report", "--warehouse", str(story_warehouse), "--format", fmt]) == 0
        on_duckdb = capsys.readouterr().out
        argv = ["report", "--destination", "postgres", "--format", fmt]
        assert main(argv) == 0
        assert capsys.readouterr().out == on_duckdb, fmt


def test_the_html_page_is_identical_on_both_engines(
    on_postgres: str, story_warehouse: Path, tmp_path: Path
) -> None:
    on_duckdb = write_html(story_warehouse, tmp_path / "duckdb.html")
    on_pg = write_html(Target.of(story_warehouse, "postgres"), tmp_path / "pg.html")
    page = on_pg.read_text(encoding="utf-8")
    # the six charts with data; the two money charts are a line each (no prices in the story)
    assert page.count('src="data:image/png;base64,') == len(PAGE) - 2 == 6
    assert "<title>Subscriptions as of 2026-03-05 00:00:00</title>" in page
    assert '<td class="sub">churn rate</td><td class="value">11.1%</td>' in page
    # the figures, and the charts drawn from the same DataFrames to the same PNG bytes
    assert page == on_duckdb.read_text(encoding="utf-8")


def test_the_charts_read_the_same_frames_on_both_engines(
    on_postgres: str, story_warehouse: Path
) -> None:
    with connect(story_warehouse, read_only=True) as duck:
        expected = {name: charts.frame(duck, name) for name in QUERIES}
    with connect(Target.of(story_warehouse, "postgres"), read_only=True) as engine:
        for name, frame in expected.items():
            got = charts.frame(engine, name)
            assert got.dtypes.to_dict() == frame.dtypes.to_dict(), name
            assert got.equals(frame), name
    assert not expected["expiry_calendar"].empty
    assert expected["expiry_calendar"]["day"].iloc[0] == date(2026, 3, 8)  # UTC days


def test_models_not_built_on_postgres_is_one_line(
    postgres: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--destination", "postgres", "--format", "json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "devportal: error: the PostgreSQL database has no analytics.as_of: run "
        "`devportal models --destination postgres` to build the models first\n"
    )


def test_a_destination_the_report_cannot_read_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["report", "--destination", "bigquery"]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "duckdb and postgres" in err


NEW_YORK_TZ = timezone(timedelta(hours=-5))


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        (Decimal("7"), "count", 7),
        (Decimal("0.12500000000000000000"), "rate", 0.125),
        (float("nan"), "rate", None),
        (Decimal("NaN"), "rate", None),
        (datetime(2026, 3, 4, 19, tzinfo=NEW_YORK_TZ), "time", datetime(2026, 3, 5)),
        (date(2026, 3, 5), "time", datetime(2026, 3, 5)),
        (datetime(2026, 1, 31, 19, tzinfo=NEW_YORK_TZ), "month", date(2026, 2, 1)),
        (date(2026, 2, 1), "month", date(2026, 2, 1)),
        (1, "flag", True),
        (None, "count", None),
    ],
)
def test_a_figure_has_one_type_per_kind(value: Any, kind: str, expected: Any) -> None:
    got = _figure(value, kind)
    assert got == expected and type(got) is type(expected)


def test_numpy_and_pandas_values_are_made_plain() -> None:
    import numpy as np
    import pandas as pd

    assert type(charts.plain(np.int64(3))) is int
    assert type(charts.plain(np.float64(0.5))) is float
    assert type(charts.plain(np.bool_(True))) is bool
    assert charts.plain(pd.Timestamp("2026-03-05 00:00:00")) == datetime(2026, 3, 5)
    assert type(charts.plain(pd.Timestamp("2026-03-05"))) is datetime
    assert charts.plain(np.datetime64("2026-03-05T00:00:00")) == datetime(2026, 3, 5)
    assert charts.plain(pd.Timestamp("2026-03-05 05:00", tz="UTC")) == datetime(2026, 3, 5, 5)
    assert charts.plain(pd.NaT) is None
    assert charts.plain(Decimal("12")) == 12 and type(charts.plain(Decimal("12"))) is int
