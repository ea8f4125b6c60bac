"""The reconciliations in `sql/tests/`: one file each, a header saying what it ties together, read
and run by the runner on every build with `--check` (the package's files, also when the build
is given its own `sql_dir` of models)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devportal import models
from devportal.base.errors import DevportalError
from devportal.models.checks import DataTestsFailed, data_tests, reconciliations
from devportal.models.project import SQL_DIR, load_models
from tests.models.test_runner import raw_warehouse, write_models

TESTS_FOLDER = SQL_DIR / "tests"


def test_every_file_in_sql_tests_is_a_reconciliation_with_its_header() -> None:
    files = sorted(TESTS_FOLDER.glob("*.sql"))
    loaded = reconciliations()
    assert [t.name for t in loaded] == [f.stem for f in files]
    assert len(loaded) >= 25
    for path, test in zip(files, loaded, strict=True):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert re.match(rf"^-- {path.stem}: ties \S", first), f"{path.name}: {first}"
        assert test.models, f"{path.name} reads no model"
        assert test.sql.startswith("--") and not test.sql.endswith(";")
    assert {t.name for t in loaded} <= {t.name for t in data_tests(load_models())}


def test_a_reconciliation_runs_against_the_models_of_any_sql_dir(tmp_path: Path) -> None:
    """`as_of_has_exactly_one_row` (sql/tests/) fails on a toy `analytics.as_of` of two rows:
    the runner read it from the package's sql/tests/ and ran it with the header tests."""
    sql_dir = write_models(
        tmp_path,
        {
            "marts/as_of.sql": (
                "-- as_of: two rows, which its reconciliation refuses\n"
                "-- @test not_null(as_of)\n"
                "select * from (values (timestamp '2024-01-01'), (timestamp '2024-01-02')) "
                "t(as_of)"
            )
        },
    )
    warehouse = raw_warehouse(tmp_path / "wh" / "toy.duckdb")
    with pytest.raises(DataTestsFailed) as caught:
        models.build(warehouse, sql_dir=sql_dir, check=True)
    assert str(caught.value) == (
        "1 of 2 data tests failed: as_of_has_exactly_one_row: 1 failing row(s), e.g. (2,)"
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "no_header",
            "select 1 from analytics.as_of",
            "sql/tests/no_header.sql: open the file with a comment saying what it ties together",
        ),
        (
            "as_of_rows.postgres",
            "-- as_of_rows: ties as_of to itself\nselect 1 from analytics.as_of",
            "sql/tests/as_of_rows.postgres.sql: a reconciliation's name must be a plain SQL "
            "identifier (one file serves every engine)",
        ),
        (
            "directive",
            "-- directive: ties as_of to itself\n-- @test unique(x)\nselect 1 from analytics.as_of",
            "sql/tests/directive.sql: @ directives belong in a model's header, not a test's",
        ),
        (
            "bare_table",
            "-- bare_table: ties as_of to itself\nselect 1 from as_of",
            "sql/tests/bare_table.sql: table 'as_of' has no schema; write analytics.as_of "
            "(a model) or devportal.as_of (raw)",
        ),
    ],
)
def test_a_malformed_reconciliation_is_refused_naming_its_file(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    sql_dir = write_models(tmp_path, {f"tests/{name}.sql": text})
    with pytest.raises(DevportalError) as caught:
        reconciliations(sql_dir)
    assert str(caught.value) == message


def test_a_missing_tests_folder_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(DevportalError, match=r"^sql/tests/ is missing \(.*\); reinstall devportal"):
        reconciliations(write_models(tmp_path, {}))
