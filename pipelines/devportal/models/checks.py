"""Data tests: the generic ones declared in the model headers (`@test`) and by the seeds, and the
reconciliations in `sql/tests/`, which tie the models to each other and to the raw history.

Each test is a query, written in DuckDB SQL and translated like the models, returning the
offending rows; any row fails the test. A test runs only when every model it reads was built.

A reconciliation is one file, `sql/tests/<name>.sql`, named for what it checks and opening with
a comment saying what it ties together (`-- <name>: ties ... to ...`, then what it expects and
what rows it returns). It has no `@` directives and no per-engine form: like every data test it
is written in the portable subset. They are always read from the package's `sql/tests/`, also
when a build is given its own `sql_dir` of models.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from devportal.base.errors import DataTestsFailed as DataTestsFailed
from devportal.base.errors import DevportalError, first_line
from devportal.models.engine_sql import render
from devportal.models.portability import Translations, translate
from devportal.models.project import (
    NAME,
    SCHEMA,
    SOURCE_DIALECT,
    SQL_DIR,
    DataTest,
    Model,
    generic_tests,
    table_references,
    undirected_sql,
)
from devportal.models.seeds import SEED_TESTS
from devportal.warehouse import engines

log = logging.getLogger("devportal.models")

SAMPLE_ROWS = 3
# the folder of sql/ holding the reconciliations
TESTS_DIR = "tests"


def reconciliations(sql_dir: Path | None = None) -> list[DataTest]:
    """The reconciliations, one per `sql/tests/<name>.sql`, in name order (module docstring);
    read from SQL_DIR/tests (None: the package's `sql/`)."""
    folder = (sql_dir or SQL_DIR) / TESTS_DIR
    if not folder.is_dir():
        raise DevportalError(
            f"sql/{TESTS_DIR}/ is missing ({folder}); reinstall devportal, which ships it"
        )
    tests = []
    for path in sorted(folder.glob("*.sql")):
        where = f"sql/{TESTS_DIR}/{path.name}"
        if not NAME.match(path.stem):
            raise DevportalError(
                f"{where}: a reconciliation's name must be a plain SQL identifier "
                "(one file serves every engine)"
            )
        text = undirected_sql(
            path,
            where,
            header_says="what it ties together",
            directives_belong="in a model's header, not a test's",
        )
        sql = text.strip().rstrip(";").strip()
        refs = table_references(sql, where)
        tests.append(DataTest(path.stem, sql, frozenset(t for s, t in refs if s == SCHEMA)))
    return tests


def seed_tests() -> list[DataTest]:
    """The data tests of the seeds (`SEED_TESTS`)."""
    return [
        test
        for name, specs in SEED_TESTS.items()
        for spec in specs
        for test in generic_tests(name, spec, f"seed {SCHEMA}.{name}")
    ]


def data_tests(models: Sequence[Model]) -> list[DataTest]:
    return [t for m in models for t in m.tests] + seed_tests() + reconciliations()


def data_test_sql(test: DataTest, dialect: str, translations: Translations | None = None) -> str:
    """TEST's query in DIALECT's SQL (from TRANSLATIONS when it holds it); DevportalError naming
    the test when sqlglot cannot."""
    if dialect == SOURCE_DIALECT:
        return test.sql
    try:
        if translations is not None:
            return translations.translate(test.sql, dialect)
        return translate(test.sql, dialect)
    except DevportalError as err:
        raise DevportalError(f"data test {test.name}: {err}") from err


def _run_test(
    engine: engines.Engine, test: DataTest, translations: Translations | None = None
) -> str | None:
    """Why TEST fails on ENGINE (its failing rows, or why it could not run); None if it passes."""
    try:
        sql = render(data_test_sql(test, engine.dialect, translations), engine.catalog)
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


def run_tests(
    engine: engines.Engine,
    models: Sequence[Model],
    built: set[str],
    translations: Translations | None = None,
) -> int:
    """Run the data tests of the built models (translated through TRANSLATIONS, when given);
    raise DevportalError naming each failure."""
    failures: list[str] = []
    ran = 0
    for test in data_tests(models):
        if not test.models <= built:
            continue
        ran += 1
        failure = _run_test(engine, test, translations)
        if failure is not None:
            failures.append(failure)
    for failure in failures:
        log.error("data test failed: %s", failure)
    if failures:
        message = f"{len(failures)} of {ran} data tests failed: " + " | ".join(failures)
        raise DataTestsFailed(message)
    return ran
