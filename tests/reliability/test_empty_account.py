"""An empty account is a valid warehouse (issue 33): a developer whose API lists no subscription
and no settings yet syncs, every model builds with its data tests, and `report` (every format
and the HTML page) and `digest` say there are no subscriptions yet, exit 0. Then the first
subscriptions arrive and the same warehouse carries on. Real sandbox, real sync, both engines.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from devportal import models
from devportal.models.project import load_models
from tests.helpers import CliResult, OnEngine, _environ, sync_from

Cli = Callable[..., CliResult]
EMPTY = "no subscriptions yet"


def test_an_account_with_nothing_yet_has_a_report(
    engine: OnEngine, devportal: Cli, tmp_path: Path
) -> None:
    from devportal.sandbox import Sandbox

    with Sandbox(subscriptions=0, users=0, seed=7) as sb, _environ(engine.env):
        sync_from(sb, engine.warehouse, destination=engine.destination)
        summary = models.build(engine.target, check=True)
        every = {model.name for model in load_models()}
        assert set(summary["built"]) == every and summary["skipped"] == {}

        at = engine.argv()
        table = devportal("report", *at)
        assert table.code == 0, table.err
        assert EMPTY in table.out and "usable now" in table.out
        figures = json.loads(devportal("report", *at, "--format", "json").out)
        assert figures["usable_subscribers"] == 0 and EMPTY in figures["data_basis"]
        for fmt in ("csv", "markdown"):
            result = devportal("report", *at, "--format", fmt)
            assert result.code == 0 and EMPTY in result.out, (fmt, result.err)
        page = tmp_path / "page.html"
        html = devportal("report", *at, "--html", str(page))
        assert html.code == 0, html.err
        assert EMPTY in page.read_text(encoding="utf-8")
        digest = devportal("digest", "--no-post", *at)
        assert digest.code == 0 and EMPTY in digest.out, digest.err

        # the first subscriptions arrive: the same warehouse carries on
        sb.world.add_user(9001, "First", settings={}, platforms=("twitch",))
        sb.world.add_subscription(9001, "active", "2026-12-20 00:00:00")
        sb.advance(days=1)
        sync_from(sb, engine.warehouse, destination=engine.destination, build_models=True)
        figures = json.loads(devportal("report", *at, "--format", "json").out)
        assert figures["usable_subscribers"] == 1 and EMPTY not in figures["data_basis"]
