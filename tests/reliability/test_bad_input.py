"""Fuzzed page wrappers and rows: each loads with the problem recorded or fails in one line.

Never a traceback, never a corrupted table: after any outcome a clean sync converges to the truth.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devportal.base.errors import DevportalError
from devportal.load.sync import SyncResult, sync
from devportal.warehouse import pipelines_dir
from tests.helpers import FAST_RETRY, WRAPPER_FIELDS, current_rows, query, truth_rows

EXAMPLES = int(os.environ.get("DEVPORTAL_FUZZ_EXAMPLES", "8"))  # make soak: 200

odd_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "0000-00-00 00:00:00",
            "2026-02-30 10:00:00",
            "2026-13-01 00:00:00",
            "2026-12-01T10:00:00Z",
            "2026-12-01",
            "x" * 100_000,
            "12abc",
            "",
        ]
    ),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)

ROW_FIELDS = ["id", "service_id", "status", "expires_at"]

mutation = st.one_of(
    st.tuples(st.just("wrapper_set"), st.sampled_from(WRAPPER_FIELDS), odd_values),
    st.tuples(st.just("wrapper_drop"), st.sampled_from(WRAPPER_FIELDS), st.none()),
    st.tuples(st.just("row_set"), st.sampled_from(ROW_FIELDS), odd_values),
    st.tuples(st.just("row_drop"), st.sampled_from(ROW_FIELDS), st.none()),
    st.tuples(st.just("row_extra"), st.text(min_size=1, max_size=8), odd_values),
)


def mutate(body: dict[str, Any], kind: str, key: str, value: Any) -> dict[str, Any]:
    body = copy.deepcopy(body)
    if kind == "wrapper_set":
        body[key] = value
    elif kind == "wrapper_drop":
        body.pop(key, None)
    elif body.get("data"):
        row = body["data"][0]
        if kind == "row_set" or kind == "row_extra":
            row[key] = value
        else:
            row.pop(key, None)
    return body


def sync_subscriptions(sb: Any, warehouse: Path, **options: Any) -> SyncResult:
    """Sync only the subscriptions from the sandbox SB into WAREHOUSE, no models."""
    return sync(
        warehouse,
        base_url=sb.base_url,
        access_token=sb.token,
        resources=["subscriptions"],
        **options,
    )


@pytest.fixture(scope="module")
def fuzz_sandbox() -> Any:
    from devportal.sandbox import Sandbox

    sb = Sandbox(subscriptions=450, users=10, seed=41, start="2026-11-01 00:00:00").start()
    yield sb
    sb.stop()


@pytest.mark.fuzz
@pytest.mark.timeout(60 + 10 * EXAMPLES)  # the whole search is one test; each example is a sync
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
@given(page=st.sampled_from([1, 2, 3]), change=mutation)
def test_fuzzed_page_loads_with_problem_recorded_or_fails_in_one_line(
    fuzz_sandbox: Any, tmp_path_factory: Any, page: int, change: tuple[str, str, Any]
) -> None:
    sb = fuzz_sandbox
    warehouse = tmp_path_factory.mktemp("fuzz") / "w.duckdb"
    kind, key, value = change

    def override(endpoint: str, number: int, body: dict[str, Any]) -> dict[str, Any] | None:
        if endpoint.endswith("/subscriptions") and number == page:
            return mutate(body, kind, key, value)
        return None

    sb.set_page_override(override)
    try:
        result = sync_subscriptions(
            sb,
            warehouse,
            max_attempts=2,
            sweep_attempts=1,
            **FAST_RETRY,
        )
    except DevportalError as err:
        message = str(err)
        assert "\n" not in message and message.strip()
        assert "Traceback" not in message
        outcome = "failed"
    else:
        outcome = "loaded"
        rows = query(warehouse, "SELECT count(*), count(DISTINCT id) FROM devportal.subscriptions")
        assert rows[0][0] == rows[0][1]  # one version per id: nothing duplicated
        assert rows[0][0] <= result.record.rows_read["subscriptions"]
        if rows[0][0] < len(sb.truth()):  # a row was unusable: it is on the record
            assert result.record.data_quality_problems > 0
    finally:
        sb.set_page_override(None)
    # whatever happened, the table is sound: a clean sync converges to the truth
    sync_subscriptions(sb, warehouse)
    assert current_rows(warehouse) == truth_rows(sb), outcome
    shutil.rmtree(pipelines_dir(warehouse), ignore_errors=True)


def test_a_page_that_is_not_an_object_fails_in_one_line(fuzz_sandbox: Any, warehouse: Path) -> None:
    sb = fuzz_sandbox
    sb.set_page_override(lambda endpoint, number, body: b"[1, 2, 3]" if number == 2 else None)
    try:
        with pytest.raises(DevportalError, match="expected a JSON object"):
            sync_subscriptions(sb, warehouse, max_attempts=2, **FAST_RETRY)
    finally:
        sb.set_page_override(None)
