"""The model runner: order from the SQL, skips, optional sources, failures that name themselves.

Toy models in a temp `sql/` run against a real DuckDB file holding a hand-made `devportal`
schema, and the runner's rules (skips, optional stand-ins, one transaction, failures that name
themselves) on PostgreSQL too (the `engine` fixture); the real models are covered by
test_known_answers.py, test_pipeline_checks.py and, on PostgreSQL, test_postgres_models.py.
"""

from __future__ import annotations

import datetime as dt
import importlib
import re
from pathlib import Path

import duckdb
import pytest

from devportal import models
from devportal.base.errors import DevportalError
from devportal.models.build import MEMORY_FLOOR_MB
from devportal.models.engine_sql import render
from devportal.models.project import load_models
from tests.helpers import OnEngine, query

# the runner's module (`devportal.models.build` is also the name of its function)
RUNNER = importlib.import_module("devportal.models.build")


def write_models(root: Path, files: dict[str, str]) -> Path:
    for name, sql in files.items():
        path = root / "sql" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sql, encoding="utf-8")
    (root / "sql" / "staging").mkdir(parents=True, exist_ok=True)
    (root / "sql" / "marts").mkdir(parents=True, exist_ok=True)
    return root / "sql"


def raw_warehouse(path: Path, *statements: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    try:
        con.execute("create schema if not exists devportal")
        for sql in statements:
            con.execute(sql)
    finally:
        con.close()
    return path


def test_real_models_build_in_dependency_order() -> None:
    ordered = load_models()
    position = {m.name: i for i, m in enumerate(ordered)}
    for model in ordered:
        for dependency in model.depends_on:
            assert position[dependency] < position[model.name], (model.name, dependency)
    by_name = {m.name: m for m in ordered}
    assert by_name["expiring_soon"].depends_on == {"subscriptions_current", "as_of"}
    assert by_name["stg_subscriptions"].sources == {"subscriptions"}
    assert by_name["as_of"].depends_on == {"stg_sync_runs"}
    required = {
        "as_of",
        "subscriptions_current",
        "monthly_churn",
        "expiring_soon",
        "daily_subscribers",
        "users",
        "app_releases",
    }
    assert required <= {m.name for m in ordered if m.layer == "marts"}
    helpers = {"subscription_versions", "subscription_events", "billing_periods"}
    assert helpers | {"subscription_lifetimes"} <= {
        m.name for m in ordered if m.layer == "intermediate"
    }
    assert all(m.name.startswith("stg_") for m in ordered if m.layer == "staging")


def test_every_model_opens_with_its_grain() -> None:
    for model in load_models():
        header = model.sql.split("\n\n")[0]
        assert header.startswith(f"-- {model.name}: "), model.relative_path
        assert re.search(r"^-- Grain: ", model.sql, re.MULTILINE), model.relative_path


def test_order_skips_and_optional_sources_and_a_failure_rolls_back(engine: OnEngine) -> None:
    sql_dir = write_models(
        engine.warehouse.parent,
        {
            # alphabetical order is the wrong build order: the runner must read the SQL
            "marts/a_totals.sql": "-- a_totals: one row\nselect sum(n) as n from analytics.z_base",
            "marts/b_needs_missing.sql": "-- b: x\nselect * from analytics.c_missing_raw",
            "marts/c_missing_raw.sql": "-- c: x\nselect * from devportal.never_loaded",
            "staging/z_base.sql": (
                "-- z_base: one row per raw row\n"
                "-- @optional devportal.extra(k bigint, label varchar, seen timestamp)\n"
                "select raw.n, extra.label, extra.seen\n"
                "from devportal.numbers as raw\n"
                "left join devportal.extra on extra.k = raw.n -- a comment: devportal.extra\n"
                "where 'devportal.numbers' <> ''"
            ),
        },
    )
    engine.execute(
        "create schema devportal",
        "create table devportal.numbers as select * from (values (1), (2), (3)) t(n)",
    )
    summary = models.build(engine.target, sql_dir=sql_dir)
    assert summary["built"] == ["z_base", "a_totals"]
    assert summary["skipped"] == {
        "c_missing_raw": "needs devportal.never_loaded, which nothing has been loaded into yet",
        "b_needs_missing": "needs analytics.c_missing_raw, which was skipped",
    }
    assert engine.query("select n, label, seen from analytics.z_base order by n") == [
        (1, None, None),
        (2, None, None),
        (3, None, None),
    ]
    assert engine.query("select n from analytics.a_totals") == [(6,)]

    # once the optional table exists it is read for real
    engine.execute(
        "create table devportal.extra (k bigint, label text, seen timestamp)",
        "insert into devportal.extra values (2, 'two', '2026-01-02 03:04:05')",
    )
    models.build(engine.target, sql_dir=sql_dir)
    assert engine.query("select n, label from analytics.z_base where label is not null") == [
        (2, "two")
    ]
    assert engine.query("select label, seen from analytics.z_base where n = 2") == [
        ("two", dt.datetime(2026, 1, 2, 3, 4, 5))
    ]

    # a failing model names itself; the whole build rolls back (DDL is transactional on both)
    (sql_dir / "staging" / "z_base.sql").write_text("-- z_base: one row\nselect 10 as n")
    (sql_dir / "marts" / "zz_broken.sql").write_text("-- broken: x\nselect no_such_column")
    with pytest.raises(DevportalError, match=r"model analytics\.zz_broken \(sql/marts/zz_broken"):
        models.build(engine.target, sql_dir=sql_dir)
    assert engine.query("select sum(n) from analytics.z_base") == [(6,)]
    assert engine.query("select n from analytics.a_totals") == [(6,)]


def test_a_failing_model_names_itself_and_keeps_the_previous_build(tmp_path: Path) -> None:
    files = {"marts/good.sql": "-- good: one row\nselect 1 as n"}
    sql_dir = write_models(tmp_path, files)
    warehouse = raw_warehouse(tmp_path / "wh" / "toy.duckdb")
    models.build(warehouse, sql_dir=sql_dir)
    (sql_dir / "marts" / "good.sql").write_text("-- good: one row\nselect 2 as n")
    (sql_dir / "marts" / "zz_broken.sql").write_text("-- broken: x\nselect no_such_column")
    with pytest.raises(DevportalError, match=r"model analytics\.zz_broken \(sql/marts/zz_broken"):
        models.build(warehouse, sql_dir=sql_dir)
    assert query(warehouse, "select n from analytics.good") == [(1,)]  # rolled back whole


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {
                "marts/a.sql": "-- a\nselect * from analytics.b",
                "marts/b.sql": "-- b\nselect * from analytics.a",
            },
            "cycle: a, b",
        ),
        ({"marts/a.sql": "-- a\nselect * from numbers"}, "table 'numbers' has no schema"),
        ({"marts/a.sql": "-- a\nselect * from other.t"}, "reads schema other"),
        ({"marts/a.sql": "-- a\nselect * from analytics.nope"}, "no file in sql/ defines"),
        ({"marts/a.sql": "select 1"}, "open the file with a comment"),
        ({"marts/a.sql": "-- a\n-- @test unique_ish(n)\nselect 1 as n"}, "unknown test"),
        ({"marts/a.sql": "-- a\n-- @materialize view\nselect 1 as n"}, "unknown directive"),
    ],
)
def test_model_files_are_checked(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(DevportalError, match=re.escape(message)):
        load_models(write_models(tmp_path, files))


def test_a_cycle_is_one_line_naming_its_models(tmp_path: Path) -> None:
    sql_dir = write_models(
        tmp_path,
        {
            "staging/s_base.sql": "-- s_base: one row\nselect 1 as n",
            "marts/m_a.sql": (
                "-- m_a: x\nselect * from analytics.m_b join analytics.s_base using (n)"
            ),
            "marts/m_b.sql": "-- m_b: x\nselect * from analytics.m_c",
            "marts/m_c.sql": "-- m_c: x\nselect * from analytics.m_a",
            # reads the cycle without being part of it: not named
            "marts/m_downstream.sql": "-- m_downstream: x\nselect * from analytics.m_a",
        },
    )
    warehouse = raw_warehouse(tmp_path / "wh" / "toy.duckdb")
    with pytest.raises(DevportalError) as caught:
        models.build(warehouse, sql_dir=sql_dir)
    assert str(caught.value) == (
        "the models read each other in a cycle: m_a, m_b, m_c "
        "(m_a reads m_b, which reads m_c, which reads m_a)"
    )
    # found before anything ran: the warehouse is as it was
    assert query(
        warehouse,
        "select count(*) from information_schema.schemata where schema_name = 'analytics'",
    ) == [(0,)]


def test_failing_data_tests_are_each_named(engine: OnEngine) -> None:
    sql_dir = write_models(
        engine.warehouse.parent,
        {
            "marts/m.sql": (
                "-- m: one row per k\n"
                "-- @test unique(k)\n"
                "-- @test not_null(k, status)\n"
                "-- @test accepted_values(status: active, canceled)\n"
                "select * from (values (1, 'active'), (1, 'paused'), (2, null)) t(k, status)"
            )
        },
    )
    engine.execute("create schema if not exists devportal")
    with pytest.raises(DevportalError) as caught:
        models.build(engine.target, sql_dir=sql_dir, check=True)
    text = str(caught.value)
    assert text.startswith("3 of 4 data tests failed: ")
    assert "unique(analytics.m: k): 1 failing row(s), e.g. (1, 2)" in text
    assert "not_null(analytics.m.status): 1 failing row(s)" in text
    assert "accepted_values(analytics.m.status: active, canceled): 1 failing row(s)" in text
    assert "not_null(analytics.m.k)" not in text
    # the models themselves were built: the data is what it is
    assert engine.query("select count(*) from analytics.m") == [(3,)]


def test_render_qualifies_names_and_leaves_text_alone() -> None:
    sql = (
        "-- reads devportal.numbers\n"
        "select 'analytics.x' as s from devportal.numbers join analytics.x as x on true, "
        "cat.analytics.y"
    )
    assert render(sql, "wh") == (
        "-- reads devportal.numbers\n"
        'select \'analytics.x\' as s from "wh"."devportal"."numbers" join "wh"."analytics"."x" '
        "as x on true, cat.analytics.y"
    )
    stubbed = render(
        "select * from devportal.t join devportal.u u on true", "wh", {"t": "(select 1 as a)"}
    )
    assert stubbed == 'select * from (select 1 as a) as "t" join "wh"."devportal"."u" u on true'


def test_render_reads_past_comments_strings_and_numbers() -> None:
    """Names inside comments and strings (doubled quotes, E'' escapes) are text; a quoted
    identifier is a name; a number's dot is no schema's; a table read without an alias keeps
    its own name when stood in for, whatever clause follows."""
    sql = (
        "/* devportal.a */ select 'it''s devportal.b', E'\\' devportal.c', 1.5 as n, "
        'd.k from "analytics".d join devportal.t left join devportal.t u on true '
        "where x in (select k from devportal.t)"
    )
    assert render(sql, "wh", {"t": "(select 1 as k)"}) == (
        "/* devportal.a */ select 'it''s devportal.b', E'\\' devportal.c', 1.5 as n, "
        'd.k from "wh"."analytics"."d" join (select 1 as k) as "t" '
        'left join (select 1 as k) u on true where x in (select k from (select 1 as k) as "t")'
    )


def test_render_without_a_catalog_only_stands_in() -> None:
    """PostgreSQL: names stay schema-qualified in the database; optional tables still stand in."""
    sql = 'SELECT * FROM devportal.t JOIN analytics.x ON TRUE, devportal."u" AS u'
    stubs = {"t": "(SELECT 1 AS a)", "u": "(SELECT 2 AS b)"}
    assert render(sql, None, stubs) == (
        'SELECT * FROM (SELECT 1 AS a) as "t" JOIN analytics.x ON TRUE, (SELECT 2 AS b) AS u'
    )
    assert render(sql, None) == sql


def test_the_summary_line_says_where_unless_duckdb() -> None:
    summary = {"built": ["a", "b"], "skipped": {}, "tests": 4, "seconds": 0.25}
    assert models.summary_line(summary) == "models ok: 2 built in 0.2s; 4 data tests passed"
    on_pg = {**summary, "destination": "postgres"}
    assert models.summary_line(on_pg) == (
        "models ok: 2 built on postgres in 0.2s; 4 data tests passed"
    )


def test_a_missing_warehouse_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(DevportalError, match=r"no warehouse at .*: run `devportal sync`"):
        models.build(tmp_path / "nowhere" / "wh.duckdb")
    assert not (tmp_path / "nowhere").exists()


def test_a_history_too_big_for_the_memory_cap_is_built_again_without_it(
    story_warehouse: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """DuckDB cannot spill all a statement holds: under a cap too small for the history, a
    model runs out of memory, is rolled back and built again under DuckDB's own limit, which
    holds for the rest of the build, with the same rows as a build that never ran out."""
    import shutil

    expected = query(story_warehouse, "select * from analytics.monthly_renewals order by all")
    copy = tmp_path / "story.duckdb"
    shutil.copy(story_warehouse, copy)
    monkeypatch.setattr(RUNNER, "MEMORY_FLOOR_MB", 2)
    with caplog.at_level("INFO", logger="devportal.models"):
        summary = models.build(copy, check=True)
    assert "ran out of its memory cap" in caplog.text and "Out of Memory" in caplog.text
    assert caplog.text.count("ran out of its memory cap") == 1
    assert summary["tests"] > 100 and "monthly_renewals" in summary["built"]
    assert query(copy, "select * from analytics.monthly_renewals order by all") == expected


def test_the_memory_cap_grows_with_the_history(tmp_path: Path) -> None:
    """The floor up to 500k subscription versions, then 256 MB per million."""
    from devportal.warehouse import engines

    cap = RUNNER._memory_cap
    warehouse = raw_warehouse(tmp_path / "wh" / "w.duckdb")
    with engines.connect(warehouse) as engine:
        assert cap(engine) == MEMORY_FLOOR_MB  # no subscriptions yet
        engine.execute("create table devportal.subscriptions as select range as id from range(10)")
        assert cap(engine) == MEMORY_FLOOR_MB
        engine.execute("insert into devportal.subscriptions select range from range(999990)")
        assert cap(engine) == 256


def test_each_model_says_how_long_it_took(
    engine: OnEngine, caplog: pytest.LogCaptureFixture
) -> None:
    """`devportal models --verbose` prints every model's time, on either engine (issue 35):
    one info line each, and the summary's `timings`; on PostgreSQL a table a later model reads
    is analyzed in the build (its planner has statistics), with no JIT for the build's
    connection."""
    sql_dir = write_models(
        engine.warehouse.parent,
        {
            "staging/base.sql": "-- base: one row per raw row\nselect n from devportal.numbers",
            "marts/total.sql": "-- total: one row\nselect sum(n) as n from analytics.base",
        },
    )
    engine.execute(
        "create schema devportal",
        "create table devportal.numbers as select * from (values (1), (2), (3)) t(n)",
    )
    with caplog.at_level("INFO", logger="devportal.models"):
        summary = models.build(engine.target, sql_dir=sql_dir)
    assert list(summary["timings"]) == summary["built"] == ["base", "total"]
    assert all(seconds >= 0 for seconds in summary["timings"].values())
    for name in ("base", "total"):
        assert re.search(rf"built analytics\.{name} in \d+\.\d{{3}}s", caplog.text), caplog.text
    if engine.name == "postgres":
        analyzed = engine.query(
            "select relname from pg_stat_user_tables where schemaname = 'analytics' "
            "and last_analyze is not null order by relname"
        )
        assert analyzed == [("base",)]  # read by `total`; `total` is read by nothing


def test_translations_are_kept_beside_the_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sqlglot's translations, kept in a file: a build after the first translates nothing that
    did not change; a file made by another sqlglot or lint, or unreadable, is read as empty."""
    from devportal.models import portability

    path = tmp_path / "translations-postgres.json"
    kept = portability.Translations(path)
    sql = "select cast(n as double) as x from devportal.t"
    expected = portability.translate(sql, "postgres")
    assert kept.translate(sql, "postgres") == expected
    kept.save()
    assert path.is_file()

    def refuse(_sql: str, _dialect: str) -> str:
        raise AssertionError("translated again")

    monkeypatch.setattr(portability, "translate", refuse)
    assert portability.Translations(path).translate(sql, "postgres") == expected

    held = path.read_text(encoding="utf-8")
    path.write_text(held.replace("sqlglot ", "sqlglot 0.0.0-"), encoding="utf-8")
    with pytest.raises(AssertionError, match="translated again"):
        portability.Translations(path).translate(sql, "postgres")
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(AssertionError, match="translated again"):
        portability.Translations(path).translate(sql, "postgres")


def test_a_postgres_build_keeps_its_translations(
    tmp_path: Path, postgres: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is written beside the `--warehouse` path (dlt's folder) and read by the next
    build, which then translates nothing."""
    from devportal.models import portability
    from devportal.warehouse import engines
    from devportal.warehouse.paths import pipelines_dir
    from devportal.warehouse.target import Target

    sql_dir = write_models(
        tmp_path,
        {"marts/total.sql": "-- total: one row\nselect sum(n) as n from devportal.numbers"},
    )
    target = Target.of(tmp_path / "wh" / "warehouse.duckdb", "postgres")
    with engines.connect(target) as engine, engine.transaction():
        engine.execute("create schema devportal")
        engine.execute("create table devportal.numbers as select 2 as n")
    models.build(target, sql_dir=sql_dir)
    assert (pipelines_dir(target.warehouse) / "translations-postgres.json").is_file()

    def refuse(_sql: str, _dialect: str) -> str:
        raise AssertionError("translated again")

    monkeypatch.setattr(portability, "translate", refuse)
    assert models.build(target, sql_dir=sql_dir)["built"] == ["total"]
