"""The portability lint and the translation: one SQL, written in DuckDB SQL, for every engine.

On DuckDB a model runs exactly as written. For another engine it is translated by sqlglot
(`translate`), raising on anything sqlglot cannot translate, and first checked for the
constructs sqlglot translates silently wrong or into what PostgreSQL lacks (`_unportable`,
each refused by name):

- ASOF JOIN, GROUP BY ALL, string_split, functions sqlglot does not know such as epoch_us;
- USING after a join that may bring a second column of that name;
- a SELECT alias read in WHERE or HAVING;
- try_cast (it becomes CAST: NULL on DuckDB, an error on PostgreSQL);
- round() of anything but an explicit `cast(... as decimal(p, s))`: on double precision
  PostgreSQL rounds half to even (2.5 -> 2, DuckDB 3) and has no round(x, n); only a decimal
  argument is known to round alike on both, so nothing else is accepted;
- arg_max/max_by, arg_min/min_by, first, last, contains, make_date, epoch_ms/to_timestamp
  (functions PostgreSQL lacks under sqlglot's name, or returns another type).

Every model, data test and reconciliation is written in the subset of DuckDB SQL that passes
both (README: Analytics), so one file serves every engine. sqlglot is imported where it is used
(0.1 s of startup that a DuckDB build never needs). The readers' queries in `sql/charts/`
and `sql/report/` are not translated: DuckDB and PostgreSQL run them as written, and
`check_as_written` holds them to the same lint (tested, not run by the report).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

from devportal.base.errors import DevportalError, first_line
from devportal.models.project import SOURCE_DIALECT

log = logging.getLogger("devportal.models")


def _unportable(statement: Any, split_ok: bool = False) -> str | None:
    """The first construct of STATEMENT (parsed DuckDB SQL) that sqlglot would translate silently
    wrong, or pass on unchanged for the engine to misread; None when there is none. SPLIT_OK
    lets a split pass (`check_as_written`: spelled string_to_array, as both engines have it)."""
    from sqlglot import exp  # deferred: sqlglot's import costs startup time (module docstring)

    for node in statement.walk():
        if isinstance(node, exp.Anonymous):
            return f"{node.name}() is no function sqlglot knows, so no engine gets a translation"
        if isinstance(node, exp.Split) and not split_ok:
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
    from sqlglot import exp  # deferred: sqlglot's import costs startup time (module docstring)

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
    from sqlglot import exp  # deferred: sqlglot's import costs startup time (module docstring)

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
    from sqlglot import exp  # deferred: sqlglot's import costs startup time (module docstring)

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
    import sqlglot  # deferred: sqlglot's import costs startup time (module docstring)

    try:
        statements = [s for s in sqlglot.parse(sql, read=SOURCE_DIALECT) if s is not None]
        problem = next((p for p in map(_unportable, statements) if p), None)
        if problem is None:
            return ";\n".join(
                s.sql(dialect=dialect, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
                for s in statements
            )
    except sqlglot.errors.SqlglotError as err:  # a bug (an AttributeError) is no advice: it goes
        raise DevportalError(
            f"sqlglot cannot translate it to {dialect}: {first_line(err)}"
        ) from err
    raise DevportalError(f"sqlglot cannot translate it to {dialect}: {problem}")


# DuckDB's names of the split string_to_array also is (sqlglot reads all three as one)
_DUCKDB_SPLIT = re.compile(r"\b(?:string_split|str_split)\s*\(", re.IGNORECASE)


def check_as_written(sql: str, where: str) -> None:
    """Refuse, naming WHERE, what the lint refuses in SQL, a query that DuckDB and PostgreSQL
    both run as written, untranslated (the charts' and the report's, `sql/charts/`,
    `sql/report/`). One difference from `translate`: a split spelled `string_to_array`, a name
    both engines have, passes (sqlglot reads it as DuckDB's string_split); string_split does
    not, as PostgreSQL lacks it."""
    import sqlglot  # deferred: sqlglot's import costs startup time (module docstring)

    try:
        statements = [s for s in sqlglot.parse(sql, read=SOURCE_DIALECT) if s is not None]
    except sqlglot.errors.ParseError as err:
        raise DevportalError(f"{where}: sqlglot cannot parse it: {first_line(err)}") from err
    split_ok = _DUCKDB_SPLIT.search(sql) is None
    problem = next((p for s in statements if (p := _unportable(s, split_ok))), None)
    if problem is not None:
        raise DevportalError(f"{where}: not portable as written: {problem}")


class Translations:
    """`translate`, remembered in a file: the translations a build made, keyed by the SQL's
    digest, so the next build translates only what changed (sqlglot parses and writes every model
    and data test at every build, a third of a second at every `devportal models` on PostgreSQL,
    more with `--check`). The file holds the sqlglot version and this module's digest it was made
    with: after an upgrade or an edit of the lint it is read as empty. A file that cannot be read
    or written is a cache miss, never a failure: the translation is the same either way."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.made: dict[str, str] = {}  # this build's translations, what `save` writes
        self._known: dict[str, str] = self._read() if path is not None else {}

    @staticmethod
    @functools.cache
    def _maker() -> str:
        """What made a translation: the sqlglot version and this module's source."""
        source = Path(__file__).read_bytes()
        return f"sqlglot {version('sqlglot')}, lint {hashlib.sha256(source).hexdigest()[:16]}"

    def _read(self) -> dict[str, str]:
        assert self.path is not None
        try:
            held = json.loads(self.path.read_text(encoding="utf-8"))
            if held.get("made_with") == self._maker() and isinstance(held["sql"], dict):
                return {str(k): str(v) for k, v in held["sql"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
        return {}

    def translate(self, sql: str, dialect: str) -> str:
        """`translate(SQL, DIALECT)`, from the file when it holds it."""
        key = hashlib.sha256(f"{dialect}\0{sql}".encode()).hexdigest()
        found = self._known.get(key)
        if found is None:
            found = translate(sql, dialect)
        self.made[key] = found
        return found

    def save(self) -> None:
        """Write this build's translations (only those: the file never grows past the project),
        when they differ from what the file held."""
        if self.path is None or self.made == self._known:
            return
        text = json.dumps({"made_with": self._maker(), "sql": self.made}, sort_keys=True)
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.partial")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, self.path)
            self._known = dict(self.made)
        except OSError as err:
            partial.unlink(missing_ok=True)
            log.debug("models: could not keep the translations in %s: %s", self.path, err)
