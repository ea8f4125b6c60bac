"""The known-answer story (test_known_answers.py) on PostgreSQL: synced, recorded and built
there, every model's rows and every report figure equal those of the DuckDB warehouse."""

from __future__ import annotations

from pathlib import Path

from devportal.reporting import report
from devportal.reporting.report.formats import render
from devportal.warehouse.target import Target
from tests.models.conftest import T1, T2, T3, build_story
from tests.models.test_postgres_models import model_rows  # per-run columns left out


def test_the_story_on_postgres_builds_every_model_with_the_same_rows(
    story_warehouse: Path, postgres: str, tmp_path: Path
) -> None:
    info = build_story(tmp_path / "pg.duckdb", destination="postgres")
    assert info["clock"] == [T1, T2, T3]
    duck = model_rows(story_warehouse, None)
    pg = model_rows(tmp_path / "pg.duckdb", "postgres")
    assert sorted(pg) == sorted(duck)
    # the models and the seed written from settings (analytics.status_map)
    assert len(duck) == len(info["summary"]["built"] + info["summary"]["seeds"])
    for table in duck:
        assert pg[table] == duck[table], table
    assert info["summary"]["tests"] > 0

    # the report reads either warehouse to the same figures
    same = report.collect(story_warehouse)
    on_pg = report.collect(Target.of(tmp_path / "pg.duckdb", "postgres"))
    for fmt in ("json", "table"):
        assert render(on_pg, fmt) == render(same, fmt)
