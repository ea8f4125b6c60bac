"""Every kind of value dlt stores survives `devportal migrate` both ways, exactly: decimals at
their scale, instants (with a time zone) and wall-clock timestamps, JSON, binary, dates, times,
floats at their edges, empty text apart from NULL, text with quotes, commas and newlines.

The dataset is loaded by a plain dlt pipeline of the user's own (not devportal's sync), into
the DuckDB file's dataset `devportal`: its state rows belong to that pipeline and are copied as
they are."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

import dlt
import pyarrow as pa

from tests.migrate.helpers import Dataset

ROWS = [
    {
        "id": 1,
        "amount": Decimal("12345678901.123456789"),
        "at": datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=UTC),
        "naive": datetime(2024, 2, 29, 23, 59, 59, 999999),
        "doc": {"b": [1, 2.5, None, True], "a": "x", "nested": {"k": "\u2603"}},
        "raw": b'\x00\xff\\x,\n"',
        "day": date(2024, 2, 29),
        "clock": time(23, 59, 59, 999999),
        "ratio": 0.1 + 0.2,
        "text": "",
        "maybe": None,
        "name": "Zoë 'single' \"double\", comma\nnewline \\. backslash",
        "big": 2**62,
    },
    {
        "id": 2,
        "amount": Decimal("-0.000000001"),
        "at": datetime(1970, 1, 1, tzinfo=UTC),
        "naive": datetime(1, 1, 1),
        "doc": [],
        "raw": b"",
        "day": date(9999, 12, 31),
        "clock": time(0, 0),
        "ratio": 1e300,
        "text": None,
        "maybe": "\\.",
        "name": "",
        "big": -(2**63),
    },
    {
        "id": 3,
        "amount": None,
        "at": None,
        "naive": None,
        "doc": None,
        "raw": None,
        "day": None,
        "clock": None,
        "ratio": float("inf"),
        "text": " padded ",
        "maybe": "NULL",
        "name": "\\N",
        "big": None,
    },
]
COLUMNS: Any = {
    "amount": {"data_type": "decimal", "precision": 20, "scale": 9},
    "at": {"data_type": "timestamp", "timezone": True},
    "naive": {"data_type": "timestamp", "timezone": False},
    "doc": {"data_type": "json"},
    "raw": {"data_type": "binary"},
    "day": {"data_type": "date"},
    "clock": {"data_type": "time"},
    "ratio": {"data_type": "double"},
    "text": {"data_type": "text"},
    "maybe": {"data_type": "text"},
    "name": {"data_type": "text"},
    "big": {"data_type": "bigint"},
}


def load_own_dataset(warehouse: Path) -> None:
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    pipeline = dlt.pipeline(
        pipeline_name="own_pipeline",
        pipelines_dir=str(warehouse.parent / "own"),
        destination=dlt.destinations.duckdb(str(warehouse)),
        dataset_name="devportal",
    )
    # as Arrow: dlt keeps each column's type as given (dicts would have binary turned to text)
    arrow_types = {
        "id": pa.int64(),
        "amount": pa.decimal128(20, 9),
        "at": pa.timestamp("us", tz="UTC"),
        "naive": pa.timestamp("us"),
        "doc": pa.string(),
        "raw": pa.binary(),
        "day": pa.date32(),
        "clock": pa.time64("us"),
        "ratio": pa.float64(),
        "big": pa.int64(),
    }
    table = pa.table(
        {
            name: pa.array(
                [
                    json.dumps(row[name]) if name == "doc" and row[name] is not None else row[name]
                    for row in ROWS
                ],
                arrow_types.get(name, pa.string()),
            )
            for name in ROWS[0]
        }
    )
    pipeline.run(dlt.resource(table, name="kinds", columns=COLUMNS, primary_key="id"))


def kinds_types(dataset: Dataset) -> dict[str, str]:
    _, rows = dataset._rows(
        "select column_name, data_type from information_schema.columns "
        "where table_schema = 'devportal' and table_name = 'kinds'"
    )
    return dict(rows)


def test_every_kind_of_value_survives_both_ways(
    devportal: Any, postgres: str, tmp_path: Path
) -> None:
    source_file = tmp_path / "own" / "warehouse.duckdb"
    load_own_dataset(source_file)
    source = Dataset(source_file)
    rows = source.rows("kinds", ("_dlt_load_id", "_dlt_id"))
    assert len(rows) == 3

    to_pg = devportal(
        "migrate", "--from-warehouse", str(source_file), "--destination", "postgres",
        "--warehouse", str(tmp_path / "pg" / "w.duckdb"), "--no-models",
    )  # fmt: skip
    assert to_pg.code == 0, to_pg.err
    pg = Dataset(uri=postgres)
    for table in source.tables():
        assert pg.rows(table) == source.rows(table), table
    pg_types = kinds_types(pg)
    assert (pg_types["amount"], pg_types["doc"], pg_types["raw"]) == ("numeric", "jsonb", "bytea")
    assert (pg_types["at"], pg_types["naive"]) == (
        "timestamp with time zone",
        "timestamp without time zone",
    )

    back_file = tmp_path / "back" / "warehouse.duckdb"
    back = devportal(
        "migrate", "--from-destination", "postgres", "--warehouse", str(back_file), "--no-models"
    )
    assert back.code == 0, back.err
    again = Dataset(back_file)
    for table in source.tables():
        assert again.rows(table) == source.rows(table), table
    assert kinds_types(again) == kinds_types(source)

    # what the values are, not only that they stayed alike (ids sort the rows)
    load_columns = ("_dlt_load_id", "_dlt_id")
    names = [c for c in again.columns("kinds") if c not in load_columns]
    assert set(names) == {*COLUMNS, "id"}
    by_id = {row[names.index("id")]: row for row in again.rows("kinds", load_columns)}
    first, second, third = by_id[1], by_id[2], by_id[3]
    value = dict(zip(names, first, strict=True))
    assert value["amount"] == Decimal("12345678901.123456789")
    assert value["at"] == datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert value["doc"] == ROWS[0]["doc"] and value["raw"] == ROWS[0]["raw"]
    assert value["name"] == ROWS[0]["name"] and value["text"] == "" and value["maybe"] is None
    assert value["ratio"] == 0.1 + 0.2 and value["big"] == 2**62
    assert dict(zip(names, second, strict=True))["raw"] == b""
    assert dict(zip(names, third, strict=True))["name"] == "\\N"
    # the state rows of the user's own pipeline are copied as they are
    assert {s["pipeline_name"] for s in again.states()} == {"own_pipeline"}
