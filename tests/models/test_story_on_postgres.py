"""The known-answer story (test_known_answers.py) on PostgreSQL: synced, recorded and built
there, every model's rows and every report figure equal those of the DuckDB warehouse."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from devportal import report
from devportal.engines import connect
from tests.models.conftest import T1, T2, T3, build_story


def normalised(value: Any) -> Any:
    """One form per value whatever the driver: numbers as rounded floats, naive timestamps,
    JSON text parsed."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float, Decimal)):
        return round(float(value), 9)
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.dumps(json.loads(value), sort_keys=True)
        except ValueError:
            return value
    return value


# what identifies each side's own runs (random ids, this machine's clock, the temporary folder
# of a manifest): not data of the story
RECORDING = {"loaded_at", "manifest_path", "run_id", "last_run_id", "started_at", "load_id"}


def model_rows(warehouse: Path, destination: str | None) -> dict[str, list[tuple[Any, ...]]]:
    with connect(warehouse, destination, read_only=True) as engine:
        tables = sorted(engine.relations("analytics"))
        found = {}
        for table in tables:
            names, rows = engine.columns(f"select * from {engine.qualify('analytics', table)}")
            found[table] = sorted(
                (
                    tuple(
                        (n, normalised(v))
                        for n, v in zip(names, row, strict=True)
                        if n not in RECORDING
                    )
                    for row in rows
                ),
                key=repr,
            )
        return found


def test_the_story_on_postgres_builds_every_model_with_the_same_rows(
    story_warehouse: Path, postgres: str, tmp_path: Path
) -> None:
    info = build_story(tmp_path / "pg.duckdb", destination="postgres")
    assert info["clock"] == [T1, T2, T3]
    duck = model_rows(story_warehouse, None)
    pg = model_rows(tmp_path / "pg.duckdb", "postgres")
    assert sorted(pg) == sorted(duck)
    assert len(duck) == len(info["summary"]["built"])
    for table in duck:
        assert pg[table] == duck[table], table
    assert info["summary"]["tests"] > 0

    # the report reads either warehouse to the same figures
    same = report.collect(story_warehouse)
    on_pg = report.collect(tmp_path / "pg.duckdb", destination="postgres")
    for fmt in ("json", "table"):
        assert report.render(on_pg, fmt) == report.render(same, fmt)
