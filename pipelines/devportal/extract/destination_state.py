"""What the destination already holds that a run needs to know, read through dlt's SQL client.

The source asks before it reads the API: the clock of the last run (history never goes back in
time), the open subscription versions (what a sweep would close, the mass-close guard), which
partitions a verified sweep has covered (a window needs one), which users' accounts are fresh,
and the fields earlier runs saw (what a run's schema changes are told against, `shape`). `sync`
asks for the history counts before and after, and the columns a run's new fields landed in.
Tables are named through the pipeline's own dataset, so a user's pipeline with another dataset
name works the same; a destination without the tables yet (a first run) answers "nothing".
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from dlt.common.configuration.exceptions import ConfigurationException
from dlt.common.destination.exceptions import DestinationException
from dlt.destinations.exceptions import DatabaseUndefinedRelation

from devportal.base.errors import DevportalError, WarehouseBusy, first_line
from devportal.extract import schema_drift
from devportal.extract.reading import HeldSettings
from devportal.warehouse import damage_in, damaged_error, open_error, shown

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

# a destination column's SQL type (DuckDB's or PostgreSQL's information_schema) -> dlt's type,
# by the type's first word
_DLT_TYPES = {
    "bigint": "bigint",
    "integer": "bigint",
    "smallint": "bigint",
    "hugeint": "bigint",
    "double": "double",
    "real": "double",
    "float": "double",
    "boolean": "bool",
    "varchar": "text",
    "character": "text",
    "text": "text",
    "json": "json",
    "jsonb": "json",
    "timestamp": "timestamp",
    "date": "date",
    "time": "time",
    "decimal": "decimal",
    "numeric": "decimal",
    "blob": "binary",
    "bytea": "binary",
}


class DatasetReader:
    """One session on a pipeline's dataset for a few bookkeeping queries (None: no pipeline)."""

    def __init__(self, pipeline: Pipeline | None) -> None:
        self._pipeline = pipeline
        self._client: Any = None

    def __enter__(self) -> DatasetReader:
        """Open the session. A destination that cannot be opened is an error, never "nothing
        held": an empty answer would let a sweep past the mass-close guard and stamp history
        before the last run's."""
        if self._pipeline is not None:
            expected: tuple[type[BaseException], ...] = (
                DestinationException,
                ConfigurationException,
                *_driver_errors(),
            )
            try:
                self._client = self._pipeline.sql_client()
                self._client.open_connection()
            except expected as err:
                self._client = None
                # the cause may quote the destination's credentials (a DSN with its password)
                raise _cannot_open(self._pipeline, err) from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close_connection()
            self._client = None

    def table(self, name: str) -> str:
        return str(self._client.make_qualified_table_name(name))

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]] | None:
        """Rows of `sql` (`{name}` placeholders are tables of the dataset), or None when a
        table does not exist yet; a real failure shows in the load."""

        if self._client is None:
            return None
        try:
            return list(self._client.execute_sql(self._qualified(sql), *params) or [])
        except DatabaseUndefinedRelation:  # a first run: the table is created by its load
            return None
        except DestinationException as err:
            raise _cannot_read(self._pipeline, err) from err

    def int_column(self, sql: str, *params: Any) -> np.ndarray:
        """The first column as an int64 array (DuckDB's numpy fetch: a million ids in ms)."""
        return self.int_columns(sql, *params)[0]

    def int_columns(self, sql: str, *params: Any) -> list[np.ndarray]:
        """Every column as an int64 array, in the query's order (one empty array when there is
        no pipeline or no table yet)."""

        empty = [np.zeros(0, dtype=np.int64)]
        if self._client is None:
            return empty
        try:
            with self._client.execute_query(self._qualified(sql), *params) as cursor:
                native: Any = getattr(cursor, "native_cursor", None)
                if hasattr(native, "fetchnumpy"):
                    columns = native.fetchnumpy()
                    return [np.asarray(c, dtype=np.int64) for c in columns.values()] or empty
                rows = cursor.fetchall()
                width = len(cursor.description or ()) or 1
                return [np.array([r[i] for r in rows], dtype=np.int64) for i in range(width)]
        except DatabaseUndefinedRelation:  # no table yet: nothing is current
            return empty
        except DestinationException as err:
            raise _cannot_read(self._pipeline, err) from err

    def _qualified(self, sql: str) -> str:
        names = (
            "subscriptions",
            "sync_runs",
            "user_accounts",
            "user_settings",
            "user_settings_unlisted",
            "_dlt_loads",
        )
        return sql.format(**{n: self.table(n) for n in names if "{" + n + "}" in sql})

    # -- the questions a run asks ----------------------------------------------------------

    def last_observed(self) -> datetime | None:
        """The clock of the last run loaded (`sync_runs.observed_at`)."""
        rows = self.query("SELECT max(observed_at) FROM {sync_runs}")
        last = rows[0][0] if rows else None
        return last.replace(tzinfo=None) if last is not None else None

    def current_ids(self, is_test: bool) -> np.ndarray:
        """Ids of the open subscription versions of one partition."""
        return self.int_column(
            "SELECT id FROM {subscriptions} WHERE _dlt_valid_to IS NULL AND is_test = %s", is_test
        )

    def swept(self) -> frozenset[bool]:
        """The partitions (`is_test`) a verified sweep of the whole subscription list covered:
        a run with mode `sweep` whose report for that partition (`sync_runs.sweeps`, no
        `start`/`end`) is `verified`."""
        found: set[bool] = set()
        for (sweeps,) in self.query("SELECT sweeps FROM {sync_runs} WHERE mode = 'sweep'") or ():
            reports = json.loads(sweeps) if isinstance(sweeps, str) else sweeps
            for report in reports or ():
                params = report.get("params") or {}
                if (
                    str(report.get("endpoint", "")).endswith("/subscriptions")
                    and report.get("verified") is True
                    and not {"start", "end"} & set(params)
                ):
                    found.add(str(params.get("is_test", "")).lower() == "true")
        return frozenset(found)

    def subscribers(self) -> np.ndarray:
        """The users of live subscriptions (a test subscription's user is not a user of the
        live app). Arrays, not sets: 200,000 users as Python ints cost a sweep tens of MB."""
        return self.int_column(
            "SELECT DISTINCT service_id FROM {subscriptions} "
            "WHERE service_id IS NOT NULL AND NOT is_test"
        )

    def held_settings(self) -> tuple[HeldSettings, bool]:
        """Each stored user's settings version and the users marked unlisted; and whether the
        table has the columns this version of devportal writes (False: a settings read must
        add them before the models can read them)."""
        columns = self.columns("user_settings")
        if not columns:
            return HeldSettings(), True
        current = "_row_version" in columns
        # a row stored before versions were kept has none: 0, which no read matches
        version = "coalesce(_row_version, 0)" if current else "0"
        ids, versions = self.int_columns(
            f"SELECT user_id, {version} FROM {{user_settings}} ORDER BY user_id"
        )
        unlisted = self.int_column("SELECT user_id FROM {user_settings_unlisted}")
        return HeldSettings(ids, versions, np.unique(unlisted)), current

    def last_refreshed(self) -> dict[str, datetime]:
        """When each list without a time filter was last read whole, by the clock of the loaded
        run that did (`sync_runs.refreshed`; a run recorded before it: every resource it read)."""
        has_column = "refreshed" in self.columns("sync_runs")
        refreshed = "refreshed" if has_column else "NULL"
        rows = self.query(
            f"SELECT observed_at, {refreshed}, resources FROM {{sync_runs}} "
            "WHERE _dlt_load_id IN (SELECT load_id FROM {_dlt_loads} WHERE status = 0)"
        )
        last: dict[str, datetime] = {}
        for observed_at, tables, resources in rows or ():
            if observed_at is None:
                continue
            names = _json(tables, []) if tables is not None else str(resources or "").split(",")
            when = observed_at.replace(tzinfo=None)
            for name in names:
                if name and (name not in last or last[name] < when):
                    last[str(name)] = when
        return last

    def account_times(self) -> tuple[np.ndarray, np.ndarray]:
        """When each user's account was last fetched: (user ids, sorted; fetch times as
        datetime64[us]), accounts never fetched left out."""
        rows = self.query(
            "SELECT user_id, fetched_at FROM {user_accounts} "
            "WHERE fetched_at IS NOT NULL ORDER BY user_id"
        )
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype="datetime64[us]")
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        times = np.array([r[1].replace(tzinfo=None) for r in rows], dtype="datetime64[us]")
        return ids, times

    def history_counts(self) -> tuple[int, int]:
        """(all subscription versions, open ones)."""
        rows = self.query(
            "SELECT count(*), count(*) FILTER (WHERE _dlt_valid_to IS NULL) FROM {subscriptions}"
        )
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def columns(self, table: str) -> dict[str, str]:
        """The columns of one table of the dataset and their dlt types ({} when it does not
        exist yet), from the destination's own catalogue."""
        if self._client is None:
            return {}
        rows = self.query(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = %s",
            self._client.dataset_name,
            table,
        )
        return {str(name): _dlt_type(str(sql_type)) for name, sql_type in rows or ()}

    def held_fields(self) -> tuple[schema_drift.Fields, schema_drift.Fields]:
        """(known, last_full) as `shape.changes` takes them, from the loaded runs that recorded
        the fields they saw (none on a warehouse older than `sync_runs.fields`): every path
        earlier runs saw, each with the entry of the last run that saw it and the type of its
        column here; and per table, the fields of the latest run that read it in full."""
        if "fields" not in self.columns("sync_runs"):
            return {}, {}
        loaded = (
            "fields IS NOT NULL "
            "AND _dlt_load_id IN (SELECT load_id FROM {_dlt_loads} WHERE status = 0)"
        )
        # each distinct record once, in the order of the last run that had it: the same as
        # every run in order (a later run's entry wins), without reading years of runs
        known: schema_drift.Fields = {}
        distinct = self.query(
            "SELECT fields FROM (SELECT fields, max(observed_at) AS last_seen FROM {sync_runs} "
            f"WHERE {loaded} GROUP BY fields) AS seen ORDER BY last_seen"
        )
        for (fields,) in distinct or ():
            for table, paths in _json(fields).items():
                if isinstance(paths, dict):
                    known.setdefault(str(table), {}).update(paths)
        for table, paths in known.items():
            types = self.columns(table)
            for path, entry in paths.items():
                column_type = types.get(str(entry.get("column")))
                if column_type is not None:
                    paths[path] = {**entry, "column_type": column_type}
        # the latest full read of each table, newest run first
        latest: dict[str, str] = {}
        runs = self.query(
            f"SELECT _dlt_load_id, mode, sweeps FROM {{sync_runs}} WHERE {loaded} "
            "ORDER BY observed_at DESC, _dlt_load_id DESC"
        )
        for load_id, mode, sweeps in runs or ():
            reports = [s for s in _json(sweeps, []) if isinstance(s, dict)]
            for table in schema_drift.full_tables(str(mode), reports):
                latest.setdefault(table, str(load_id))
            if set(latest) >= {"subscriptions", "user_settings"}:
                break
        last_full: schema_drift.Fields = {}
        for table, load_id in latest.items():
            rows = self.query("SELECT fields FROM {sync_runs} WHERE _dlt_load_id = %s", load_id)
            paths = _json(rows[0][0]).get(table) if rows else None
            last_full[table] = dict(paths) if isinstance(paths, dict) else {}
        return known, last_full


@dataclass(frozen=True)
class Holdings:
    """What a run needs to know of the destination, read in one short session before the API is
    read (a DuckDB file is not held open while the lists are paged: readers may open it)."""

    last_observed: datetime | None = None
    # open ids by is_test, both partitions (a sweep of one must know the ids the other shares)
    current: dict[bool, np.ndarray] = field(default_factory=dict)
    swept: frozenset[bool] = frozenset()  # partitions a verified sweep covered
    known_users: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # (user ids, sorted; when each account was last fetched, datetime64[us])
    account_times: tuple[np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.zeros(0, dtype=np.int64), np.zeros(0, dtype="datetime64[us]"))
    )
    # the fields earlier loaded runs saw (`shape.changes`' `known` and `last_full`); empty on a
    # warehouse whose runs recorded none
    known_fields: schema_drift.Fields = field(default_factory=dict)
    last_full_fields: schema_drift.Fields = field(default_factory=dict)
    settings: HeldSettings = field(default_factory=HeldSettings)
    # `user_settings` has the columns this version writes (or no table yet)
    settings_current: bool = True
    # when each list without a time filter was last read whole (`DatasetReader.last_refreshed`)
    refreshed: dict[str, datetime] = field(default_factory=dict)

    @classmethod
    def read(cls, pipeline: Pipeline | None, session: DatasetReader | None = None) -> Holdings:
        """What PIPELINE's dataset holds, read in SESSION (an open `DatasetReader` of it, which
        spares the warehouse another open) or a session of its own."""
        with DatasetReader(pipeline) if session is None else nullcontext(session) as dest:
            known_fields, last_full_fields = dest.held_fields()
            settings, settings_current = dest.held_settings()
            # users seen: in live subscriptions or in the settings list
            known_users = np.union1d(dest.subscribers(), settings.user_ids)
            return cls(
                settings=settings,
                settings_current=settings_current,
                refreshed=dest.last_refreshed(),
                last_observed=dest.last_observed(),
                current={t: dest.current_ids(t) for t in (False, True)},
                swept=dest.swept(),
                known_users=known_users,
                account_times=dest.account_times(),
                known_fields=known_fields,
                last_full_fields=last_full_fields,
            )

    def current_ids(self, is_test: bool) -> np.ndarray:
        return self.current.get(is_test, np.zeros(0, dtype=np.int64))

    def accounts_due(
        self, seen: set[int], observed_at: datetime, ttl_days: float, refresh: bool = True
    ) -> list[int]:
        """Users whose accounts were never fetched, of those SEEN now; with REFRESH, also every
        user seen now or before whose account is older than the TTL."""
        now = np.fromiter(seen, dtype=np.int64, count=len(seen))
        users = np.union1d(now, self.known_users) if refresh else np.unique(now)
        ids, times = self.account_times
        at = np.searchsorted(ids, users)
        found = at < ids.size
        found[found] = ids[at[found]] == users[found]
        due = ~found
        if refresh and ids.size:
            fresh_after = np.datetime64(observed_at - timedelta(days=ttl_days), "us")
            due[found] = times[at[found]] <= fresh_after
        return [int(u) for u in users[due]]


def _json(value: Any, empty: Any = None) -> Any:
    """A JSON column's value decoded (DuckDB returns text, PostgreSQL decoded); EMPTY (default
    {}) for null or another shape."""
    empty = {} if empty is None else empty
    decoded = json.loads(value) if isinstance(value, str) else value
    return decoded if isinstance(decoded, type(empty)) else empty


def _dlt_type(sql_type: str) -> str:
    """dlt's data type of a column of SQL_TYPE (`VARCHAR`, `double precision`, `DECIMAL(38,9)`,
    `timestamp with time zone`); the type itself, lowered, when none is known."""
    word = sql_type.strip().lower().replace("(", " ").split(" ", 1)[0]
    return _DLT_TYPES.get(word, word)


def _driver_errors() -> tuple[type[BaseException], ...]:
    """What the engines' drivers raise when dlt does not wrap it (PostgreSQL's connect)."""
    import duckdb  # deferred: loads DuckDB, kept out of startup

    errors: list[type[BaseException]] = [duckdb.Error, OSError]
    try:
        import psycopg2  # deferred: loads psycopg2, kept out of startup

        errors.append(psycopg2.Error)
    except ImportError:  # pragma: no cover - declared, but a DuckDB-only install may lack it
        pass
    return tuple(errors)


def _cannot_open(pipeline: Pipeline, err: BaseException) -> DevportalError:
    cause = first_line(err)
    if "lock" in cause.lower():  # DuckDB: another process has the file open
        return WarehouseBusy(
            f"the warehouse is open in another process ({cause}); close it (a notebook, a SQL "
            "client, a report) and run again: nothing was read from the API"
        )
    name = getattr(getattr(pipeline, "destination", None), "destination_name", "destination")
    database = _duckdb_file(pipeline)
    if database is not None:  # devportal's DuckDB warehouse (its draft): the file's own line
        return open_error(database, err)
    return DevportalError(
        f"cannot open the {name} destination to read what it holds ({cause}); check its "
        f"credentials (DESTINATION__{str(name).upper()}__CREDENTIALS) and that it is reachable: "
        "nothing was read from the API"
    )


def _duckdb_file(pipeline: Pipeline | None) -> Path | None:
    """The DuckDB file PIPELINE loads into (the warehouse's draft), or None for another
    destination."""
    # deferred: loads dlt, kept out of startup
    from devportal.warehouse.destination import warehouse_duckdb

    destination = getattr(pipeline, "destination", None)
    if not isinstance(destination, warehouse_duckdb):
        return None
    database = (destination.config_params.get("credentials") or {}).get("database")
    return Path(database) if database else None


def _cannot_read(pipeline: Pipeline | None, err: BaseException) -> DevportalError:
    database = _duckdb_file(pipeline)
    damage = damage_in(err) if database is not None else None
    if database is not None and damage is not None:  # the warehouse file is damaged
        return damaged_error(
            shown(database), first_line(damage).replace(str(database), shown(database))
        )
    return DevportalError(
        f"cannot read what the destination holds ({first_line(err)}): nothing was read from the "
        "API; check that the dataset was written by devportal"
    )
