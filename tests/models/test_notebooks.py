"""Every notebook runs headless (nbclient) against a warehouse the tests built, on DuckDB and on
PostgreSQL; as committed, it reads the warehouse of `DEVPORTAL_WAREHOUSE` (what `make notebook`
sets), here one real sync's, and says in one line, not a traceback, when there is no warehouse
yet. The committed notebooks carry no outputs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from devportal.reporting.notebook import DESTINATION_ENV, WAREHOUSE_ENV
from tests.helpers import OnEngine, run_devportal
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


@pytest.fixture(scope="module")
def one_sync(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A warehouse made as a user makes one: one `devportal sync` (a process of its own, models
    built) from the sandbox, under another name than the demo's."""
    from devportal.sandbox import Sandbox

    warehouse = tmp_path_factory.mktemp("one-sync") / "warehouse" / "warehouse.duckdb"
    with Sandbox(subscriptions=300, users=40, seed=5, start="2026-11-01 00:00:00") as sb:
        result = run_devportal(
            "sync", "--base-url", sb.base_url, "--warehouse", str(warehouse),
            env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}, timeout=300,
        )  # fmt: skip
    assert result.code == 0, result.err
    yield warehouse


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_reads_the_warehouse_of_the_environment(
    path: Path, one_sync: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As committed (no parameter set), after one real sync: DEVPORTAL_WAREHOUSE names it (as
    `make notebook` does), the notebook reads it and draws every chart section."""
    monkeypatch.setenv(WAREHOUSE_ENV, str(one_sync))
    monkeypatch.delenv(DESTINATION_ENV, raising=False)
    notebook = nbformat.read(path, as_version=4)
    images = execute(notebook, path)
    assert f"reading {one_sync}\n" in printed(notebook)
    assert len(images) >= CHARTS[path.name]


def errors(notebook: nbformat.NotebookNode) -> list[tuple[int, Any]]:
    """(cell index, output) of every error output."""
    return [
        (i, output)
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.get("output_type") == "error"
    ]


def fails_in_one_line(notebook: nbformat.NotebookNode, path: Path) -> str:
    """Run NOTEBOOK from PATH's folder, which must stop at its first code cell after the
    parameters with one line and no traceback; that line."""
    with pytest.raises(CellExecutionError):
        execute(notebook, path)
    ((index, error),) = errors(notebook)
    assert error["ename"] == "DevportalError"
    (line,) = error["traceback"]  # one line: no traceback
    assert "Traceback" not in line and "\n" not in line
    ran = [i for i, c in enumerate(notebook.cells) if c.get("execution_count") is not None]
    assert ran[-1] == index  # nothing after it ran ("Run All" stops there)
    return line


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_without_a_warehouse_says_so_in_one_line(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook written by `devportal init` into a folder where nothing was synced yet: one
    line saying there is no warehouse and what to run."""
    monkeypatch.delenv(WAREHOUSE_ENV, raising=False)
    monkeypatch.delenv(DESTINATION_ENV, raising=False)
    copy = tmp_path / "project" / "notebooks" / path.name
    copy.parent.mkdir(parents=True)
    shutil.copyfile(path, copy)
    line = fails_in_one_line(nbformat.read(copy, as_version=4), copy)
    assert line.startswith("devportal: error: no warehouse yet:"), line
    assert "warehouse/warehouse.duckdb" in line and "devportal sync" in line
    assert str(tmp_path / "project") in line


def test_a_missing_warehouse_named_in_the_environment_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make notebook` before any sync or demo: DEVPORTAL_WAREHOUSE names a file not there."""
    missing = tmp_path / "warehouse" / "warehouse.duckdb"
    monkeypatch.setenv(WAREHOUSE_ENV, str(missing))
    monkeypatch.delenv(DESTINATION_ENV, raising=False)
    path = NOTEBOOKS[0]
    line = fails_in_one_line(nbformat.read(path, as_version=4), path)
    assert line.startswith(f"devportal: error: no warehouse at {missing} ({WAREHOUSE_ENV})"), line
    assert "devportal sync" in line


def test_a_warehouse_without_models_is_one_line(
    one_sync: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warehouse synced with --no-models: one line naming the command that builds them."""
    raw = tmp_path / "raw.duckdb"
    import duckdb

    shutil.copyfile(one_sync, raw)
    con = duckdb.connect(str(raw))
    con.execute("drop schema analytics cascade")
    con.close()
    monkeypatch.setenv(WAREHOUSE_ENV, str(raw))
    path = NOTEBOOKS[-1]
    line = fails_in_one_line(nbformat.read(path, as_version=4), path)
    assert line == (
        f"devportal: error: warehouse {raw} has no analytics models yet: run "
        f"`devportal models --warehouse {raw}`"
    )
