"""One sync run: lock -> finish what a killed run left -> run the source -> summarise.

A run is one dlt load package: everything `devportal_source` reads (subscriptions, user
settings, the user accounts due) and the run's own records (`sync_runs`, `data_quality`) travel
together, so a run is either in the warehouse whole or not at all. It is what
`pipeline.run(devportal_source(...))` does, with the load step replaced by `load_whole` (the
warehouse is put back if a table's load fails halfway). A process killed mid-run leaves either
nothing (killed while reading or extracting: dlt never commits the package) or a complete
package that the next run loads first.

The summary names what changed in the shape of what the API sends (`shape`, from the run's
`sync_runs.schema_changes`, also logged as a warning: a scheduler mails stderr) and the statuses
beyond active/canceled with their counts. A `schema_contract` that refuses a change (dlt's
`freeze`) ends the run in one line naming the table, the column and the fix, nothing loaded and
nothing of the run left in the pipeline's folder.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dlt.common.configuration.exceptions import ConfigurationException
from dlt.common.destination.exceptions import DestinationException
from dlt.common.schema.exceptions import DataValidationError

from devportal.base.api import SUBSCRIPTIONS_PATH, UNTIMED, USER_SETTINGS_PATH
from devportal.base.errors import DevportalError
from devportal.base.progress import Progress
from devportal.base.progress import of as progress_of
from devportal.extract import schema_drift
from devportal.extract.destination_state import DatasetReader
from devportal.extract.read import Asked, ReadInputs, read_api, wanted_resources, window_cursor
from devportal.extract.source import devportal_source
from devportal.extract.sync_record import SyncRecord
from devportal.http import RESOURCES, ApiClient, adopt
from devportal.load.transaction import writing
from devportal.settings import config as settings
from devportal.warehouse.target import Target, Where

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

log = logging.getLogger("devportal.sync")

# the statuses the spec shows; the summary names any other with its count
KNOWN_STATUSES = ("active", "canceled")
# dlt's variant column of a column: `<column>__v_<type>` (shape.variant_column)
_VARIANT = re.compile(r"(.+)__v_([a-z]+)")


@dataclass
class SyncResult:
    """What `devportal sync` says of a loaded run: its record (`sync_runs`' row, from memory:
    `result.record.rows_read`, `.run_id`, `.load_id`, ...) and what the load did to the
    history; `summary()` is the one line it prints."""

    record: SyncRecord
    new_versions: int
    closed_versions: int
    seconds: float = 0.0
    resumed_packages: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # the record's schema changes as the load left them (`_landed`)
    schema_changes: list[dict[str, Any]] = field(default_factory=list)
    status_map: dict[str, str] = field(default_factory=dict)  # [analytics] status_map
    # where the run wrote (`written_to`): a second warehouse is noticed in the summary
    written_to: str = ""

    def _schema(self) -> str:
        clause = schema_drift.summary(self.schema_changes)
        return f"; {clause}" if clause else ""

    def _statuses(self) -> str:
        """The statuses beyond active/canceled, most rows first, with how `[analytics]
        status_map` treats each (a status it does not map counts as "other")."""
        other = sorted(
            (
                (str(status), int(count))
                for status, count in self.record.statuses.items()
                if status not in KNOWN_STATUSES and count
            ),
            key=lambda item: (-item[1], item[0]),
        )
        if not other:
            return ""
        said = [
            f"{schema_drift.name(status)} {count}"
            + (f" as {self.status_map[status]}" if status in self.status_map else "")
            for status, count in other[: schema_drift.SUMMARY_MAX]
        ]
        if len(other) > schema_drift.SUMMARY_MAX:
            said.append(f"{len(other) - schema_drift.SUMMARY_MAX} more")
        unmapped = any(status not in self.status_map for status, _ in other)
        return f"; statuses beyond {'/'.join(KNOWN_STATUSES)}: {', '.join(said)}" + (
            " (see [analytics] status_map)" if unmapped else ""
        )

    def _concurrency(self) -> str:
        c = self.record.concurrency
        if not c.get("concurrency_mode"):
            return ""
        if c["concurrency_mode"] == "pinned":
            text = f", {c['concurrency_settled']} in flight (pinned)"
        else:
            text = (
                f", concurrency settled at {c['concurrency_settled']} "
                f"(adaptive, peak {c['concurrency_peak']})"
            )
        if c.get("rate_limited"):
            text += f", {c['rate_limited']} rate-limited (429)"
        if c.get("paused_s"):
            text += f", paused {c['paused_s']:.1f}s on Retry-After"
        return text

    def summary(self) -> str:
        record = self.record
        # the settings list loads only the users whose entry changed
        changed = next(
            (r["changed"] for r in record.sweeps if r.get("endpoint") == USER_SETTINGS_PATH),
            None,
        )
        parts = [
            f"{table} {n}"
            + (f" ({changed} changed)" if table == "user_settings" and changed is not None else "")
            for table, n in record.rows_read.items()
        ]
        not_due = [
            name
            for name in UNTIMED
            if name in record.resources.split(",") and name not in record.refreshed
        ]
        notes = {
            "set_aside": "the package of an interrupted run could not load and was set aside "
            f"({', '.join(self.extra.get('set_aside', []))}: see `devportal packages`)",
            "machine_clock": "stamped with this machine's clock (the API's Date header was too "
            "far off)",
            "unverified": "the subscription list could not be verified against a total, so no "
            "subscription was closed",
            "unverified_partly": f"the {self.extra.get('unverified_partly')} subscription list "
            "could not be verified against a total, so none of its subscriptions was closed",
            "swept_instead": "swept the whole subscription list instead of a window: the "
            "warehouse held no verified sweep of it yet",
            "still_listed": f"{self.extra.get('still_listed')} subscription(s) the list did not "
            "show are still there (asked by id): loaded, not closed",
            "kept_open": f"{self.extra.get('kept_open')} subscription(s) the list did not show "
            "could not be confirmed gone: left current until a later sweep",
        }
        into = f" into {self.written_to}" if self.written_to else ""
        return (
            f"sync ok ({record.mode}){into} in {self.seconds:.1f}s: "
            + (", ".join(parts) or "no rows")
            + f"; subscription history +{self.new_versions} versions, {self.closed_versions} closed"
            + f"; {record.requests} requests, {record.retries} retries"
            + self._concurrency()
            + f"; {record.data_quality_problems} data-quality problems"
            + (f"; as of {record.observed_at:%Y-%m-%d %H:%M:%S}" if record.observed_at else "")
            + self._schema()
            + self._statuses()
            + "".join(f"; {text}" for key, text in notes.items() if self.extra.get(key))
            + (
                f"; not due in a window: {' and '.join(_NOT_DUE[n] for n in not_due)}"
                if not_due
                else ""
            )
            + self._grown()
        )

    def _grown(self) -> str:
        """The lists that grew while they were read (a busy API: verified all the same, the
        rows added at their end read too; `sync_runs.sweeps[*].added`)."""
        grown = [
            f"{_LIST_NAMES.get(str(r.get('endpoint')), r.get('endpoint'))} grew by {r['added']} "
            f"while read (from {r.get('total_at_start')})"
            for r in self.record.sweeps
            if r.get("added")
        ]
        return f"; {', '.join(grown)}" if grown else ""


# the lists a sweep reads, by their path (`sync_runs.sweeps[*].endpoint`)
_LIST_NAMES = {SUBSCRIPTIONS_PATH: "the subscription list", USER_SETTINGS_PATH: "the settings list"}

# what a window run did not read of the lists the API gives no time filter, and the setting
_NOT_DUE = {
    "user_settings": "the settings list (settings_refresh_hours)",
    "user_accounts": "accounts past their TTL (accounts_refresh_hours)",
}


def sync(
    target: Where,
    *,
    base_url: str | None = None,
    access_token: str | None = None,
    resources: Sequence[str] = RESOURCES,
    since: datetime | None = None,
    window: bool = False,
    include_test: bool | None = None,
    progress: str | Progress = "off",
    early: ApiClient | None = None,
    **overrides: Any,
) -> SyncResult:
    """Run one sync into TARGET (a `Target`, or the DuckDB warehouse file's path). Raises
    DevportalError with a one-line cause on failure.

    Settings come from `[sources.devportal]` (see `config.py`); non-None arguments and
    `overrides` (any of its fields) win over it. `early`: a client that started reading the
    first list before the settings were resolved (`devportal sync` does); used if it reads
    the same API with the same token (`client.adopt`), else closed. `progress`: what the
    run shows while it reads and loads (a `devportal.base.progress.Progress`, closed when the load
    is over; `auto` and `on`: a line every 10 and 2 seconds on stderr; `off`: nothing).
    """
    target = Target.of(target)
    cfg = target.settings.source(
        base_url=base_url, access_token=access_token, include_test=include_test, **overrides
    )
    contract = settings.schema_contract(cfg)
    asked_for = wanted_resources(resources)
    started = time.monotonic()
    shown = progress_of(progress)
    with shown, writing(target, shown.collector()) as run:
        with DatasetReader(run.pipeline) as dest:  # the warehouse opened once for both
            before = dest.history_counts()
            inputs = ReadInputs.of(run.pipeline, dest)
        # the read first, whole and verified: a read that fails ends in its one line before
        # dlt's extract step starts; the source then only hands over what was read
        asked = Asked(asked_for, since, window, window_cursor(run.pipeline))
        with adopt(early, cfg) or ApiClient(cfg) as client:
            reads = read_api(client, cfg, inputs, asked, shown)
        record = reads.record
        source = devportal_source(resources=asked_for, config=cfg, reads=reads, inputs=inputs)

        def refusal(cause: BaseException) -> DevportalError | None:
            if isinstance(cause, DataValidationError):
                return DevportalError(_refusal(cause, contract))
            return None

        run.load(source, what="sync", publish=False, refusal=refusal)
        # what the load did to the history and the columns of the tables whose shape changed,
        # read before it is published (on DuckDB, from the draft); then it is published
        with DatasetReader(run.pipeline) as dest:
            after = dest.history_counts()
            tables = {str(c.get("table")) for c in record.schema_changes if isinstance(c, dict)}
            columns = {t: set(dest.columns(t)) for t in tables}
        run.publish()
        where = written_to(target, run.pipeline)
    set_aside = run.recovered
    result = _result(record, before, after)
    result.schema_changes = _landed(result.schema_changes, columns, contract)
    result.status_map = _status_map(target)
    result.written_to = where
    if result.schema_changes:
        # one line on stderr: a scheduler (cron) mails what a run says there
        log.warning(
            "the API's data changed shape: %s (recorded in sync_runs.schema_changes)",
            schema_drift.summary(result.schema_changes).removeprefix("schema: "),
        )
    result.resumed_packages = len(set_aside.resumed)
    if set_aside.ids:
        result.extra["set_aside"] = set_aside.ids
    result.seconds = time.monotonic() - started
    return result


def written_to(target: Target, pipeline: Pipeline) -> str:
    """Where a run wrote, for its summary line: the DuckDB file's absolute path (a relative
    one depends on the folder a scheduler starts in), else the destination's name with what
    its credentials say of where (database, host and port; never a password) and the
    dataset."""
    if target.is_file:
        return str(target.warehouse.absolute())
    try:
        credentials = pipeline.destination_client().config.credentials
    except (ConfigurationException, DestinationException):  # it loaded: say its name alone
        credentials = None
    place = [str(getattr(credentials, "database", None) or "")]
    host, port = getattr(credentials, "host", None), getattr(credentials, "port", None)
    if host:
        place.append(f"on {host}:{port}" if port else f"on {host}")
    where = " ".join(p for p in place if p)
    database = f"database {where}, " if where else ""
    return f"{target.name} ({database}dataset {pipeline.dataset_name})"


def _result(record: SyncRecord, before: tuple[int, int], after: tuple[int, int]) -> SyncResult:
    """The summary of a loaded run, from its record and the history counts."""
    new_versions = after[0] - before[0]
    list_reads = record.sweeps
    reads = [s for s in list_reads if str(s.get("endpoint", "")).endswith("/subscriptions")]
    if record.mode != "sweep":
        reads = []
    unverified = [
        "test" if (s.get("params") or {}).get("is_test") else "live"
        for s in reads
        if not s.get("verified")
    ]
    partly = len(unverified) < len(reads)
    # how each list read confirmed the current subscriptions it did not list (reading.CloseConfirmation)
    closing = [s["closing"] for s in list_reads if isinstance(s.get("closing"), dict)]
    return SyncResult(
        record=record,
        new_versions=new_versions,
        closed_versions=before[1] + new_versions - after[1],
        extra={
            "machine_clock": record.clock_source == "machine",
            "unverified": bool(unverified) and not partly,
            "unverified_partly": " and ".join(unverified) if partly else "",
            "swept_instead": record.mode == "sweep" and record.requested_mode == "window",
            "still_listed": sum(len(c.get("listed") or ()) for c in closing),
            "kept_open": sum(int(c.get("kept") or 0) for c in closing),
        },
        schema_changes=[c for c in record.schema_changes if isinstance(c, dict)],
    )


def _landed(
    changes: list[dict[str, Any]], columns: dict[str, set[str]], contract: Any
) -> list[dict[str, Any]]:
    """CHANGES as the load left them: a new field or type whose column the destination does not
    have was dropped by the schema contract (`discard_value`, `discard_row`: marked `dropped`),
    or had only nulls (no column yet: none named)."""
    modes = {entity: "evolve" for entity in settings.CONTRACT_ENTITIES}
    modes.update(contract if isinstance(contract, dict) else dict.fromkeys(modes, contract))
    landed = []
    for change in changes:
        column, table = change.get("column"), str(change.get("table"))
        if change.get("change") == "gone" or not column or column in columns.get(table, ()):
            landed.append(change)
            continue
        entity = "data_type" if change.get("change") == "type" else "columns"
        dropped = str(modes.get(entity)).startswith("discard")
        landed.append({**change, "column": None, "dropped": dropped})
    return landed


def _status_map(target: Target) -> dict[str, str]:
    """`[analytics] status_map`, for the summary to say how each status is treated; a bad
    setting is the report's and the models' to refuse, not the sync's: then none."""
    try:
        return dict(target.settings.analytics().status_map or {})
    except DevportalError:
        return {}


def _refusal(refused: DataValidationError, contract: Any) -> str:
    """The one line of a run dlt's schema contract refused: the table, the column, the
    contract, that nothing was loaded, and the fix."""
    entity = str(refused.schema_entity)
    mode = str(refused.contract_mode)
    table, column = str(refused.table_name), schema_drift.name(str(refused.column_name or ""))
    if isinstance(contract, dict):
        setting = f'schema_contract.{entity} = "{mode}"'
        fix = f'set schema_contract.{entity} = "evolve"'
    else:
        setting = f'schema_contract = "{mode}"'
        fix = 'set schema_contract = "evolve"'
    variant = _VARIANT.fullmatch(column)
    if entity == "tables":
        what = f"the API's data would add the table {table}"
    elif variant is not None:
        what = (
            f"column {variant[1]} of table {table} got {variant[2]} values its type cannot "
            f"hold (they would add the variant column {column})"
        )
    elif entity == "data_type":
        what = f"column {column} of table {table} got values of another type"
    else:
        what = f"the API sent a new field: it would add column {column} to table {table}"
    other = "" if entity == "tables" else '; "discard_value" loads the rows without it'
    return (
        f"{setting} refused the sync: {what}; nothing was loaded. To accept it, {fix} in "
        f"[sources.devportal] (.dlt/config.toml or SOURCES__DEVPORTAL__SCHEMA_CONTRACT){other}"
    )
