"""The two ends of a migration, one class per engine: what a schema holds (its tables, their
columns as the engine's catalogue types them, row counts), its rows read as Arrow batches, and
rows appended to a table through the engine's bulk path (PostgreSQL `COPY`, a DuckDB scan of
the Arrow batch).

Both read into the same Arrow types for the same kind of column, whatever the engine: integers,
floats, booleans, text, `decimal(p, s)`, dates, times, timestamps (with a time zone: UTC
instants), binary; a JSON column as its text. That is what lets `fingerprint` compare a table
on one engine with its copy on the other.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from devportal.warehouse import catalog_of, quote_ident

# rows per Arrow batch read or written: a few MB of a wide table, whatever its length
BATCH_ROWS = 50_000
# the name a DuckDB connection scans an Arrow batch under while it is appended
_SCANNED = "_devportal_migrate_batch"
_DECIMAL = re.compile(r"(?:decimal|numeric)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")


@dataclass(frozen=True)
class Column:
    """A column as the engine's catalogue names and types it."""

    name: str
    sql_type: str  # e.g. `BIGINT`, `TIMESTAMP WITH TIME ZONE`, `numeric(38,9)`, `jsonb`

    @property
    def kind(self) -> str:
        """The kind of value it holds, the same word on either engine: `int`, `double`,
        `real`, `bool`, `text`, `json`, `decimal(p,s)`, `timestamp`, `timestamptz`, `date`,
        `time`, `binary`, `uuid`; any other type as the engine writes it."""
        return kind_of(self.sql_type)

    @property
    def arrow_type(self) -> pa.DataType:
        return ARROW_TYPES.get(self.kind) or _decimal_arrow(self.kind) or pa.string()

    @property
    def as_text(self) -> bool:
        """Read as its text on either engine: JSON, UUIDs and any type without an Arrow
        counterpart here (the table's copy on the other engine casts the text back)."""
        native = self.kind in ARROW_TYPES or _decimal_arrow(self.kind) is not None
        return self.kind in ("json", "uuid") or not native


def kind_of(sql_type: str) -> str:
    text = " ".join(sql_type.lower().split())
    decimal = _DECIMAL.fullmatch(text)
    if decimal:
        return f"decimal({decimal.group(1)},{decimal.group(2)})"
    if text in _KINDS:
        return _KINDS[text]
    if text.startswith(("timestamp with time zone", "timestamptz")):
        return "timestamptz"
    if text.startswith(("timestamp", "datetime")):
        return "timestamp"
    if text.startswith(("time", "character", "varchar")):
        return "time" if text.startswith("time") else "text"
    return text


_KINDS = {
    "bigint": "int",
    "integer": "int",
    "int": "int",
    "smallint": "int",
    "tinyint": "int",
    "hugeint": "int",
    "double": "double",
    "double precision": "double",
    "float8": "double",
    "real": "real",
    "float": "real",
    "float4": "real",
    "boolean": "bool",
    "bool": "bool",
    "text": "text",
    "json": "json",
    "jsonb": "json",
    "date": "date",
    "blob": "binary",
    "bytea": "binary",
    "uuid": "uuid",
}

ARROW_TYPES: dict[str, pa.DataType] = {
    "int": pa.int64(),
    "double": pa.float64(),
    "real": pa.float32(),
    "bool": pa.bool_(),
    "text": pa.string(),
    "json": pa.string(),
    "uuid": pa.string(),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "binary": pa.binary(),
}


def _decimal_arrow(kind: str) -> pa.DataType | None:
    match = _DECIMAL.fullmatch(kind)
    if not match:
        return None
    precision, scale = int(match.group(1)), int(match.group(2))
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def normalized(batch: pa.RecordBatch, columns: Sequence[Column]) -> pa.RecordBatch:
    """BATCH with each column in the Arrow type of its kind (`Column.arrow_type`): timestamps in
    microseconds and instants in UTC, every integer as int64, whatever the engine gave."""
    arrays = []
    for column, array in zip(columns, batch.columns, strict=True):
        wanted = column.arrow_type
        arrays.append(array if array.type == wanted else pc.cast(array, wanted))
    return pa.RecordBatch.from_arrays(arrays, names=[c.name for c in columns])


class End:
    """One open connection to one engine; names are `(schema, table)`."""

    engine = ""
    errors: tuple[type[BaseException], ...] = ()  # what the driver raises for a refused statement

    def __init__(self, con: Any) -> None:
        self.con = con

    def qualify(self, schema: str, table: str) -> str:
        raise NotImplementedError

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def schemas(self) -> set[str]:
        rows = self.execute("select schema_name from information_schema.schemata")
        return {str(r[0]) for r in rows}

    def tables(self, schema: str) -> dict[str, list[Column]]:
        """The base tables of SCHEMA (views are not data) and their columns, in order."""
        raise NotImplementedError

    def count(self, schema: str, table: str) -> int:
        rows = self.execute(f"select count(*) from {self.qualify(schema, table)}")
        return int(rows[0][0])

    def batches(
        self, schema: str, table: str, columns: Sequence[Column]
    ) -> Iterator[pa.RecordBatch]:
        """Every row of the table, COLUMNS in that order, in `normalized` Arrow batches."""
        raise NotImplementedError

    def append(self, schema: str, table: str, batch: pa.RecordBatch) -> None:
        """Append BATCH's rows to the table (its columns by name, the rest NULL)."""
        raise NotImplementedError

    def commit(self) -> None:
        self.con.commit()

    def close(self) -> None:
        self.con.close()


class DuckDbEnd(End):
    engine = "duckdb"

    def __init__(self, con: Any) -> None:
        import duckdb  # deferred: loads DuckDB, kept out of startup

        super().__init__(con)
        self.errors = (duckdb.Error,)
        self.catalog = catalog_of(con)
        # instants come out in UTC (DuckDB gives Arrow timestamps in the session's zone)
        con.execute("set TimeZone = 'UTC'")

    def qualify(self, schema: str, table: str) -> str:
        return ".".join(quote_ident(p) for p in (self.catalog, schema, table))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self.con.execute(sql, list(params)) if params else self.con.execute(sql)
        return cursor.fetchall() if cursor.description else []

    def tables(self, schema: str) -> dict[str, list[Column]]:
        rows = self.execute(
            "select c.table_name, c.column_name, c.data_type from information_schema.columns c "
            "join information_schema.tables t on t.table_catalog = c.table_catalog "
            "and t.table_schema = c.table_schema and t.table_name = c.table_name "
            "where c.table_catalog = ? and c.table_schema = ? and t.table_type = 'BASE TABLE' "
            "order by c.table_name, c.ordinal_position",
            [self.catalog, schema],
        )
        found: dict[str, list[Column]] = {}
        for table, name, sql_type in rows:
            found.setdefault(str(table), []).append(Column(str(name), str(sql_type)))
        return found

    def batches(
        self, schema: str, table: str, columns: Sequence[Column]
    ) -> Iterator[pa.RecordBatch]:
        # JSON as its text: DuckDB may hand a JSON column to Arrow as an extension type
        selected = ", ".join(
            f"{quote_ident(c.name)}::varchar" if c.as_text else quote_ident(c.name) for c in columns
        )
        reader = self.con.sql(f"select {selected} from {self.qualify(schema, table)}")
        for batch in reader.to_arrow_reader(BATCH_ROWS):
            yield normalized(batch, columns)

    def append(self, schema: str, table: str, batch: pa.RecordBatch) -> None:
        names = ", ".join(quote_ident(n) for n in batch.schema.names)
        self.con.register(_SCANNED, pa.Table.from_batches([batch]))
        try:
            self.con.execute(
                f"insert into {self.qualify(schema, table)} ({names}) select {names} from "
                f"{_SCANNED}"
            )
        finally:
            self.con.unregister(_SCANNED)


class PostgresEnd(End):
    engine = "postgres"

    def __init__(self, con: Any) -> None:
        import psycopg2  # deferred: loads psycopg2, kept out of startup

        super().__init__(con)
        self.errors = (psycopg2.Error,)
        with con.cursor() as cursor:
            cursor.execute("set time zone 'UTC'")

    def qualify(self, schema: str, table: str) -> str:
        return f"{quote_ident(schema)}.{quote_ident(table)}"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.con.cursor() as cursor:
            cursor.execute(sql, list(params) if params else None)
            return list(cursor.fetchall()) if cursor.description else []

    def tables(self, schema: str) -> dict[str, list[Column]]:
        rows = self.execute(
            "select c.table_name, c.column_name, c.data_type, c.numeric_precision, "
            "c.numeric_scale from information_schema.columns c "
            "join information_schema.tables t on t.table_schema = c.table_schema "
            "and t.table_name = c.table_name "
            "where c.table_schema = %s and t.table_type = 'BASE TABLE' "
            "order by c.table_name, c.ordinal_position",
            [schema],
        )
        found: dict[str, list[Column]] = {}
        for table, name, sql_type, precision, scale in rows:
            typed = str(sql_type)
            if typed == "numeric" and precision is not None:
                typed = f"numeric({precision},{scale or 0})"
            found.setdefault(str(table), []).append(Column(str(name), typed))
        return found

    def batches(
        self, schema: str, table: str, columns: Sequence[Column]
    ) -> Iterator[pa.RecordBatch]:
        # JSON (and any type without an Arrow counterpart here) as its text: the driver would
        # parse JSON into Python objects
        selected = ", ".join(
            f"{quote_ident(c.name)}::text" if c.as_text else quote_ident(c.name) for c in columns
        )
        # a server-side cursor: the table is never held in memory whole
        with self.con.cursor(name="devportal_migrate") as cursor:
            cursor.itersize = BATCH_ROWS
            cursor.execute(f"select {selected} from {self.qualify(schema, table)}")
            while rows := cursor.fetchmany(BATCH_ROWS):
                yield _arrow_batch(rows, columns)

    def append(self, schema: str, table: str, batch: pa.RecordBatch) -> None:
        names = ", ".join(quote_ident(n) for n in batch.schema.names)
        data = io.BytesIO()
        # every value quoted: an empty string ("") stays apart from NULL (nothing), as COPY
        # reads them
        pa_csv.write_csv(
            _csv_ready(batch),
            data,
            pa_csv.WriteOptions(include_header=False, quoting_style="all_valid"),
        )
        data.seek(0)
        with self.con.cursor() as cursor:
            cursor.copy_expert(
                f"copy {self.qualify(schema, table)} ({names}) from stdin with (format csv)", data
            )


def _arrow_batch(rows: list[tuple[Any, ...]], columns: Sequence[Column]) -> pa.RecordBatch:
    arrays = []
    for index, column in enumerate(columns):
        values = [row[index] for row in rows]
        if column.kind == "binary":
            values = [bytes(v) if v is not None else None for v in values]
        arrays.append(pa.array(values, type=column.arrow_type))
    return pa.RecordBatch.from_arrays(arrays, names=[c.name for c in columns])


def _csv_ready(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Binary columns as PostgreSQL's hex text (`\\x0aff`), which COPY reads into bytea; every
    other type is written by Arrow's CSV writer as PostgreSQL reads it."""
    arrays = []
    for array in batch.columns:
        if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
            array = pa.array(
                [None if v is None else "\\x" + v.hex() for v in array.to_pylist()], pa.string()
            )
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)
