"""`devportal_source()` is cheap and its resources lazy (dlt's style): calling it makes no
request and asks the destination nothing; the run reads the API once, when dlt extracts it,
every list verified before anything of the run is written; and what only the read decides of
the subscriptions' hints (SCD2 bounded by the run's clock, its scope, the extra columns) is in
the stored dlt schema as it was when the source read at the call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dlt
import pytest
from dlt.pipeline.exceptions import PipelineStepFailed

from devportal.base.errors import IntegrityError, causes
from devportal.extract.source import devportal_source
from tests.helpers import query, subscription, sync_from
from tests.hostile.server import SETTINGS, SUBSCRIPTIONS, Answer, HostileApi, Request

# the API's Date on every answer: the run's clock (believed as sent: max_clock_skew_hours = 0)
DATE = "Mon, 02 Nov 2026 10:00:00 GMT"
OBSERVED_AT = "2026-11-02 10:00:00"


@pytest.fixture
def served(api: HostileApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[HostileApi]:
    """The hostile API serving 7 subscriptions (3 pages), 2 users' settings and accounts; the
    source's settings in the environment, as a user's own script has them."""
    api.date = DATE
    api.subscriptions = [subscription(i, plan={"name": "gold"}) for i in range(1, 8)]
    api.settings = [
        {"user": {"service": {"id": uid}}, "settings": {"theme": "dark"}} for uid in (1001, 1002)
    ]
    api.accounts = {1001: {"user": {"id": 1001}, "profiles": [{"platform": "twitch", "id": 9}]}}
    monkeypatch.setenv("SOURCES__DEVPORTAL__BASE_URL", api.base_url)
    monkeypatch.setenv("SOURCES__DEVPORTAL__ACCESS_TOKEN", api.token)
    monkeypatch.setenv("SOURCES__DEVPORTAL__MAX_CLOCK_SKEW_HOURS", "0")
    yield api


def users_pipeline(tmp_path: Path) -> Any:
    return dlt.pipeline(
        pipeline_name="mine",
        pipelines_dir=str(tmp_path / "dlt"),
        destination=dlt.destinations.duckdb(str(tmp_path / "mine.duckdb")),
        dataset_name="portal",
    )


def test_calling_the_source_makes_no_request_and_extracting_reads_once(
    served: HostileApi, tmp_path: Path
) -> None:
    pipeline = users_pipeline(tmp_path)
    source = devportal_source()
    assert served.requests == []  # no HTTP
    assert not (tmp_path / "mine.duckdb").exists()  # no destination query: nothing opened it
    assert not list(Path(pipeline.working_dir).rglob("*.arrow"))  # nothing spooled

    pipeline.extract(source)
    # one read, whichever of the seven resources asked first: each page of each list once
    assert served.hits(SUBSCRIPTIONS) == 3 and served.hits(SETTINGS) == 1
    assert len(served.requests) == 3 + 1 + 7  # and the account of each of the 7 users seen
    pipeline.normalize()
    pipeline.load()

    db = tmp_path / "mine.duckdb"
    current = query(db, "select id from portal.subscriptions where _dlt_valid_to is null")
    assert sorted(r[0] for r in current) == list(range(1, 8))
    # the run's record is complete though sync_runs may be extracted before the data
    (row,) = query(db, "select rows_read, requests, observed_at::varchar from portal.sync_runs")
    assert json.loads(row[0]) == {
        "subscriptions": 7,
        "user_settings": 2,
        "user_setting_values": 2,
        "user_accounts": 7,
        "user_account_profiles": 1,
    }
    assert row[1] == len(served.requests) and row[2] == OBSERVED_AT
    # what the read decided reached dlt with the first batch: SCD2 bounded by the run's clock,
    # the sweep's scope, the extra field's column
    table = pipeline.default_schema.get_table("subscriptions")
    assert table["write_disposition"] == "merge" and table.get("x-merge-strategy") == "scd2"
    assert str(table.get("x-boundary-timestamp")).replace("T", " ") == OBSERVED_AT
    assert table.get("x-merge-destination-scope") == "(({table}.is_test = false))"
    assert "plan__name" in table["columns"] and "_row_version" in table["columns"]


def test_a_read_that_fails_a_check_fails_the_extract_and_nothing_is_loaded(
    served: HostileApi, tmp_path: Path
) -> None:
    """The mass-close guard runs when dlt extracts, before any row of the run is written: the
    extract fails with the guard's error and the warehouse and the pipeline keep nothing."""
    pipeline = users_pipeline(tmp_path)
    pipeline.run(devportal_source())
    served.subscriptions = served.subscriptions[:1]  # 6 of 7 gone: more than the 20% guard
    before = len(served.requests)
    source = devportal_source()
    assert len(served.requests) == before
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.extract(source)
    guard = next(e for e in causes(failed.value) if isinstance(e, IntegrityError))
    assert "would close 6 of 7 current subscriptions" in str(guard)
    assert not pipeline.has_pending_data and not pipeline.list_extracted_load_packages()
    db = tmp_path / "mine.duckdb"
    assert query(db, "select count(*) from portal.sync_runs") == [(1,)]
    current = query(db, "select count(*) from portal.subscriptions where _dlt_valid_to is null")
    assert current == [(7,)]


def with_lone_surrogates(body: dict[str, Any], n: int) -> bytes:
    """BODY as JSON whose `path` starts with N lone surrogates (`\\ud800` escapes)."""
    text = json.dumps(body)
    return text.replace('"path": "', '"path": "' + "\\ud800" * n, 1).encode()


def test_the_window_runs_clock_page_is_not_counted_as_data(
    served: HostileApi, warehouse: Path
) -> None:
    """A window run asks an empty window for the server's clock and keeps nothing of it: text
    it had to replace is no data-quality problem of the run; the window's own pages are."""
    sync_from(served, warehouse, max_clock_skew_hours=0)  # a verified sweep: windows may run

    def subscriptions(req: Request) -> Answer:
        if "start" not in req.query:
            return served.subscriptions_answer(req)
        clock_page = req.query["start"] == "1970-01-01"
        rows = [] if clock_page else served.subscriptions
        return Answer(200, with_lone_surrogates(served.page(req, rows), 2 if clock_page else 1))

    served.route(SUBSCRIPTIONS, subscriptions)
    served.date = "Mon, 02 Nov 2026 11:00:00 GMT"
    result = sync_from(served, warehouse, window=True, max_clock_skew_hours=0)
    assert result.record.mode == "window"
    clock_asks = [r for r in served.requests if r.query.get("start") == "1970-01-01"]
    assert len(clock_asks) == 1
    counted = query(
        warehouse,
        "select row_count from devportal.data_quality where problem = 'lone_surrogate_replaced'",
    )
    assert counted == [(3,)]  # the window's 3 pages, one each; none of the clock page's 2


def test_each_runs_read_decides_the_stored_scd2_hints(served: HostileApi, tmp_path: Path) -> None:
    """The boundary and the scope reach dlt with each run's first batch and replace the last
    run's in the stored schema: a window retires only what it loaded, the next sweep all."""
    pipeline = users_pipeline(tmp_path)

    def stored() -> tuple[str, str]:
        table = pipeline.default_schema.get_table("subscriptions")
        boundary = str(table.get("x-boundary-timestamp")).replace("T", " ")
        return boundary, str(table.get("x-merge-destination-scope"))

    sweep_scope = "(({table}.is_test = false))"
    window_scope = (
        "(({table}.is_test = false AND {table}.id IN "
        "(SELECT id FROM {staging_table} WHERE is_test = false)))"
    )
    pipeline.run(devportal_source())
    assert stored() == (OBSERVED_AT, sweep_scope)
    served.date = "Mon, 02 Nov 2026 11:00:00 GMT"
    pipeline.run(devportal_source(window=True))
    assert stored() == ("2026-11-02 11:00:00", window_scope)
    served.date = "Mon, 02 Nov 2026 12:00:00 GMT"
    served.subscriptions.pop()  # gone from the list: the sweep closes it
    pipeline.run(devportal_source())
    assert stored() == ("2026-11-02 12:00:00", sweep_scope)
    db = tmp_path / "mine.duckdb"
    closed = query(db, "select id from portal.subscriptions where _dlt_valid_to is not null")
    assert closed == [(7,)]
