"""The report's *Renewals and retention* block, in every format, and its two charts on the page.

On the known-answer story (test_known_answers.py's docstring), as_of 2026-03-05, last full
month February:

- came due in February: 5 (02-05), 2 and 9 (02-20), 11 (02-25), 10 (02-28), 1 and 6 (03-01
  00:00:00: the paid use ends with February; 1's 02-01 is January's): 7; renewed 1, 2, 6, 9,
  11: 5; churned 5; undecided 10 (no longer listed at T3, no renewal seen): the renewal rate
  is of the decided ones, 5 / 6 = 83.3%;
- the survival curve follows the subscriptions first seen after the first sync, 11 (T2, still
  active at as_of: censored after 23 days) and 12 (first seen at T3 already expired: churned on
  day 0): 1/2 on day 0, so the median lifetime is 0 days;
- February by platform (users.primary_platform): youtube (Carol, 103) had 5 and 6 at the
  start and lost 5: 1 of 2, 50%; twitch (1, 2) and unknown (no account: 7 to 10) lost none.
  No platform has the minimum base (20 at the month's start), so none is the highest-churn
  platform (`test_the_highest_churn_platform_is_measured_as_the_churn_rate` has one).

A warehouse of one sync has only the first sync's backfill, whose lifetimes are unknown: no
survival curve, and the median is "not reached yet".
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devportal import models
from devportal.load.sync import sync
from devportal.reporting import charts, report
from devportal.reporting.charts.registry import QUERIES, TITLES, draw
from devportal.reporting.charts.retention import cohort_label, median_lifetime
from devportal.reporting.report.coverage import FULL_MONTH, LAST_30_DAYS_NEEDS
from devportal.reporting.report.figures import Metric, ReportFigures, Section, _figure
from devportal.reporting.report.formats import TOP_CHURN_MIN_BASE, _text, format_markdown
from devportal.reporting.report.page import write_html
from devportal.warehouse.target import Target
from tests.helpers import REPO, query

REPORT_SQL = "sql/marts/report_figures.sql"

BLOCK = {
    "last_full_month_came_due": ("came due, last full month", 7, "7"),
    "last_full_month_renewed": ("renewed", 5, "5"),
    "last_full_month_renewal_rate": ("renewal rate (of those decided)", 5 / 6, "83.3%"),
    "median_lifetime_days": ("median lifetime since first seen", 0, "0 days"),
    # youtube's 50% is of 2 subscribers: below the minimum base, no platform is named
    "top_churn_platform": (
        "highest-churn platform",
        None,
        f"no platform with {TOP_CHURN_MIN_BASE}+ subscribers at its start",
    ),
    "top_churn_platform_churn_rate": ("its churn rate, last full month", None, "n/a"),
}
TITLE = "Renewals and retention"


def _rendered(warehouse: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    report.print_report(warehouse, fmt=fmt)
    return capsys.readouterr().out


def test_the_block_as_a_table(story_warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _rendered(story_warehouse, "table", capsys).splitlines()
    start = lines.index(TITLE)
    block = lines[start + 1 : start + 1 + len(BLOCK)]
    assert [re.split(r"\s{2,}", line.strip()) for line in block] == [
        [label, text] for label, _, text in BLOCK.values()
    ]
    assert start + 1 + len(BLOCK) == len(lines)  # the last section
    # aligned with the rest of the table: every value ends in the same column (lines of their
    # own, such as the revenue section's note, are indented further and not aligned)
    aligned = [line for line in lines[2:] if line.startswith("  ") and line[2] != " "]
    assert len({len(line) for line in aligned}) == 1


def test_the_block_as_json_and_csv(
    story_warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = json.loads(_rendered(story_warehouse, "json", capsys))
    assert {key: figures[key] for key in BLOCK} == {key: v for key, (_, v, _) in BLOCK.items()}
    assert list(figures)[-len(BLOCK) :] == list(BLOCK)
    rows = list(csv.reader(io.StringIO(_rendered(story_warehouse, "csv", capsys))))
    assert rows[-len(BLOCK) :] == [
        [key, label, "" if v is None else str(v)] for key, (label, v, _) in BLOCK.items()
    ]


def test_the_block_as_markdown(story_warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _rendered(story_warehouse, "markdown", capsys).splitlines()
    start = lines.index(f"| **{TITLE}** | |")
    assert lines[start + 1 :] == [f"| {label} | {text} |" for label, _, text in BLOCK.values()]


def test_the_block_and_its_charts_on_the_page(story_warehouse: Path, tmp_path: Path) -> None:
    page = write_html(story_warehouse, tmp_path / "page.html").read_text(encoding="utf-8")
    assert f'<tr class="section"><td colspan="2">{TITLE}</td></tr>' in page
    for label, _, text in BLOCK.values():
        assert f'<tr><td class="sub">{label}</td><td class="value">{text}</td></tr>' in page
    alts = re.findall(r'<img alt="([^"]*)"', page)
    assert alts[-2:] == [TITLES["cohort_retention"], TITLES["survival_curve"]]


def test_the_figures_have_one_type_each(story_warehouse: Path) -> None:
    values = report.collect(story_warehouse).values()
    assert {key: type(values[key]) for key in BLOCK} == {
        key: type(v) for key, (_, v, _) in BLOCK.items()
    }


def test_the_charts_frames_on_the_story(story_warehouse: Path) -> None:
    """The heat map's and the curve's data, as drawn (the models' rows are tested in
    test_retention_known_answers.py; this is what the charts make of them)."""
    from devportal.warehouse.engines import connect

    with connect(story_warehouse, read_only=True) as engine:
        cohorts = charts.frame(engine, "cohort_retention")
        curve = charts.frame(engine, "survival_curve")
    # the backfill first, then by the month each started (its estimated first paid instant,
    # test_known_answers: 11 on 01-25, first seen at T2; 12 just after T2, first seen at T3)
    assert cohorts.drop_duplicates("cohort")["cohort"].tolist() == [
        "backfill",
        "2026-01",
        "2026-02",
    ]
    labels = [
        cohort_label(r.cohort, r.cohort_month, r.is_backfill, r.cohort_size)
        for r in cohorts.drop_duplicates("cohort").itertuples()
    ]
    assert labels == [
        "already subscribed at the first sync (2026-01) (n=10)",
        "2026-01 (n=1)",
        "2026-02 (n=1)",
    ]
    assert curve[["day", "at_risk", "churned", "censored", "survival"]].values.tolist() == [
        [0, 2, 1, 0, 0.5],
        [23, 1, 0, 1, 0.5],
    ]
    assert median_lifetime(curve) == 0


def test_every_chart_draws_an_empty_state(story_warehouse: Path) -> None:
    """A young warehouse has empty frames: each chart draws its empty state, no error."""
    from devportal.warehouse.engines import connect

    with connect(story_warehouse, read_only=True) as engine:
        frames = {name: charts.frame(engine, name) for name in QUERIES}
    for name, frame in frames.items():
        assert not frame.empty, name  # the story has rows for every chart
        png = charts.png_bytes(draw(name, frame.iloc[0:0]))
        assert png.startswith(b"\x89PNG"), name


@pytest.fixture(scope="module")
def one_sync_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sandbox world synced once (models built): only the first sync's backfill."""
    from devportal.sandbox import Sandbox

    warehouse = tmp_path_factory.mktemp("one-sync") / "warehouse.duckdb"
    with Sandbox(subscriptions=60, users=15, seed=3) as sb:
        sync(warehouse, base_url=sb.base_url, access_token=sb.token)
    models.build_after_load(Target.of(warehouse))
    return warehouse


# What one sync cannot measure (the figures seen between two syncs, the renewals of a month
# that began before it, the lifetimes of subscriptions first seen after it), and what each needs.
# The last 30 days are one window, the days watched after the first sync: none yet, so churn
# read from the first sync's expiries is not counted beside new subscriptions it cannot see.
ONE_SYNC_NEEDS = {
    **dict.fromkeys(("window_days", "new_30d", "canceled_30d", "churned_30d"), LAST_30_DAYS_NEEDS),
    **dict.fromkeys(
        ("last_full_month_came_due", "last_full_month_renewed", "last_full_month_renewal_rate"),
        FULL_MONTH.format(month="{month}") + "; renewals are seen between two syncs",
    ),
    # as the churn rate: a month that began before the first sync has an estimated base
    **dict.fromkeys(
        ("top_churn_platform", "top_churn_platform_churn_rate"),
        FULL_MONTH.format(month="{month}") + "; as the churn rate, per platform",
    ),
    "median_lifetime_days": (
        "subscriptions first seen after the first sync, followed by later syncs"
    ),
}


def test_one_sync_says_what_it_cannot_measure_yet(
    one_sync_warehouse: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """After one sync, nothing seen between two syncs reads 0 (new subscriptions, renewals)
    and no lifetime reads "not reached yet": each is "not measurable yet", with what it needs,
    in every format; JSON has them null and lists them with their needs."""
    figures = json.loads(_rendered(one_sync_warehouse, "json", capsys))
    # the first month watched from its start: the first sync's own when it ran at its very
    # start (the sandbox's clock starts on a month's first midnight), else the next one
    as_of = datetime.fromisoformat(figures["as_of"])
    month = as_of.date().replace(day=1)
    if as_of != datetime.combine(month, time()):
        month = (month + timedelta(days=32)).replace(day=1)
    following = f"{month:%Y-%m}"
    needs = {key: text.format(month=following) for key, text in ONE_SYNC_NEEDS.items()}
    assert figures["not_measurable_yet"] == needs
    assert {key: figures[key] for key in needs} == dict.fromkeys(needs)
    # what one sync does measure stays: the backfill's usable subscribers and their expiries
    assert figures["usable_subscribers"] > 0 and figures["expiring_30d"] is not None

    table = _rendered(one_sync_warehouse, "table", capsys).splitlines()
    for label in (
        "new subscriptions",
        "cancellations",
        "churned (expired)",
        "renewed",
        "median lifetime since",
    ):
        [line] = [line for line in table if line.strip().startswith(label)]
        assert line.endswith("  not measurable yet"), line
    assert f"    needs {needs['new_30d']}" in table
    assert f"    needs {needs['last_full_month_renewed']}" in table
    assert not [line for line in table if re.fullmatch(r"  (renewed|new subscriptions) +0", line)]

    markdown = _rendered(one_sync_warehouse, "markdown", capsys).splitlines()
    assert "| renewed | not measurable yet |" in markdown
    assert f"| *needs {needs['median_lifetime_days']}* | |" in markdown

    rows = {
        r["metric"]: r["value"]
        for r in csv.DictReader(io.StringIO(_rendered(one_sync_warehouse, "csv", capsys)))
    }
    assert {key: rows[key] for key in needs} == dict.fromkeys(needs, "")
    assert rows["not_measurable_yet"] == "; ".join(f"{k}: needs {v}" for k, v in needs.items())

    page = write_html(one_sync_warehouse, tmp_path / "page.html").read_text(encoding="utf-8")
    assert '<tr><td class="sub">renewed</td><td class="value">not measurable yet</td></tr>' in page
    assert f'<td class="needs" colspan="2">needs {needs["new_30d"]}</td>' in page


def _platform_world(start: str, warehouse: Path) -> dict[str, Any]:
    """Three platforms' subscribers, synced at START and on 2026-02-10 (January the last full
    month): twitch 25 at January's start, 5 churned (20%); mixer 8, 4 churned (50%, below the
    minimum base); youtube 20, 2 churned (10%). The report's JSON."""
    from devportal.sandbox import Sandbox

    with Sandbox(subscriptions=0, users=0, seed=5, start=start) as sb:
        world = sb.world
        for user, (platform, base, churned) in enumerate(
            (("twitch", 25, 5), ("mixer", 8, 4), ("youtube", 20, 2)), start=101
        ):
            world.add_user(user, platform.title(), platforms=(platform,))
            for i in range(base):
                if i < churned:
                    world.add_subscription(user, "canceled", "2026-01-20 00:00:00")
                else:
                    world.add_subscription(user, "active", "2026-03-01 00:00:00")
        sync(warehouse, base_url=sb.base_url, access_token=sb.token)
        sb.advance(days=(datetime(2026, 2, 10) - datetime.fromisoformat(start)).days)
        sync(warehouse, base_url=sb.base_url, access_token=sb.token)
    models.build_after_load(Target.of(warehouse))
    return report.collect(warehouse).values()


def test_the_highest_churn_platform_is_measured_as_the_churn_rate(tmp_path: Path) -> None:
    """The highest-churn platform is the churn rate's, per platform: of a month watched from
    its start, among platforms with the minimum base (20 subscribers at its start); a month
    whose base is an estimate (the first sync within it) names none and says what it needs,
    as the churn tile does, never a rate of a handful beside "not measurable yet"."""
    watched = _platform_world("2025-12-31 00:00:00", tmp_path / "watched.duckdb")
    assert watched["last_full_month_is_estimate"] is False
    # mixer's 50% is of 8: below the minimum base; twitch's 20% of 25 is the highest
    assert (watched["top_churn_platform"], watched["top_churn_platform_churn_rate"]) == (
        "twitch",
        0.2,
    )
    young = tmp_path / "young.duckdb"
    figures = _platform_world("2026-01-15 00:00:00", young)
    assert figures["last_full_month_is_estimate"] is True
    assert (
        figures["top_churn_platform"] is None and figures["top_churn_platform_churn_rate"] is None
    )
    needs = figures["not_measurable_yet"]
    assert needs["top_churn_platform"] == needs["top_churn_platform_churn_rate"]
    assert needs["top_churn_platform"].startswith("a full month watched from its start (2026-02")
    page = write_html(young, tmp_path / "page.html").read_text(encoding="utf-8")
    row = '<tr><td class="sub">highest-churn platform</td><td class="value">not measurable yet'
    assert row in page and "mixer" not in page.split("<table")[-1]
    sql = (REPO / REPORT_SQL).read_text("utf-8")
    assert re.findall(r"subscribers_at_start >= (\d+)", sql) == [str(TOP_CHURN_MIN_BASE)]


def test_a_median_not_reached_says_so(story_warehouse: Path) -> None:
    """A curve not down to 50% reads "not reached yet" (the story's is measured); a warehouse
    with no curve at all says what it needs (above)."""
    text = _text(Metric("median_lifetime_days", "m", None, "days"))
    assert text == "not reached yet"
    assert "median_lifetime_days" not in report.collect(story_warehouse).unmeasured


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        (Decimal("45"), "days", 45),
        (Decimal("45.0"), "days", 45),  # PostgreSQL's numeric, whole
        (45.5, "days", 45.5),
        (None, "days", None),
        ("twitch", "text", "twitch"),
    ],
)
def test_the_new_kinds_have_one_type_each(value: Any, kind: str, expected: Any) -> None:
    got = _figure(value, kind)
    assert got == expected and type(got) is type(expected)


def test_days_and_a_platform_read_well() -> None:
    def text(key: str, value: Any, kind: str) -> str:
        return _text(Metric(key, key, value, kind))

    assert text("median_lifetime_days", 1, "days") == "1 day"
    assert text("median_lifetime_days", 45, "days") == "45 days"
    assert text("median_lifetime_days", None, "days") == "not reached yet"
    assert text("top_churn_platform", None, "text") == (
        f"no platform with {TOP_CHURN_MIN_BASE}+ subscribers at its start"
    )
    section = Section(TITLE, [Metric("top_churn_platform", "p", "a|b", "text")])
    as_of = Section("As of", [Metric("as_of", "as of", None, "time")])
    markdown = format_markdown(ReportFigures(None, [as_of, section]))
    assert markdown.splitlines()[-1] == "| p | a\\|b |"


def test_subscribers_without_accounts_are_no_platform(
    story_warehouse: Path, tmp_path: Path
) -> None:
    """`unknown` (no account) has its rows in churn_by_platform but is never the report's
    highest-churn platform: with no account known at all, there is none."""
    import shutil

    import duckdb

    from devportal import models

    copy = tmp_path / "story.duckdb"
    shutil.copy(story_warehouse, copy)
    con = duckdb.connect(str(copy))
    try:
        con.execute("delete from devportal.user_account_profiles")
        con.execute("delete from devportal.user_accounts")
    finally:
        con.close()
    models.build(copy, check=True)
    complete = "from analytics.churn_by_platform where is_complete"
    platforms = query(copy, f"select distinct platform {complete}")
    [(churned,)] = query(copy, f"select sum(churned) {complete}")
    top = query(
        copy,
        "select top_churn_platform, top_churn_platform_churn_rate from analytics.report_figures",
    )
    assert platforms == [("unknown",)] and churned > 0
    assert top == [(None, None)]
