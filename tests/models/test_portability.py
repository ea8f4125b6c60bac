"""One SQL for every engine: the models are DuckDB SQL that sqlglot translates faithfully.

Every model, data test and reconciliation translates to PostgreSQL (run in
test_postgres_models.py), BigQuery and Snowflake (translated here, not run) with sqlglot raising
on anything it cannot translate. The constructs sqlglot translates silently wrong are refused
by name, a model the runner cannot translate stops the build naming its file before anything
runs, and an override file `<name>.<engine>.sql` is what its engine runs instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from devportal import models
from devportal.base.errors import DevportalError
from devportal.models.checks import data_test_sql, data_tests
from devportal.models.engine_sql import for_engine
from devportal.models.portability import translate
from devportal.models.project import LAYERS, SQL_DIR, load_models
from devportal.warehouse import engines
from devportal.warehouse.target import Target
from tests.models.test_runner import raw_warehouse, write_models

TARGETS = ("postgres", "bigquery", "snowflake")


@pytest.mark.parametrize("dialect", TARGETS)
def test_every_model_and_data_test_translates(dialect: str) -> None:
    loaded = load_models()
    # every model file of sql/ is one model, as the runner reads them (an override
    # `<name>.<engine>.sql` is none): the count follows sql/, never written down
    files = [p.stem for layer in LAYERS for p in (SQL_DIR / layer).glob("*.sql")]
    assert sorted(m.name for m in loaded) == sorted(f for f in files if "." not in f)
    for model in loaded:
        code = for_engine(model, dialect)
        assert code.where == model.relative_path  # no override in sql/: one file serves all
        assert set(code.stubs) == set(model.optional)
    tests = data_tests(loaded)
    assert len(tests) > 90
    for test in tests:
        assert data_test_sql(test, dialect).strip()


def test_duckdb_runs_the_files_as_written() -> None:
    for model in load_models():
        assert for_engine(model, "duckdb").sql == model.sql
    for test in data_tests(load_models()):
        assert data_test_sql(test, "duckdb") == test.sql


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        # each of these reaches some engine wrong without an error from sqlglot
        ("select epoch_us(t) from x", "epoch_us() is no function sqlglot knows"),
        ("select string_split(s, ',') from x", "string_split() becomes SPLIT()"),
        ("select x.a from x asof join y on x.t >= y.t", "ASOF JOIN is DuckDB's own"),
        ("select a, count(*) from x group by all", "GROUP BY ALL is DuckDB's own"),
        (
            "select * from x join y on x.k = y.k join z using (id)",
            "JOIN ... USING (id) after a join with ON",
        ),
        ("select 1 as n where n > 0", "WHERE reads n, a name the SELECT list gives"),
        ("select count(*) as c from x having c > 1", "HAVING reads c"),
        # PostgreSQL rounds double precision half to even (DuckDB: half away from zero)
        ("select round(x::double) from x", "round() of anything but cast(... as decimal(p, s))"),
        ("select round(a / b, 2) from x", "round() of anything but cast(... as decimal(p, s))"),
        ("select round(a) from x", "round() of anything but cast(... as decimal(p, s))"),
        ("select round(try_cast(a as decimal(9, 2))) from x", "round() of anything but"),
        # CAST raises on PostgreSQL where try_cast gives NULL on DuckDB
        ("select try_cast(a as int) from x", "try_cast() becomes CAST"),
        ("select try_cast(a as decimal(9, 2)) from x", "try_cast() becomes CAST"),
        # functions PostgreSQL lacks under sqlglot's name, or returns another type
        ("select arg_max(a, b) from x", "arg_max()/max_by()"),
        ("select max_by(a, b) from x", "arg_max()/max_by()"),
        ("select arg_min(a, b) from x", "arg_min()/min_by()"),
        ("select min_by(a, b) from x", "arg_min()/min_by()"),
        ("select first(a order by b) from x", "first()/last() are no PostgreSQL aggregates"),
        ("select first(a) from x", "first()/last() are no PostgreSQL aggregates"),
        ("select last(a) from x", "first()/last() are no PostgreSQL aggregates"),
        ("select * from x where contains(s, 'a')", "contains() becomes CONTAINS()"),
        ("select make_date(2026, 1, 2) as d", "make_date() becomes DATE_FROM_PARTS()"),
        ("select epoch_ms(t) from x", "epoch_ms()/to_timestamp() become TO_TIMESTAMP()"),
        ("select to_timestamp(t) from x", "epoch_ms()/to_timestamp() become TO_TIMESTAMP()"),
        # ... also inside a CTE, a subquery or a data test's HAVING
        (
            "with c as (select max_by(a, b) as m from x) select * from c",
            "arg_max()/max_by()",
        ),
        ("select * from (select try_cast(a as int) as n from x) as t", "try_cast()"),
        ("select a from x group by a having round(sum(b)) > 1", "round() of anything but"),
        # sqlglot itself refuses: PostgreSQL's any_value has no IGNORE NULLS
        ("select any_value(a) from x", "PostgreSQL does not support IGNORE NULLS"),
    ],
)
def test_what_sqlglot_would_get_wrong_is_refused_by_name(sql: str, problem: str) -> None:
    with pytest.raises(DevportalError, match=re.escape(problem)):
        translate(sql, "postgres")


def test_the_portable_forms_pass() -> None:
    portable = [
        "select * from x join y using (id) left join z on z.k = x.k",
        "select a as b from x where a > 0",
        "select * from (select 1 as n) as t where n > 0",
        "select a, count(*) from x group by a",
        "select round(cast(a as decimal(12, 4)), 2) from x",
        "select round(a::numeric(12, 4)) from x",
        "select first_value(a) over (order by b) from x",
        "select s like '%a%' from x",
        "select a, b from x order by a nulls first",
    ]
    for sql in portable:
        assert translate(sql, "postgres")


def test_an_untranslatable_model_stops_the_build_naming_its_file(
    tmp_path: Path, postgres: str
) -> None:
    sql_dir = write_models(
        tmp_path,
        {
            "staging/fine.sql": "-- fine: one row\nselect 1 as n",
            "marts/uses_asof.sql": (
                "-- uses_asof: one row per n\n"
                "select a.n from analytics.fine as a asof join analytics.fine as b on a.n >= b.n"
            ),
        },
    )
    warehouse = raw_warehouse(tmp_path / "wh" / "toy.duckdb")
    # DuckDB runs the file as written
    assert models.build(warehouse, sql_dir=sql_dir)["built"] == ["fine", "uses_asof"]
    with pytest.raises(DevportalError) as caught:
        models.build(Target.of(warehouse, "postgres"), sql_dir=sql_dir)
    assert str(caught.value).startswith(
        "sql/marts/uses_asof.sql: cannot run on postgres: sqlglot cannot translate it to "
        "postgres: ASOF JOIN is DuckDB's own"
    )
    assert "sql/marts/uses_asof.postgres.sql" in str(caught.value)
    # refused before anything ran: not even the schema was created
    with engines.connect(Target.of(warehouse, "postgres")) as engine:
        assert engine.relations("analytics") == {}
        assert engine.execute(
            "select count(*) from information_schema.schemata where schema_name = 'analytics'"
        ) == [(0,)]


OVERRIDDEN = {
    "staging/numbers.sql": (
        "-- numbers: one row per raw number, with its optional label\n"
        "-- @optional devportal.labels(k bigint, label varchar)\n"
        "-- @test unique(n)\n"
        "select raw.n, labels.label\n"
        "from devportal.numbers as raw\n"
        "left join devportal.labels on labels.k = raw.n"
    ),
    # ASOF JOIN: DuckDB's own, so PostgreSQL needs the override below
    "marts/previous.sql": (
        "-- previous: one row per n with the largest smaller n\n"
        "-- @test unique(n)\n"
        "select a.n, b.n as previous_n, 'as written' as form\n"
        "from analytics.numbers as a asof left join analytics.numbers as b on a.n > b.n"
    ),
    "marts/previous.postgres.sql": (
        "-- previous on PostgreSQL: no ASOF JOIN there, a lateral subquery does the same\n"
        "select a.n, b.previous_n, 'override' as form\n"
        "from analytics.numbers as a\n"
        "left join lateral (\n"
        "    select max(n) as previous_n from analytics.numbers as c where c.n < a.n\n"
        ") as b on true"
    ),
}


def test_an_override_file_is_what_its_engine_runs(tmp_path: Path, postgres: str) -> None:
    sql_dir = write_models(tmp_path, OVERRIDDEN)
    loaded = {m.name: m for m in load_models(sql_dir)}
    assert set(loaded) == {"numbers", "previous"}  # the override is no model of its own
    assert loaded["previous"].file_for("postgres") == "sql/marts/previous.postgres.sql"
    assert loaded["previous"].file_for("duckdb") == "sql/marts/previous.sql"

    numbers = "create table devportal.numbers as select * from (values (1), (3), (5)) t(n)"
    warehouse = raw_warehouse(tmp_path / "wh" / "toy.duckdb", numbers)
    with engines.connect(Target.of(warehouse, "postgres")) as engine, engine.transaction():
        engine.execute("create schema devportal")
        engine.execute("create table devportal.numbers (n bigint)")
        engine.execute("insert into devportal.numbers values (1), (3), (5)")

    expected = [(1, None), (3, 1), (5, 3)]
    for destination, form in (("duckdb", "as written"), ("postgres", "override")):
        summary = models.build(Target.of(warehouse, destination), check=True, sql_dir=sql_dir)
        assert summary["built"] == ["numbers", "previous"]
        assert summary["tests"] == 2
        with engines.connect(Target.of(warehouse, destination)) as engine:
            table = engine.qualify("analytics", "previous")
            rows = engine.execute(f"select n, previous_n, form from {table} order by n")
            assert rows == [(*row, form) for row in expected]
            # the optional raw table stood in, translated, on both engines
            labels = engine.execute(f"select label from {engine.qualify('analytics', 'numbers')}")
            assert labels == [(None,)] * 3

    # a failing override names itself
    (sql_dir / "marts" / "previous.postgres.sql").write_text(
        "-- previous, broken\nselect no_such_column from analytics.numbers"
    )
    with pytest.raises(
        DevportalError, match=r"model analytics\.previous \(sql/marts/previous\.postgres\.sql\)"
    ):
        models.build(Target.of(warehouse, "postgres"), sql_dir=sql_dir)
    with engines.connect(Target.of(warehouse, "postgres")) as engine:  # the previous build stands
        rows = engine.execute("select form, count(*) from analytics.previous group by form")
        assert rows == [("override", 3)]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"marts/a.oracle.sql": "-- a\nselect 1"}, "'oracle' is no engine with its own form"),
        ({"marts/a.duckdb.sql": "-- a\nselect 1"}, "'duckdb' is no engine with its own form"),
        ({"marts/a.postgres.sql": "-- a\nselect 1"}, "overrides a model that is not beside it"),
        (
            {"marts/a.sql": "-- a\nselect 1 as n", "marts/a.postgres.sql": "select 1 as n"},
            "sql/marts/a.postgres.sql: open the file with a comment saying why",
        ),
        (
            {
                "marts/a.sql": "-- a\nselect 1 as n",
                "marts/a.postgres.sql": "-- a\n-- @test unique(n)\nselect 1 as n",
            },
            "@ directives belong in sql/marts/a.sql",
        ),
        (
            {
                "marts/a.sql": "-- a\nselect 1 as n",
                "marts/a.postgres.sql": "-- a\nselect n from devportal.numbers",
            },
            "reads devportal.numbers, which sql/marts/a.sql does not",
        ),
    ],
)
def test_override_files_are_checked(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(DevportalError, match=re.escape(message)):
        load_models(write_models(tmp_path, files))


def test_the_optional_stand_ins_translate() -> None:
    """The @optional types are DuckDB's; each engine gets them in its own names."""
    (model,) = [m for m in load_models() if m.name == "stg_user_settings"]
    stub = for_engine(model, "postgres").stubs["user_settings"]
    assert "CAST(NULL AS TEXT)" in stub and "CAST(NULL AS TIMESTAMP)" in stub
    assert "CAST(NULL AS INT64)" in for_engine(model, "bigquery").stubs["user_settings"]
    as_written = for_engine(model, "duckdb").stubs["user_settings"]
    assert duckdb.connect().execute(f"select count(*) from {as_written}").fetchall() == [(0,)]


def test_round_of_a_decimal_agrees_on_both_engines_and_of_a_double_would_not(
    postgres: str,
) -> None:
    """The one round() the runner accepts rounds half away from zero on both engines; the
    double precision form it refuses would round half to even on PostgreSQL."""
    halves = "select v from (values (0.5), (1.5), (2.5), (-2.5), (2.45)) as t(v)"
    accepted = (
        "select round(cast(v as decimal(10, 2))) as r0, round(cast(v as decimal(10, 2)), 1) as r1 "
        f"from ({halves}) as h order by v"
    )
    on_duckdb = duckdb.connect().execute(accepted).fetchall()
    with engines.connect(Target.of("unused.duckdb", "postgres")) as engine:
        on_postgres = engine.execute(translate(accepted, "postgres"))
        refused_form = engine.execute(
            f"select round(cast(v as double precision)) from ({halves}) as h order by v"
        )
    assert [tuple(float(x) for x in row) for row in on_postgres] == [
        tuple(float(x) for x in row) for row in on_duckdb
    ]
    assert [float(r[0]) for r in on_duckdb] == [-3.0, 1.0, 2.0, 2.0, 3.0]
    assert [r[0] for r in refused_form] == [-2.0, 0.0, 2.0, 2.0, 2.0]  # half to even
