"""Known answers at a month's boundary: the last sync exactly at 00:00:00 on the 1st, one second
before and one second after, on DuckDB and PostgreSQL.

A month holds the instants after its first up to its end (sql/intermediate/month_spine.sql): a
sync at 00:00:00 on the 1st saw what happened before it, so it ends the month before (which is
then complete) and opens none; an expiry then ended a use that lasted through the month before.
The first sync opens its month instead: the history starts there. So every month's flows lead
from its base (usable at its first instant) to the next month's.

The story, scripted through the real sync against the sandbox (its clock stamps the history):
S1 2026-11-01 00:00:00 (the first sync, at a month's start), S2 11-16 00:00, S3 = BOUNDARY
(11-30 23:59:59, 12-01 00:00:00 or 12-01 00:00:01) = as_of. One user, 401.

    id  story                                                   versions (sync: status expires)
     1 A monthly, renews 11-20 -> 12-20                         S1 a 11-20, S3 a 12-20
     2 B canceled, expires 12-01 00:00:00 exactly              S1 c 12-01
     3 C monthly, expires 12-01 00:00:00, the clock renews it  S1 a 12-01, S3 a 2027-01-01
       then (not yet at 23:59:59)                              (from 12-01 00:00:00 on)
     4 E canceled 11-25 (usable to 12-10)                       S1 a 12-10, S3 c 12-10
     5 F canceled at S1, reactivated 11-25 (a save)             S1 c 12-15, S3 a 12-15
     6 H canceled, expires 11-10                                S1 c 11-10
     7 I canceled, expired 11-01 00:00:00, the first sync's     S1 c 11-01
       instant: not usable at S1, its use ended in October
     8 G added 11-05                                            S2 a 12-05
     9 D added 11-20, first seen at S3                          S3 a 12-20

Usable at a month's start (its first instant; = the month before's end):
    10-01 (before S1, estimated from S1's list: expiry after it): A B C E F H I = 7
    11-01 (S1): A B C E F H = 6 (I's expiry is 11-01 itself: not after it)
    12-01 (only at +1 s, where December is open): A C E F G D = 6 (B ran out at 12-01; D,
          first seen after it, counts from its start, as in daily_subscribers)

Starts (docs/analytics.md "Starts between syncs"): G, first seen at S2, started at its expiry
12-05 minus a month (its period unknown) = 11-05, within (S1, S2]; D, first seen at S3, at
12-20 minus a month = 11-20, within (S2, S3] at every boundary: both are November's `new` and
November's cohort, whenever S3 saw D.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devportal import models
from devportal.reporting import report
from devportal.reporting.report.page import write_html
from tests.helpers import OnEngine, StorySyncs

S1 = datetime(2026, 11, 1)
S2 = datetime(2026, 11, 16)
MIDNIGHT = datetime(2026, 12, 1)
BOUNDARIES = {
    "second_before": MIDNIGHT - timedelta(seconds=1),
    "exactly_midnight": MIDNIGHT,
    "second_after": MIDNIGHT + timedelta(seconds=1),
}
oct_, nov, dec = date(2026, 10, 1), date(2026, 11, 1), date(2026, 12, 1)
t, f = True, False  # short, for the tables of expected rows


def build_boundary_story(on: OnEngine, boundary: datetime) -> list[datetime]:
    """Sync the story (module docstring) with its last sync at BOUNDARY into ON's warehouse and
    build the models with every data test; the sandbox's clock at each sync."""
    from devportal.sandbox import Sandbox

    run_sync = StorySyncs(on.warehouse, on.destination)
    with Sandbox(subscriptions=0, users=0, seed=11, start=S1.isoformat(sep=" ")) as sb:
        world = sb.world
        world.add_user(401, "Ann", settings={}, platforms=("twitch",))
        add = world.add_subscription
        assert add(401, "active", "2026-11-20 00:00:00") == 1  # A
        add(401, "canceled", "2026-12-01 00:00:00")  # 2 B
        add(401, "active", "2026-12-01 00:00:00")  # 3 C
        add(401, "active", "2026-12-10 00:00:00")  # 4 E
        add(401, "canceled", "2026-12-15 00:00:00")  # 5 F
        add(401, "canceled", "2026-11-10 00:00:00")  # 6 H
        assert add(401, "canceled", "2026-11-01 00:00:00") == 7  # I
        run_sync(sb)  # S1

        sb.advance(days=4)  # 11-05
        assert add(401) == 8  # G, to 12-05
        sb.advance(days=11)  # 11-16 (H expired 11-10)
        run_sync(sb)  # S2

        sb.advance(days=4)  # 11-20: A renews to 12-20
        assert add(401) == 9  # D, to 12-20
        sb.advance(days=5)  # 11-25
        world.cancel(4)
        world.reactivate(5)
        world.advance(seconds=(boundary - sb.now).total_seconds())
        run_sync(sb)  # S3 = as_of
    assert run_sync.clock == [S1, S2, boundary]
    # `models --check`: every data test and reconciliation passes at the boundary
    models.build(on.target, check=True)
    return run_sync.clock


@pytest.fixture(
    scope="module",
    params=[(e, b) for e in ("duckdb", "postgres") for b in BOUNDARIES],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def story(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, OnEngine]]:
    """The story built once per engine and boundary, read by every test: (boundary's name, the
    engine it is on, as the `engine` fixture of tests/conftest.py gives it)."""
    engine_name, name = request.param
    warehouse = tmp_path_factory.mktemp(f"boundary-{engine_name}-{name}") / "warehouse.duckdb"
    on, cluster, database = OnEngine(engine_name, warehouse), None, ""
    if engine_name == "postgres":
        cluster = request.getfixturevalue("postgres_cluster")
        database = cluster.create_database()
        on = OnEngine(engine_name, warehouse, cluster.uri(database), cluster)
    with pytest.MonkeyPatch.context() as env:
        for key, value in on.env.items():
            env.setenv(key, value)
        build_boundary_story(on, BOUNDARIES[name])
        yield name, on
    if cluster is not None:
        cluster.drop_database(database)


def _plain(value: Any) -> Any:
    """VALUE alike from either engine: times naive UTC, rates (double or numeric) as floats
    rounded to 9 places."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, (float, Decimal)):
        return round(float(value), 9)
    return value


def _same(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [tuple(_plain(v) for v in row) for row in rows]


def _rows(engine: OnEngine, sql: str) -> list[tuple[Any, ...]]:
    """SQL's rows on ENGINE, made alike (`_plain`)."""
    return _same(engine.query(sql))


def test_month_spine_and_as_of(story: tuple[str, OnEngine]) -> None:
    """At 23:59:59 November runs; at 00:00:00 it is complete and December is not open (the
    sync ended November); a second later December runs. October is there from I's expiry at
    S1's instant (the month it ended), before the first sync."""
    name, engine = story
    boundary = BOUNDARIES[name]
    assert _rows(engine, "select as_of, first_sync_at from analytics.as_of") == [(boundary, S1)]
    spine = _rows(
        engine,
        "select cast(month_start as date), is_complete, is_before_first_sync "
        "from analytics.month_spine order by month_start",
    )
    expected = {
        "second_before": [(oct_, t, t), (nov, f, f)],
        "exactly_midnight": [(oct_, t, t), (nov, t, f)],
        "second_after": [(oct_, t, t), (nov, t, f), (dec, f, f)],
    }
    assert spine == expected[name]
    # daily_subscribers agrees: a sync at midnight ends the day before
    [(last_day,)] = _rows(engine, "select max(day) from analytics.daily_subscribers")
    assert last_day == (dec if name == "second_after" else date(2026, 11, 30))


def test_monthly_churn(story: tuple[str, OnEngine]) -> None:
    """Churn: I (10-01 ... 11-01 00:00:00: October's, backfill), H (11-10), B (12-01 00:00:00:
    November's, once as_of reaches it). New, at their starts: G 11-05, D 11-20 (November's even
    when S3, which saw D, is after midnight: D is then in December's base, 6). Cancellations: E
    at S3. Bases: the module docstring."""
    name, engine = story
    got = _rows(
        engine,
        "select month, churned, cancellations, new, subscribers_at_start, churn_rate, "
        "is_estimate, is_complete from analytics.monthly_churn order by month",
    )
    october = (oct_, 1, None, None, 7, 1 / 7, t, t)
    expected = {
        "second_before": [october, (nov, 1, 1, 2, 6, 1 / 6, f, f)],
        "exactly_midnight": [october, (nov, 2, 1, 2, 6, 2 / 6, f, t)],
        "second_after": [october, (nov, 2, 0, 2, 6, 2 / 6, f, t), (dec, 0, 1, 0, 6, 0.0, f, f)],
    }
    assert got == _same(expected[name])
    # churned in a month: in its base (B in November's, not December's)
    assert _rows(
        engine, "select month, subscribers_at_start from analytics.churn_by_platform order by 1"
    ) == [(m, base) for m, _, _, _, base, *_ in expected[name]]


def test_cohort_retention(story: tuple[str, OnEngine]) -> None:
    """Cohorts: backfill (1-7, S1's month November: S1 opens it), 2026-11 (G and D, by their
    starts 11-05 and 11-20: the module docstring; also when S3 saw D after midnight).

    End of November (12-01 00:00:00, or as_of at 23:59:59): backfill A C E F, and B while as_of
    is before its expiry (23:59:59: measured at as_of); 2026-11 G D. December (+1 s, at as_of):
    backfill A C E F; 2026-11 G D. November's end sums to December's base: 4 + 2 = 6."""
    name, engine = story
    boundary = BOUNDARIES[name]
    got = _rows(
        engine,
        "select cohort, cohort_month, month_offset, month, measured_at, cohort_size, usable, "
        "retention, is_complete from analytics.cohort_retention "
        "order by cohort_month, is_backfill desc, month_offset",
    )
    expected = {
        "second_before": [
            ("backfill", nov, 0, nov, boundary, 7, 5, 5 / 7, f),
            ("2026-11", nov, 0, nov, boundary, 2, 2, 1.0, f),
        ],
        "exactly_midnight": [
            ("backfill", nov, 0, nov, MIDNIGHT, 7, 4, 4 / 7, t),
            ("2026-11", nov, 0, nov, MIDNIGHT, 2, 2, 1.0, t),
        ],
        "second_after": [
            ("backfill", nov, 0, nov, MIDNIGHT, 7, 4, 4 / 7, t),
            ("backfill", nov, 1, dec, boundary, 7, 4, 4 / 7, f),
            ("2026-11", nov, 0, nov, MIDNIGHT, 2, 2, 1.0, t),
            ("2026-11", nov, 1, dec, boundary, 2, 2, 1.0, f),
        ],
    }
    assert got == _same(expected[name])


def test_reactivations(story: tuple[str, OnEngine]) -> None:
    """F's reactivation, seen at S3 before its 12-15 expiry (a save): November's unless S3 is
    after midnight."""
    name, engine = story
    got = _rows(
        engine,
        "select month, reactivated, saved, won_back, is_complete "
        "from analytics.reactivations order by month",
    )
    expected = {
        "second_before": [(nov, 1, 1, 0, f)],
        "exactly_midnight": [(nov, 1, 1, 0, t)],
        "second_after": [(nov, 0, 0, 0, t), (dec, 1, 1, 0, f)],
    }
    assert got == _same(expected[name])


def test_monthly_renewals(story: tuple[str, OnEngine]) -> None:
    """Due dates (period 'all') in the month their paid use ends: I 11-01 00:00:00 October's
    (churned); H 11-10 churned, A 11-20 renewed, B and C 12-01 00:00:00 November's: undecided
    at 23:59:59 (not due yet), then B churned and C renewed. December (+1 s): G 12-05, E 12-10,
    F 12-15, A and D 12-20, C 2027-01-01 00:00:00 (December's), all undecided."""
    name, engine = story
    got = _rows(
        engine,
        "select month, came_due, renewed, churned, undecided, renewal_rate, is_estimate, "
        "is_complete from analytics.monthly_renewals where period = 'all' order by month",
    )
    october = (oct_, 1, 0, 1, 0, None, t, t)
    expected = {
        "second_before": [october, (nov, 4, 1, 1, 2, 1 / 2, f, f)],
        "exactly_midnight": [october, (nov, 4, 2, 2, 0, 2 / 4, f, t)],
        "second_after": [
            october,
            (nov, 4, 2, 2, 0, 2 / 4, f, t),
            (dec, 6, 0, 0, 6, None, f, f),
        ],
    }
    assert got == _same(expected[name])


def test_report_figures(story: tuple[str, OnEngine], tmp_path: Path) -> None:
    """The report's last full month is October until November ends: at midnight November is
    complete, and stays the last full month a second later. The page's month before as_of's:
    October's end (before S1: none) while as_of ends November, November's end (= December's
    base, 5) once December runs."""
    name, engine = story
    got = _rows(
        engine,
        "select usable_subscribers, last_full_month, last_full_month_churned, "
        "last_full_month_subscribers_at_start from analytics.report_figures",
    )
    expected = {
        "second_before": [(7, oct_, 1, 7)],
        "exactly_midnight": [(6, nov, 2, 6)],
        "second_after": [(6, nov, 2, 6)],
    }
    assert got == _same(expected[name])
    figures = report.collect(engine.target)  # the story's fixture set the credentials
    # usable at November's end in daily_subscribers: A C E F G, and D, added 11-20 and first
    # seen after midnight, counted from its start (its expiry 12-20 minus a month, after S2)
    assert figures.context["usable_month_before"] == (6 if name == "second_after" else None)
    # the page's tiles name that month
    page = write_html(engine.target, tmp_path / "page.html").read_text(encoding="utf-8")
    before = "2026-11" if name == "second_after" else "2026-10"
    assert f"end of {before}" in page
    assert f"end of {'2026-10' if before == '2026-11' else '2026-11'}" not in page


def test_a_sandbox_world_synced_at_month_starts_passes_every_check(
    engine: OnEngine, devportal: Any
) -> None:
    """The case that found the bug: a generated world synced at 11-01, 11-16 and 12-01, all at
    00:00:00. `devportal models --check` used to fail
    cohort_retention_month_ends_match_monthly_churn_bases: the subscriptions first seen at
    12-01 00:00:00 were in December's base but in no cohort measured at November's end.
    Now November ends with that sync (complete, the last month) and every check passes."""
    from devportal.sandbox import Sandbox

    run_sync = StorySyncs(engine.warehouse, engine.destination)
    with (
        pytest.MonkeyPatch.context() as env,
        Sandbox(subscriptions=400, seed=231, start=S1.isoformat(sep=" ")) as sb,
    ):
        for key, value in engine.env.items():
            env.setenv(key, value)
        run_sync(sb)
        sb.advance(days=15)
        run_sync(sb)
        sb.advance(days=15)
        run_sync(sb)
    assert run_sync.clock == [S1, S2, MIDNIGHT]
    result = devportal("models", "--check", *engine.argv(), env=engine.env)
    assert result.code == 0, result.err
    # subscriptions first seen by the midnight sync: November's cohort, new in November
    [(first_seen_at_midnight,)] = engine.query(
        "select count(*) from analytics.subscriptions_current "
        f"where not is_test and first_seen_at = timestamp '{MIDNIGHT}'"
    )
    assert first_seen_at_midnight > 0  # the case is there
    assert _rows(
        engine,
        "select month, is_complete from analytics.monthly_churn where month >= '2026-11-01'",
    ) == [(nov, True)]
    assert _rows(
        engine,
        "select cohort, month, measured_at from analytics.cohort_retention "
        "where not is_backfill order by cohort, month",
    ) == [("2026-11", nov, MIDNIGHT)]
