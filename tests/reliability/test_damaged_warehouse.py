"""Damage is named once, everywhere (issue 33): a synced warehouse file that a full disk or a
broken copy cut short, emptied or overwrote gives, from every command that opens it, one line
naming the user's file (never the writer's copy in the dlt folder), that it is damaged, and what
can help: a backup, or `devportal migrate` from another copy; never a traceback, never advice
about credentials or rebuilding the models, which cannot help. Real sandbox, real DuckDB files.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CliResult, sync_from

Cli = Callable[..., CliResult]
DEMO_MANIFEST = (
    Path(__file__).resolve().parents[2] / "pipelines/devportal/starter/demo_app/manifest.json"
)


def _cut(fraction: float) -> Callable[[bytes], bytes]:
    return lambda data: data[: int(len(data) * fraction)]


# how a file gets damaged: emptied (a full disk during a copy), cut short at its start, in the
# middle (a broken backup), its header overwritten
DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "emptied": lambda data: b"",
    "cut at 100 bytes": lambda data: data[:100],
    "cut to a third": _cut(1 / 3),
    # DuckDB's blocks are 256 KiB: a copy that stopped 40 KiB short (a full disk), every header
    # and most data still there
    "cut inside its last block": lambda data: data[: -(40 * 1024)],
    "header overwritten": lambda data: b"\0garbage" * 512 + data[4096:],
}


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse synced once (with its models) from a small sandbox: the good copy."""
    from devportal.sandbox import Sandbox

    warehouse = tmp_path_factory.mktemp("good") / "wh" / "warehouse.duckdb"
    with Sandbox(subscriptions=300, users=60, seed=33) as sb:
        sync_from(sb, warehouse, build_models=True)
    return warehouse


def _damaged(synced: Path, tmp_path: Path, how: str) -> Path:
    folder = tmp_path / "wh"
    shutil.copytree(synced.parent, folder)
    warehouse = folder / synced.name
    warehouse.write_bytes(DAMAGE[how](synced.read_bytes()))
    return warehouse


def _commands(warehouse: Path, sandbox: Any) -> dict[str, tuple[list[str], dict[str, str]]]:
    at = ["--warehouse", str(warehouse)]
    token = {"SOURCES__DEVPORTAL__ACCESS_TOKEN": sandbox.token}
    return {
        "status": (["status", *at], {}),
        "report": (["report", *at], {}),
        "report json": (["report", *at, "--format", "json"], {}),
        "digest": (["digest", "--no-post", *at], {}),
        "models": (["models", *at], {}),
        "manifest load": (["manifest", "load", str(DEMO_MANIFEST), *at], {}),
        "sync": (["sync", "--base-url", sandbox.base_url, *at, "--no-models"], token),
    }


@pytest.mark.parametrize("how", list(DAMAGE))
def test_every_command_names_the_damage_in_one_line(
    synced: Path, tmp_path: Path, devportal: Cli, how: str
) -> None:
    from devportal.sandbox import Sandbox

    warehouse = _damaged(synced, tmp_path, how)
    before = warehouse.read_bytes()
    with Sandbox(subscriptions=20, users=5, seed=1) as sb:
        for name, (argv, env) in _commands(warehouse, sb).items():
            result = devportal(*argv, env=env)
            said = result.err
            assert result.code != 0, (name, said)
            assert "Traceback" not in said, (name, said)
            lines = [line for line in said.splitlines() if line.startswith("devportal: error:")]
            assert len(lines) == 1, (name, said)
            line = lines[0]
            assert f"warehouse {warehouse} is damaged" in line, (name, line)
            assert "restore it from a backup" in line and "devportal migrate" in line, line
            for wrong in (".dlt/next", "credentials", "devportal models", "not a DuckDB database"):
                assert wrong not in line, (name, wrong, line)
            # nothing written over the damaged file (a backup may still be made of it)
            assert warehouse.read_bytes() == before, name
        # a file cut short is found from its header before any command acts (DuckDB itself
        # notices only a missing block a query reads: a sync would read the API and judge
        # it against what the cut file still showed)
        assert "is damaged" in devportal("status", "--warehouse", str(warehouse)).err


def test_a_good_copy_migrated_in_replaces_the_damaged_file(
    synced: Path, tmp_path: Path, devportal: Cli
) -> None:
    """What the line advises works: `devportal migrate --from-warehouse GOOD --warehouse
    DAMAGED --replace`, then `report` reads the figures again."""
    warehouse = _damaged(synced, tmp_path, "cut to a third")
    damaged = warehouse.read_bytes()
    good = tmp_path / "backup" / "warehouse.duckdb"
    good.parent.mkdir()
    shutil.copy2(synced, good)
    # without --replace the damaged file stays as it is (a backup may still be made of it)
    kept = devportal("migrate", "--from-warehouse", str(good), "--warehouse", str(warehouse))
    assert kept.code != 0 and "is damaged" in kept.err, kept.err
    assert warehouse.read_bytes() == damaged
    result = devportal(
        "migrate", "--from-warehouse", str(good), "--warehouse", str(warehouse), "--replace"
    )
    assert result.code == 0, result.err
    report = devportal("report", "--warehouse", str(warehouse), "--format", "json")
    assert report.code == 0, report.err
    assert '"usable_subscribers"' in report.out


def test_a_file_where_no_sync_wrote_is_not_called_damaged(tmp_path: Path, devportal: Cli) -> None:
    """A file that is no database where no sync ever wrote (no dlt folder beside it: another
    program's file, a wrong --warehouse) is "not a DuckDB database", not a damaged warehouse."""
    for content in (b"", b"name,amount\n1,2\n"):
        warehouse = tmp_path / "other" / "warehouse.duckdb"
        warehouse.parent.mkdir(exist_ok=True)
        warehouse.write_bytes(content)
        for argv in (["report"], ["status"], ["models"]):
            result = devportal(*argv, "--warehouse", str(warehouse))
            assert result.code != 0 and "Traceback" not in result.err
            assert "is not a DuckDB database" in result.err, result.err
            assert "damaged" not in result.err, result.err
