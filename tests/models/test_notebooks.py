"""Every notebook runs headless (nbclient) against a warehouse the tests built, on DuckDB and on
PostgreSQL, and the committed notebooks carry no outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tests.helpers import OnEngine
from tests.models.conftest import build_story

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))

# the charts each notebook shows, at least
CHARTS = {
    # usable over time, monthly churn, expiry calendar, platforms
    "subscriptions.ipynb": 4,
    # cohort heat map, survival curve, renewals by period, churn by platform, reactivations
    "retention.ipynb": 5,
}


def test_there_are_the_notebooks() -> None:
    assert {p.name for p in NOTEBOOKS} == set(CHARTS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_has_no_outputs(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], cell["source"]
            assert cell["execution_count"] is None, cell["source"]


def with_parameters(notebook: nbformat.NotebookNode, **values: Any) -> None:
    """Set VALUES in a cell right after the one tagged `parameters`, as papermill does: the
    notebook's own defaults run first, these override them."""
    index = [i for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(index) == 1, "a notebook needs exactly one cell tagged 'parameters'"
    source = "\n".join(f"{name} = {value!r}" for name, value in values.items())
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    notebook.cells.insert(index[0] + 1, cell)


def execute(notebook: nbformat.NotebookNode, path: Path) -> list[Any]:
    """Run NOTEBOOK (from PATH's folder, as Jupyter does); the PNG images it showed."""
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    return [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if "image/png" in output.get("data", {})
    ]


def printed(notebook: nbformat.NotebookNode) -> str:
    return "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.get("output_type") == "stream"
    )


@pytest.fixture
def story_on(engine: OnEngine, request: pytest.FixtureRequest) -> OnEngine:
    """The known-answer story on the engine: DuckDB's, the session's story warehouse;
    PostgreSQL's, synced, recorded and built in the engine's fresh database."""
    if engine.destination is None:
        return OnEngine("duckdb", request.getfixturevalue("story_warehouse"))
    build_story(engine.warehouse, destination=engine.destination)
    return engine


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_headless(
    path: Path, story_on: OnEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On DuckDB the warehouse is the notebook's parameter (set as papermill does); on
    PostgreSQL DEVPORTAL_DESTINATION=postgres in the environment (the kernel inherits it) is all
    it takes: the notebook's own parameter cell reads it (in a New York session: the notebook
    reads UTC all the same)."""
    notebook = nbformat.read(path, as_version=4)
    if story_on.destination is None:
        with_parameters(notebook, WAREHOUSE=str(story_on.warehouse), DESTINATION=None)
        reading = f"reading {story_on.warehouse}"
    else:
        monkeypatch.setenv("DEVPORTAL_DESTINATION", story_on.destination)
        monkeypatch.setenv("PGTZ", "America/New_York")
        reading = "reading PostgreSQL"
    images = execute(notebook, path)
    assert len(images) >= CHARTS[path.name]
    assert reading in printed(notebook)
