"""The content check `devportal migrate` relies on: a fingerprint that is the same for the same
rows whatever their order, batching or engine, and differs for a changed, missing or duplicated
row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pyarrow as pa

from devportal.operations.migrate.fingerprint import Fingerprint

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("at", pa.timestamp("us", tz="UTC")),
        ("amount", pa.decimal128(20, 9)),
        ("doc", pa.string()),
        ("text", pa.string()),
        ("ratio", pa.float64()),
    ]
)
ROWS = [
    {
        "id": 1,
        "at": datetime(2024, 1, 1, tzinfo=UTC),
        "amount": Decimal("1.5"),
        "doc": '{"b":1,"a":[1,2]}',
        "text": "",
        "ratio": 0.1,
    },
    {"id": 2, "at": None, "amount": None, "doc": None, "text": None, "ratio": None},
    {
        "id": 3,
        "at": datetime(2024, 1, 1, 1, tzinfo=UTC),
        "amount": Decimal("-2"),
        "doc": "[]",
        "text": "x",
        "ratio": 1e300,
    },
]


def print_of(rows: list[dict[str, object]], batch_size: int = 2) -> Fingerprint:
    found = Fingerprint()
    for start in range(0, len(rows), batch_size):
        batch = pa.RecordBatch.from_pylist(rows[start : start + batch_size], schema=SCHEMA)
        found.add(batch, ["doc"])
    return found


def test_the_same_rows_in_any_order_and_batching_give_the_same_fingerprint() -> None:
    assert print_of(ROWS) == print_of(list(reversed(ROWS)), batch_size=1)
    assert print_of(ROWS).rows == 3


def test_json_is_compared_as_json_and_instants_as_instants() -> None:
    other = [dict(row) for row in ROWS]
    other[0]["doc"] = '{"a": [1, 2], "b": 1}'  # what PostgreSQL's jsonb gives back
    other[0]["at"] = datetime(2024, 1, 1, 2, tzinfo=timezone(timedelta(hours=2)))
    assert print_of(other) == print_of(ROWS)


def test_a_changed_missing_or_duplicated_row_changes_the_fingerprint() -> None:
    base = print_of(ROWS)
    for changes in (
        {"text": None},  # '' is not NULL
        {"amount": Decimal("1.500000001")},
        {"ratio": 0.1 + 1e-17 * 2},
        {"doc": '{"b":1,"a":[2,1]}'},
        {"at": datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=UTC)},
    ):
        changed = [{**ROWS[0], **changes}, *ROWS[1:]]
        assert print_of(changed) != base, changes
    assert print_of(ROWS[:2]) != base
    assert print_of([*ROWS[:2], ROWS[0]]) != base  # a row twice, another gone: same count
