"""Fields the spec does not show (extract/extra_fields/): which objects are maps kept whole
(`keyed`), the column each path lands in and keeps (`names.Columns`), and a leaf's values
spooled as an Arrow column and read back as sent (`column_spool`)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from devportal.extract.extra_fields.column_spool import (
    decode_leaf,
    encode_leaf,
    json_lists,
    native,
)
from devportal.extract.extra_fields.keyed import KEYED, whole_reason
from devportal.extract.extra_fields.names import Columns, Naming

# -- keyed: a map's keys are data; a record's are names ------------------------------------------


@pytest.mark.parametrize(
    ("keys", "reason"),
    [
        (["name", "amount"], None),  # a record
        (["name", "18734"], KEYED),  # one id among them: PHP's array sent as an object
        (["550e8400-e29b-41d4-a716-446655440000"], KEYED),
        (["5f2b9c1e", "name"], KEYED),  # a hex id holding a digit
        (["sub_18734", "user:42"], KEYED),  # every key a prefixed id
        (["2024-05-01", "2024-06-01"], KEYED),  # dates
        (["a@b.io", "c@d.io"], KEYED),
        (["sub_18734", "name"], None),  # a prefixed id beside a name: still a record
        (["deadbeef"], None),  # hex without a digit is a word
        ([f"k{i}" for i in range(64)], None),
        ([f"k{i}" for i in range(65)], "65 keys"),  # more keys than a record has
        ([], None),
    ],
)
def test_an_object_is_kept_whole_when_its_keys_are_data(keys: list[str], reason: str) -> None:
    assert whole_reason(keys) == reason


# -- names: where each path lands, stable ---------------------------------------------------------


def columns(known: dict[str, Any] | None = None) -> Columns:
    return Columns(Naming(), ["id", "status", "_row_version"], known, {("id",): "id"})


def test_a_path_lands_in_dlts_column_name() -> None:
    assert Naming().column(("Plan Name", "Tier")) == "plan_name__tier"
    assert Naming().column(("",)) == "_empty"
    assert columns()(("plan", "tier")) == "plan__tier"


def test_a_path_that_would_take_a_devportal_column_is_prefixed() -> None:
    found = columns()
    assert found(("status",)) == "api__status"  # never the typed `status` column
    assert found(("_dlt_id",)) == "api___dlt_id"  # nor one of dlt's
    assert found(("id",)) == "id"  # the spec's field is typed into its own column


def test_two_paths_never_share_a_column_and_each_keeps_its_own() -> None:
    found = columns()
    assert found(("a-b",)) == "a_b"
    assert found(("a_b",)) == "a_b_2"  # the same name under dlt's naming: a suffix
    assert found(("Status",)) == "api__status"
    assert found(("status",)) == "api__status_2"
    assert found(("a-b",)) == "a_b"  # asked again: the same
    assert found(("status",)) == "api__status_2"


def test_a_column_an_earlier_run_gave_a_path_is_kept() -> None:
    found = columns({"plan.tier": {"column": "plan_tier_kept"}, "x": {"column": "seats"}})
    assert found(("plan", "tier")) == "plan_tier_kept"
    assert found(("other",)) == "other"
    assert found(("seats",)) == "seats_2"  # taken by the earlier run's `x`
    assert found(("x",)) == "seats"


# -- column_spool: a leaf's values as an Arrow column, read back as sent ------------------------


@pytest.mark.parametrize(
    ("values", "arrow", "kept_native", "lists"),
    [
        ([1, None, 2], pa.int64(), True, False),
        (["a", None], pa.string(), True, False),
        ([True, False], pa.bool_(), True, False),
        ([[1, 2], None, []], pa.string(), False, True),  # JSON text, known to be lists
        ([{"a": 1}, 2], pa.string(), False, False),  # two kinds: JSON text
        ([2**70, 1], pa.string(), False, False),  # beyond 64 bits: exact as JSON text
    ],
)
def test_a_leaf_is_spooled_and_read_back_as_sent(
    values: list[Any], arrow: pa.DataType, kept_native: bool, lists: bool
) -> None:
    found = encode_leaf(("plan", "x"), values)
    assert found is not None
    field, array = found
    assert field.name == '["plan","x"]'
    assert (field.type, native(field), json_lists(field)) == (arrow, kept_native, lists)
    assert decode_leaf(field, array) == values


def test_a_float_that_is_not_finite_is_null_as_json_would_have_it() -> None:
    found = encode_leaf(("x",), [1.5, float("nan"), float("inf")])
    assert found is not None
    assert decode_leaf(*found) == [1.5, None, None]


def test_a_leaf_no_row_has_is_no_column() -> None:
    assert encode_leaf(("x",), [None, None]) is None
