"""The SQL project in `sql/`: reading each model file, its header directives, and the build order.

A model is one file of a layer, `sql/<layer>/<name>.sql` (LAYERS: `staging` renames and types
the raw tables, `intermediate` holds the building blocks of the marts, `marts` the tables people
read), holding one SELECT written in DuckDB SQL; it becomes the table `analytics.<name>`, one
schema for every layer, so a model's table name does not depend on its folder. The file opens
with a comment stating its grain and definitions; lines of it starting with `@` are read here:

    -- @test unique(col[, col...])            the columns together identify a row
    -- @test not_null(col[, col...])          each column is never NULL
    -- @test accepted_values(col: a, b, c)    non-NULL values are one of these
    -- @optional devportal.<table>(col type, ...)
        the raw table may not exist yet (dlt creates a table with its first rows): until it
        does, the model reads an empty relation of these columns (DuckDB types) in its place

Build order comes from the SQL itself: each `analytics.<name>` a model reads is a dependency
(graphlib's TopologicalSorter, no hand-kept list). The names are read from the file's lexemes
(`lexemes`, `qualified_names`: a regular expression, a few milliseconds for all of `sql/`),
not from a parse, which costs sqlglot a tenth of a second for the project at every build: the
files shipped in `sql/` are parsed by sqlglot in the tests, which must find the same tables and
no table without its schema (tests/models/test_sql_layout.py), and a caller's own `sql_dir` is
parsed at every build (`table_references`), as it is checked by nothing else. An override file
`sql/<layer>/<name>.<engine>.sql` beside a model is checked here (a header saying why, no `@`
directives, no table the model does not read) and run by that engine (devportal.models.engine_sql).
"""

from __future__ import annotations

import functools
import graphlib
import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from devportal.base.errors import DevportalError
from devportal.models.seeds import SEEDS
from devportal.warehouse import ANALYTICS_SCHEMA, RAW_SCHEMA, sql_literal
from devportal.warehouse.target import ENGINES

# package data (a link to the repository's sql/ in a checkout, real files in a wheel)
SQL_DIR = Path(__file__).parent.parent / "sql"
LAYERS = ("staging", "intermediate", "marts")
SCHEMA = ANALYTICS_SCHEMA
# the SQL every model, data test and stand-in is written in
SOURCE_DIALECT = "duckdb"
# engines that may have their own form of a model in `<name>.<engine>.sql`
OVERRIDE_ENGINES = tuple(e for e in ENGINES if e != SOURCE_DIALECT)

DIRECTIVE = re.compile(r"^--\s*@(?P<kind>\w+)\s+(?P<body>.+?)\s*$")
_CALL = re.compile(r"^(?P<name>\w+)\s*\((?P<args>.*)\)$", re.DOTALL)
_OPTIONAL = re.compile(rf"^{RAW_SCHEMA}\.(?P<table>\w+)\s*\((?P<columns>.*)\)$", re.DOTALL)
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The lexemes of DuckDB's and PostgreSQL's SQL as far as finding `schema.table` needs: what is
# skipped (blanks, comments), strings (E'...' with its backslash escapes), quoted identifiers
# ("" inside), words, numbers (so `1.5` is no name), any other character.
_LEXEME = re.compile(
    r"""
      (?P<skip>\s+|--[^\n]*|/\*.*?\*/)
    | (?P<string>[eE]'(?:[^'\\]|''|\\.)*'|'(?:[^']|'')*')
    | (?P<quoted>"(?:[^"]|"")*")
    | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Lexeme:
    """One lexeme of SQL text: KIND (string, quoted, word, number, other), TEXT as written,
    its place (START, END: `sql[start:end]`), and for a word or quoted identifier its NAME
    (lower-cased for a word, as written inside the quotes for a quoted one)."""

    kind: str
    text: str
    start: int
    end: int

    @property
    def name(self) -> str | None:
        if self.kind == "word":
            return self.text.lower()
        if self.kind == "quoted":
            return self.text[1:-1].replace('""', '"')
        return None


@functools.lru_cache(maxsize=256)
def lexemes(sql: str) -> tuple[Lexeme, ...]:
    """The lexemes of SQL, blanks and comments left out (kept for the SQL read again: a model's
    file is lexed to find its tables, then to render it)."""
    return tuple(
        Lexeme(kind, match.group(), match.start(), match.end())
        for match in _LEXEME.finditer(sql)
        if (kind := match.lastgroup or "other") != "skip"
    )


def qualified_names(tokens: Sequence[Lexeme]) -> list[tuple[int, str, str]]:
    """Every `analytics.<table>` and `devportal.<table>` in TOKENS (lexemes of one SQL text),
    outside comments and strings and not the end of a `catalog.schema.table` already: (the
    index of its schema lexeme, the schema lower-cased, the table's name as written)."""
    found: list[tuple[int, str, str]] = []
    for i in range(len(tokens) - 2):
        first, dot, last = tokens[i], tokens[i + 1], tokens[i + 2]
        schema, table = (first.name or "").lower(), last.name
        if (
            schema in (SCHEMA, RAW_SCHEMA)
            and dot.text == "."
            and table is not None
            and (last.kind == "quoted" or NAME.match(last.text))
            and not (i > 0 and tokens[i - 1].text == ".")
            and not (found and i <= found[-1][0] + 2)  # `analytics.analytics.t`: one name
        ):
            found.append((i, schema, table))
    return found


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


# -- reading the SQL files ----------------------------------------------------------------------


def header(text: str) -> list[str]:
    """The comment lines the file opens with (blank lines allowed between them)."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("--"):
            lines.append(stripped)
        elif stripped:
            break
    return lines


def undirected_sql(path: Path, where: str, *, header_says: str, directives_belong: str) -> str:
    """The text of PATH (WHERE in messages), a SQL file that must open with a comment saying
    HEADER_SAYS and carry no @ directives (they belong DIRECTIVES_BELONG)."""
    text = path.read_text(encoding="utf-8")
    lines = header(text)
    if not lines:
        raise DevportalError(f"{where}: open the file with a comment saying {header_says}")
    if any(DIRECTIVE.match(line) for line in lines):
        raise DevportalError(f"{where}: @ directives belong {directives_belong}")
    return text


def _split_args(args: str) -> list[str]:
    return [a.strip() for a in args.split(",") if a.strip()]


def generic_tests(model: str, spec: str, where: str) -> list[DataTest]:
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
        if not NAME.match(name) or not data_type.strip():
            raise DevportalError(f"{where}: '{part}' is not 'column type'")
        columns.append((name, data_type.strip()))
    return match["table"], columns


def table_references(sql: str, where: str, dialect: str = SOURCE_DIALECT) -> set[tuple[str, str]]:
    """(schema, table) of every table SQL (in DIALECT) reads; unqualified names must be CTEs."""
    # deferred: sqlglot's import costs startup time, and only a caller's own sql_dir needs it
    import sqlglot
    from sqlglot import exp

    try:
        statements = sqlglot.parse(sql, read=dialect)
    except sqlglot.errors.ParseError as err:
        raise DevportalError(
            f"{where}: sqlglot cannot parse it: {str(err).splitlines()[0]}"
        ) from err
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


def _read_model(path: Path, layer: str, where: str, parse: bool) -> Model:
    """The model in PATH: its SQL, header directives and the tables it reads (with PARSE, as
    sqlglot's parse finds them, checking each table names its schema; else from its lexemes)."""
    text = path.read_text(encoding="utf-8")
    lines = header(text)
    if not lines:
        raise DevportalError(f"{where}: open the file with a comment stating its grain")
    name = path.stem
    model = Model(name=name, layer=layer, path=path, sql=text.strip().rstrip(";").strip())
    for line in lines:
        directive = DIRECTIVE.match(line)
        if directive is None:
            continue
        kind, body = directive["kind"], directive["body"]
        if kind == "test":
            model.tests.extend(generic_tests(name, body, where))
        elif kind == "optional":
            table, columns = _optional_source(body, where)
            model.optional[table] = columns
        else:
            raise DevportalError(f"{where}: unknown directive @{kind}; use @test or @optional")
    if parse:
        refs = table_references(model.sql, where)
    else:
        refs = {(schema, table.lower()) for _, schema, table in qualified_names(lexemes(model.sql))}
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
    text = undirected_sql(
        path,
        where,
        header_says=f"why {engine} needs its own form",
        directives_belong=f"in {model.relative_path}, which the override follows",
    )
    reads = {(SCHEMA, t) for t in model.depends_on | model.seeds}
    reads |= {(RAW_SCHEMA, t) for t in model.sources}
    extra = sorted(table_references(text, where, dialect=engine) - reads)
    if extra:
        raise DevportalError(
            f"{where}: reads {'.'.join(extra[0])}, which {model.relative_path} does not; "
            "the build order comes from the model's own file"
        )


def load_models(sql_dir: Path | None = None, *, parse: bool | None = None) -> list[Model]:
    """Every model file under SQL_DIR (each of LAYERS in turn), read and validated, with the
    engine override files beside them (`<name>.<engine>.sql`). PARSE: read each model's tables
    from sqlglot's parse (module docstring); by default only for a folder other than the
    package's `sql/`, whose files the tests parse."""
    root = sql_dir or SQL_DIR
    if parse is None:
        parse = root.resolve() != SQL_DIR.resolve()
    models: dict[str, Model] = {}
    overrides: list[tuple[str, str, Path]] = []
    for layer in LAYERS:
        for path in sorted((root / layer).glob("*.sql")):
            name, dot, engine = path.stem.partition(".")
            where = f"sql/{layer}/{path.name}"
            if not NAME.match(name):
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
            models[name] = _read_model(path, layer, where, parse)
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
        raise DevportalError(f"the models read each other in a cycle: {_cycle(err)}") from err
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
