"""Every notebook runs headless (nbclient) against a warehouse the tests built, and the
committed notebooks carry no outputs."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_there_is_the_subscriptions_notebook() -> None:
    assert "subscriptions.ipynb" in {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_has_no_outputs(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], cell["source"]
            assert cell["execution_count"] is None, cell["source"]


def with_parameters(notebook: nbformat.NotebookNode, **values: str) -> None:
    """Replace the cell tagged `parameters` (papermill's convention) with VALUES."""
    cells = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, "a notebook needs exactly one cell tagged 'parameters'"
    cells[0].source = "\n".join(f"{name} = {value!r}" for name, value in values.items())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_headless(path: Path, story_warehouse: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    with_parameters(notebook, WAREHOUSE=str(story_warehouse))
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    images = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if "image/png" in output.get("data", {})
    ]
    assert len(images) >= 4  # usable over time, monthly churn, expiry calendar, platforms
