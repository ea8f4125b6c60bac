"""Hostile inputs to `devportal report | models | manifest`, run through the real CLI entry.

Every expected failure is one line, `devportal: error: <cause and fix>`, on stderr with a
non-zero exit code and no traceback: a warehouse path holding a text file, an SQLite database,
an empty or damaged file, a path under a regular file; a warehouse another process holds; and
manifests whose fields have any JSON type (the schema reports them, the rules skip them).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devportal import warehouse as wh
from tests.helpers import held_open_for_writing
from tests.hostile.conftest import CliResult
from tests.manifest.manifest_helpers import FIXTURES, set_at

Cli = Callable[..., CliResult]

WAREHOUSE_COMMANDS = ("report", "models")


def assert_one_line_error(result: CliResult) -> str:
    """The CLI failed with exactly one `devportal: error:` line; returns that line."""
    assert result.code != 0
    assert "Traceback" not in result.err
    assert result.err.startswith("devportal: error: "), result.err
    assert result.err.count("\n") == 1, result.err
    return result.err


def make_duckdb(path: Path) -> Path:
    """A real, valid DuckDB file (no devportal tables), its connection closed again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(path)) as con:
        con.execute("create table t as select 1 as x")
    return path


def make_sqlite(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("create table subscriptions (id integer primary key, status text)")
    con.execute("insert into subscriptions values (1, 'active')")
    con.commit()
    con.close()
    return path


# -- not a DuckDB database ---------------------------------------------------------------------


@pytest.mark.parametrize("command", WAREHOUSE_COMMANDS)
@pytest.mark.parametrize("content", [b"hello, I am a text file\n", b"", b"\x00\x01\x02" * 4000])
def test_a_file_that_is_not_duckdb_is_named_as_such(
    devportal: Cli, tmp_path: Path, command: str, content: bytes
) -> None:
    warehouse = tmp_path / "warehouse.duckdb"
    warehouse.write_bytes(content)
    err = assert_one_line_error(devportal(command, "--warehouse", str(warehouse)))
    assert "not a DuckDB database" in err
    assert str(warehouse) in err
    assert "busy" not in err and "wait for" not in err  # no lock message for a wrong file
    assert warehouse.read_bytes() == content  # left as it was


@pytest.mark.parametrize("command", WAREHOUSE_COMMANDS)
def test_sqlite_warehouse_is_refused_without_fetching_an_extension(
    devportal: Cli, tmp_path: Path, command: str
) -> None:
    warehouse = make_sqlite(tmp_path / "warehouse.duckdb")
    before = warehouse.read_bytes()
    err = assert_one_line_error(devportal(command, "--warehouse", str(warehouse)))
    assert "not a DuckDB database" in err
    assert str(warehouse) in err
    # DuckDB's own messages when it tries the network for sqlite_scanner
    assert "download" not in err.lower() and "http" not in err.lower()
    assert "busy" not in err and "wait for" not in err
    assert warehouse.read_bytes() == before


def test_duckdb_itself_fetches_nothing_for_sqlite_with_our_settings(tmp_path: Path) -> None:
    """Past the header sniff: DuckDB given the SQLite file with NO_EXTENSION_AUTOLOAD neither downloads
    nor loads the sqlite extension (an empty extension folder proves no download happened), and
    its refusal is classified as "not a DuckDB database", not as a lock."""
    warehouse = make_sqlite(tmp_path / "lite.duckdb")
    extensions = tmp_path / "extensions"
    extensions.mkdir()
    config = {**wh.NO_EXTENSION_AUTOLOAD, "extension_directory": str(extensions)}
    with pytest.raises(duckdb.Error) as caught:
        duckdb.connect(str(warehouse), read_only=True, config=config)
    assert "download" not in str(caught.value).lower()
    assert list(extensions.rglob("*")) == []
    message = str(wh.open_error(warehouse, caught.value))
    assert "not a DuckDB database" in message and "busy" not in message


def test_every_duckdb_connection_disables_extension_autoload(
    devportal: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = make_duckdb(tmp_path / "warehouse.duckdb")
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "complete", bundle, symlinks=True)
    calls: list[dict[str, Any]] = []
    real_connect = duckdb.connect

    def spy(database: str = ":memory:", *args: Any, **kwargs: Any) -> Any:
        calls.append({"database": database, "config": kwargs.get("config")})
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", spy)
    runs = [
        ("report", "--warehouse", str(warehouse)),
        ("models", "--warehouse", str(warehouse)),
        ("manifest", "validate", str(bundle), "--warehouse", str(warehouse)),
    ]
    for argv in runs:
        calls.clear()
        result = devportal(*argv)
        assert "Traceback" not in result.err
        assert calls, f"{argv[0]} opened no DuckDB connection"
        for call in calls:
            assert call["config"] is not None, (argv, call)
            assert call["config"]["autoload_known_extensions"] is False
            assert call["config"]["autoinstall_known_extensions"] is False


def test_extension_settings_exist_in_installed_duckdb() -> None:
    with duckdb.connect(config=wh.NO_EXTENSION_AUTOLOAD) as con:
        rows = dict(
            con.execute(
                "select name, value from duckdb_settings() where name in "
                "('autoload_known_extensions', 'autoinstall_known_extensions')"
            ).fetchall()
        )
    assert rows == {"autoload_known_extensions": "false", "autoinstall_known_extensions": "false"}


# -- missing, under a file, odd paths ----------------------------------------------------------


@pytest.mark.parametrize("command", WAREHOUSE_COMMANDS)
def test_missing_warehouse_is_one_line(devportal: Cli, tmp_path: Path, command: str) -> None:
    warehouse = tmp_path / "nowhere" / "warehouse.duckdb"
    err = assert_one_line_error(devportal(command, "--warehouse", str(warehouse)))
    assert f"no warehouse at {warehouse}" in err and "devportal sync" in err
    assert not warehouse.parent.exists()  # nothing created on the way


@pytest.mark.parametrize("command", WAREHOUSE_COMMANDS)
@pytest.mark.parametrize("below", ["w.duckdb", "sub/deeper/w.duckdb"])
def test_warehouse_under_a_regular_file_is_one_line(
    devportal: Cli, tmp_path: Path, command: str, below: str
) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file\n")
    err = assert_one_line_error(devportal(command, "--warehouse", str(blocker / below)))
    assert str(blocker) in err and "not a folder" in err
    assert blocker.read_text() == "a regular file\n"


def test_manifest_validate_with_warehouse_under_a_regular_file(
    devportal: Cli, tmp_path: Path
) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "complete", bundle, symlinks=True)
    result = devportal(
        "manifest", "validate", str(bundle), "--warehouse", str(blocker / "w.duckdb")
    )
    err = assert_one_line_error(result)
    assert "not a folder" in err


@pytest.mark.parametrize("command", WAREHOUSE_COMMANDS)
def test_unusable_path_names_are_one_line(devportal: Cli, tmp_path: Path, command: str) -> None:
    loop_a, loop_b = tmp_path / "loop-a", tmp_path / "loop-b"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    for warehouse in (
        str(loop_a / "w.duckdb"),
        str(tmp_path / ("x" * 300 + ".duckdb")),  # over NAME_MAX
        str(tmp_path / "new\nline.duckdb"),  # must not break the one line
    ):
        assert_one_line_error(devportal(command, "--warehouse", warehouse))


def test_manifest_validate_with_sqlite_warehouse(devportal: Cli, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "complete", bundle, symlinks=True)
    warehouse = make_sqlite(tmp_path / "warehouse.duckdb")
    err = assert_one_line_error(
        devportal("manifest", "validate", str(bundle), "--warehouse", str(warehouse))
    )
    assert "not a DuckDB database" in err and "busy" not in err


# -- damaged, busy -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", WAREHOUSE_COMMANDS)
def test_truncated_duckdb_file_is_damaged_not_busy(
    devportal: Cli, tmp_path: Path, command: str
) -> None:
    good = make_duckdb(tmp_path / "good.duckdb")
    warehouse = tmp_path / "warehouse.duckdb"
    warehouse.write_bytes(good.read_bytes()[:5000])  # the header survives, the blocks do not
    err = assert_one_line_error(devportal(command, "--warehouse", str(warehouse)))
    assert "damaged" in err and str(warehouse) in err
    assert "busy" not in err


@pytest.fixture
def held_warehouse(tmp_path: Path) -> Iterator[Path]:
    """A real DuckDB warehouse another process has open for writing (DuckDB's file lock)."""
    warehouse = make_duckdb(tmp_path / "warehouse.duckdb")
    with held_open_for_writing(warehouse):
        yield warehouse


@pytest.mark.parametrize("command", WAREHOUSE_COMMANDS)
def test_a_program_holding_it_for_writing_is_named(
    devportal: Cli, held_warehouse: Path, command: str
) -> None:
    """Another program (not devportal: a `duckdb` shell, a GUI) has the file open for writing:
    exit 4, a failure someone must fix, not exit 3 (another devportal run, harmless)."""
    result = devportal(command, "--warehouse", str(held_warehouse))
    err = assert_one_line_error(result)
    assert "open for writing" in err and "not a devportal run" in err and str(held_warehouse) in err
    assert "not a DuckDB database" not in err
    assert result.code == 4


# -- manifests with values of any JSON type ----------------------------------------------------

WRONG_TYPES: list[tuple[str, Any]] = [
    ("/pages/0/slot", ["top_nav"]),
    ("/pages/0/slot", {"name": "top_nav"}),
    ("/pages/1/slot", 42),
    ("/pages/1/slot", None),
    ("/pages/2/slot", []),
    ("/sources/0/id", ["alert-box"]),
    ("/sources/1/id", {"id": "goal-bar"}),
    ("/supportedPlatforms/0", ["twitch"]),
    ("/supportedPlatforms/1", {"youtube": True}),
    ("/permissions", {"slobs.streaming": True}),
    ("/permissions/0", ["slobs.scenes-sources"]),
    ("/authorizationUrls/0", {"url": "https://example.com"}),
    ("/mediaDomains/0", ["cdn.example.com"]),
    ("/sources/0/type", ["browser_source"]),
    ("/sources/0/initialSize", ["relative"]),
    ("/pages/0/popOutSize/width", {"px": 800}),
    ("/icon", ["images/icon.png"]),
    ("/buildPath", {"dir": "dist"}),
    ("/name", ["Stream Widgets"]),
]


def _bundle_with(tmp_path: Path, ptr: str, value: Any) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "complete", bundle, symlinks=True)
    manifest = bundle / "manifest.json"
    doc = json.loads(manifest.read_text("utf-8"))
    set_at(doc, ptr, value)
    manifest.write_text(json.dumps(doc, indent=2), "utf-8")
    return bundle


@pytest.mark.parametrize(("ptr", "value"), WRONG_TYPES, ids=lambda v: json.dumps(v)[:30])
def test_validate_reports_wrong_types_as_findings(
    devportal: Cli, tmp_path: Path, ptr: str, value: Any
) -> None:
    bundle = _bundle_with(tmp_path, ptr, value)
    result = devportal("manifest", "validate", "--json", str(bundle))
    assert result.code == 1, result.err
    assert "Traceback" not in result.err
    findings = json.loads(result.out)
    errors = [f for f in findings if f["severity"] == "error"]
    assert any(f["pointer"] == ptr and f["rule"].startswith("schema.") for f in errors), findings

    text = devportal("manifest", "validate", str(bundle))
    assert text.code == 1 and "Traceback" not in text.err
    assert f"  {ptr}: " in text.out and text.out.rstrip().splitlines()[-1].startswith("invalid:")


def test_validate_reports_every_wrong_type_at_once(devportal: Cli, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "complete", bundle, symlinks=True)
    manifest = bundle / "manifest.json"
    doc = json.loads(manifest.read_text("utf-8"))
    for ptr, value in WRONG_TYPES:
        if ptr != "/permissions":  # keep the array so /permissions/0 exists
            set_at(doc, ptr, value)
    manifest.write_text(json.dumps(doc), "utf-8")
    result = devportal("manifest", "validate", "--json", str(bundle))
    assert result.code == 1 and "Traceback" not in result.err
    pointers = {f["pointer"] for f in json.loads(result.out) if f["severity"] == "error"}
    assert {p for p, _ in WRONG_TYPES if p != "/permissions"} <= pointers


@pytest.mark.parametrize(
    ("ptr", "value"),
    [("/pages/0/slot", ["top_nav"]), ("/sources/0/id", {"id": 1}), ("/permissions", {"a": 1})],
)
def test_load_records_a_manifest_with_wrong_types(
    devportal: Cli, tmp_path: Path, ptr: str, value: Any
) -> None:
    bundle = _bundle_with(tmp_path, ptr, value)
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    result = devportal("manifest", "load", str(bundle), "--warehouse", str(warehouse))
    assert result.code == 1, result.err
    assert "Traceback" not in result.err
    assert f"  {ptr}: " in result.out and "recorded Stream Widgets 1.4.0 in" in result.out
    with duckdb.connect(str(warehouse), read_only=True) as con:
        con.execute("use warehouse.devportal")
        (error_count,) = con.execute("select error_count from app_manifests").fetchone() or (0,)
        pointers = {r[0] for r in con.execute("select pointer from manifest_findings").fetchall()}
    assert error_count >= 1
    assert ptr in pointers
