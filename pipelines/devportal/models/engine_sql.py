"""A model as each engine runs it: the file as written on DuckDB, an engine's override file, or
sqlglot's translation; the empty relations standing in for missing optional raw tables; and
the names qualified with the warehouse's catalog (`render`).

Where an engine truly needs its own form, the one escape is an override file beside the model,
`sql/<layer>/<name>.<engine>.sql` (e.g. `sql/marts/daily_subscribers.postgres.sql`): that
engine runs it instead of the translation. It is written in the engine's own SQL, opens with a
comment saying why it exists, reads only tables the model itself reads (the build order and the
skips come from `<name>.sql`) and holds no `@` directives (the tests and optional tables are the
model's, in `<name>.sql`). A model that cannot be translated stops the build before anything
runs, naming its file.

On DuckDB every `devportal.<table>` and `analytics.<table>` is qualified with the warehouse's
catalog before it runs: a name left bare breaks as soon as the file is attached under another
catalog name or its catalog is called like a schema ("ambiguous reference"). On PostgreSQL the
names stay schema-qualified in the connection's database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from devportal.base.errors import DevportalError
from devportal.models.portability import Translations, translate
from devportal.models.project import (
    SOURCE_DIALECT,
    Lexeme,
    Model,
    lexemes,
    qualified_names,
)
from devportal.warehouse import RAW_SCHEMA, quote_ident


@dataclass(frozen=True)
class EngineSql:
    """A model as one engine runs it: the SQL, the file it comes from, and the SQL of the empty
    relation standing in for each optional raw table."""

    sql: str
    where: str
    stubs: dict[str, str]


def for_engine(model: Model, dialect: str, translations: Translations | None = None) -> EngineSql:
    """MODEL as DIALECT runs it: the file as written on DuckDB, an override file when the model
    has one for DIALECT, else sqlglot's translation (from TRANSLATIONS when it holds it).
    Raises DevportalError naming the file."""
    stubs = {table: _stub(columns) for table, columns in model.optional.items()}
    if dialect == SOURCE_DIALECT:
        return EngineSql(model.sql, model.relative_path, stubs)
    convert = translations.translate if translations is not None else translate
    try:
        stubs = {table: convert(stub, dialect) for table, stub in stubs.items()}
    except DevportalError as err:
        raise DevportalError(f"{model.relative_path}: @optional: {err}") from err
    where = model.file_for(dialect)
    override = model.overrides.get(dialect)
    if override is not None:
        sql = override.read_text(encoding="utf-8").strip().rstrip(";").strip()
        return EngineSql(sql, where, stubs)
    try:
        sql = convert(model.sql, dialect)
    except DevportalError as err:
        raise DevportalError(
            f"{where}: cannot run on {dialect}: {err}. Rewrite it in the portable subset "
            f"(README: Analytics) or give {dialect} its own form in "
            f"sql/{model.layer}/{model.name}.{dialect}.sql"
        ) from err
    return EngineSql(sql, where, stubs)


def render(sql: str, catalog: str | None, stubs: Mapping[str, str] | None = None) -> str:
    """SQL with `devportal.t` / `analytics.t` qualified by CATALOG (None: left as they are), and
    STUBS substituted.

    Works on the SQL's lexemes (`project.lexemes`, which read DuckDB's and PostgreSQL's
    comments, strings and quoted identifiers alike), so comments, strings and formatting are
    left exactly as written. STUBS maps a raw table name to the SQL of a relation that stands
    in for it.
    """
    stubs = stubs or {}
    if catalog is None and not stubs:
        return sql
    tokens = lexemes(sql)
    pieces: list[str] = []
    position = 0
    for i, schema, table in qualified_names(tokens):
        first, last = tokens[i], tokens[i + 2]
        if schema == RAW_SCHEMA and table.lower() in stubs:
            replacement = stubs[table.lower()]
            following = tokens[i + 3] if i + 3 < len(tokens) else None
            if following is None or not _names_an_alias(following):
                replacement += f" as {quote_ident(table.lower())}"  # keeps `table.column` readable
        elif catalog is not None:
            replacement = ".".join(quote_ident(p) for p in (catalog, schema, table))
        else:
            continue
        pieces.append(sql[position : first.start])
        pieces.append(replacement)
        position = last.end
    pieces.append(sql[position:])
    return "".join(pieces)


# the words that may follow a table in FROM without being its alias
_AFTER_A_TABLE = frozenset(
    {
        "on",
        "using",
        "join",
        "left",
        "right",
        "inner",
        "outer",
        "full",
        "cross",
        "natural",
        "semi",
        "anti",
        "asof",
        "positional",
        "lateral",
        "where",
        "group",
        "order",
        "having",
        "window",
        "qualify",
        "limit",
        "offset",
        "fetch",
        "union",
        "except",
        "intersect",
        "tablesample",
        "sample",
        "pivot",
        "unpivot",
        "for",
        "returning",
        "when",
        "then",
        "else",
        "end",
        "and",
        "or",
        "select",
        "from",
        "with",
        "values",
        "into",
        "set",
    }
)


def _names_an_alias(token: Lexeme) -> bool:
    """Whether TOKEN, right after a table in FROM, gives it an alias (`AS`, or a name that is
    no clause of its own)."""
    if token.kind == "quoted":
        return True
    return token.kind == "word" and (token.name == "as" or token.name not in _AFTER_A_TABLE)


def _stub(columns: Sequence[tuple[str, str]]) -> str:
    """An empty relation of COLUMNS (DuckDB types), in DuckDB SQL."""
    selected = ", ".join(f"cast(null as {t}) as {quote_ident(c)}" for c, t in columns)
    return f"(select {selected} where false)"
