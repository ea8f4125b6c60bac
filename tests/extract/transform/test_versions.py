"""`_row_version`, the hash SCD2 compares (extract/transform/versions.py): the same business
values always hash alike (across runs, batches, key orders), any change of them changes it, and
extra fields version a row unless `history_ignore_fields` names them (`rehash`)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from devportal.extract.extra_fields.fields import FieldStats
from devportal.extract.transform.quality import DataQuality
from devportal.extract.transform.subscriptions import subscriptions_table
from devportal.extract.transform.versions import rehash

ROW = {"id": 1, "service_id": 11, "status": "active", "expires_at": "2025-03-01 12:00:00"}


def table(rows: list[dict[str, Any]], is_test: bool = False, **stats: Any) -> pa.Table:
    return subscriptions_table(rows, is_test, DataQuality(), FieldStats(**stats))[0]


def versions(rows: list[dict[str, Any]], is_test: bool = False, **stats: Any) -> list[int]:
    return table(rows, is_test, **stats).column("_row_version").to_pylist()


def version(row: dict[str, Any], is_test: bool = False, **stats: Any) -> int:
    return versions([row], is_test, **stats)[0]


def test_the_hash_of_a_row_is_the_one_stored_rows_have() -> None:
    """Pinned: the warehouse holds these hashes. A change to the hash makes every current
    subscription a new version on the next sweep, so it must be deliberate (and migrated)."""
    assert version(ROW) == 2139401369412959493
    assert version(ROW, is_test=True) == -5816913613665083889


def test_a_row_hashes_alike_whatever_else_its_batch_holds() -> None:
    others = [{**ROW, "id": 2, "plan": {"tier": "pro"}}, {**ROW, "id": 3, "status": "x"}]
    assert versions([ROW, *others])[0] == version(ROW)
    assert versions([*others, ROW])[2] == version(ROW)


@pytest.mark.parametrize(
    "changed",
    [
        {"id": 2},
        {"service_id": 12},
        {"service_id": None},
        {"status": "canceled"},
        {"status": None},
        {"expires_at": "2025-03-01 12:00:01"},
        {"expires_at": None},
        {"expires_at": "soon"},  # unreadable: versions by its text
        {"plan": "pro"},  # a field the spec does not show
    ],
)
def test_any_change_of_a_business_value_makes_a_new_version(changed: dict[str, Any]) -> None:
    assert version({**ROW, **changed}) != version(ROW)


def test_two_unreadable_expiries_version_apart() -> None:
    """Both are NULL in `expires_at`: their raw text tells them apart."""
    feb30 = version({**ROW, "expires_at": "2024-02-30 00:00:00"})
    feb31 = version({**ROW, "expires_at": "2024-02-31 00:00:00"})
    assert feb30 != feb31


def test_an_extra_fields_key_order_or_a_null_changes_nothing() -> None:
    ab = version({**ROW, "plan": {"a": 1, "b": 2}})
    assert version({**ROW, "plan": {"b": 2, "a": 1}}) == ab != version(ROW)
    assert version({**ROW, "plan": None}) == version(ROW)  # null: as if not sent


def test_an_ignored_extra_field_makes_no_version() -> None:
    ignored = {"ignored": lambda path: path[0] == "seen_at"}
    assert version({**ROW, "seen_at": "x"}, **ignored) == version(ROW)
    assert version({**ROW, "seen_at": "x"}) != version(ROW)  # not ignored: it versions


def test_rehash_versions_a_spooled_batch_as_the_contract_now_says() -> None:
    spooled = table([{**ROW, "seen_at": "x"}, {**ROW, "id": 2}])
    kept = rehash(spooled, lambda path: False)
    assert kept.column("_row_version").to_pylist() == spooled.column("_row_version").to_pylist()
    dropped = rehash(spooled, lambda path: path[0] == "seen_at")
    assert dropped.column("_row_version").to_pylist() == versions([ROW, {**ROW, "id": 2}])
    assert dropped.column_names == spooled.column_names  # only the hash changes


def test_rehash_leaves_a_batch_without_extra_fields_as_it_was() -> None:
    plain = table([ROW])
    assert rehash(plain, lambda path: True) is plain
