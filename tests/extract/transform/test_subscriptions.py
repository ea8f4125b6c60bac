"""A batch of subscription rows as one typed Arrow table (extract/transform/subscriptions.py):
each column typed by its coercer, a value that does not fit kept as NULL with its raw text,
flagged in the row and counted in the ledger; rows without a usable id dropped and counted;
fields the spec does not show in columns of their own."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from devportal.extract.extra_fields.fields import FieldStats
from devportal.extract.transform.quality import ID_DROPPED, DataQuality
from devportal.extract.transform.subscriptions import (
    SUBSCRIPTIONS_SCHEMA,
    parse_timestamp,
    status_counts,
    subscriptions_table,
)

# rows as the API sent them, one odd value each (spec 2.1: id, service_id, status, expires_at)
ODD_ROWS: list[dict[str, Any]] = [
    {"id": 1, "service_id": 11, "status": "active", "expires_at": "2025-03-01 12:00:00"},
    {"id": "2", "service_id": "12", "status": "canceled", "expires_at": "2025-03-01 12:00:00"},
    {"id": None, "service_id": 13, "status": "active", "expires_at": "2025-03-01 12:00:00"},
    {"id": "x3", "service_id": 13, "status": "active", "expires_at": "2025-03-01 12:00:00"},
    {"id": 4, "service_id": "abc", "status": "paused", "expires_at": 1700000000},
    {"id": 5, "status": 7, "expires_at": ""},
    {"id": 6, "service_id": 16, "status": None, "expires_at": None},
    {"id": 7, "service_id": 17, "status": "active", "expires_at": "2025-01-01T12:00:00+02:00"},
    {"id": 8, "service_id": 18, "status": "active", "expires_at": "2025-1-2 3:04:05"},
    {"id": 9, "service_id": 19.5, "status": "active"},
    {"id": 10, "service_id": 20, "status": "canceled", "expires_at": "2024-02-30 00:00:00"},
]


def typed(
    rows: list[dict[str, Any]], is_test: bool = False
) -> tuple[pa.Table, np.ndarray, DataQuality]:
    """The table and ids of ROWS, and the ledger of what did not fit."""
    dq = DataQuality()
    table, ids = subscriptions_table(rows, is_test, dq)
    return table, ids, dq


def typed_rows(rows: list[dict[str, Any]], is_test: bool = False) -> list[dict[str, Any]]:
    return typed(rows, is_test)[0].to_pylist()


def by_id(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {row["id"]: row for row in rows}


def test_rows_without_a_usable_id_are_dropped_and_counted() -> None:
    table, ids, dq = typed(ODD_ROWS)
    assert ids.tolist() == [1, 2, 4, 5, 6, 7, 8, 9, 10]  # "2" is 2; None and "x3" have none
    assert table.column("id").to_pylist() == ids.tolist()
    assert dq.count("subscriptions", "id", ID_DROPPED) == 2
    sample = dq.problems["subscriptions", "id", ID_DROPPED].sample_values[1]
    assert (
        sample == '{"id":"x3","service_id":13,"status":"active","expires_at":"2025-03-01 12:00:00"}'
    )


def test_the_spec_columns_come_first_with_their_types() -> None:
    table = typed(ODD_ROWS)[0]
    assert table.schema.names[: len(SUBSCRIPTIONS_SCHEMA)] == SUBSCRIPTIONS_SCHEMA.names
    for field in SUBSCRIPTIONS_SCHEMA:
        assert table.schema.field(field.name).type == field.type, field.name


@pytest.mark.parametrize(
    ("sub_id", "column", "value", "flags"),
    [
        (1, "expires_at", datetime(2025, 3, 1, 12), None),  # the spec's format: no flag
        (2, "service_id", 12, None),  # a number sent as digits
        (4, "service_id", None, "invalid_service_id,unknown_status"),
        (4, "status", "paused", "invalid_service_id,unknown_status"),  # kept as sent
        (4, "expires_at", datetime(2023, 11, 14, 22, 13, 20), "invalid_service_id,unknown_status"),
        (5, "status", "7", "missing_service_id,unknown_status,missing_expires_at"),
        (6, "status", None, "unknown_status,missing_expires_at"),
        (7, "expires_at", datetime(2025, 1, 1, 10), None),  # ISO 8601 with a zone: UTC
        (8, "expires_at", datetime(2025, 1, 2, 3, 4, 5), None),  # unpadded fields
        (9, "service_id", None, "invalid_service_id,missing_expires_at"),  # 19.5 is no id
        (10, "expires_at", None, "invalid_expires_at"),  # February 30th: never March 1st
    ],
)
def test_each_odd_value_is_typed_or_nulled_and_flagged(
    sub_id: int, column: str, value: Any, flags: str | None
) -> None:
    rows = typed_rows(ODD_ROWS)
    row = by_id(rows)[sub_id]
    assert row[column] == value
    assert row["dq_flags"] == flags


@pytest.mark.parametrize(
    ("sub_id", "raw"),
    [
        (1, None),  # read as sent: nothing to keep
        (4, "1700000000"),  # an epoch number read as a date keeps its text
        (5, '""'),  # an empty string, kept apart from nothing sent
        (6, None),  # null: nothing sent (a lifetime plan to the models)
        (9, None),  # no key at all: the same
        (10, "2024-02-30 00:00:00"),
    ],
)
def test_expires_at_raw_keeps_what_could_not_be_read_as_sent(sub_id: int, raw: str | None) -> None:
    rows = typed_rows(ODD_ROWS)
    assert by_id(rows)[sub_id]["expires_at_raw"] == raw


def test_the_ledger_counts_each_problem_with_samples() -> None:
    dq = typed(ODD_ROWS)[2]
    counts = {key: p.count for key, p in dq.problems.items()}
    assert counts == {
        ("subscriptions", "id", ID_DROPPED): 2,
        ("subscriptions", "service_id", "invalid_service_id"): 2,
        ("subscriptions", "service_id", "missing_service_id"): 1,
        ("subscriptions", "status", "unknown_status"): 3,
        ("subscriptions", "expires_at", "invalid_expires_at"): 1,
        ("subscriptions", "expires_at", "missing_expires_at"): 3,
    }
    invalid = dq.problems["subscriptions", "service_id", "invalid_service_id"]
    assert (invalid.sample_ids, invalid.sample_values) == (["4", "9"], ["abc", "19.5"])


def test_a_clean_batch_flags_nothing_and_has_no_extra_columns() -> None:
    clean = [r for r in ODD_ROWS if r["id"] in (1, 7, 8)]
    table, _, dq = typed(clean)
    assert dq.total() == 0
    assert table.column("dq_flags").to_pylist() == [None, None, None]
    assert table.schema.names == SUBSCRIPTIONS_SCHEMA.names


def test_is_test_says_which_partition_the_rows_came_from() -> None:
    live = typed_rows(ODD_ROWS[:2])
    test = typed_rows(ODD_ROWS[:2], is_test=True)
    assert [r["is_test"] for r in live] == [False, False]
    assert [r["is_test"] for r in test] == [True, True]


def test_fields_the_spec_does_not_show_get_columns_of_their_own() -> None:
    rows = [
        {**ODD_ROWS[0], "plan": {"tier": "pro"}, "seats": 3},
        {**ODD_ROWS[1], "id": 2},
    ]
    stats = FieldStats()
    table, _ = subscriptions_table(rows, False, DataQuality(), stats)
    extra = table.schema.names[len(SUBSCRIPTIONS_SCHEMA) :]
    assert sorted(extra) == ['["plan","tier"]', '["seats"]']
    assert table.column('["plan","tier"]').to_pylist() == ["pro", None]
    assert stats.kinds[("plan", "tier")] == {"text": None}
    assert ("seats",) in stats.kinds and ("id",) in stats.kinds


def test_an_empty_batch_is_an_empty_table() -> None:
    table, ids = subscriptions_table([], False, DataQuality())
    assert table.num_rows == 0 and ids.size == 0
    assert table.schema.names == SUBSCRIPTIONS_SCHEMA.names


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("2025-03-01 12:00:00", datetime(2025, 3, 1, 12)),
        ("2025-03-01T12:00:00Z", datetime(2025, 3, 1, 12)),
        ("2025-03-01T12:00:00-05:00", datetime(2025, 3, 1, 17)),
        (1700000000, datetime(2023, 11, 14, 22, 13, 20)),  # epoch seconds
        (1700000000000, datetime(2023, 11, 14, 22, 13, 20)),  # epoch milliseconds
        ("1700000000", datetime(2023, 11, 14, 22, 13, 20)),
        (1700000000.5, None),  # a fraction of a second is no epoch number we read
        (20270101, None),  # a day number, not an epoch
        (0, None),
        ("2023-02-29 00:00:00", None),  # no such day
        ("0000-00-00 00:00:00", None),  # MySQL's zero date
        ("1969-12-31 23:59:59", None),  # before 1970: no expiry of this API
        ("", None),
        ("soon", None),
        (None, None),
        (True, None),
    ],
)
def test_the_second_chance_parse_reads_only_real_calendar_times(value: Any, parsed: Any) -> None:
    assert parse_timestamp(value) == parsed


def test_status_counts_count_each_status_as_sent() -> None:
    column = pa.array(["active", "canceled", "active", None, "paused"])
    assert status_counts(column) == {"active": 2, "canceled": 1, "paused": 1}
