"""The revenue story: a scripted history for the price book and the money models.

Built through the real sync against the sandbox, like retention_story.py; the day-by-day
account is test_revenue_known_answers.py's docstring. The sandbox's clock renews an active
subscription when its `expires_at` is reached (by its period) and lets a canceled one expire;
a switch of billing period is a scripted renewal to a year later at the monthly renewal.
The price book is a prices_file (a price cut on 2026-03-01) with a revenue share of 0.5.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from devportal import models
from devportal.warehouse.target import Target
from tests.helpers import StorySyncs

S1 = datetime(2026, 1, 10)
S2 = datetime(2026, 2, 5)
S3 = datetime(2026, 3, 5)
S4 = datetime(2026, 4, 12)

PRICES_CSV = """period,amount,valid_from
monthly,5.00,2026-01-01
yearly,54.00,2026-01-01
unknown,4.40,2026-01-01
monthly,4.00,2026-03-01
"""


def price_settings(folder: Path) -> dict[str, str]:
    """The story's `[analytics]` price book as the environment gives it (its prices_file
    written into FOLDER)."""
    prices = folder / "prices.csv"
    prices.write_text(PRICES_CSV, encoding="utf-8")
    return {
        "ANALYTICS__CURRENCY": "EUR",
        "ANALYTICS__REVENUE_SHARE": "0.5",
        "ANALYTICS__PRICES_FILE": str(prices),
    }


@contextmanager
def environment(settings: Mapping[str, str]) -> Iterator[None]:
    """SETTINGS in os.environ for the block (dlt reads `[analytics]` from there), and every
    other ANALYTICS__ variable out of it; restored afterwards."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("ANALYTICS__")}
    for key in saved:
        del os.environ[key]
    os.environ.update(settings)
    try:
        yield
    finally:
        for key in [k for k in os.environ if k.startswith("ANALYTICS__")]:
            del os.environ[key]
        os.environ.update(saved)


def build_revenue_story(warehouse: Path, destination: str | None = None) -> dict[str, Any]:
    """Sync the story into WAREHOUSE (or DESTINATION `postgres`) and build the models with their
    data tests under the story's price book; returns the sandbox's clock at each sync and the
    build summary."""
    from devportal.sandbox import Sandbox

    run_sync = StorySyncs(warehouse, destination)

    with Sandbox(subscriptions=0, users=0, seed=5, start=S1.isoformat(sep=" ")) as sb:
        world = sb.world
        add = world.add_subscription
        assert add(401, "active", "2026-01-25 00:00:00") == 1  # A monthly
        add(402, "active", "2026-02-15 00:00:00", period_months=12)  # 2 B yearly
        add(403, "active", "2026-01-20 00:00:00")  # 3 C monthly, then yearly
        add(404, "active", "2026-01-28 00:00:00")  # 4 D canceled, churns, won back
        add(405, "active", "2026-01-15 00:00:00")  # 5 E canceled, churns
        assert add(409, "active", "2026-02-08 00:00:00") == 6  # I monthly, then yearly
        run_sync(sb)  # S1 2026-01-10

        sb.advance(days=5)  # 01-15: E renews to 02-15
        sb.advance(days=5)  # 01-20: C renews to 02-20
        world.cancel(5)
        sb.advance(days=5)  # 01-25: A renews to 02-25
        sb.advance(days=3)  # 01-28: D renews to 02-28
        sb.advance(days=8)  # 02-05
        run_sync(sb)  # S2

        sb.advance(days=3)  # 02-08: I renews to 03-08
        sb.advance(days=2)  # 02-10
        assert add(401) == 7  # F (Ann's second), expires 03-10
        world.cancel(4)
        sb.advance(days=5)  # 02-15: B renews to 2027-02-15, E expires
        sb.advance(days=5)  # 02-20: C switches to yearly at its renewal
        world.renew(3, "2027-02-20 00:00:00")
        sb.advance(days=5)  # 02-25: A renews to 03-25
        sb.advance(days=3)  # 02-28: D expires
        sb.advance(days=5)  # 03-05
        run_sync(sb)  # S3

        sb.advance(days=3)  # 03-08: I switches to yearly at its renewal
        world.renew(6, "2027-03-08 00:00:00")
        sb.advance(days=2)  # 03-10: F renews to 04-10
        sb.advance(days=15)  # 03-25: A renews to 04-25
        assert add(407) == 8  # G, expires 04-25
        world.reactivate(4)  # D won back after its expiry, with a new paid period
        world.renew(4, "2026-04-25 00:00:00")
        sb.advance(days=7)  # 04-01
        world.cancel(3)  # C canceled: usable until 2027-02-20
        sb.advance(days=11)  # 04-12 (F renewed to 05-10 on 04-10)
        run_sync(sb)  # S4 = as_of
    with environment(price_settings(warehouse.parent)):
        summary = models.build(Target.of(warehouse, destination), check=True)
    return {"clock": run_sync.clock, "summary": summary}
