"""Rules of style, not of behaviour: `make lint` checks them (marker `lint`), `make test` does
not. Behaviour is what the rest of tests/ holds; these keep the code readable."""

from __future__ import annotations

from pathlib import Path

import pytest

from devportal.models.project import load_models

pytestmark = pytest.mark.lint

PACKAGE = Path(__file__).resolve().parents[1] / "pipelines" / "devportal"
MAX_LINES = 600  # issue 19: no module over 600 lines (the sandbox, a separate server, aside)


def test_no_module_is_over_600_lines() -> None:
    """One job per module."""
    sandbox = PACKAGE / "sandbox"
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in PACKAGE.rglob("*.py")
        if sandbox not in path.parents
        and (n := len(path.read_text("utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


def test_long_models_end_in_a_final_cte() -> None:
    """A long model reads top to bottom and ends in `final`, then `select * from final`, then
    its `order by`."""
    for model in load_models():
        lines = model.sql.splitlines()
        if model.layer == "staging" or (len(lines) <= 60 and model.sql.count(" as (\n") < 2):
            continue
        assert "\nfinal as (\n" in model.sql, model.relative_path
        closing = model.sql[model.sql.rindex("\nselect * from final") :].strip().splitlines()
        assert closing[0] == "select * from final", model.relative_path
        assert all(line.startswith("order by ") for line in closing[1:]), model.relative_path
