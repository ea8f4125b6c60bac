"""The cadence story: a lapse and a win-back, a save the syncs saw only late, and subscriptions
started between two syncs a week apart, for test_event_definitions.py and
test_cadence_history.py.

Built through the real sync against the sandbox (its clock stamps the history), like
revenue_story.py. Four syncs, a week apart, then four weeks: S1 2026-05-04 (the first),
S2 05-11, S3 05-18, S4 06-15 = as_of, all at 00:00:00. Every change is at 12:00, so it shows
on its own day (a day is measured at the midnight after it). Prices: EUR 10.00 a month,
120.00 a year (both 10.00 a month; `price_unknown` is the monthly one), the whole share: every
usable subscription adds exactly 10 to MRR.

    id  story                                           versions (sync: status expires)
     1 A monthly, renews 05-20 -> 06-20                 S1 a 05-20, S4 a 06-20
     2 L canceled 05-05, lapses at 05-06 12:00 (S2 sees S1 a 05-06, S2 c 05-06,
       it expired), won back 05-14 12:00 to 06-14,      S3 a 06-14, S4 a 07-14
       renews 06-14 -> 07-14
     3 V canceled 05-08, saved 05-12 (before its        S1 a 05-16, S2 c 05-16,
       expiry), renews 05-16 -> 06-16: S3 sees it       S3 a 06-16
       active only after the old expiry (a late save)
     4 B yearly, expires 2026-12-01                     S1 a 12-01
     5 N1 added 05-06 12:00, renews 06-06 -> 07-06      S2 a 06-06, S4 a 07-06
     6 N2 added 05-08 12:00, renews 06-08 -> 07-08      S2 a 06-08, S4 a 07-08
     7 N3 yearly, added 05-09 12:00                     S2 a 2027-05-09
     8 N4 added 05-13 12:00, canceled 05-15, expires    S3 c 06-13
       06-13 12:00

Starts (subscription_spells): N1, N2 at their first expiry minus their period (monthly, known
from their renewals at S4: 'period'); N3 and N4 with the period unknown (one expiry each):
'estimate', N3 as yearly (its expiry minus a month is after S2), N4 as monthly; L's win-back at
its new expiry 06-14 minus its period (monthly, from its renewal to 07-14), within [S2 (the sync
before S3 saw it lapsed), S3]: 05-14 12:00. Every one the true day.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from devportal import models
from devportal.warehouse.target import Target
from tests.helpers import StorySyncs
from tests.models.revenue_story import environment

S1 = datetime(2026, 5, 4)
S2 = datetime(2026, 5, 11)
S3 = datetime(2026, 5, 18)
S4 = datetime(2026, 6, 15)

PRICES = {
    "ANALYTICS__CURRENCY": "EUR",
    "ANALYTICS__PRICE_MONTHLY": "10.00",
    "ANALYTICS__PRICE_YEARLY": "120.00",
}


def build_cadence_story(warehouse: Path, destination: str | None = None) -> dict[str, Any]:
    """Sync the story into WAREHOUSE (or DESTINATION `postgres`) and build the models with every
    data test under its prices; the sandbox's clock at each sync and the build summary."""
    from devportal.sandbox import Sandbox

    run_sync = StorySyncs(warehouse, destination)
    with Sandbox(subscriptions=0, users=0, seed=32, start=S1.isoformat(sep=" ")) as sb:
        world = sb.world
        add = world.add_subscription
        assert add(501, "active", "2026-05-20 12:00:00") == 1  # A
        add(502, "active", "2026-05-06 12:00:00")  # 2 L
        add(503, "active", "2026-05-16 12:00:00")  # 3 V
        add(504, "active", "2026-12-01 12:00:00", period_months=12)  # 4 B
        run_sync(sb)  # S1 05-04

        sb.advance(days=1)  # 05-05 00:00
        world.cancel(2)
        sb.advance(days=1, hours=12)  # 05-06 12:00: L expires
        assert add(505) == 5  # N1, to 06-06 12:00
        sb.advance(days=2)  # 05-08 12:00
        world.cancel(3)
        assert add(506) == 6  # N2, to 06-08 12:00
        sb.advance(days=1)  # 05-09 12:00
        assert add(507, period_months=12) == 7  # N3, to 2027-05-09 12:00
        sb.advance(days=1, hours=12)  # 05-11 00:00
        run_sync(sb)  # S2

        sb.advance(days=1, hours=12)  # 05-12 12:00
        world.reactivate(3)  # V saved: usable until 05-16 12:00, renews then
        sb.advance(days=1)  # 05-13 12:00
        assert add(508) == 8  # N4, to 06-13 12:00
        sb.advance(days=1)  # 05-14 12:00
        world.reactivate(2)  # L won back after its lapse, with a new paid period
        world.renew(2, "2026-06-14 12:00:00")
        sb.advance(days=1)  # 05-15 12:00
        world.cancel(8)
        sb.advance(days=2, hours=12)  # 05-18 00:00 (V renewed to 06-16 12:00 on 05-16)
        run_sync(sb)  # S3

        # 06-15 00:00: A renewed 05-20 -> 06-20, N1 06-06 -> 07-06, N2 06-08 -> 07-08,
        # N4 expired 06-13 12:00, L renewed 06-14 -> 07-14; V renews only on 06-16
        sb.advance(days=28)
        truth = {row["id"]: (row["status"], row["expires_at"]) for row in sb.truth()}
        assert truth == {
            1: ("active", "2026-06-20 12:00:00"),
            2: ("active", "2026-07-14 12:00:00"),
            3: ("active", "2026-06-16 12:00:00"),
            4: ("active", "2026-12-01 12:00:00"),
            5: ("active", "2026-07-06 12:00:00"),
            6: ("active", "2026-07-08 12:00:00"),
            7: ("active", "2027-05-09 12:00:00"),
            8: ("canceled", "2026-06-13 12:00:00"),
        }, truth
        run_sync(sb)  # S4 = as_of
    with environment(PRICES):
        summary = models.build(Target.of(warehouse, destination), check=True)
    return {"clock": run_sync.clock, "summary": summary}


_BUILT: dict[str, Any] = {}


def cadence_story_on(request: Any, engine_name: str, tmp_path_factory: Any) -> Any:
    """The story built once per engine in the session (an `OnEngine`, tests/helpers.py), for
    every module that reads it: PostgreSQL's on a database of the session's cluster, kept to
    the cluster's end."""
    from tests.helpers import OnEngine, _environ

    if engine_name not in _BUILT:
        warehouse = tmp_path_factory.mktemp(f"cadence-{engine_name}") / "warehouse.duckdb"
        on = OnEngine(engine_name, warehouse)
        if engine_name == "postgres":
            cluster = request.getfixturevalue("postgres_cluster")
            on = OnEngine(engine_name, warehouse, cluster.uri(cluster.create_database()), cluster)
        with _environ(on.env):
            info = build_cadence_story(on.warehouse, on.destination)
        assert info["clock"] == [S1, S2, S3, S4]
        _BUILT[engine_name] = on
    return _BUILT[engine_name]


def plain(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """ROWS alike from either engine: times naive UTC, numbers (decimal or double) as floats
    rounded to 6 places."""
    from datetime import UTC
    from decimal import Decimal

    def one(value: Any) -> Any:
        if isinstance(value, datetime) and value.tzinfo is not None:
            return value.astimezone(UTC).replace(tzinfo=None)
        if isinstance(value, Decimal | float):
            return round(float(value), 6)
        return value

    return [tuple(one(v) for v in row) for row in rows]
