"""The data-quality ledger (extract/transform/quality.py): counts per (table, column, problem)
with at most five samples, scrubbed and cut; merged across reads; its `data_quality` rows."""

from __future__ import annotations

from devportal.extract.transform.quality import SAMPLE_SIZE, DataQuality, json_text, raw_text


def test_each_problem_is_counted_with_its_first_samples() -> None:
    dq = DataQuality()
    for i in range(8):
        dq.add("subscriptions", "status", "unknown_status", i, f"s{i}")
    dq.add("subscriptions", "expires_at", "invalid_expires_at", 9, "2024-02-30")
    assert dq.count("subscriptions", "status", "unknown_status") == 8
    assert dq.count("subscriptions", "status", "no_such_problem") == 0
    assert dq.total() == 9
    problem = dq.problems["subscriptions", "status", "unknown_status"]
    assert problem.sample_ids == ["0", "1", "2", "3", "4"] and SAMPLE_SIZE == 5
    assert problem.sample_values == ["s0", "s1", "s2", "s3", "s4"]


def test_samples_are_scrubbed_and_cut() -> None:
    dq = DataQuality()
    dq.add("t", "c", "p", "x" * 100, "Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456")
    dq.add("t", "c", "p", 2, "y" * 500)
    problem = dq.problems["t", "c", "p"]
    assert problem.sample_values[0] == "Authorization: Bearer [redacted]"
    assert len(problem.sample_ids[0]) == 64 and len(problem.sample_values[1]) == 120


def test_samples_keep_values_as_sent() -> None:
    dq = DataQuality()
    for value in ("text", 7, None, {"a": [1, 2]}, True):
        dq.add("t", "c", "p", 1, value)
    assert dq.problems["t", "c", "p"].sample_values == ["text", "7", "null", '{"a":[1,2]}', "true"]


def test_merging_adds_counts_and_tops_up_samples() -> None:
    first, second = DataQuality(), DataQuality()
    for i in range(3):
        first.add("t", "c", "p", i, i)
    for i in range(3, 7):
        second.add("t", "c", "p", i, i)
    second.add("t", "other", "p", 1, 1)
    first.merge(second)
    assert first.count("t", "c", "p") == 7 and first.count("t", "other", "p") == 1
    assert first.problems["t", "c", "p"].sample_ids == ["0", "1", "2", "3", "4"]
    assert second.count("t", "c", "p") == 4  # the other ledger is left as it was


def test_a_count_made_elsewhere_keeps_one_sample() -> None:
    dq = DataQuality()
    dq.add_count("subscriptions", "expires_at", "lone_surrogate", 3, "\ufffd")
    dq.add_count("subscriptions", "expires_at", "lone_surrogate", 2, "other")
    problem = dq.problems["subscriptions", "expires_at", "lone_surrogate"]
    assert (problem.count, problem.sample_ids, problem.sample_values) == (5, ["-"], ["\ufffd"])


def test_the_ledger_becomes_data_quality_rows_in_a_stable_order() -> None:
    dq = DataQuality()
    dq.add("users", "b", "p", 2, "x")
    dq.add("subscriptions", "z", "p", 1, "y")
    dq.add("subscriptions", "z", "p", 3, "w")
    rows = dq.records("run-1")
    assert [(r["table_name"], r["column_name"]) for r in rows] == [
        ("subscriptions", "z"),
        ("users", "b"),
    ]
    assert rows[0] == {
        "run_id": "run-1",
        "table_name": "subscriptions",
        "column_name": "z",
        "problem": "p",
        "row_count": 2,
        "sample_ids": "1, 3",
        "sample_values": "y, w",
    }


def test_a_value_as_the_api_sent_it() -> None:
    assert raw_text("as sent") == "as sent"
    assert raw_text(None) == "null" and raw_text(False) == "false"
    assert json_text({"b": 1, "a": "é"}) == '{"b":1,"a":"é"}'  # the API's key order, UTF-8
    deep: dict[str, object] = {}
    for _ in range(300):  # deeper than orjson writes
        deep = {"k": deep}
    assert json_text(deep) == '{"k":' * 300 + "{}" + "}" * 300
