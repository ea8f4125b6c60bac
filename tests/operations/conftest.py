"""Fixtures of the operations tests (status, alerts, digest): a webhook receiver set as
`[alerts] webhook_url`, and a warehouse with five monthly syncs of history (four complete
months after the first sync) for the churn alerts and the digest, copied per test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import sync_from
from tests.operations.receiver import Receiver, receiving


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    """A webhook receiver on 127.0.0.1, set as ALERTS__WEBHOOK_URL."""
    with receiving() as receiver:
        monkeypatch.setenv("ALERTS__WEBHOOK_URL", receiver.url)
        yield receiver


@dataclass
class History:
    """A sandbox (still running) and a warehouse synced from it once a month for four months,
    models built; `copy()` gives a test a warehouse of its own (with dlt's folder: its alerts
    already posted, its failures, its pipeline)."""

    sandbox: Any
    folder: Path

    def copy(self, to: Path) -> Path:
        shutil.copytree(self.folder, to)
        return to / "warehouse.duckdb"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    from devportal.sandbox import Sandbox

    folder = tmp_path_factory.mktemp("history") / "wh"
    sb = Sandbox(subscriptions=400, users=80, seed=5, start="2026-11-01 00:00:00").start()
    try:
        for month in range(5):
            if month:
                sb.advance(days=31)
            sync_from(sb, folder / "warehouse.duckdb", build_models=month == 4)
        yield History(sb, folder)
    finally:
        sb.stop()
