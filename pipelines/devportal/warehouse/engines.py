"""The engines the SQL models and the report run on, behind one small connection API.

- `duckdb`: the warehouse file (`--warehouse`), opened by `warehouse.connect` (one way, one-line
  errors); tables are named with the file's catalog (`"<catalog>"."devportal"."subscriptions"`).
- `postgres`: a PostgreSQL server, reached with dlt's own credentials for the `postgres`
  destination (`DESTINATION__POSTGRES__CREDENTIALS`, or `[destination.postgres.credentials]` in
  `.dlt/secrets.toml`; a password optional: `config.postgres_login`), so the pipeline that
  loads and the models that read use one setting, resolved one way.
  Raw tables live in the schema `devportal`, models in `analytics`, in that database.

Parameters are written `?` in SQL given to `Engine.execute`, on every engine.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from devportal.base.errors import DevportalError, first_line
from devportal.warehouse.connection import catalog_of, quote_ident
from devportal.warehouse.connection import connect as connect_duckdb
from devportal.warehouse.target import Target, Where


class Engine:
    """One open connection. `dialect` is sqlglot's name for the engine's SQL."""

    dialect = ""
    catalog: str | None = None  # DuckDB: the file's catalog; PostgreSQL: None (the database)
    errors: tuple[type[BaseException], ...] = ()  # what the driver raises for a bad statement

    def __init__(self, con: Any) -> None:
        self.con = con

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; its rows (none for a statement without a result)."""
        raise NotImplementedError

    def columns(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Column names and rows of one query."""
        raise NotImplementedError

    def frame(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """A pandas DataFrame of one query (pandas imported here, on use)."""
        import pandas as pd  # deferred: loads pandas, kept out of startup

        names, rows = self.columns(sql, params)
        return pd.DataFrame.from_records(rows, columns=names)

    def qualify(self, schema: str, name: str) -> str:
        """A table's full quoted name."""
        parts = (self.catalog, schema, name) if self.catalog else (schema, name)
        return ".".join(quote_ident(p) for p in parts)

    def relations(self, schema: str) -> dict[str, str]:
        """Lower-cased names of the tables and views in `schema`: name -> `table` | `view`."""
        rows = self.execute(
            "select lower(table_name), table_type from information_schema.tables "
            "where table_schema = ?" + (" and table_catalog = ?" if self.catalog else ""),
            [schema, self.catalog] if self.catalog else [schema],
        )
        return {name: "view" if kind == "VIEW" else "table" for name, kind in rows}

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All statements inside commit together, or none does."""
        self.execute("begin transaction")
        try:
            yield
        except BaseException:
            self.execute("rollback")
            raise
        self.execute("commit")


class DuckDbEngine(Engine):
    dialect = "duckdb"

    def __init__(self, con: Any) -> None:
        import duckdb  # deferred: loads DuckDB, kept out of startup

        super().__init__(con)
        self.catalog = catalog_of(con)
        self.errors = (duckdb.Error,)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self.con.execute(sql, list(params)) if params else self.con.execute(sql)
        return cursor.fetchall() if cursor.description else []

    def columns(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        cursor = self.con.execute(sql, list(params)) if params else self.con.execute(sql)
        return [d[0] for d in cursor.description], cursor.fetchall()

    def frame(self, sql: str, params: Sequence[Any] = ()) -> Any:
        cursor = self.con.execute(sql, list(params)) if params else self.con.execute(sql)
        return cursor.df()


class PostgresEngine(Engine):
    dialect = "postgres"

    def __init__(self, con: Any) -> None:
        import psycopg2  # deferred: loads psycopg2, kept out of startup

        super().__init__(con)
        self.errors = (psycopg2.Error,)

    def _cursor(self, sql: str, params: Sequence[Any]) -> Any:
        cursor = self.con.cursor()
        if params:
            cursor.execute(sql.replace("%", "%%").replace("?", "%s"), list(params))
        else:
            cursor.execute(sql)
        return cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        statement = sql.strip().lower()
        if statement in ("begin transaction", "commit", "rollback"):
            # psycopg2 opens a transaction with the first statement; commit/rollback end it
            if statement == "commit":
                self.con.commit()
            elif statement == "rollback":
                self.con.rollback()
            return []
        with self._cursor(sql, params) as cursor:
            return list(cursor.fetchall()) if cursor.description else []

    def columns(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        with self._cursor(sql, params) as cursor:
            return [d[0] for d in cursor.description], list(cursor.fetchall())


def postgres_dsn() -> str:
    """The connection string of dlt's `postgres` destination (`config.postgres_login`: the same
    credentials the sync's pipeline loads with; a password is optional)."""
    from devportal.settings.config import postgres_login  # deferred: loads dlt, kept out of startup

    return str(postgres_login().to_native_representation())


def postgres_connection(**options: Any) -> Any:
    """A psycopg2 connection to the database of dlt's `postgres` destination (OPTIONS go to
    `psycopg2.connect`, e.g. `application_name`); one line when it cannot be made."""
    import psycopg2  # deferred: loads psycopg2, kept out of startup

    try:
        return psycopg2.connect(postgres_dsn(), **options)
    except psycopg2.Error as err:
        # from None: a connection refused names host and user, but a DSN libpq cannot parse
        # ("invalid dsn: ...") is quoted, password included
        cause = first_line(err)
        fix = (
            "the server asks for a password: add it to the URI (postgresql://user:password@...), "
            "or to ~/.pgpass or PGPASSWORD"
            if "no password supplied" in cause
            else "check DESTINATION__POSTGRES__CREDENTIALS and that the server is running"
        )
        raise DevportalError(f"cannot connect to PostgreSQL ({cause}); {fix}") from None


@contextmanager
def connect(target: Where, *, read_only: bool = False) -> Iterator[Engine]:
    """An engine on TARGET (a `Target`, or the DuckDB warehouse file's path): DuckDB at its
    warehouse, or its destination's server."""
    target = Target.of(target)
    if target.require_engine() == "duckdb":
        with connect_duckdb(target.warehouse, read_only=read_only) as con:
            yield DuckDbEngine(con)
        return
    con = postgres_connection()
    try:
        # dates cut from timestamps follow the session's zone: UTC, as DuckDB and the API
        with con.cursor() as cursor:
            cursor.execute("set time zone 'UTC'")
        con.commit()
        if read_only:
            con.set_session(readonly=True)
        yield PostgresEngine(con)
    finally:
        con.close()
