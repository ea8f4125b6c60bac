"""Builds the SQL models in `sql/` into the warehouse's `analytics` schema and runs their tests.

A model is one file, `sql/staging/<name>.sql` or `sql/marts/<name>.sql`, holding one SELECT;
it becomes the table `analytics.<name>`. The file opens with a comment stating its grain and
definitions; lines of that comment starting with `@` are read by this runner:

    -- @test unique(col[, col...])            the columns together identify a row
    -- @test not_null(col[, col...])          each column is never NULL
    -- @test accepted_values(col: a, b, c)    non-NULL values are one of these
    -- @optional devportal.<table>(col type, ...)
        the raw table may not exist yet (dlt creates a table with its first rows): until it
        does, the model reads an empty relation of these columns in its place

Build order comes from the SQL itself: sqlglot parses every model and each `analytics.<name>`
it reads is a dependency (graphlib's TopologicalSorter, no hand-kept list). A model reading a
raw table that does not exist and is not declared optional is skipped with a note, and so is
everything built on it (`analytics.app_releases` stays absent until a manifest is recorded).

Every model is materialised as a TABLE, not a view: its numbers are frozen at build time
together with `analytics.as_of`, so the report, the notebook and any SQL client agree until the
next build; readers get plain fast tables; and a DuckDB view keeps its SQL text and re-binds it
on every read, so a view over `devportal.<table>` breaks as soon as the file is attached under
another catalog name or its catalog is called like a schema ("ambiguous reference"). For the
same reason the runner qualifies every `devportal.<table>` and `analytics.<table>` with the
warehouse's catalog before running a model. One transaction holds the whole build: a failing
model leaves the previous build in place.

`--check` then runs the data tests: the generic ones declared in the headers, and the
reconciliations (`_RECONCILIATION_SQL`), which tie the marts to each other and to the raw
history. Each test is a query returning the offending rows; any row fails the test.
"""

from __future__ import annotations

import graphlib
import heapq
import logging
import re
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devportal.errors import DevportalError, first_line
from devportal.warehouse import (
    ANALYTICS_SCHEMA,
    RAW_SCHEMA,
    catalog_of,
    connect,
    quote_ident,
    require_warehouse,
    sql_literal,
    warehouse_lock,
)

log = logging.getLogger("devportal.models")

# package data (a link to the repository's sql/ in a checkout, real files in a wheel)
SQL_DIR = Path(__file__).parent / "sql"
LAYERS = ("staging", "marts")
SCHEMA = ANALYTICS_SCHEMA
SAMPLE_ROWS = 3

_DIRECTIVE = re.compile(r"^--\s*@(?P<kind>\w+)\s+(?P<body>.+?)\s*$")
_CALL = re.compile(r"^(?P<name>\w+)\s*\((?P<args>.*)\)$", re.DOTALL)
_OPTIONAL = re.compile(rf"^{RAW_SCHEMA}\.(?P<table>\w+)\s*\((?P<columns>.*)\)$", re.DOTALL)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class DataTest:
    """A named query returning the rows that break an expectation; no rows means it passes."""

    name: str
    sql: str
    models: frozenset[str]


@dataclass
class Model:
    """One SQL file, parsed: what it reads, which raw tables may be missing, its tests."""

    name: str
    layer: str
    path: Path
    sql: str
    depends_on: frozenset[str] = frozenset()
    sources: frozenset[str] = frozenset()
    optional: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    tests: list[DataTest] = field(default_factory=list)

    @property
    def relative_path(self) -> str:
        return f"sql/{self.layer}/{self.path.name}"


# -- reading the SQL files ----------------------------------------------------------------------


def _header(text: str) -> list[str]:
    """The comment lines the file opens with (blank lines allowed between them)."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("--"):
            lines.append(stripped)
        elif stripped:
            break
    return lines


def _split_args(args: str) -> list[str]:
    return [a.strip() for a in args.split(",") if a.strip()]


def _generic_tests(model: str, spec: str, where: str) -> list[DataTest]:
    """DataTests for one `@test` line of model MODEL."""
    match = _CALL.match(spec)
    if match is None:
        raise DevportalError(f"{where}: cannot read '@test {spec}'; write e.g. unique(id)")
    kind, args = match["name"], match["args"]
    table = f"{SCHEMA}.{model}"
    models = frozenset({model})
    if kind == "unique":
        columns = _split_args(args)
        cols = ", ".join(columns)
        sql = f"select {cols}, count(*) as row_count from {table} group by all having count(*) > 1"
        return [DataTest(f"unique({table}: {cols})", sql, models)]
    if kind == "not_null":
        return [
            DataTest(
                f"not_null({table}.{column})",
                f"select * from {table} where {column} is null",
                models,
            )
            for column in _split_args(args)
        ]
    if kind == "accepted_values":
        column, sep, values = args.partition(":")
        accepted = _split_args(values)
        if not sep or not accepted:
            raise DevportalError(f"{where}: write accepted_values(column: a, b)")
        column = column.strip()
        listed = ", ".join(sql_literal(v) for v in accepted)
        sql = (
            f"select {column}, count(*) as row_count from {table} "
            f"where {column} not in ({listed}) group by all"
        )
        return [DataTest(f"accepted_values({table}.{column}: {', '.join(accepted)})", sql, models)]
    raise DevportalError(f"{where}: unknown test '{kind}'; use unique, not_null or accepted_values")


def _optional_source(spec: str, where: str) -> tuple[str, list[tuple[str, str]]]:
    match = _OPTIONAL.match(spec)
    if match is None:
        raise DevportalError(
            f"{where}: cannot read '@optional {spec}'; write "
            f"@optional {RAW_SCHEMA}.<table>(column type, ...)"
        )
    columns = []
    for part in _split_args(match["columns"]):
        name, _, data_type = part.partition(" ")
        if not _NAME.match(name) or not data_type.strip():
            raise DevportalError(f"{where}: '{part}' is not 'column type'")
        columns.append((name, data_type.strip()))
    return match["table"], columns


def table_references(sql: str, where: str) -> set[tuple[str, str]]:
    """(schema, table) of every table SQL reads; unqualified names must be CTEs."""
    import sqlglot
    from sqlglot import exp

    try:
        statements = sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.ParseError as err:
        raise DevportalError(
            f"{where}: sqlglot cannot parse it: {str(err).splitlines()[0]}"
        ) from None
    refs: set[tuple[str, str]] = set()
    for statement in statements:
        if statement is None:
            continue
        ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
        for table in statement.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                continue  # a table function such as generate_series(...)
            name, schema = table.name.lower(), table.db.lower()
            if not schema:
                if name in ctes:
                    continue
                raise DevportalError(
                    f"{where}: table '{table.name}' has no schema; write "
                    f"{SCHEMA}.{table.name} (a model) or {RAW_SCHEMA}.{table.name} (raw)"
                )
            refs.add((schema, name))
    return refs


def load_models(sql_dir: Path | None = None) -> list[Model]:
    """Every model file under SQL_DIR (staging, then marts), parsed and validated."""
    root = sql_dir or SQL_DIR
    models: dict[str, Model] = {}
    for layer in LAYERS:
        for path in sorted((root / layer).glob("*.sql")):
            name = path.stem
            where = f"sql/{layer}/{path.name}"
            if not _NAME.match(name):
                raise DevportalError(f"{where}: a model name must be a plain SQL identifier")
            if name in models:
                raise DevportalError(f"{where}: model {name} is defined twice")
            text = path.read_text(encoding="utf-8")
            header = _header(text)
            if not header:
                raise DevportalError(f"{where}: open the file with a comment stating its grain")
            model = Model(name=name, layer=layer, path=path, sql=text.strip().rstrip(";").strip())
            for line in header:
                directive = _DIRECTIVE.match(line)
                if directive is None:
                    continue
                kind, body = directive["kind"], directive["body"]
                if kind == "test":
                    model.tests.extend(_generic_tests(name, body, where))
                elif kind == "optional":
                    table, columns = _optional_source(body, where)
                    model.optional[table] = columns
                else:
                    raise DevportalError(
                        f"{where}: unknown directive @{kind}; use @test or @optional"
                    )
            refs = table_references(model.sql, where)
            unknown = {schema for schema, _ in refs} - {SCHEMA, RAW_SCHEMA}
            if unknown:
                raise DevportalError(
                    f"{where}: reads schema {sorted(unknown)[0]}; models read only "
                    f"{RAW_SCHEMA}.* (raw) and {SCHEMA}.* (models)"
                )
            model.depends_on = frozenset(t for s, t in refs if s == SCHEMA)
            model.sources = frozenset(t for s, t in refs if s == RAW_SCHEMA)
            models[name] = model
    for model in models.values():
        missing = sorted(model.depends_on - models.keys())
        if missing:
            raise DevportalError(
                f"{model.relative_path}: reads {SCHEMA}.{missing[0]}, which no file in sql/ defines"
            )
    return order_models(list(models.values()))


def order_models(models: Sequence[Model]) -> list[Model]:
    """Dependencies first; ties broken by layer then name, so the order is stable.

    graphlib.TopologicalSorter does the sorting; of the models whose dependencies are all
    placed, the one of lowest (layer, name) goes next. A cycle raises DevportalError naming it.
    """
    by_name = {m.name: m for m in models}
    rank = {m.name: (LAYERS.index(m.layer), m.name) for m in models}
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for name in sorted(by_name, key=rank.__getitem__):
        sorter.add(name, *sorted(by_name[name].depends_on, key=rank.__getitem__))
    try:
        sorter.prepare()
    except graphlib.CycleError as err:
        raise DevportalError(f"the models read each other in a cycle: {_cycle(err)}") from None
    ready: list[tuple[tuple[int, str], str]] = []
    ordered: list[Model] = []
    while sorter.is_active():
        for name in sorter.get_ready():
            heapq.heappush(ready, (rank[name], name))
        _, name = heapq.heappop(ready)
        ordered.append(by_name[name])
        sorter.done(name)
    return ordered


def _cycle(err: graphlib.CycleError) -> str:
    """The models in the cycle ERR found: `a, b, c (a reads b, which reads c, which reads a)`."""
    # graphlib lists each model before the ones that read it and repeats the first at the end
    loop: list[str] = list(reversed(err.args[1]))[:-1]
    start = loop.index(min(loop))
    loop = loop[start:] + loop[:start]
    reads = ", which reads ".join([*loop[1:], loop[0]])
    return f"{', '.join(sorted(loop))} ({loop[0]} reads {reads})"


# -- running SQL against the warehouse ----------------------------------------------------------


def render(sql: str, catalog: str, stubs: Mapping[str, str] | None = None) -> str:
    """SQL with `devportal.t` / `analytics.t` qualified by CATALOG, and STUBS substituted.

    Works on sqlglot's tokens, so comments, strings and formatting are left exactly as written.
    STUBS maps a raw table name to the SQL of a relation that stands in for it.
    """
    from sqlglot.dialects.duckdb import DuckDB
    from sqlglot.tokens import TokenType

    stubs = stubs or {}
    tokens = DuckDB().tokenize(sql)
    pieces: list[str] = []
    position = 0
    names = (TokenType.VAR, TokenType.IDENTIFIER)
    for i in range(len(tokens) - 2):
        first, dot, last = tokens[i], tokens[i + 1], tokens[i + 2]
        schema = first.text.lower()
        if (
            first.token_type not in names
            or schema not in (SCHEMA, RAW_SCHEMA)
            or dot.token_type != TokenType.DOT
            or not (last.token_type == TokenType.IDENTIFIER or _NAME.match(last.text))
            or (i > 0 and tokens[i - 1].token_type == TokenType.DOT)  # already three-part
            or first.start < position
        ):
            continue
        table = last.text.lower()
        if schema == RAW_SCHEMA and table in stubs:
            replacement = stubs[table]
            following = tokens[i + 3] if i + 3 < len(tokens) else None
            if following is None or following.token_type not in (TokenType.ALIAS, TokenType.VAR):
                replacement += f" as {quote_ident(table)}"  # keeps `table.column` readable
        else:
            replacement = ".".join(quote_ident(p) for p in (catalog, schema, last.text))
        pieces.append(sql[position : first.start])
        pieces.append(replacement)
        position = last.end + 1
    pieces.append(sql[position:])
    return "".join(pieces)


def _stub(columns: Sequence[tuple[str, str]]) -> str:
    selected = ", ".join(f"cast(null as {t}) as {quote_ident(c)}" for c, t in columns)
    return f"(select {selected} where false)"


def _existing_raw_tables(con: Any, catalog: str) -> set[str]:
    rows = con.execute(
        "select lower(table_name) from information_schema.tables "
        "where table_catalog = ? and table_schema = ?",
        [catalog, RAW_SCHEMA],
    ).fetchall()
    return {r[0] for r in rows}


def _existing_views(con: Any, catalog: str) -> set[str]:
    rows = con.execute(
        "select lower(view_name) from duckdb_views() where database_name = ? and schema_name = ?",
        [catalog, SCHEMA],
    ).fetchall()
    return {r[0] for r in rows}


def _skip_reason(model: Model, raw_tables: set[str], skipped: Mapping[str, str]) -> str | None:
    for dependency in sorted(model.depends_on):
        if dependency in skipped:
            return f"needs {SCHEMA}.{dependency}, which was skipped"
    for source in sorted(model.sources - model.optional.keys()):
        if source not in raw_tables:
            return f"needs {RAW_SCHEMA}.{source}, which nothing has been loaded into yet"
    return None


def _build_model(
    con: Any, catalog: str, model: Model, raw_tables: set[str], views: set[str]
) -> None:
    """Materialise MODEL as `analytics.<name>`, standing in for its missing optional tables."""
    import duckdb

    target = ".".join(quote_ident(p) for p in (catalog, SCHEMA, model.name))
    if model.name in views:  # an older build made it a view
        con.execute(f"drop view {target}")
    stubs = {
        table: _stub(columns)
        for table, columns in model.optional.items()
        if table not in raw_tables
    }
    try:
        con.execute(f"create or replace table {target} as\n{render(model.sql, catalog, stubs)}\n")
    except duckdb.Error as err:
        raise DevportalError(
            f"model {SCHEMA}.{model.name} ({model.relative_path}) failed: {first_line(err)}"
        ) from None


def _drop_skipped(con: Any, catalog: str, model: Model, views: set[str]) -> None:
    """Remove what an earlier build left of MODEL, which this build skips."""
    target = ".".join(quote_ident(p) for p in (catalog, SCHEMA, model.name))
    con.execute(f"drop {'view' if model.name in views else 'table'} if exists {target}")


def build_after_load(warehouse: str | Path, destination: Any) -> dict[str, Any] | None:
    """The models after a load: built into the DuckDB warehouse; None for any other destination
    (the models are DuckDB SQL), the one place that rule is written."""
    return build(warehouse) if destination is None else None


def build(
    warehouse: str | Path,
    check: bool = False,
    *,
    sql_dir: Path | None = None,
    lock: bool = True,
) -> dict[str, Any]:
    """Build every model into `analytics` (one transaction); with CHECK, run the data tests.

    Returns a summary: `built` (model names, in build order), `skipped` (name -> reason),
    `tests` (how many data tests ran and passed), `seconds`. Raises DevportalError naming the
    failing model, or every failing data test. LOCK takes the warehouse lock, so a sync cannot
    write while the models read; pass False when the caller already holds it.
    """
    started = time.monotonic()
    models = load_models(sql_dir)
    require_warehouse(warehouse)  # before the lock, which would create the folder
    built: list[str] = []
    skipped: dict[str, str] = {}
    with warehouse_lock(warehouse) if lock else nullcontext(), connect(warehouse) as con:
        catalog = catalog_of(con)
        raw_tables = _existing_raw_tables(con, catalog)
        views = _existing_views(con, catalog)
        con.execute("begin transaction")
        try:
            con.execute(f"create schema if not exists {quote_ident(catalog)}.{SCHEMA}")
            for model in models:
                reason = _skip_reason(model, raw_tables, skipped)
                if reason is None:
                    _build_model(con, catalog, model, raw_tables, views)
                    built.append(model.name)
                else:
                    skipped[model.name] = reason
                    _drop_skipped(con, catalog, model, views)
                    log.info("skipped %s.%s: %s", SCHEMA, model.name, reason)
            con.execute("commit")
        except BaseException:
            con.execute("rollback")
            raise
        tests_run = run_tests(con, catalog, models, set(built)) if check else 0
    seconds = time.monotonic() - started
    log.info("built %d models in %.2fs, skipped %d", len(built), seconds, len(skipped))
    return {"built": built, "skipped": skipped, "tests": tests_run, "seconds": seconds}


def summary_line(summary: Mapping[str, Any]) -> str:
    """One line for people about a `build`: what was built, what was skipped and why, tests run."""
    line = f"models ok: {len(summary['built'])} built in {summary['seconds']:.1f}s"
    if summary["skipped"]:
        notes = ", ".join(f"{name} ({why})" for name, why in summary["skipped"].items())
        line += f"; skipped {notes}"
    if summary["tests"]:
        line += f"; {summary['tests']} data tests passed"
    return line


# -- data tests --------------------------------------------------------------------------------

# Reconciliations: the marts agree with each other and with the raw history. Each query returns
# the rows that disagree. A test runs only when every model it reads was built.
_RECONCILIATION_SQL: dict[str, str] = {
    # one row per distinct raw id seen by as_of, and no id the raw history lacks
    "subscriptions_current_has_one_row_per_raw_id": """
        with raw_ids as (
            select distinct raw.id
            from devportal.subscriptions as raw
            cross join analytics.as_of as clock
            where make_timestamp(epoch_us(raw._dlt_valid_from)) <= clock.as_of
        )
        select coalesce(raw_ids.id, current_rows.id) as id,
               raw_ids.id is null as only_in_model
        from raw_ids
        full outer join analytics.subscriptions_current as current_rows using (id)
        where raw_ids.id is null or current_rows.id is null
    """,
    "as_of_has_exactly_one_row": """
        select count(*) as row_count from analytics.as_of having count(*) <> 1
    """,
    "subscriptions_current_canceled_at_iff_canceled": """
        select id, status, canceled_at from analytics.subscriptions_current
        where (status = 'canceled') <> (canceled_at is not null)
    """,
    "subscription_events_one_new_per_live_subscription": """
        with new_events as (
            select subscription_id as id, count(*) as new_events
            from analytics.subscription_events where event_type = 'new' group by all
        )
        select id, coalesce(new_events.new_events, 0) as new_events
        from analytics.subscriptions_current
        full outer join new_events using (id)
        where (subscriptions_current.is_test is distinct from true)
          and coalesce(new_events.new_events, 0) <> 1
    """,
    "subscription_events_not_after_as_of": """
        select subscription_id, event_type, event_at
        from analytics.subscription_events cross join analytics.as_of as clock
        where event_at > clock.as_of
    """,
    "daily_subscribers_last_day_matches_subscriptions_current": """
        with last_day as (
            select usable, active, canceled_usable from analytics.daily_subscribers
            order by day desc limit 1
        ),
        now_counts as (
            select count(*) filter (where is_usable) as usable,
                   count(*) filter (where is_usable and status = 'active') as active,
                   count(*) filter (where is_usable and status = 'canceled') as canceled_usable
            from analytics.subscriptions_current where not is_test
        )
        select * from last_day
        except
        select * from now_counts
    """,
    "monthly_churn_churned_matches_expired_events": """
        select
            (select coalesce(sum(churned), 0) from analytics.monthly_churn) as churned,
            (select count(*) from analytics.subscription_events where event_type = 'expired')
                as expired_events
        where churned <> expired_events
    """,
    "monthly_churn_months_are_contiguous_up_to_as_of": """
        select
            count(*) as months,
            min(month) as first_month,
            max(month) as last_month
        from analytics.monthly_churn cross join analytics.as_of as clock
        having count(*) <> date_diff('month', min(month), max(month)) + 1
            or max(month) <> any_value(date_trunc('month', clock.as_of))::date
    """,
    "expiring_soon_within_30_days_and_usable": """
        select soon.id from analytics.expiring_soon as soon
        cross join analytics.as_of as clock
        where soon.expires_at <= clock.as_of or soon.expires_at > clock.as_of + interval 30 day
    """,
    "users_cover_every_live_subscriber": """
        select distinct service_id as user_id from analytics.subscriptions_current
        where not is_test and service_id is not null
          and service_id not in (select user_id from analytics.users)
    """,
}


def reconciliations() -> list[DataTest]:
    tests = []
    for name, sql in _RECONCILIATION_SQL.items():
        refs = table_references(sql, f"reconciliation {name}")
        tests.append(DataTest(name, sql, frozenset(t for s, t in refs if s == SCHEMA)))
    return tests


def data_tests(models: Sequence[Model]) -> list[DataTest]:
    return [t for m in models for t in m.tests] + reconciliations()


def run_tests(con: Any, catalog: str, models: Sequence[Model], built: set[str]) -> int:
    """Run the data tests of the built models; raise DevportalError naming each failure."""
    import duckdb

    failures: list[str] = []
    ran = 0
    for test in data_tests(models):
        if not test.models <= built:
            continue
        ran += 1
        sql = render(test.sql, catalog)
        try:
            cursor = con.execute(f"select * from ({sql}) as failing_rows")
            rows = cursor.fetchmany(SAMPLE_ROWS + 1)
            if rows:
                (total,) = con.execute(f"select count(*) from ({sql}) as failing_rows").fetchone()
            else:
                total = 0
        except duckdb.Error as err:
            failures.append(f"{test.name}: could not run: {first_line(err)}")
            continue
        if total:
            sample = "; ".join(repr(tuple(r)) for r in rows[:SAMPLE_ROWS])
            failures.append(f"{test.name}: {total} failing row(s), e.g. {sample}")
    for failure in failures:
        log.error("data test failed: %s", failure)
    if failures:
        raise DevportalError(f"{len(failures)} of {ran} data tests failed: " + " | ".join(failures))
    return ran
