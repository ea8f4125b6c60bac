"""The dlt resources one run hands over, each from what was read: SCD2 history of
subscriptions, the per-user tables, and the run's own records (`sync_runs`, `data_quality`);
and the file formats they are written in for the destination.

Each resource is made before anything is read, with a function that returns its part of the
run's read (`source.py` reads once, on the first resource dlt extracts): a resource's rows, and
what only the read decides of its hints (the subscriptions' write disposition and columns,
applied with the first batch through dlt's `with_hints`), come when dlt extracts it. The
tables they write and their keys are described in `source.py`'s docstring.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dlt
from dlt.common.schema.typing import TFileFormat, TSchemaContract
from dlt.common.storages.exceptions import CurrentLoadPackageStateNotAvailable

from devportal.extract import extra_fields, transform
from devportal.extract.reading import RowSpool, SubscriptionsRead
from devportal.extract.sync_record import ProblemRecord, SyncRecord

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

log = logging.getLogger("devportal.source")


@dataclass(frozen=True)
class Formats:
    """The file formats resources are written in for the destination (`preferred`: dlt's)."""

    rows: TFileFormat | None  # lists of dicts
    arrow: TFileFormat | None  # Arrow tables (subscriptions)

    @staticmethod
    def hint(file_format: TFileFormat | None) -> dict[str, Any]:
        """The resource argument: none at all for dlt's choice (`preferred` would mean the
        destination's preferred format, DuckDB's slow `insert_values`, even for Arrow)."""
        return {} if file_format is None else {"file_format": file_format}


def formats_for(pipeline: Pipeline | None) -> Formats:
    """Dicts as jsonl where the destination loads it (DuckDB: its default `insert_values` costs
    several times the memory and time, measured in benchmarks/results/profile-*.md), Arrow
    tables then as dlt chooses (parquet). Where jsonl is not loadable, Arrow tables as csv
    (PostgreSQL: loaded with COPY, the fastest it has) and dicts as dlt chooses (`insert_values`:
    dlt's COPY reads an empty string as NULL, and settings and profiles hold empty strings that
    must stay ''). No destination known yet: dlt's choice.

    On DuckDB and PostgreSQL each is named, never left to a hint stored before: a schema
    carried from the other engine by an older `devportal migrate` holds that engine's format
    (jsonl on PostgreSQL, csv on DuckDB), which dlt would warn of at every sync; named here, the
    next sync replaces it (issue 35)."""
    destination = getattr(pipeline, "destination", None)
    if destination is None:
        return Formats(rows=None, arrow=None)
    supported = destination.capabilities().supported_loader_file_formats
    if "jsonl" in supported:
        return Formats(rows="jsonl", arrow="parquet" if "parquet" in supported else None)
    if "csv" in supported:
        # dicts stay `insert_values`: dlt's csv COPY loads an empty string as NULL
        rows: TFileFormat | None = "insert_values" if "insert_values" in supported else None
        return Formats(rows=rows, arrow="csv")
    return Formats(rows=None, arrow=None)


# -- resources: each hands over its part of the run's read --------------------------------------


@dataclass
class SubscriptionsHandover:
    """What the subscriptions resource hands over, known once the run has read: the read, its
    `mode` (`sweep` or `window`), the run's clock (`observed_at`, the history boundary), how its
    extra fields are typed (`plan`), the columns the destination's `subscriptions` table has
    (`stored`, None: no table yet) and the run's own spool folder (`spool_dir`, removed by the
    last of its spools handed over)."""

    read: SubscriptionsRead
    mode: str
    observed_at: datetime
    plan: extra_fields.Plan
    stored: dict[str, Any] | None
    spool_dir: Path | None = None


def subscriptions_resource(
    handover: Callable[[], SubscriptionsHandover],
    file_format: TFileFormat | None,
    contract: TSchemaContract,
) -> Any:
    """SCD2 history of subscriptions, its scope decided by what was read (`handover()`, asked
    when dlt extracts the resource): the write disposition and the columns go to dlt with the
    first batch (`_read_hints`), before dlt computes the table from any row.

    Each spooled batch gets every extra column of the run (`plan`), NULL where a row has none.
    A contract that drops a new column's values (`discard_value`): those fields version
    nothing, or a row would get a version that differs from its last in nothing stored."""

    def rows() -> Iterator[Any]:
        got = handover()
        plan, stored = got.plan, got.stored
        hints: Any = _read_hints(got, contract)
        dropped = plan.new_paths() if extra_fields.discards_values(contract) and stored else set()
        dlt_log = logging.getLogger("dlt")
        dlt_log.addFilter(_json_hint_notice)
        try:
            for spool in got.read.spools:
                ignored = spool.fields.ignored
                for batch in spool.batches():
                    if dropped:
                        batch = transform.rehash(batch, _ignoring(ignored, dropped))
                    item = plan.expand(batch)
                    if hints is not None:  # the first batch brings what the read decided
                        item, hints = dlt.mark.with_hints(item, hints), None
                    yield item
        finally:
            dlt_log.removeFilter(_json_hint_notice)
            got.read.discard()
            if got.spool_dir is not None:  # the last of the run's spools out removes it
                with contextlib.suppress(OSError):
                    got.spool_dir.rmdir()

    return dlt.resource(
        rows(),
        name="subscriptions",
        primary_key=["id", "is_test"],  # live and test ids may overlap: two histories
        schema_contract=contract,
        **Formats.hint(file_format),
    )


def _read_hints(got: SubscriptionsHandover, contract: TSchemaContract) -> Any:
    """The hints of `subscriptions` that only the read decides (dlt's `make_hints`): SCD2 with
    the run's clock as its boundary and the run's scope, and the columns of its extra fields.

    A contract that may discard rows (`discard_row`) while this run brings a new column to an
    existing table: a discarded row never reaches staging, so a sweep would close its
    subscription; such a run closes only the subscriptions it loaded, as a window does."""
    plan = got.plan
    staged_only = (
        extra_fields.can_discard_rows(contract) and bool(got.stored) and bool(plan.new_columns())
    )
    if staged_only and got.mode == "sweep":
        log.warning(
            "schema_contract discards rows with new fields (%s): this sweep closes only the "
            "subscriptions it loaded, so that a discarded row does not close its subscription",
            ", ".join(plan.new_columns()),
        )
    disposition: dict[str, Any] = {
        "disposition": "merge",
        "strategy": "scd2",
        "row_version_column_name": "_row_version",
        "boundary_timestamp": got.observed_at,  # history follows the server's clock
        # Always set: dlt keeps a hint absent from a later run's resource, so a scope left
        # unset would be the previous run's (a window's scope would then stop every later
        # sweep from retiring anything).
        "destination_scope": _scope(got.read, got.mode, staged_only),
    }
    return dlt.mark.make_hints(
        write_disposition=disposition,  # type: ignore[arg-type]
        columns={**transform.SUBSCRIPTIONS_COLUMNS, **plan.hints()},
    )


def _ignoring(
    ignored: Callable[[extra_fields.Path], bool], dropped: set[extra_fields.Path]
) -> Callable[[extra_fields.Path], bool]:
    # a path below a dropped one too: a map kept whole (dropped) a batch spooled flattened
    return lambda path: ignored(path) or any(path[:n] in dropped for n in range(1, len(path) + 1))


def _json_hint_notice(record: logging.LogRecord) -> bool:
    """Drop dlt's warning that a hint differs from the Arrow type: a JSON column travels as
    Arrow text with the hint `json`, on purpose (an Arrow type cannot hold any JSON)."""
    return not str(record.msg).startswith(
        "In resource: subscriptions, when merging arrow schema with dlt schema"
    )


def _scope(read: SubscriptionsRead, mode: str, staged_only: bool = False) -> str:
    """The current versions this run may retire: only in the partitions it read (a live run
    never touches test rows, whatever their ids). A verified sweep: every version of the
    partition but those confirmed as staying (`Spool.kept`); a window or an unverified read, or a
    sweep that could not confirm what it did not list, or whose rows a contract may discard
    (`staged_only`): the versions of the ids it loaded."""
    clauses = []
    for spool in read.spools:
        flag = "true" if spool.is_test else "false"
        clause = f"{{table}}.is_test = {flag}"
        if mode == "window" or not spool.closes_missing or staged_only:
            clause += (
                f" AND {{table}}.id IN (SELECT id FROM {{staging_table}} WHERE is_test = {flag})"
            )
        elif spool.kept.size:
            clause += f" AND {{table}}.id NOT IN ({', '.join(str(i) for i in spool.kept)})"
        clauses.append(f"({clause})")
    # parenthesised: dlt joins the scope to its own conditions with AND
    return f"({' OR '.join(clauses)})" if clauses else "1 = 0"


Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class UserTables:
    """A table with one row per `user_id` and its child rows (`per_user_tables`)."""

    name: str
    columns: dict[str, Any]
    child_name: str
    child_columns: dict[str, Any]


# `user_settings` (one row per user) and `user_setting_values` (one row per leaf key)
SETTINGS_TABLES = UserTables(
    "user_settings",
    transform.USER_SETTINGS_COLUMNS,
    "user_setting_values",
    transform.USER_SETTING_VALUES_COLUMNS,
)
# `user_accounts` (one row per user due) and `user_account_profiles` (linked platforms)
ACCOUNTS_TABLES = UserTables(
    "user_accounts",
    transform.USER_ACCOUNTS_COLUMNS,
    "user_account_profiles",
    transform.USER_ACCOUNT_PROFILES_COLUMNS,
)
UNLISTED_TABLE = "user_settings_unlisted"


@dataclass
class PerUserHandover:
    """What a per-user table pair hands over: its rows and child rows, spooled (the child rows
    with a tombstone for each user read with none); None: the run did not read the list."""

    rows: RowSpool
    child_rows: RowSpool


def per_user_tables(
    tables: UserTables,
    read: Callable[[], PerUserHandover | None],
    file_format: TFileFormat | None,
    contract: TSchemaContract = "evolve",
) -> list[Any]:
    """TABLES' two resources: the rows and the child rows of `read()` (asked when dlt extracts),
    a spooled batch at a time.

    The table is upserted on `user_id`. Its child table is delete-insert on merge_key `user_id`,
    which replaces a user's children as a whole, so a settings key or a linked platform that
    went away disappears here too. A user read with no child rows at all (settings `{}`, an
    account that now answers 404) would leave no `user_id` in the load to delete by: such a
    user gets one tombstone row (`transform.TOMBSTONE`, dlt's `hard_delete` hint), which deletes
    their old rows and is itself never stored.
    """

    def rows() -> Iterator[Rows]:
        got = read()
        yield from _or_empty(got.rows.batches() if got is not None else iter(()))

    def child_rows() -> Iterator[Rows]:
        got = read()
        yield from _or_empty(got.child_rows.batches() if got is not None else iter(()))

    return [
        _user_table(rows(), tables.name, tables.columns, "upsert", file_format, contract),
        _user_table(
            child_rows(),
            tables.child_name,
            tables.child_columns,
            "delete-insert",
            file_format,
            contract,
            key="merge_key",
        ),
    ]


def unlisted_table(read: Callable[[], Rows | None], file_format: TFileFormat | None) -> Any:
    """`user_settings_unlisted`: users a verified settings read no longer listed, upserted on
    `user_id`; a user listed again arrives as a tombstone that deletes the row."""

    def rows() -> Iterator[Rows]:
        yield read() or []

    return _user_table(
        rows(),
        UNLISTED_TABLE,
        transform.USER_SETTINGS_UNLISTED_COLUMNS,
        "upsert",
        file_format,
        "evolve",
    )


def _or_empty(batches: Iterator[Rows]) -> Iterator[Rows]:
    """BATCHES, or one empty batch when there are none: dlt takes a table's hints into the
    pipeline's schema from the items a resource yields, and a run that loads nothing into a
    table (nothing changed, or a window that did not read the list) must not drop it from the
    schema (a pipeline restored from the destination would no longer know it)."""
    empty = True
    for batch in batches:
        empty = False
        yield batch
    if empty:
        yield []


def _user_table(
    data: Iterator[Rows],
    name: str,
    columns: Any,
    strategy: str,
    file_format: TFileFormat | None,
    contract: TSchemaContract,
    key: str = "primary_key",
) -> Any:
    return dlt.resource(  # type: ignore[call-overload]
        data,
        name=name,
        write_disposition={"disposition": "merge", "strategy": strategy},
        columns=columns,
        schema_contract=contract,
        **{key: "user_id"},
        **Formats.hint(file_format),
    )


# -- the run's own records --------------------------------------------------------------------


def run_tables(
    read: Callable[[], tuple[SyncRecord, Rows]], file_format: TFileFormat | None
) -> list[Any]:
    """`sync_runs` and `data_quality`, in the same package as the data they describe: the run's
    record and its problems (`read()`, complete once every list is read)."""

    def problem_rows() -> Iterator[Rows]:
        yield read()[1]

    def run_rows() -> Iterator[dict[str, Any]]:
        record = read()[0]
        # the window cursor travels in the same package as the data it describes
        if record.observed_at is not None:
            dlt.current.source_state()["window_cursor"] = record.observed_at.isoformat()
        record.load_id = _load_id()
        yield record.row()

    return [
        dlt.resource(
            problem_rows(),
            name="data_quality",
            **Formats.hint(file_format),
            write_disposition="append",
            columns=ProblemRecord.columns(),
        ),
        dlt.resource(
            run_rows(),
            name="sync_runs",
            **Formats.hint(file_format),
            write_disposition="append",
            columns=SyncRecord.columns(),
        ),
    ]


def _load_id() -> str | None:
    """dlt's id of the load package being extracted (None outside an extract)."""

    try:
        return str(dlt.current.load_package_state()["load_id"])
    except CurrentLoadPackageStateNotAvailable:
        return None
