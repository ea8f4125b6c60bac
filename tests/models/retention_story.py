"""The retention story: a scripted history for the renewal, cohort, lifetime and platform models.

Built through the real sync against the sandbox, like conftest.build_story; the day-by-day
account is test_retention_known_answers.py's docstring. The sandbox's clock renews an active
subscription when its `expires_at` is reached (by its period: one or twelve calendar months)
and lets a canceled one expire; everything else is scripted here.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from devportal import models
from devportal.warehouse.target import Target
from tests.helpers import StorySyncs

S1 = datetime(2026, 1, 10)
S2 = datetime(2026, 2, 5)
S3 = datetime(2026, 3, 20)
S4 = datetime(2026, 4, 12)


def build_retention_story(warehouse: Path, destination: str | None = None) -> dict[str, Any]:
    """Sync the story into WAREHOUSE (or DESTINATION `postgres`) and build the models with their
    data tests; returns the sandbox's clock at each sync and the build summary."""
    from devportal.sandbox import Sandbox

    run_sync = StorySyncs(warehouse, destination)

    with Sandbox(subscriptions=0, users=0, seed=3, start=S1.isoformat(sep=" ")) as sb:
        world = sb.world
        world.add_user(301, "Ann", settings={"theme": "dark"}, platforms=("twitch",))
        world.add_user(302, "Ben", settings={}, platforms=("youtube", "twitch"))
        # 303 has no account: /users/303 answers 404
        add = world.add_subscription
        assert add(301, "active", "2026-01-25 00:00:00") == 1  # A monthly
        add(302, "active", "2026-02-15 00:00:00", period_months=12)  # 2 B yearly
        add(303, "active", "2026-11-01 00:00:00", period_months=12)  # 3 C yearly
        add(301, "canceled", "2025-12-20 00:00:00")  # 4 D expired before the first sync
        add(302, "active", "2026-01-20 00:00:00")  # 5 E monthly
        add(302, "canceled", "2026-02-10 00:00:00")  # 6 F
        assert add(303, "active", "2026-02-01 00:00:00") == 7  # G
        run_sync(sb)  # S1 2026-01-10

        sb.advance(days=5)  # 01-15
        world.cancel(7)
        sb.advance(days=5)  # 01-20: E renews to 02-20
        assert add(301) == 8  # H, expires 02-20
        world.reactivate(6)  # F saved: usable until 02-10
        sb.advance(days=5)  # 01-25: A renews to 02-25
        world.cancel(5)
        assert add(302) == 9  # M, expires 02-25
        sb.advance(days=3)  # 01-28
        assert add(301) == 10  # N, expires 02-28
        sb.advance(days=8)  # 02-05 (G expired 02-01)
        run_sync(sb)  # S2

        sb.advance(days=5)  # 02-10: F renews to 03-10
        world.cancel(9)
        assert add(302) == 11  # I, expires 03-10
        sb.advance(days=5)  # 02-15: B renews to 2027-02-15
        world.cancel(11)
        sb.advance(days=5)  # 02-20: E expires, H renews to 03-20
        world.reactivate(7)  # G won back after its expiry, with a new paid period
        world.renew(7, "2026-03-22 00:00:00")
        sb.advance(days=5)  # 02-25: A renews to 03-25, M expires
        assert add(301) == 12  # J, expires 03-25
        sb.advance(days=4)  # 03-01 (N renewed to 03-28 on 02-28)
        world.remove_subscription(10)
        sb.advance(days=2)  # 03-03
        assert add(303) == 13  # K, expires 04-03
        sb.advance(days=17)  # 03-20: F renewed to 04-10 (03-10), I expired, H renews to 04-20
        run_sync(sb)  # S3

        sb.advance(days=1)  # 03-21
        world.cancel(12)
        sb.advance(days=4)  # 03-25: A renews to 04-25, J expires (G renewed to 04-22 on 03-22)
        world.cancel(8)
        world.cancel(13)
        assert add(302) == 14  # L, expires 04-25
        sb.advance(days=18)  # 04-12: K expired 04-03, F renewed to 05-10 (04-10)
        run_sync(sb)  # S4 = as_of
    summary = models.build(Target.of(warehouse, destination), check=True)
    return {"clock": run_sync.clock, "summary": summary}
