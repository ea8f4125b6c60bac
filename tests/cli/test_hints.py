"""Pip users are never told to run make targets: the demo's closing hint names `devportal`
commands, and `make` targets only when make ran it from this checkout (make exports MAKELEVEL
to what it runs; the Makefile in the folder must have the target)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devportal.cli import options
from tests.helpers import REPO

DEMO = ["--subscriptions", "300", "--users", "30", "--syncs", "2", "--advance-days", "10"]


def test_a_pip_user_is_told_devportal_commands(
    devportal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MAKELEVEL", raising=False)
    warehouse = tmp_path / "demo.duckdb"
    done = devportal("demo", "--warehouse", str(warehouse), *DEMO)
    assert done.code == 0, done.err
    last = done.out.splitlines()[-1]
    assert last.startswith(f"next: devportal report --warehouse {warehouse} --html report.html")
    assert "make " not in done.out + done.err


def test_under_make_from_the_checkout_the_hint_names_make(
    devportal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("MAKELEVEL", "1")
    warehouse = tmp_path / "demo.duckdb"
    done = devportal("demo", "--warehouse", str(warehouse), *DEMO, "--quiet")
    assert done.code == 0, done.err
    # --quiet: the report alone, no narration and no hint
    assert done.out.startswith("Subscriptions as of ") and "next:" not in done.out
    done = devportal("demo", "--warehouse", str(warehouse), *DEMO)
    assert done.out.splitlines()[-1].startswith(f"next: make report WAREHOUSE={warehouse} ")


def test_make_running_another_makefile_gets_devportal_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's own Makefile calling devportal: its folder has no `report:` target of ours."""
    (tmp_path / "Makefile").write_text("sync:\n\tdevportal sync\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MAKELEVEL", "1")
    assert not options.under_make("report")
    (tmp_path / "Makefile").write_text("report:\n\tdevportal report\n", encoding="utf-8")
    assert options.under_make("report")
    monkeypatch.delenv("MAKELEVEL")
    assert not options.under_make("report")
