"""A list read again until it adds up, through the real `devportal sync`: the user settings list
goes through the same loop as the subscription list (`reading.checks.read_until_it_adds_up`).

A list that moved while it was paged is read again; the sweep recorded in `sync_runs` is the read
that was kept (its attempt, and no note left over from the read thrown away). A list that never
adds up fails the run in one line, having loaded nothing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import query, rows_if_loaded
from tests.hostile.conftest import CliResult, token_env
from tests.hostile.server import SETTINGS, Answer, HostileApi, Request

Cli = Callable[..., CliResult]
Args = Callable[..., list[str]]


def entry(uid: int) -> dict[str, Any]:
    return {"user": {"service": {"id": uid, "username": f"user{uid}"}}, "settings": {"n": uid}}


class MovingSettings:
    """The settings list (7 entries, pages of 3, Laravel's simple paginator: no `total`) that
    moves during its first MOVING reads: in such a read, page 2 repeats page 1's first entry
    (the list shifted: an id twice, the read does not add up) and page 3 is empty but points to
    page 4 (where the client stops, noting it on the read). A read begins with page 1."""

    def __init__(self, api: HostileApi, moving: int) -> None:
        self.api, self.moving = api, moving
        api.simple_paginator = True
        self.entries = [entry(uid) for uid in range(1001, 1008)]
        self.reads = 0
        self._lock = threading.Lock()

    def __call__(self, req: Request) -> Answer:
        number = int(req.query.get("page", "1") or 1)
        with self._lock:
            if number == 1:
                self.reads += 1
            moving = self.reads <= self.moving
        if not moving:
            return Answer(200, self.api.page(req, self.entries))
        body = self.api.page(req, self.entries)
        if number == 2:
            body["data"] = [self.entries[0], *self.entries[4:6]]
        elif number == 3:
            url = f"{req.base_url}{req.path}"
            body.update(data=[], next_page_url=f"{url}?page=4", **{"from": None, "to": None})
        return Answer(200, body)


def settings_loaded(warehouse: Path) -> list[tuple[Any, ...]]:
    """The user ids in `devportal.user_settings`; [] when no warehouse or no such table."""
    return rows_if_loaded(
        warehouse, "SELECT user_id FROM devportal.user_settings ORDER BY 1", "user_settings"
    )


def settings_sweep(warehouse: Path) -> dict[str, Any]:
    rows = query(warehouse, "SELECT sweeps FROM devportal.sync_runs ORDER BY observed_at")
    (sweep,) = [s for s in json.loads(rows[-1][0]) if s["endpoint"] == SETTINGS]
    return sweep


def sync_moving_settings(
    api: HostileApi, devportal: Cli, sync_args: Args, warehouse: Path, moving: int, attempts: int
) -> tuple[MovingSettings, CliResult]:
    """A `user_settings` sync into WAREHOUSE, at most ATTEMPTS reads, of a list that moves
    during its first MOVING reads (`MovingSettings`)."""
    settings = MovingSettings(api, moving=moving)
    api.route(SETTINGS, settings)
    args = sync_args("--resources", "user_settings", "--progress", "off", warehouse=warehouse)
    return settings, devportal(*args, env=token_env(api, sweep_attempts=attempts))


def test_a_settings_list_that_moved_is_read_again_and_recorded_as_kept(
    api: HostileApi, devportal: Cli, sync_args: Args, tmp_path: Path
) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    moving, result = sync_moving_settings(api, devportal, sync_args, warehouse, 1, attempts=3)
    assert result.code == 0, result.err
    assert moving.reads == 2
    assert [r[0] for r in settings_loaded(warehouse)] == list(range(1001, 1008))
    sweep = settings_sweep(warehouse)
    assert sweep["attempts"] == 2
    assert sweep["complete"] and not sweep["verified"]  # no total: loaded, closes nothing
    assert sweep["rows"] == sweep["unique_ids"] == 7
    # the kept read's own note, not the empty page 3 of the read thrown away
    assert sweep["note"] == "the pages carry no total to check the rows against"


def test_a_settings_list_that_never_adds_up_fails_in_one_line_loading_nothing(
    api: HostileApi, devportal: Cli, sync_args: Args, tmp_path: Path
) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    moving, result = sync_moving_settings(api, devportal, sync_args, warehouse, 10, attempts=2)
    assert result.code == 1, result.err  # IntegrityError
    assert moving.reads == 2
    line = result.err.strip().splitlines()[-1]
    # the same row twice in both reads: named with its pages, a defect another run won't fix
    expected = (
        "devportal: error: the user settings list lists a row twice in every read (2 reads, "
        "the same way each time): user 1001 came on pages 1 and 2; a defect on the API's side "
        "which another run will not fix"
    )
    assert line.startswith(expected), result.err
    assert "Traceback" not in result.err
    assert settings_loaded(warehouse) == []
