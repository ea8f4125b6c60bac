"""Fixtures for the model tests: a scripted subscription history built through the real sync.

`story_warehouse` holds the known-answer world (test_known_answers.py's docstring tells it day
by day), built once per session: three syncs against the sandbox, two manifests, the models.
The sync stamps history with the server's `Date` header, which the sandbox sets from its
simulated clock, so the scripted days are the days the history records. Tests only read the
warehouse (read-only connections), so sharing it is safe and keeps the suite fast.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from devportal import models
from tests.helpers import sync_from

MANIFEST_FIXTURE = Path(__file__).resolve().parents[1] / "manifest" / "fixtures" / "complete"

T1 = datetime(2026, 1, 15)
T2 = datetime(2026, 2, 10)
T3 = datetime(2026, 3, 5)


def build_story(warehouse: Path, destination: str | None = None) -> dict[str, Any]:
    """The scripted history of test_known_answers.py; returns the sandbox's clock per sync.

    DESTINATION `postgres`: the same story synced, recorded and built on PostgreSQL."""

    def run_sync(sb: Any, warehouse: Path) -> Any:
        return sync_from(sb, warehouse, destination=destination)

    from devportal.sandbox import Sandbox

    with Sandbox(subscriptions=0, users=0, seed=1, start=T1.isoformat(sep=" ")) as sb:
        world = sb.world
        world.add_user(101, "Alice", settings={"theme": "dark"}, platforms=("twitch", "youtube"))
        world.add_user(102, "Bob", settings=None, platforms=("twitch",))
        world.add_user(103, "Carol", settings={}, platforms=("youtube", "twitch"))
        world.add_user(
            201,
            "Dave",
            settings={"sound": "coin", "widgets": {"chat": True}},
            platforms=("twitch",),
        )
        add = world.add_subscription
        assert add(101, "active", "2026-02-01 00:00:00") == 1
        add(101, "active", "2026-01-20 00:00:00")  # 2
        add(102, "canceled", "2025-12-10 00:00:00")  # 3
        add(102, "canceled", "2026-01-25 00:00:00")  # 4
        add(103, "active", "2026-02-05 00:00:00")  # 5
        add(103, "active", "2026-03-01 00:00:00")  # 6
        add(104, "active", "2026-03-10 00:00:00", period_months=12)  # 7
        add(104, "active", "2026-03-08 00:00:00")  # 8
        add(105, "canceled", "2026-02-20 00:00:00")  # 9
        assert add(106, "active", "2026-01-31 00:00:00") == 10
        clock = [sb.now]
        run_sync(sb, warehouse)  # T1

        sb.advance(days=5)  # Jan 20: id 2 renews to Feb 20
        world.cancel(5)
        world.cancel(6)
        world.reactivate(9)
        assert add(105, "active", "2026-02-25 00:00:00") == 11
        sb.advance(days=21)  # Feb 10: 10 renews to Feb 28, 1 to Mar 1; 4 and 5 expired
        clock.append(sb.now)
        run_sync(sb, warehouse)  # T2

        sb.advance(days=5)  # Feb 15
        world.reactivate(6)
        world.cancel(8)
        assert add(106, "canceled", "2026-03-03 00:00:00") == 12
        world.remove_subscription(10)
        sb.advance(days=18)  # Mar 5: 2 and 9 renewed, 11 too, 1 and 6 on Mar 1; 12 expired
        clock.append(sb.now)
        run_sync(sb, warehouse)  # T3
    from devportal.manifest.resource import load_manifest
    from devportal.warehouse.target import Target

    load_manifest(MANIFEST_FIXTURE, Target.of(warehouse, destination))
    # release 2 drops a live platform: recorded all the same, with its error
    bundle = warehouse.parent / "bundle-1.5.0"
    shutil.copytree(MANIFEST_FIXTURE, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    manifest["version"] = "1.5.0"
    manifest["supportedPlatforms"] = ["twitch", "youtube", "facebook"]
    manifest["pages"] = manifest["pages"][:1]
    (bundle / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    load_manifest(bundle, Target.of(warehouse, destination))
    summary = models.build(Target.of(warehouse, destination), check=True)
    return {"clock": clock, "summary": summary}


@pytest.fixture(scope="session")
def story_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    warehouse = tmp_path_factory.mktemp("story") / "story.duckdb"
    info = build_story(warehouse)
    assert info["clock"] == [T1, T2, T3]
    yield warehouse
