"""The dlt resources one run hands over, each from what was read: SCD2 history of
subscriptions, the per-user tables, and the run's own records (`sync_runs`, `data_quality`);
and the file formats they are written in for the destination.

The tables they write and their keys are described in `source.py`'s docstring.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import dlt
from dlt.common.schema.typing import TFileFormat, TSchemaContract

from devportal import extras, transform
from devportal.reading import AccountsRead, SettingsRead, SubscriptionsRead
from devportal.runrecord import RunRecord

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


def formats_for(pipeline: Any | None) -> Formats:
    """Dicts as jsonl where the destination loads it (DuckDB: its default `insert_values` costs
    several times the memory and time, measured in benchmarks/results/profile-*.md), Arrow
    tables then as dlt chooses (parquet). Where jsonl is not loadable, Arrow tables as csv
    (PostgreSQL: loaded with COPY, the fastest it has) and dicts as dlt chooses (`insert_values`:
    dlt's COPY reads an empty string as NULL, and settings and profiles hold empty strings that
    must stay ''). No destination known yet: dlt's choice."""
    destination = getattr(pipeline, "destination", None)
    if destination is None:
        return Formats(rows=None, arrow=None)
    supported = destination.capabilities().supported_loader_file_formats
    if "jsonl" in supported:
        return Formats(rows="jsonl", arrow=None)
    if "csv" in supported:
        # dicts stay `insert_values`: dlt's csv COPY loads an empty string as NULL
        return Formats(rows=None, arrow="csv")
    return Formats(rows=None, arrow=None)


# -- resources: each hands over one read result -------------------------------------------------


def subscriptions_resource(
    read: SubscriptionsRead,
    mode: str,
    observed_at: datetime,
    file_format: TFileFormat | None,
    plan: extras.Plan,
    contract: TSchemaContract,
    stored: dict[str, Any] | None,
    spool_dir: Path | None = None,
) -> Any:
    """SCD2 history of subscriptions, its scope decided by what was read.

    Each spooled batch gets every extra column of the run (`plan`), NULL where a row has none.
    A contract that may discard rows (`discard_row`) while this run brings a new column to an
    existing table: a discarded row never reaches staging, so a sweep would close its
    subscription; such a run closes only the subscriptions it loaded, as a window does.
    `mode`: `sweep` or `window`; `observed_at`: the run's clock, the history boundary;
    `stored`: the columns the destination's `subscriptions` table has (None: no table yet).
    `spool_dir`: the run's own spool folder, removed once its rows are handed over."""
    staged_only = extras.can_discard_rows(contract) and bool(stored) and bool(plan.new_columns())
    if staged_only and mode == "sweep":
        log.warning(
            "schema_contract discards rows with new fields (%s): this sweep closes only the "
            "subscriptions it loaded, so that a discarded row does not close its subscription",
            ", ".join(plan.new_columns()),
        )
    disposition: dict[str, Any] = {
        "disposition": "merge",
        "strategy": "scd2",
        "row_version_column_name": "_row_version",
        "boundary_timestamp": observed_at,  # history follows the server's clock
        # Always set: dlt keeps a hint absent from a later run's resource, so a scope left
        # unset would be the previous run's (a window's scope would then stop every later
        # sweep from retiring anything).
        "destination_scope": _scope(read, mode, staged_only),
    }

    # a contract that drops a new column's values: those fields version nothing, or a row
    # would get a version that differs from its last in nothing stored
    dropped = plan.new_paths() if extras.discards_values(contract) and stored else set()

    def rows() -> Iterator[Any]:
        dlt_log = logging.getLogger("dlt")
        dlt_log.addFilter(_json_hint_notice)
        try:
            for spool in read.spools:
                ignored = spool.fields.ignored
                for batch in spool.batches():
                    if dropped:
                        batch = transform.rehash(batch, _ignoring(ignored, dropped))
                    yield plan.expand(batch)
        finally:
            dlt_log.removeFilter(_json_hint_notice)
            read.discard()
            if spool_dir is not None:
                shutil.rmtree(spool_dir, ignore_errors=True)

    return dlt.resource(  # type: ignore[call-overload]
        rows(),
        name="subscriptions",
        write_disposition=disposition,
        columns={**transform.SUBSCRIPTIONS_COLUMNS, **plan.hints()},
        primary_key=["id", "is_test"],  # live and test ids may overlap: two histories
        schema_contract=contract,
        **Formats.hint(file_format),
    )


def _ignoring(
    ignored: Callable[[extras.Path], bool], dropped: set[extras.Path]
) -> Callable[[extras.Path], bool]:
    return lambda path: ignored(path) or path in dropped


def _json_hint_notice(record: logging.LogRecord) -> bool:
    """Drop dlt's warning that a hint differs from the Arrow type: a JSON column travels as
    Arrow text with the hint `json`, on purpose (an Arrow type cannot hold any JSON)."""
    return not str(record.msg).startswith(
        "In resource: subscriptions, when merging arrow schema with dlt schema"
    )


def _scope(read: SubscriptionsRead, mode: str, staged_only: bool = False) -> str:
    """The current versions this run may retire: only in the partitions it read (a live run
    never touches test rows, whatever their ids). A verified sweep: every version of the
    partition but those settled as staying (`Spool.kept`); a window or an unverified read, or a
    sweep that could not settle what it did not list, or whose rows a contract may discard
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


def settings_tables(
    read: SettingsRead, file_format: TFileFormat | None, contract: TSchemaContract
) -> list[Any]:
    """`user_settings` (one row per user) and `user_setting_values` (one row per leaf key)."""
    return _per_user_tables(
        read.users,
        "user_settings",
        transform.USER_SETTINGS_COLUMNS,
        read.values,
        "user_setting_values",
        transform.USER_SETTING_VALUES_COLUMNS,
        file_format,
        contract,
    )


def accounts_tables(
    read: AccountsRead, file_format: TFileFormat | None, contract: TSchemaContract
) -> list[Any]:
    """`user_accounts` (one row per user due) and `user_account_profiles` (linked platforms)."""
    return _per_user_tables(
        read.accounts,
        "user_accounts",
        transform.USER_ACCOUNTS_COLUMNS,
        read.profiles,
        "user_account_profiles",
        transform.USER_ACCOUNT_PROFILES_COLUMNS,
        file_format,
        contract,
    )


def _per_user_tables(
    rows: list[dict[str, Any]],
    name: str,
    columns: dict[str, Any],
    child_rows: list[dict[str, Any]],
    child_name: str,
    child_columns: dict[str, Any],
    file_format: TFileFormat | None,
    contract: TSchemaContract = "evolve",
) -> list[Any]:
    """A table with one row per `user_id` (upserted) and its child rows, replaced per user.

    delete-insert on merge_key `user_id` replaces a user's children as a whole, so a settings
    key or a linked platform that went away disappears here too. A user read with no child rows
    at all (settings `{}`, an account that now answers 404) would leave no `user_id` in the
    load to delete by: such a user gets one tombstone row (`transform.TOMBSTONE`, dlt's
    `hard_delete` hint), which deletes their old rows and is itself never stored.
    """
    child_rows = child_rows + transform.tombstones(
        (row["user_id"] for row in rows), child_rows, child_columns
    )
    return [
        dlt.resource(
            [rows],
            name=name,
            **Formats.hint(file_format),
            write_disposition={"disposition": "merge", "strategy": "upsert"},
            columns=columns,
            primary_key="user_id",
            schema_contract=contract,
        ),
        dlt.resource(
            [child_rows],
            name=child_name,
            **Formats.hint(file_format),
            write_disposition={"disposition": "merge", "strategy": "delete-insert"},
            columns=child_columns,
            merge_key="user_id",
            schema_contract=contract,
        ),
    ]


# -- the run's own records --------------------------------------------------------------------

DATA_QUALITY_COLUMNS: dict[str, dict[str, Any]] = {
    "run_id": {"data_type": "text", "nullable": False},
    "table_name": {"data_type": "text"},
    "column_name": {"data_type": "text"},
    "problem": {"data_type": "text"},
    "row_count": {"data_type": "bigint"},
    "sample_ids": {"data_type": "text"},
    "sample_values": {"data_type": "text"},
}


def run_tables(
    record: RunRecord,
    problems: list[dict[str, Any]],
    file_format: TFileFormat | None,
) -> list[Any]:
    """`sync_runs` and `data_quality`, in the same package as the data they describe."""

    def run_rows() -> Iterator[dict[str, Any]]:
        # the window cursor travels in the same package as the data it describes
        if record.observed_at is not None:
            dlt.current.source_state()["window_cursor"] = record.observed_at.isoformat()
        record.load_id = _load_id()
        yield record.row()

    return [
        dlt.resource(
            [problems],
            name="data_quality",
            **Formats.hint(file_format),
            write_disposition="append",
            columns=DATA_QUALITY_COLUMNS,
        ),
        dlt.resource(
            run_rows(),
            name="sync_runs",
            **Formats.hint(file_format),
            write_disposition="append",
            columns=RunRecord.columns(),
        ),
    ]


def _load_id() -> str | None:
    """dlt's id of the load package being extracted (None outside an extract)."""
    from dlt.common.storages.exceptions import CurrentLoadPackageStateNotAvailable

    try:
        return str(dlt.current.load_package_state()["load_id"])
    except CurrentLoadPackageStateNotAvailable:
        return None
