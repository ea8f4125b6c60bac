"""One run's record, the row of `sync_runs`, defined once: its fields, their dlt column hints,
and what a run fills in. The source builds it from what the run read, the `sync_runs` resource
hands it to dlt (with dlt's `load_id` of the package it travels in), and `devportal sync`
summarises the run from the same object in memory. `ProblemRecord`, a row of `data_quality`,
is defined the same way."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any, cast


def _column(data_type: str, default: Any = None, **hints: Any) -> Any:
    """A field whose dlt column hint is DATA_TYPE (and HINTS)."""
    if data_type == "timestamp":
        hints.setdefault("timezone", False)
    metadata = {"dlt": {"data_type": data_type, **hints}}
    if isinstance(default, (dict, list)):
        kind = type(default)
        return field(default_factory=kind, metadata=metadata)
    return field(default=default, metadata=metadata)


class _Record:
    """A row of one of the run's own tables: its fields, each with its dlt column hint."""

    @classmethod
    def columns(cls) -> dict[str, dict[str, Any]]:
        """The dlt column hints of the table, in the record's order."""
        return {f.name: dict(f.metadata["dlt"]) for f in fields(cast(Any, cls))}

    def row(self) -> dict[str, Any]:
        return asdict(cast(Any, self))


@dataclass
class SyncRecord(_Record):
    """`sync_runs`: one row per run, in the same load package as the data it describes."""

    run_id: str = _column("text", "", nullable=False, primary_key=True)
    mode: str = _column("text", "")  # `sweep` or `window`
    # what the caller asked for: `window` on a run whose `mode` is `sweep` means the destination
    # held no verified sweep yet, so the run swept the whole list instead
    requested_mode: str = _column("text", "")
    include_test: bool = _column("bool", False)
    resources: str = _column("text", "")  # a comma list
    started_at: datetime | None = _column("timestamp")  # this machine's clock
    observed_at: datetime | None = _column("timestamp")  # the run's clock: the history boundary
    window_start: datetime | None = _column("timestamp")
    window_end: datetime | None = _column("timestamp")
    rows_read: dict[str, int] = _column("json", {})  # {table: rows}
    sweeps: list[dict[str, Any]] = _column("json", [])  # one `ListRead` per list read
    # the lists without a time filter this run read whole: `user_settings` (the settings list),
    # `user_accounts` (every account due by accounts_ttl_days); a window run reads them only
    # when due (settings_refresh_hours, accounts_refresh_hours)
    refreshed: list[str] = _column("json", [])
    data_quality_problems: int = _column("bigint", 0)
    # whose clock stamped the run: `server` (its Date header) or `machine` (it was too far off)
    clock_source: str = _column("text", "server")
    requests: int = _column("bigint", 0)  # HTTP requests made, retries included
    retries: int = _column("bigint", 0)
    # requests in flight (concurrency.py): `adaptive` or `pinned` (workers), where the limit
    # settled (the median limit requests were sent under) and its peak
    concurrency_mode: str | None = _column("text")
    concurrency_settled: int | None = _column("bigint")
    concurrency_peak: int | None = _column("bigint")
    concurrency_cuts: int | None = _column("bigint")
    rate_limited: int | None = _column("bigint")  # 429 answers
    paused_s: float | None = _column("double")  # every worker waiting out a Retry-After
    # {table: {dotted path: {"types": [...], "column": ...}}}: every field the rows read had
    fields: dict[str, Any] = _column("json", {})
    statuses: dict[str, int] = _column("json", {})  # {status as sent: subscription rows read}
    # [{"table", "field", "change": new|gone|type, "from", "to", "column"}] (shape.changes)
    schema_changes: list[dict[str, Any]] = _column("json", [])
    # dlt's id of the load package the run travelled in (`loading run ...`, `_dlt_loads`)
    load_id: str | None = _column("text")

    @property
    def concurrency(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in CONCURRENCY_FIELDS}


# how many requests the run kept in flight (concurrency.py), as `sync_runs` records it
CONCURRENCY_FIELDS = (
    "concurrency_mode",
    "concurrency_settled",
    "concurrency_peak",
    "concurrency_cuts",
    "rate_limited",
    "paused_s",
)


@dataclass
class ProblemRecord(_Record):
    """`data_quality`: one row per kind of problem (table, column, problem) per run, with a few
    samples (`transform.DataQuality`)."""

    run_id: str = _column("text", "", nullable=False)
    table_name: str = _column("text", "")
    column_name: str = _column("text", "")
    problem: str = _column("text", "")
    row_count: int = _column("bigint", 0)
    sample_ids: str = _column("text", "")  # comma-separated, scrubbed
    sample_values: str = _column("text", "")
