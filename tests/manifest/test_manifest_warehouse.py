"""Recording manifests in a real DuckDB warehouse through the real dlt pipeline.

Warehouse files here are named `warehouse.duckdb`: a file named `devportal.duckdb` gives the
DuckDB catalog the same name as the `devportal` dataset schema, which DuckDB rejects as an
ambiguous reference (dlt's own queries fail), see the report of this change.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devportal.cli import main
from devportal.load.pipeline import begin_writing, open_pipeline, publish
from devportal.manifest.history import recorded_platforms
from devportal.manifest.resource import TABLES, manifest_resources
from devportal.warehouse import warehouse_lock
from devportal.warehouse.target import Target
from tests.manifest.manifest_helpers import Bundle


@pytest.fixture
def wh(tmp_path: Path) -> Path:
    return tmp_path / "wh" / "warehouse.duckdb"


def query(warehouse: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        conn.execute("use warehouse.devportal")
        return conn.execute(sql, list(params)).fetchall()


def counts(warehouse: Path) -> dict[str, int]:
    return {t: query(warehouse, f"select count(*) from {t}")[0][0] for t in TABLES}


def load(path: Path, warehouse: Path, *extra: str) -> int:
    return main(["manifest", "load", str(path), "--warehouse", str(warehouse), *extra])


def test_load_records_every_table_and_twice_adds_nothing(
    complete: Bundle, wh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load(complete.root, wh) == 0
    out = capsys.readouterr().out
    assert "valid: 0 errors, 0 warnings" in out
    assert "recorded Stream Widgets 1.4.0 in" in out
    expected = {
        "app_manifests": 1,
        "app_manifest_sources": 2,
        "app_manifest_pages": 3,
        "app_manifest_platforms": 4,
        "app_manifest_permissions": 9,
        "app_manifest_authorization_urls": 2,
        "app_manifest_media_domains": 2,
        "manifest_findings": 0,
    }
    assert counts(wh) == expected
    first = query(wh, "select content_hash, loaded_at from app_manifests")

    assert load(complete.root, wh) == 0
    assert counts(wh) == expected
    (content_hash, loaded_at) = query(wh, "select content_hash, loaded_at from app_manifests")[0]
    assert content_hash == first[0][0]
    assert loaded_at >= first[0][1]  # the row was replaced, not duplicated

    assert content_hash == hashlib.sha256(complete.manifest_path.read_bytes()).hexdigest()
    row = query(
        wh,
        "select name, version, build_path, icon, icon_width, icon_height, error_count,"
        " warning_count, size_bytes, document->>'$.name' from app_manifests",
    )[0]
    assert row == (
        "Stream Widgets",
        "1.4.0",
        "dist",
        "images/icon.png",
        256,
        256,
        0,
        0,
        complete.manifest_path.stat().st_size,
        "Stream Widgets",
    )
    assert query(
        wh, "select url, normalised_url from app_manifest_authorization_urls order by ordinal"
    ) == [
        (
            "https://id.twitch.tv/oauth2/authorize?response_type=code&client_id=abc123",
            "https://id.twitch.tv/oauth2/authorize",
        ),
        (
            "https://accounts.example.com/o/oauth2/auth",
            "https://accounts.example.com/o/oauth2/auth",
        ),
    ]
    assert query(wh, "select platform from app_manifest_platforms order by ordinal") == [
        ("twitch",), ("youtube",), ("facebook",), ("mixer",)
    ]  # fmt: skip
    assert query(
        wh,
        "select source_id, initial_size_type, initial_width, initial_height,"
        " initial_size_is_default, redirect_properties_to_top_nav_slot, bullets::varchar"
        " from app_manifest_sources order by ordinal",
    ) == [
        ("alert-box", "relative", 0.5, 1.0, False, True, '["Custom sounds","Animated banners"]'),
        ("goal-bar", "absolute", 1280.0, 120.0, False, False, None),
    ]
    assert query(
        wh,
        "select slot, persistent, allow_popout, pop_out_width, pop_out_height,"
        " pop_out_min_width, pop_out_min_height from app_manifest_pages order by ordinal",
    ) == [
        ("top_nav", True, True, 800.0, 640.0, 640.0, 480.0),
        ("chat", False, False, 600.0, 500.0, 600.0, 500.0),
        ("background", True, False, 600.0, 500.0, 600.0, 500.0),
    ]


def test_defaults_are_applied_in_recorded_rows(defaults: Bundle, wh: Path) -> None:
    assert load(defaults.root, wh) == 0
    assert query(
        wh,
        "select initial_size_type, initial_width, initial_height, initial_size_is_default,"
        " redirect_properties_to_top_nav_slot, banner_image, bullets from app_manifest_sources",
    ) == [("absolute", 800.0, 600.0, True, False, None, None)]
    assert query(
        wh,
        "select persistent, allow_popout, pop_out_width, pop_out_height, pop_out_min_width,"
        " pop_out_min_height from app_manifest_pages",
    ) == [(False, True, 600.0, 500.0, 600.0, 500.0)]
    assert query(wh, "select build_path, icon, icon_width from app_manifests") == [
        (None, None, None)
    ]


def test_new_version_keeps_the_old_one_and_platform_removal_is_an_error(
    complete: Bundle, wh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load(complete.root, wh) == 0
    complete.edit(lambda d: d.update(version="1.5.0"))
    assert load(complete.root, wh) == 0
    assert query(wh, "select version from app_manifests order by version") == [
        ("1.4.0",),
        ("1.5.0",),
    ]
    assert counts(wh)["app_manifest_sources"] == 4
    assert recorded_platforms(wh, "Stream Widgets") == {"twitch", "youtube", "facebook", "mixer"}
    assert recorded_platforms(wh, "Another App") == set()
    capsys.readouterr()

    def drop_mixer(d: dict[str, Any]) -> None:
        d["version"] = "1.6.0"
        d["supportedPlatforms"].remove("mixer")

    complete.edit(drop_mixer)
    # validate alone does not know the history; with --warehouse it does.
    assert main(["manifest", "validate", str(complete.root)]) == 0
    capsys.readouterr()
    assert main(["manifest", "validate", str(complete.root), "--warehouse", str(wh), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert findings == [
        {
            "severity": "error",
            "pointer": "/supportedPlatforms",
            "rule": "platform-removed",
            "message": "a platform cannot be removed once the application is live: 'mixer' "
            "was supported by a recorded version of 'Stream Widgets'; add it back to "
            "supportedPlatforms",
        }
    ]

    # load records the broken version with its finding, and exits 1.
    assert load(complete.root, wh) == 1
    assert query(
        wh,
        "select m.version, m.error_count, f.severity, f.pointer, f.rule"
        " from app_manifests m join manifest_findings f using (content_hash)",
    ) == [("1.6.0", 1, "error", "/supportedPlatforms", "platform-removed")]
    assert counts(wh)["app_manifests"] == 3
    # A version recorded with errors never shipped: it does not lock its platforms in.
    assert recorded_platforms(wh, "Stream Widgets") == {"twitch", "youtube", "facebook", "mixer"}


def test_findings_follow_the_latest_load_of_the_same_content(
    complete: Bundle, wh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    goal = complete.root / "dist" / "widgets" / "goal.html"
    kept = goal.read_bytes()
    goal.unlink()
    assert load(complete.root, wh) == 1
    assert "/sources/1/file: 'dist/widgets/goal.html'" in capsys.readouterr().out
    assert query(wh, "select pointer, rule from manifest_findings") == [
        ("/sources/1/file", "file-exists")
    ]
    # Missing file restored, manifest bytes unchanged: same record, and its findings are cleared.
    goal.write_bytes(kept)
    assert load(complete.root, wh) == 0
    assert query(wh, "select count(*) from manifest_findings") == [(0,)]
    assert query(wh, "select error_count, warning_count from app_manifests") == [(0, 0)]
    columns = [r[0] for r in query(wh, "select column_name from (describe manifest_findings)")]
    assert columns[:6] == ["content_hash", "ordinal", "severity", "pointer", "rule", "message"]


def test_manifest_resources_in_a_pipeline_reads_history_from_it(complete: Bundle, wh: Path) -> None:
    """The way `devportal sync` records a configured manifest: resources run by its pipeline."""
    with warehouse_lock(wh):
        pipeline = open_pipeline(Target.of(wh))
        begin_writing(Target.of(wh))  # devportal writes a copy of the warehouse, published below
        # Fresh destination: no manifest tables yet, so no history and no error.
        pipeline.run(manifest_resources(complete.root, pipeline=pipeline))
        complete.edit(lambda d: d.update(version="2.0.0", supportedPlatforms=["twitch"]))
        pipeline.run(manifest_resources(complete.root, pipeline=pipeline))
        publish(Target.of(wh))
    rows = query(
        wh,
        "select m.version, f.rule, f.message from app_manifests m"
        " left join manifest_findings f using (content_hash) order by m.version, f.ordinal",
    )
    assert rows == [("1.4.0", None, None)] + [
        (
            "2.0.0",
            "platform-removed",
            "a platform cannot be removed once the application is live: "
            f"{platform!r} was supported by a recorded version of 'Stream Widgets'; "
            "add it back to supportedPlatforms",
        )
        for platform in ("facebook", "mixer", "youtube")
    ]


def test_load_finishes_a_pending_package_before_recording(complete: Bundle, wh: Path) -> None:
    """A run interrupted between normalize and load leaves a package behind; dlt would load only
    that package on the next run and drop the new data unless it is finished first."""
    assert load(complete.root, wh) == 0
    complete.edit(lambda d: d.update(version="1.5.0"))
    with warehouse_lock(wh):
        pipeline = open_pipeline(Target.of(wh))
        pipeline.extract(manifest_resources(complete.root))
        pipeline.normalize()
        assert pipeline.has_pending_data
    complete.edit(lambda d: d.update(version="1.6.0"))
    assert load(complete.root, wh) == 0
    assert query(wh, "select version from app_manifests order by version") == [
        ("1.4.0",),
        ("1.5.0",),
        ("1.6.0",),
    ]


def test_unusable_warehouse_path_is_one_line(
    complete: Bundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    assert load(complete.root, tmp_path / "a-file" / "warehouse.duckdb") == 2
    err = capsys.readouterr().err
    assert err.startswith("devportal: error: ") and err.count("\n") == 1
    assert "is a file, not a folder" in err
