"""The layout of `sql/`: models in their layers, the readers' queries in files of their own.

`sql/intermediate/` holds the building blocks of the marts (their tables keep their names in
the schema `analytics`, where notebooks and people query them); long models end in a `final`
CTE; the charts' queries (`sql/charts/`, one per chart) and the report's (`sql/report/`) are
files that DuckDB and PostgreSQL run as written, held to the portability lint. That the charts
read the same frames on both engines is test_report_engines.py's; that the models give the
same tables is the known-answer tests'.
"""

from __future__ import annotations

import re

import pytest

from devportal.base.errors import DevportalError
from devportal.models.checks import data_test_sql, data_tests
from devportal.models.engine_sql import for_engine
from devportal.models.portability import check_as_written
from devportal.models.project import NAME, lexemes, load_models, qualified_names
from devportal.reporting import charts
from devportal.reporting.charts.queries import CHARTS_DIR, SQL_DIR
from devportal.reporting.charts.registry import QUERIES, TITLES
from devportal.reporting.charts.subscribers import EXPIRY_DAYS

INTERMEDIATE = {
    "subscription_versions",
    "subscription_spells",
    "subscription_events",
    "billing_periods",
    "subscription_lifetimes",
    "day_spine",
    "month_spine",
    "month_start_subscribers",
    "month_start_bases",
    "billing_segments",
    "price_timeline",
    "mrr_spells",
    "mrr_changes",
}


def test_the_helpers_are_intermediate_and_keep_their_table_names() -> None:
    loaded = {m.name: m for m in load_models()}
    assert {name for name, m in loaded.items() if m.layer == "intermediate"} == INTERMEDIATE
    for name in INTERMEDIATE:
        assert loaded[name].relative_path == f"sql/intermediate/{name}.sql"
    # the marts read them as analytics.<name>, the one schema of every layer
    assert "subscription_versions" in loaded["subscriptions_current"].depends_on
    assert "billing_periods" in loaded["monthly_renewals"].depends_on
    # the daily marts share one day spine, the period rule is applied once (billing_segments)
    assert {"day_spine"} <= loaded["daily_subscribers"].depends_on & loaded["mrr_daily"].depends_on
    assert "billing_segments" in loaded["billing_periods"].depends_on


def test_the_shipped_models_read_the_tables_sqlglot_finds() -> None:
    """A build reads each model's tables from its lexemes, not from sqlglot's parse (a tenth of
    a second at every build): for the files shipped in sql/ the two must agree, and sqlglot's
    parse checks what the lexemes cannot, that every table names its schema."""
    lexed = {m.name: m for m in load_models()}
    parsed = {m.name: m for m in load_models(parse=True)}
    assert list(lexed) == list(parsed)  # the same build order
    for name, model in parsed.items():
        read = (lexed[name].depends_on, lexed[name].seeds, lexed[name].sources)
        assert read == (model.depends_on, model.seeds, model.sources), model.relative_path


def test_render_qualifies_the_names_sqlglot_tokenizes() -> None:
    """`render` finds `analytics.t` and `devportal.t` on its own lexemes; sqlglot's tokenizer
    must see the same names in every model and data test, as written and as translated."""
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.tokens import TokenType

    def tokenized(sql: str, dialect: str) -> list[tuple[int, str]]:
        tokens = Dialect.get_or_raise(dialect).tokenize(sql)
        found: list[tuple[int, str]] = []
        position = 0
        for i in range(len(tokens) - 2):
            first, dot, last = tokens[i], tokens[i + 1], tokens[i + 2]
            if (
                first.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
                and first.text.lower() in ("analytics", "devportal")
                and dot.token_type == TokenType.DOT
                and (last.token_type == TokenType.IDENTIFIER or NAME.match(last.text))
                and (i == 0 or tokens[i - 1].token_type != TokenType.DOT)
                and first.start >= position
            ):
                found.append((first.start, last.text))
                position = last.end + 1
        return found

    loaded = load_models()
    texts = [m.sql for m in loaded] + [t.sql for t in data_tests(loaded)]
    translated = [for_engine(m, "postgres").sql for m in loaded]
    translated += [data_test_sql(t, "postgres") for t in data_tests(loaded)]
    for sql, dialect in [(t, "duckdb") for t in texts] + [(t, "postgres") for t in translated]:
        tokens = lexemes(sql)
        ours = [(tokens[i].start, table) for i, _, table in qualified_names(tokens)]
        assert ours == tokenized(sql, dialect), sql[:80]


def test_every_chart_has_its_query_file_with_a_header() -> None:
    paths = list((SQL_DIR / CHARTS_DIR).glob("*.sql"))
    # named apart from the models they read (`sql/marts/monthly_churn.sql`)
    assert all(path.stem.endswith("_chart") for path in paths), paths
    files = {path.stem.removesuffix("_chart") for path in paths}
    assert files == set(TITLES) == set(QUERIES)
    assert list(QUERIES) == list(TITLES)
    for name, sql in QUERIES.items():
        assert sql.startswith(f"-- {name}: "), name
        assert not sql.endswith(";")
    with pytest.raises(KeyError):
        QUERIES["no_such_chart"]


def test_the_expiry_window_is_the_charts_axis() -> None:
    """The query's window and the chart's axis (EXPIRY_DAYS) are one number."""
    windows = re.findall(r"interval '(\d+) days'", QUERIES["expiry_calendar"])
    assert windows == [str(EXPIRY_DAYS)]


def test_the_readers_queries_pass_the_lint_as_written() -> None:
    paths = sorted(SQL_DIR.glob("charts/*.sql")) + sorted(SQL_DIR.glob("report/*.sql"))
    assert len(paths) == len(TITLES) + 1
    for path in paths:
        name = f"{path.parent.name}/{path.stem}"
        check_as_written(charts.query_file(name), f"sql/{name}.sql")
    assert "analytics.report_figures" in charts.query_file("report/report_row")


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("select string_split(s, ',') from x", "string_split() becomes SPLIT()"),
        ("select 1 as n where n > 0", "WHERE reads n"),
        ("select a, count(*) from x group by all", "GROUP BY ALL is DuckDB's own"),
        ("select round(a, 2) from x", "round() of anything but cast"),
        ("select epoch_us(t) from x", "epoch_us() is no function sqlglot knows"),
    ],
)
def test_the_as_written_lint_refuses_by_name(sql: str, problem: str) -> None:
    with pytest.raises(DevportalError, match=r"^sql/charts/x\.sql: not portable as written: "):
        check_as_written(sql, "sql/charts/x.sql")
    with pytest.raises(DevportalError, match=re.escape(problem)):
        check_as_written(sql, "sql/charts/x.sql")


def test_string_to_array_passes_as_written() -> None:
    check_as_written("select unnest(string_to_array(s, ',')) as part from x", "q")


def test_a_missing_query_file_is_one_line_saying_to_reinstall() -> None:
    with pytest.raises(DevportalError, match=r"^sql/charts/nope\.sql cannot be read .*reinstall"):
        charts.query_file("charts/nope")
