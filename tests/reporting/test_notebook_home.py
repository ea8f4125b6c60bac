"""Which warehouse a notebook reads when it names none: the configured home
(`warehouse_destination`), as every command reads it (issue 35)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devportal.reporting.notebook import DESTINATION_ENV, WAREHOUSE_ENV, locate

HOME = "SOURCES__DEVPORTAL__WAREHOUSE_DESTINATION"


@pytest.fixture(autouse=True)
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No notebook parameter or environment variable, run from an empty folder."""
    for name in (WAREHOUSE_ENV, DESTINATION_ENV, HOME):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_a_notebook_reads_the_configured_postgres_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOME, "postgres")
    target = locate()
    assert target.is_postgres and target.engine == "postgres"


def test_a_named_warehouse_file_wins_over_the_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(HOME, "postgres")
    file = tmp_path / "w.duckdb"
    file.write_bytes(b"")  # locate only asks whether it is there
    assert locate(str(file)).is_file
    monkeypatch.setenv(WAREHOUSE_ENV, str(file))
    assert locate().is_file
    assert locate(destination="postgres").is_postgres  # DESTINATION names it outright


def test_without_a_home_and_a_warehouse_the_line_says_what_to_run() -> None:
    with pytest.raises(Exception, match="no warehouse yet"):
        locate()
