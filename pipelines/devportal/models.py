"""Builds the SQL models in `sql/` into the schema `analytics` and runs their tests, on DuckDB
(the warehouse file) or PostgreSQL (the database of dlt's `postgres` destination).

A model is one file, `sql/staging/<name>.sql` or `sql/marts/<name>.sql`, holding one SELECT
written in DuckDB SQL; it becomes the table `analytics.<name>`. The file opens with a comment
stating its grain and definitions; lines of that comment starting with `@` are read by this
runner:

    -- @test unique(col[, col...])            the columns together identify a row
    -- @test not_null(col[, col...])          each column is never NULL
    -- @test accepted_values(col: a, b, c)    non-NULL values are one of these
    -- @optional devportal.<table>(col type, ...)
        the raw table may not exist yet (dlt creates a table with its first rows): until it
        does, the model reads an empty relation of these columns (DuckDB types) in its place

Build order comes from the SQL itself: sqlglot parses every model and each `analytics.<name>`
it reads is a dependency (graphlib's TopologicalSorter, no hand-kept list). A model reading a
raw table that does not exist and is not declared optional is skipped with a note, and so is
everything built on it (`analytics.app_releases` stays absent until a manifest is recorded).

Engines (`devportal.engines`): on DuckDB a model runs exactly as written. On PostgreSQL it is
translated by sqlglot from DuckDB SQL (`translate`), raising on anything sqlglot cannot
translate, and first checked for the constructs sqlglot translates silently wrong or into what
PostgreSQL lacks (`_unportable`, each refused by name):

- ASOF JOIN, GROUP BY ALL, string_split, functions sqlglot does not know such as epoch_us;
- USING after a join that may bring a second column of that name;
- a SELECT alias read in WHERE or HAVING;
- try_cast (it becomes CAST: NULL on DuckDB, an error on PostgreSQL);
- round() of anything but an explicit `cast(... as decimal(p, s))`: on double precision
  PostgreSQL rounds half to even (2.5 -> 2, DuckDB 3) and has no round(x, n); only a decimal
  argument is known to round alike on both, so nothing else is accepted;
- arg_max/max_by, arg_min/min_by, first, last, contains, make_date, epoch_ms/to_timestamp
  (functions PostgreSQL lacks under sqlglot's name, or returns another type).

Every model, data test and reconciliation is written in the subset of
DuckDB SQL that passes both (README: Analytics), so one file serves every engine; a model that
cannot be translated stops the build before anything runs, naming its file. Where an engine
truly needs its own form, the one escape is an override file beside the model,
`sql/<layer>/<name>.<engine>.sql` (e.g. `sql/marts/daily_subscribers.postgres.sql`): that
engine runs it instead of the translation. It is written in the engine's own SQL, opens with
a comment saying why it exists, reads only tables the model itself reads (the build order and
the skips come from `<name>.sql`) and holds no `@` directives (the tests and optional tables
are the model's, in `<name>.sql`).

Seeds (`SEEDS`): tables the runner writes from settings at every build, in the build's
transaction, before any model, so the models and the settings they were built with are one
snapshot. `analytics.status_map(status, treated_as)` is `[analytics] status_map` (`devportal
.config.resolve_analytics`) with the two statuses the spec shows (`active`, `canceled`, each
treated as itself): how churn, renewal and cancellation figures treat each status as sent (a
status not in it is "other"; sql/staging/stg_subscriptions.sql). A model reads a seed like a
model (`analytics.<name>`); a seed no model reads is not written; no SQL file may take a seed's
name; seeds have data tests too (`SEED_TESTS`). The build's summary lists the seeds written
under `seeds`, apart from `built`.

Every model is materialised as a TABLE, not a view: its numbers are frozen at build time
together with `analytics.as_of`, so the report, the notebook and any SQL client agree until the
next build; readers get plain fast tables; and a DuckDB view keeps its SQL text and re-binds it
on every read, so a view over `devportal.<table>` breaks as soon as the file is attached under
another catalog name or its catalog is called like a schema ("ambiguous reference"). For the
same reason, on DuckDB the runner qualifies every `devportal.<table>` and `analytics.<table>`
with the warehouse's catalog before running a model; on PostgreSQL the names stay
schema-qualified in the connection's database. One transaction holds the whole build (drop and
create each table; PostgreSQL's DDL is transactional too, and its build reads one REPEATABLE
READ snapshot): a failing model leaves the previous build in place.

`--check` then runs the data tests: the generic ones declared in the headers, and the
reconciliations (`_RECONCILIATION_SQL`), which tie the marts to each other and to the raw
history. Each test is a query returning the offending rows; any row fails the test. They are
DuckDB SQL too, translated like the models.
"""

from __future__ import annotations

import functools
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

from devportal import config, engines
from devportal.errors import DevportalError, first_line
from devportal.pipeline import settle_for_writer
from devportal.runlock import writer_lock
from devportal.warehouse import (
    ANALYTICS_SCHEMA,
    OWN_MEMORY_LIMIT_MB,
    RAW_SCHEMA,
    Draft,
    quote_ident,
    require_warehouse,
    sql_literal,
)

log = logging.getLogger("devportal.models")

# package data (a link to the repository's sql/ in a checkout, real files in a wheel)
SQL_DIR = Path(__file__).parent / "sql"
LAYERS = ("staging", "marts")
SCHEMA = ANALYTICS_SCHEMA
SAMPLE_ROWS = 3
# the SQL every model, data test and stand-in is written in
SOURCE_DIALECT = "duckdb"
# engines that may have their own form of a model in `<name>.<engine>.sql`
OVERRIDE_ENGINES = tuple(e for e in engines.ENGINES if e != SOURCE_DIALECT)

_DIRECTIVE = re.compile(r"^--\s*@(?P<kind>\w+)\s+(?P<body>.+?)\s*$")
_CALL = re.compile(r"^(?P<name>\w+)\s*\((?P<args>.*)\)$", re.DOTALL)
_OPTIONAL = re.compile(rf"^{RAW_SCHEMA}\.(?P<table>\w+)\s*\((?P<columns>.*)\)$", re.DOTALL)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Seeds: the tables the runner writes from settings (see the module docstring), by name, with
# their data tests (written like a model header's `@test` lines).
STATUS_MAP = "status_map"
SEEDS = (STATUS_MAP,)
SEED_TESTS: dict[str, tuple[str, ...]] = {
    STATUS_MAP: (
        "unique(status)",
        "not_null(status, treated_as)",
        f"accepted_values(treated_as: {', '.join(config.STATUS_TREATMENTS)})",
    ),
}
# the statuses the spec shows: each treated as itself, whatever [analytics] status_map says
SPEC_STATUSES = config.STATUS_TREATMENTS


@dataclass(frozen=True)
class DataTest:
    """A named query returning the rows that break an expectation; no rows means it passes."""

    name: str
    sql: str
    models: frozenset[str]


@dataclass
class Model:
    """One SQL file, parsed: what it reads, which raw tables may be missing, its tests, and the
    engines that run a file of their own instead of its translation (`overrides`)."""

    name: str
    layer: str
    path: Path
    sql: str
    depends_on: frozenset[str] = frozenset()
    seeds: frozenset[str] = frozenset()
    sources: frozenset[str] = frozenset()
    optional: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    tests: list[DataTest] = field(default_factory=list)
    overrides: dict[str, Path] = field(default_factory=dict)

    @property
    def relative_path(self) -> str:
        return f"sql/{self.layer}/{self.path.name}"

    def file_for(self, engine: str) -> str:
        """The file ENGINE runs: its override, else the model's own."""
        path = self.overrides.get(engine, self.path)
        return f"sql/{self.layer}/{path.name}"


@dataclass(frozen=True)
class EngineSql:
    """A model as one engine runs it: the SQL, the file it comes from, and the SQL of the empty
    relation standing in for each optional raw table."""

    sql: str
    where: str
    stubs: dict[str, str]


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
        sql = (
            f"select {cols}, count(*) as row_count from {table} group by {cols} having count(*) > 1"
        )
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
            f"where {column} not in ({listed}) group by {column}"
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


def table_references(sql: str, where: str, dialect: str = SOURCE_DIALECT) -> set[tuple[str, str]]:
    """(schema, table) of every table SQL (in DIALECT) reads; unqualified names must be CTEs."""
    import sqlglot
    from sqlglot import exp

    try:
        statements = sqlglot.parse(sql, read=dialect)
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


def _read_model(path: Path, layer: str, where: str) -> Model:
    """The model in PATH: its SQL, header directives and the tables it reads."""
    text = path.read_text(encoding="utf-8")
    header = _header(text)
    if not header:
        raise DevportalError(f"{where}: open the file with a comment stating its grain")
    name = path.stem
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
            raise DevportalError(f"{where}: unknown directive @{kind}; use @test or @optional")
    refs = table_references(model.sql, where)
    unknown = {schema for schema, _ in refs} - {SCHEMA, RAW_SCHEMA}
    if unknown:
        raise DevportalError(
            f"{where}: reads schema {sorted(unknown)[0]}; models read only "
            f"{RAW_SCHEMA}.* (raw) and {SCHEMA}.* (models)"
        )
    model.depends_on = frozenset(t for s, t in refs if s == SCHEMA and t not in SEEDS)
    model.seeds = frozenset(t for s, t in refs if s == SCHEMA and t in SEEDS)
    model.sources = frozenset(t for s, t in refs if s == RAW_SCHEMA)
    return model


def _check_override(model: Model, engine: str, path: Path) -> None:
    """An override file of MODEL for ENGINE: a header, no directives, no table MODEL does not read."""
    where = f"sql/{model.layer}/{path.name}"
    text = path.read_text(encoding="utf-8")
    header = _header(text)
    if not header:
        raise DevportalError(
            f"{where}: open the file with a comment saying why {engine} needs its own form"
        )
    if any(_DIRECTIVE.match(line) for line in header):
        raise DevportalError(
            f"{where}: @ directives belong in {model.relative_path}, which the override follows"
        )
    reads = {(SCHEMA, t) for t in model.depends_on | model.seeds}
    reads |= {(RAW_SCHEMA, t) for t in model.sources}
    extra = sorted(table_references(text, where, dialect=engine) - reads)
    if extra:
        raise DevportalError(
            f"{where}: reads {'.'.join(extra[0])}, which {model.relative_path} does not; "
            "the build order comes from the model's own file"
        )


def load_models(sql_dir: Path | None = None) -> list[Model]:
    """Every model file under SQL_DIR (staging, then marts), parsed and validated, with the
    engine override files beside them (`<name>.<engine>.sql`)."""
    root = sql_dir or SQL_DIR
    models: dict[str, Model] = {}
    overrides: list[tuple[str, str, Path]] = []
    for layer in LAYERS:
        for path in sorted((root / layer).glob("*.sql")):
            name, dot, engine = path.stem.partition(".")
            where = f"sql/{layer}/{path.name}"
            if not _NAME.match(name):
                raise DevportalError(f"{where}: a model name must be a plain SQL identifier")
            if dot:
                if engine not in OVERRIDE_ENGINES:
                    raise DevportalError(
                        f"{where}: '{engine}' is no engine with its own form of a model; "
                        f"name an override <model>.<engine>.sql, engine one of "
                        f"{', '.join(OVERRIDE_ENGINES)}"
                    )
                overrides.append((name, engine, path))
                continue
            if name in models:
                raise DevportalError(f"{where}: model {name} is defined twice")
            if name in SEEDS:
                raise DevportalError(
                    f"{where}: {SCHEMA}.{name} is a seed the runner writes from settings; "
                    "name the model otherwise"
                )
            models[name] = _read_model(path, layer, where)
    for name, engine, path in overrides:
        if name not in models or models[name].path.parent != path.parent:
            raise DevportalError(
                f"sql/{path.parent.name}/{path.name}: overrides a model that is not beside it "
                f"(no sql/{path.parent.name}/{name}.sql)"
            )
        _check_override(models[name], engine, path)
        models[name].overrides[engine] = path
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


# -- one SQL, every engine -----------------------------------------------------------------------


def _unportable(statement: Any) -> str | None:
    """The first construct of STATEMENT (parsed DuckDB SQL) that sqlglot would translate silently
    wrong, or pass on unchanged for the engine to misread; None when there is none."""
    from sqlglot import exp

    for node in statement.walk():
        if isinstance(node, exp.Anonymous):
            return f"{node.name}() is no function sqlglot knows, so no engine gets a translation"
        if isinstance(node, exp.Split):
            return "string_split() becomes SPLIT(), which PostgreSQL lacks; compare with LIKE"
        if isinstance(node, exp.Join) and node.args.get("method"):
            return f"{node.args['method'].upper()} JOIN is DuckDB's own; join on a key instead"
        if isinstance(node, exp.Group) and node.args.get("all"):
            return "GROUP BY ALL is DuckDB's own; list the columns"
        problem = _unportable_function(node)
        if problem:
            return problem
        if isinstance(node, exp.Select):
            problem = _using_after_other_joins(node) or _alias_in_filter(node)
            if problem:
                return problem
    return None


def _unportable_function(node: Any) -> str | None:
    """Why NODE, a function sqlglot knows, differs or fails on PostgreSQL; None when it does not.
    Checked before the build, so such a model stops it before anything runs."""
    from sqlglot import exp

    if isinstance(node, exp.TryCast):  # before Cast: TryCast is one
        return (
            "try_cast() becomes CAST, which raises on PostgreSQL where DuckDB gives NULL; "
            "test the text first (case when ... then cast(...) end)"
        )
    if isinstance(node, exp.Round):
        argument = node.this
        if not (type(argument) is exp.Cast and argument.to.is_type(exp.DataType.Type.DECIMAL)):
            return (
                "round() of anything but cast(... as decimal(p, s)): PostgreSQL rounds double "
                "precision half to even (2.5 -> 2, DuckDB 3) and has no round(double, n); "
                "write round(cast(x as decimal(p, s)), n)"
            )
    for kinds, problem in _unportable_functions():
        if isinstance(node, kinds):
            return problem
    return None


@functools.cache
def _unportable_functions() -> tuple[tuple[tuple[type, ...], str], ...]:
    """sqlglot's classes of the functions refused outright, each with why (sqlglot is imported
    lazily, so this is built on first use)."""
    from sqlglot import exp

    return (
        (
            (exp.ArgMax, exp.ArgMin),
            "arg_max()/max_by() and arg_min()/min_by() become ARG_MAX/ARG_MIN, which PostgreSQL "
            "lacks; pick the row with row_number() over (... order by ...)",
        ),
        (
            (exp.First, exp.Last),
            "first()/last() are no PostgreSQL aggregates; use min/max or pick the row with "
            "row_number() over (... order by ...)",
        ),
        (
            (exp.Contains,),
            "contains() becomes CONTAINS(), which PostgreSQL lacks; use LIKE",
        ),
        (
            (exp.DateFromParts,),
            "make_date() becomes DATE_FROM_PARTS(), which PostgreSQL lacks; "
            "use cast(... as date) or date_trunc",
        ),
        (
            (exp.UnixToTime,),
            "epoch_ms()/to_timestamp() become TO_TIMESTAMP(), a timestamp with time zone on "
            "PostgreSQL (DuckDB's epoch_ms gives one without); keep times as timestamps",
        ),
    )


def _using_after_other_joins(select: Any) -> str | None:
    """USING is only safe right after the FROM relation and other USING joins: a join with ON
    (or a comma or CROSS join) may bring a second column of that name, which PostgreSQL refuses
    as ambiguous and DuckDB resolves on its own."""
    other = False
    for join in select.args.get("joins") or []:
        if not join.args.get("using"):
            other = True
        elif other:
            names = ", ".join(i.name for i in join.args["using"])
            return f"JOIN ... USING ({names}) after a join with ON or a CROSS join; write ON"
    return None


def _alias_in_filter(select: Any) -> str | None:
    """DuckDB lets WHERE and HAVING read a name the SELECT list gives; PostgreSQL does not."""
    from sqlglot import exp

    aliases = {
        e.alias.lower()
        for e in select.expressions
        if isinstance(e, exp.Alias)
        and not (isinstance(e.this, exp.Column) and e.this.name.lower() == e.alias.lower())
    }
    for clause in ("where", "having"):
        node = select.args.get(clause)
        for column in node.find_all(exp.Column) if node is not None else ():
            if (
                not column.table
                and column.name.lower() in aliases
                and column.find_ancestor(exp.Select) is select
            ):
                return (
                    f"{clause.upper()} reads {column.name}, a name the SELECT list gives; "
                    "select it in a subquery first"
                )
    return None


def translate(sql: str, dialect: str) -> str:
    """SQL, written in DuckDB SQL, in DIALECT's SQL: sqlglot's translation, raising on anything it
    cannot translate (`unsupported_level=RAISE`) and on what it translates silently wrong
    (`_unportable`). DevportalError says what; callers add where."""
    import sqlglot

    try:
        statements = [s for s in sqlglot.parse(sql, read=SOURCE_DIALECT) if s is not None]
        problem = next((p for p in map(_unportable, statements) if p), None)
        if problem is None:
            return ";\n".join(
                s.sql(dialect=dialect, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
                for s in statements
            )
    except Exception as err:  # sqlglot's own errors, and its bugs (an AttributeError) alike
        problem = first_line(err)
    raise DevportalError(f"sqlglot cannot translate it to {dialect}: {problem}")


def for_engine(model: Model, dialect: str) -> EngineSql:
    """MODEL as DIALECT runs it: the file as written on DuckDB, an override file when the model
    has one for DIALECT, else sqlglot's translation. Raises DevportalError naming the file."""
    stubs = {table: _stub(columns) for table, columns in model.optional.items()}
    if dialect == SOURCE_DIALECT:
        return EngineSql(model.sql, model.relative_path, stubs)
    try:
        stubs = {table: translate(stub, dialect) for table, stub in stubs.items()}
    except DevportalError as err:
        raise DevportalError(f"{model.relative_path}: @optional: {err}") from None
    where = model.file_for(dialect)
    override = model.overrides.get(dialect)
    if override is not None:
        sql = override.read_text(encoding="utf-8").strip().rstrip(";").strip()
        return EngineSql(sql, where, stubs)
    try:
        sql = translate(model.sql, dialect)
    except DevportalError as err:
        raise DevportalError(
            f"{where}: cannot run on {dialect}: {err}. Rewrite it in the portable subset "
            f"(README: Analytics) or give {dialect} its own form in "
            f"sql/{model.layer}/{model.name}.{dialect}.sql"
        ) from None
    return EngineSql(sql, where, stubs)


# -- running SQL on an engine -------------------------------------------------------------------


def render(
    sql: str,
    catalog: str | None,
    stubs: Mapping[str, str] | None = None,
    dialect: str = SOURCE_DIALECT,
) -> str:
    """SQL with `devportal.t` / `analytics.t` qualified by CATALOG (None: left as they are), and
    STUBS substituted.

    Works on sqlglot's tokens (of DIALECT), so comments, strings and formatting are left exactly
    as written. STUBS maps a raw table name to the SQL of a relation that stands in for it.
    """
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.tokens import TokenType

    stubs = stubs or {}
    tokens = Dialect.get_or_raise(dialect).tokenize(sql)
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
        elif catalog is not None:
            replacement = ".".join(quote_ident(p) for p in (catalog, schema, last.text))
        else:
            continue
        pieces.append(sql[position : first.start])
        pieces.append(replacement)
        position = last.end + 1
    pieces.append(sql[position:])
    return "".join(pieces)


def _stub(columns: Sequence[tuple[str, str]]) -> str:
    """An empty relation of COLUMNS (DuckDB types), in DuckDB SQL."""
    selected = ", ".join(f"cast(null as {t}) as {quote_ident(c)}" for c, t in columns)
    return f"(select {selected} where false)"


def _schema_name(engine: engines.Engine) -> str:
    parts = (engine.catalog, SCHEMA) if engine.catalog else (SCHEMA,)
    return ".".join(quote_ident(p) for p in parts)


def _skip_reason(model: Model, raw_tables: set[str], skipped: Mapping[str, str]) -> str | None:
    for dependency in sorted(model.depends_on):
        if dependency in skipped:
            return f"needs {SCHEMA}.{dependency}, which was skipped"
    for source in sorted(model.sources - model.optional.keys()):
        if source not in raw_tables:
            return f"needs {RAW_SCHEMA}.{source}, which nothing has been loaded into yet"
    return None


def _drop(engine: engines.Engine, name: str, existing: Mapping[str, str]) -> None:
    """Remove what an earlier build left as `analytics.<name>` (a table, or a view of an older
    build)."""
    kind = "view" if existing.get(name) == "view" else "table"
    engine.execute(f"drop {kind} if exists {engine.qualify(SCHEMA, name)}")


def _build_model(
    engine: engines.Engine,
    model: Model,
    code: EngineSql,
    raw_tables: set[str],
    existing: Mapping[str, str],
) -> None:
    """Materialise MODEL as `analytics.<name>`, standing in for its missing optional tables."""
    stubs = {table: sql for table, sql in code.stubs.items() if table not in raw_tables}
    sql = render(code.sql, engine.catalog, stubs, engine.dialect)
    try:
        _drop(engine, model.name, existing)
        engine.execute(f"create table {engine.qualify(SCHEMA, model.name)} as\n{sql}\n")
    except engine.errors as err:
        raise DevportalError(
            f"model {SCHEMA}.{model.name} ({code.where}) failed: {first_line(err)}"
        ) from None


@dataclass(frozen=True)
class Seed:
    """A table written from settings at every build (module docstring): `analytics.<name>` of
    COLUMNS (name, type; types both engines spell alike) holding ROWS."""

    name: str
    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[Any, ...], ...]


def status_map_seed(status_map: Mapping[str, str] | None) -> Seed:
    """`analytics.status_map`: each status and the treatment churn, renewal and cancellation
    figures give it: the spec's two as themselves, then `[analytics] status_map` (validated by
    `config.resolve_analytics`) in status order."""
    rows = [(status, status) for status in SPEC_STATUSES]
    rows += sorted((str(k), str(v)) for k, v in (status_map or {}).items())
    return Seed(STATUS_MAP, (("status", "varchar"), ("treated_as", "varchar")), tuple(rows))


def seeds_from_settings() -> list[Seed]:
    """Every seed, from the settings as dlt resolves them now (one-line ConfigError)."""
    return [status_map_seed(config.resolve_analytics().status_map)]


def _write_seed(engine: engines.Engine, seed: Seed, existing: Mapping[str, str]) -> None:
    table = engine.qualify(SCHEMA, seed.name)
    columns = ", ".join(f"{quote_ident(name)} {kind}" for name, kind in seed.columns)
    marks = ", ".join("?" for _ in seed.columns)
    try:
        _drop(engine, seed.name, existing)
        engine.execute(f"create table {table} ({columns})")
        for row in seed.rows:  # a few rows; parameters keep any text exact on both engines
            engine.execute(f"insert into {table} values ({marks})", row)
    except engine.errors as err:
        raise DevportalError(f"seed {SCHEMA}.{seed.name} failed: {first_line(err)}") from err


def _build_all(
    engine: engines.Engine,
    models: Sequence[Model],
    code: Mapping[str, EngineSql],
    seeds: Sequence[Seed] = (),
) -> tuple[list[str], dict[str, str]]:
    """Write SEEDS and build MODELS in one transaction: the names built (in order) and skipped
    (with why)."""
    built: list[str] = []
    skipped: dict[str, str] = {}
    with engine.transaction():
        if engine.dialect == "postgres":
            # every model reads the same snapshot, as in a DuckDB transaction, even while a
            # load commits table by table; must be the transaction's first statement
            engine.execute("set transaction isolation level repeatable read")
        raw_tables = set(engine.relations(RAW_SCHEMA))
        existing = engine.relations(SCHEMA)
        engine.execute(f"create schema if not exists {_schema_name(engine)}")
        for seed in seeds:
            _write_seed(engine, seed, existing)
        for model in models:
            reason = _skip_reason(model, raw_tables, skipped)
            if reason is None:
                _build_model(engine, model, code[model.name], raw_tables, existing)
                built.append(model.name)
            else:
                skipped[model.name] = reason
                _drop(engine, model.name, existing)
                log.info("skipped %s.%s: %s", SCHEMA, model.name, reason)
    return built, skipped


def _build_within_memory(
    engine: engines.Engine,
    models: Sequence[Model],
    code: Mapping[str, EngineSql],
    check: bool,
    seeds: Sequence[Seed] = (),
) -> tuple[list[str], dict[str, str], int]:
    """Build (and with CHECK, test) within DuckDB's memory cap for devportal's connections
    (`warehouse.OWN_CONNECTION`: lean, where DuckDB's default is 80% of the machine's RAM). A
    history too large for it (DuckDB spills most work to disk, not all of what one transaction
    holds) makes DuckDB run out of memory: the attempt is rolled back and made again under
    DuckDB's own limit, with a warning. The cap grows with the history (`_memory_cap`), so
    that rarely happens. PostgreSQL is built once."""

    def attempt() -> tuple[list[str], dict[str, str], int]:
        built, skipped = _build_all(engine, models, code, seeds)
        written = {seed.name for seed in seeds}
        return built, skipped, run_tests(engine, models, set(built) | written) if check else 0

    if engine.dialect == SOURCE_DIALECT:
        cap = _memory_cap(engine)
        if cap:
            engine.execute(f"set memory_limit = '{cap}MB'")
    try:
        return attempt()
    except DevportalError as err:
        if engine.dialect != SOURCE_DIALECT or "Out of Memory" not in str(err):
            raise
        log.warning("models: DuckDB ran out of its memory cap (%s); building again without it", err)
    engine.execute("reset memory_limit")
    return attempt()


# MB of DuckDB memory per subscription version: 1M versions build within 256 MB (5 s), where
# 64 MB runs out; 100k build in 64 MB as fast as without a cap and with half the memory
CAP_MB_PER_VERSION = 256 / 1_000_000


def _memory_cap(engine: engines.Engine) -> int | None:
    """The memory cap (MB) for this history: the connection's own (`OWN_MEMORY_LIMIT_MB`, 64)
    up to 250k versions, then growing with them; None to keep the connection's."""
    if "subscriptions" not in engine.relations(RAW_SCHEMA):
        return None
    [(versions,)] = engine.execute(
        f"select count(*) from {engine.qualify(RAW_SCHEMA, 'subscriptions')}"
    )
    cap = int(versions * CAP_MB_PER_VERSION)
    return cap if cap > OWN_MEMORY_LIMIT_MB else None


def _draft(warehouse: str | Path) -> Draft:
    """The copy of the DuckDB warehouse the models are built into, published when built (see
    `warehouse.Draft`: the warehouse file is never opened for writing, readers may hold it). A
    run a killed sync left half loaded is finished first, as the next sync would."""
    settle_for_writer(warehouse)
    draft = Draft(warehouse)
    draft.create()
    return draft


def build_after_load(warehouse: str | Path, destination: Any) -> dict[str, Any] | None:
    """The models after a load: built on the engine the load wrote to, DuckDB at `warehouse`
    (destination None or "duckdb") or PostgreSQL ("postgres"); None for any other destination,
    including a dlt destination object (where it writes is its own business). The one place
    that rule is written."""
    if destination is not None and not isinstance(destination, str):
        return None
    name = (destination or SOURCE_DIALECT).lower()
    return build(warehouse, destination=name) if name in engines.ENGINES else None


def build(
    warehouse: str | Path,
    check: bool = False,
    *,
    destination: str | None = None,
    sql_dir: Path | None = None,
    lock: bool = True,
) -> dict[str, Any]:
    """Build every model into `analytics` (one transaction); with CHECK, run the data tests.

    DESTINATION None or "duckdb": the DuckDB file WAREHOUSE; "postgres": the database of dlt's
    `postgres` destination (credentials as dlt resolves them; WAREHOUSE then only places the
    lock file); anything else is a ConfigError. The seeds are written from the settings as
    they are now (`[analytics] status_map`: a bad one is a ConfigError before anything runs).
    Returns a summary: `built` (model names, in build order), `seeds` (the seeds written),
    `skipped` (name -> reason), `tests` (how many data tests ran and passed), `seconds`,
    `destination` (the engine). Raises DevportalError naming the failing model (or
    the file sqlglot cannot translate, before anything runs), or every failing data test. LOCK
    takes the warehouse lock, so a sync cannot write while the models read; pass False when the
    caller already holds it.
    """
    started = time.monotonic()
    engine_name = engines.engine_of(destination)
    models = load_models(sql_dir)
    code = {model.name: for_engine(model, engine_name) for model in models}
    read = {name for model in models for name in model.seeds}
    seeds = [seed for seed in seeds_from_settings() if seed.name in read]
    if engine_name == SOURCE_DIALECT:
        require_warehouse(warehouse)  # before the lock, which would create the folder
    locked = writer_lock(warehouse, engine_name) if lock else nullcontext()
    with locked:
        draft = _draft(warehouse) if engine_name == SOURCE_DIALECT else None
        try:
            with engines.connect(draft.path if draft else warehouse, engine_name) as engine:
                built, skipped, tests_run = _build_within_memory(engine, models, code, check, seeds)
        except DataTestsFailed:
            if draft is not None:
                draft.publish()  # the build committed; its data tests failed
            raise
        if draft is not None:
            draft.publish()
    seconds = time.monotonic() - started
    log.info(
        "built %d models on %s in %.2fs, skipped %d", len(built), engine_name, seconds, len(skipped)
    )
    return {
        "built": built,
        "seeds": [seed.name for seed in seeds],
        "skipped": skipped,
        "tests": tests_run,
        "seconds": seconds,
        "destination": engine_name,
    }


def summary_line(summary: Mapping[str, Any]) -> str:
    """One line for people about a `build`: what was built (and where, when not on DuckDB), what
    was skipped and why, tests run."""
    engine = summary.get("destination", SOURCE_DIALECT)
    where = "" if engine == SOURCE_DIALECT else f" on {engine}"
    line = f"models ok: {len(summary['built'])} built{where} in {summary['seconds']:.1f}s"
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
    # one row per distinct raw (id, is_test) seen by as_of, and none the raw history lacks
    "subscriptions_current_has_one_row_per_raw_id": """
        with raw_ids as (
            select distinct raw.id, raw.is_test
            from devportal.subscriptions as raw
            cross join analytics.as_of as clock
            where raw._dlt_valid_from at time zone 'UTC' <= clock.as_of
        )
        select coalesce(raw_ids.id, current_rows.id) as id,
               raw_ids.id is null as only_in_model
        from raw_ids
        full outer join analytics.subscriptions_current as current_rows using (id, is_test)
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
            from analytics.subscription_events where event_type = 'new'
            group by subscription_id
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
            select usable, active, canceled_usable, other_usable
            from analytics.daily_subscribers
            order by day desc limit 1
        ),
        now_counts as (
            select count(*) filter (where is_usable) as usable,
                   count(*) filter (where is_usable and status_sent = 'active') as active,
                   count(*) filter (where is_usable and status_sent = 'canceled')
                       as canceled_usable,
                   count(*) filter (
                       where is_usable
                         and (status_sent is null or status_sent not in ('active', 'canceled'))
                   ) as other_usable
            from analytics.subscriptions_current where not is_test
        )
        select * from last_day
        except
        select * from now_counts
    """,
    # usable = active + canceled + other; the expiring ones: renewing + churning + other
    "report_figures_add_up": """
        select usable_subscribers, usable_active, usable_canceled, usable_other,
               expiring_7d, expiring_30d
        from analytics.report_figures
        where usable_subscribers <> usable_active + usable_canceled + usable_other
           or expiring_7d <> expiring_7d_renewing + expiring_7d_churning + expiring_7d_other
           or expiring_30d <> expiring_30d_renewing + expiring_30d_churning + expiring_30d_other
    """,
    # every version is treated as the status_map seed of this build says (a status not in it:
    # other), and a status the spec shows as itself
    "subscription_versions_status_is_its_treatment": """
        select versions.id, versions.status_sent, versions.status, treatments.treated_as
        from analytics.subscription_versions as versions
        left join analytics.status_map as treatments
            on treatments.status = versions.status_sent
        where versions.status <> coalesce(treatments.treated_as, 'other')
           or (versions.status_sent in ('active', 'canceled')
               and versions.status <> versions.status_sent)
    """,
    "monthly_churn_churned_matches_expired_events": """
        select * from (
            select
                (select coalesce(sum(churned), 0) from analytics.monthly_churn) as churned,
                (select count(*) from analytics.subscription_events where event_type = 'expired')
                    as expired_events
        ) as totals
        where churned <> expired_events
    """,
    "monthly_churn_months_are_contiguous_up_to_as_of": """
        select
            count(*) as months,
            min(month) as first_month,
            max(month) as last_month
        from analytics.monthly_churn cross join analytics.as_of as clock
        having count(*) <> date_diff('month', min(month), max(month)) + 1
            or max(month) <> max(date_trunc('month', clock.as_of))::date
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
    # -- renewals, retention, lifetimes, platforms (issue 13) --
    "billing_periods_one_row_per_live_subscription": """
        select coalesce(live.id, periods.subscription_id) as id,
               live.id is null as only_in_billing_periods
        from (select id from analytics.subscriptions_current where not is_test) as live
        full outer join analytics.billing_periods as periods
            on periods.subscription_id = live.id
        where live.id is null or periods.subscription_id is null
    """,
    "monthly_churn_churned_by_period_adds_up": """
        select month, churned, churned_monthly, churned_yearly, churned_unknown
        from analytics.monthly_churn
        where churned <> churned_monthly + churned_yearly + churned_unknown
    """,
    "monthly_renewals_outcomes_add_up_to_came_due": """
        select month, period, came_due, renewed, churned, undecided
        from analytics.monthly_renewals
        where renewed + churned + undecided <> came_due
    """,
    "monthly_renewals_periods_add_up_to_all": """
        with every_period as (
            select month, came_due, renewed, churned, undecided
            from analytics.monthly_renewals where period = 'all'
        ),
        by_period as (
            select month,
                   sum(came_due) as came_due, sum(renewed) as renewed,
                   sum(churned) as churned, sum(undecided) as undecided
            from analytics.monthly_renewals where period <> 'all'
            group by month
        )
        select coalesce(every_period.month, by_period.month) as month
        from every_period
        full outer join by_period on by_period.month = every_period.month
        where every_period.month is null or by_period.month is null
           or every_period.came_due <> by_period.came_due
           or every_period.renewed <> by_period.renewed
           or every_period.churned <> by_period.churned
           or every_period.undecided <> by_period.undecided
    """,
    "monthly_renewals_churned_matches_monthly_churn": """
        with renewals as (
            select month, churned from analytics.monthly_renewals where period = 'all'
        )
        select coalesce(renewals.month, churn.month) as month,
               renewals.churned as renewals_churned, churn.churned as monthly_churn_churned
        from renewals
        full outer join analytics.monthly_churn as churn on churn.month = renewals.month
        where coalesce(renewals.churned, 0) <> coalesce(churn.churned, 0)
    """,
    "cohort_retention_cohorts_cover_every_live_subscription": """
        select * from (
            select
                (select coalesce(sum(cohort_size), 0) from analytics.cohort_retention
                 where month_offset = 0) as cohort_sizes,
                (select count(*) from analytics.subscriptions_current where not is_test)
                    as live_subscriptions
        ) as totals
        where cohort_sizes <> live_subscriptions
    """,
    "cohort_retention_month_ends_match_monthly_churn_bases": """
        -- usable at a month's end is usable at the next month's start
        with month_ends as (
            select month, sum(usable) as usable
            from analytics.cohort_retention where is_complete
            group by month
        )
        select month_ends.month, month_ends.usable, churn.subscribers_at_start
        from month_ends
        left join analytics.monthly_churn as churn
            on churn.month = month_ends.month + interval 1 month
        where churn.month is null or month_ends.usable <> churn.subscribers_at_start
    """,
    "cohort_retention_at_as_of_matches_subscriptions_current": """
        select * from (
            select
                (select coalesce(sum(retention.usable), 0)
                 from analytics.cohort_retention as retention
                 cross join analytics.as_of as clock
                 where retention.month = date_trunc('month', clock.as_of)) as usable_in_cohorts,
                (select count(*) from analytics.subscriptions_current
                 where not is_test and is_usable) as usable_now
        ) as totals
        where usable_in_cohorts <> usable_now
    """,
    "subscription_lifetimes_churn_matches_expired_events": """
        select * from (
            select
                (select count(*) from analytics.subscription_lifetimes where is_churned)
                    as churned,
                (select count(*) from analytics.subscription_events where event_type = 'expired')
                    as expired_events,
                (select count(*) from analytics.subscription_lifetimes) as lifetimes,
                (select count(*) from analytics.subscriptions_current where not is_test)
                    as live_subscriptions
        ) as totals
        where churned <> expired_events or lifetimes <> live_subscriptions
    """,
    "survival_curve_counts_every_followed_subscription_once": """
        with followed as (
            select count(*) as subscriptions,
                   count(*) filter (where is_churned) as churned,
                   count(*) filter (where is_censored) as censored
            from analytics.subscription_lifetimes where not is_backfill
        ),
        curve as (
            select coalesce(max(at_risk), 0) as subscriptions,
                   coalesce(sum(churned), 0) as churned,
                   coalesce(sum(censored), 0) as censored
            from analytics.survival_curve
        )
        select * from followed
        except
        select * from curve
    """,
    "survival_curve_at_risk_steps_down_by_its_exits": """
        select day, at_risk, churned, censored, next_at_risk from (
            select day, at_risk, churned, censored,
                   lead(at_risk) over (order by day) as next_at_risk
            from analytics.survival_curve
        ) as steps
        where next_at_risk is not null and next_at_risk <> at_risk - churned - censored
    """,
    "reactivations_match_reactivated_events": """
        with events as (
            select date_trunc('month', event_at)::date as month, count(*) as reactivated
            from analytics.subscription_events where event_type = 'reactivated'
            group by date_trunc('month', event_at)::date
        )
        select coalesce(events.month, reactivations.month) as month,
               events.reactivated as events, reactivations.reactivated
        from events
        full outer join analytics.reactivations on reactivations.month = events.month
        where coalesce(events.reactivated, 0) <> coalesce(reactivations.reactivated, 0)
           or reactivations.month is null
           or reactivations.saved + reactivations.won_back <> reactivations.reactivated
    """,
    "churn_by_platform_adds_up_to_monthly_churn": """
        with platforms as (
            select month, sum(subscribers_at_start) as subscribers_at_start,
                   sum(churned) as churned
            from analytics.churn_by_platform
            group by month
        )
        select churn.month, platforms.month as platform_month
        from analytics.monthly_churn as churn
        full outer join platforms on platforms.month = churn.month
        where churn.month is null or platforms.month is null
           or churn.subscribers_at_start <> platforms.subscribers_at_start
           or churn.churned <> platforms.churned
    """,
}


def reconciliations() -> list[DataTest]:
    tests = []
    for name, sql in _RECONCILIATION_SQL.items():
        refs = table_references(sql, f"reconciliation {name}")
        tests.append(DataTest(name, sql, frozenset(t for s, t in refs if s == SCHEMA)))
    return tests


def seed_tests() -> list[DataTest]:
    """The data tests of the seeds (`SEED_TESTS`)."""
    return [
        test
        for name, specs in SEED_TESTS.items()
        for spec in specs
        for test in _generic_tests(name, spec, f"seed {SCHEMA}.{name}")
    ]


def data_tests(models: Sequence[Model]) -> list[DataTest]:
    return [t for m in models for t in m.tests] + seed_tests() + reconciliations()


def data_test_sql(test: DataTest, dialect: str) -> str:
    """TEST's query in DIALECT's SQL; DevportalError naming the test when sqlglot cannot."""
    if dialect == SOURCE_DIALECT:
        return test.sql
    try:
        return translate(test.sql, dialect)
    except DevportalError as err:
        raise DevportalError(f"data test {test.name}: {err}") from None


def _run_test(engine: engines.Engine, test: DataTest) -> str | None:
    """Why TEST fails on ENGINE (its failing rows, or why it could not run); None if it passes."""
    try:
        sql = render(data_test_sql(test, engine.dialect), engine.catalog, dialect=engine.dialect)
    except DevportalError as err:
        return f"{test.name}: could not run: {err}"
    failing = f"(\n{sql}\n) as failing_rows"
    try:
        with engine.transaction():  # on PostgreSQL an error ends the transaction: one per test
            rows = engine.execute(f"select * from {failing} limit {SAMPLE_ROWS + 1}")
            total = engine.execute(f"select count(*) from {failing}")[0][0] if rows else 0
    except engine.errors as err:
        return f"{test.name}: could not run: {first_line(err)}"
    if not total:
        return None
    sample = "; ".join(repr(tuple(r)) for r in rows[:SAMPLE_ROWS])
    return f"{test.name}: {total} failing row(s), e.g. {sample}"


def run_tests(engine: engines.Engine, models: Sequence[Model], built: set[str]) -> int:
    """Run the data tests of the built models; raise DevportalError naming each failure."""
    failures: list[str] = []
    ran = 0
    for test in data_tests(models):
        if not test.models <= built:
            continue
        ran += 1
        failure = _run_test(engine, test)
        if failure is not None:
            failures.append(failure)
    for failure in failures:
        log.error("data test failed: %s", failure)
    if failures:
        message = f"{len(failures)} of {ran} data tests failed: " + " | ".join(failures)
        raise DataTestsFailed(message)
    return ran


class DataTestsFailed(DevportalError):
    """Data tests of a committed build failed (the build itself stands)."""
