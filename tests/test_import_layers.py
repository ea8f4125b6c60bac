"""No import cycles between the modules of the `devportal` package.

The graph is built from the source with `ast`, without importing anything: one node per module
under pipelines/devportal, one edge per `import devportal.x` or `from devportal.x import y`
anywhere in a module (at the top, inside functions, under `if TYPE_CHECKING:`), relative
imports resolved against the importing module. `from devportal.x import y` is an edge to the
module `devportal.x.y` when that is a module, else to `devportal.x`. Nothing is ignored: edges
from a package's `__init__` to its own submodules are kept (devportal.manifest re-exports from
its submodules and none of them imports a name from it, so they make no cycle). The implicit
edge from a submodule to its package's `__init__` (Python runs it first) is not drawn, as no
import statement names it.

A cycle found here is reported as the `graphlib.CycleError` cycle (`a -> b -> ... -> a`).
Cycles outside devportal.manifest that belong to other work in progress are listed in
KNOWN_EDGES and left out of the graph, edge by edge, so any new cycle still fails the test.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "pipelines"
PACKAGE = "devportal"

# (importer, imported): edges of cycles outside devportal.manifest, left out until fixed.
KNOWN_EDGES: frozenset[tuple[str, str]] = frozenset()


def module_names() -> dict[str, Path]:
    """Every module of the package: dotted name -> file (a package is its __init__.py)."""
    modules = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    is_package = path.name == "__init__.py"
    # The package a relative import is resolved against: the module itself for an __init__.
    base = module.split(".") if is_package else module.split(".")[:-1]
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield submodule if submodule in modules else target


def import_graph() -> dict[str, set[str]]:
    """Module -> the devportal modules it imports (only edges inside the package)."""
    modules = module_names()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges = set()
        for name in _imported(module, path, modules):
            # `import devportal.a.b` names a module; `from devportal.a import f` its parent.
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module and (module, name) not in KNOWN_EDGES:
                edges.add(name)
        graph[module] = edges
    return graph


def test_the_graph_sees_the_package() -> None:
    graph = import_graph()
    assert "devportal.manifest.validate" in graph
    assert "devportal.manifest.report" in graph["devportal.manifest.validate"]


def test_known_edges_still_exist() -> None:
    """An allow-listed edge that is gone must leave the list, so it cannot hide a new cycle."""
    modules = module_names()
    for importer, imported in KNOWN_EDGES:
        names = set()
        for name in _imported(importer, modules[importer], modules):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            names.add(name)
        assert imported in names, f"{importer} no longer imports {imported}: drop it"


def test_no_import_cycles() -> None:
    try:
        TopologicalSorter(import_graph()).prepare()
    except CycleError as err:
        cycle = err.args[1]
        raise AssertionError("import cycle: " + " -> ".join(cycle)) from None


def test_validation_layer_imports_no_recording_module() -> None:
    """The manifest's validation modules import neither the warehouse nor the recording side."""
    validation = {
        f"devportal.manifest.{name}"
        for name in ("reader", "schema", "rules", "report", "facts", "bundle", "images")
    } | {"devportal.manifest.validate"}
    allowed = validation | {"devportal.errors", "devportal.values"}  # the base layer
    graph = import_graph()
    for module in sorted(validation):
        assert graph[module] <= allowed, f"{module} imports {sorted(graph[module] - allowed)}"
        tree = ast.parse(module_names()[module].read_text("utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in ("dlt", "duckdb"), f"{module} imports {name}"


def test_the_layers_import_downwards() -> None:
    """errors < warehouse < pipeline < features < cli: the warehouse file knows no dlt pipeline,
    the pipeline (with duckdb_destination.py) and its load packages (packages.py) no feature, and only the CLI (and
    `python -m devportal`) imports the CLI."""
    graph = import_graph()
    assert graph["devportal.errors"] == set()
    assert graph["devportal.filelock"] <= {"devportal.errors"}
    warehouse = {
        m for m in graph if m == "devportal.warehouse" or m.startswith("devportal.warehouse.")
    }
    for module in sorted(warehouse):  # the package and each of its modules
        assert graph[module] <= {"devportal.errors", "devportal.filelock"} | warehouse, module
    # the HTTP settings are defined once, in the client's settings module (dlt-free)
    assert graph["devportal.client.settings"] <= {"devportal.errors", "devportal.api"}
    assert graph["devportal.config_sources"] == set()  # where dlt reads settings: asks dlt only
    config = {"devportal.errors", "devportal.client.settings", "devportal.config_sources"}
    assert graph["devportal.config"] <= config | {"devportal.alerts.settings", "devportal.api"}
    assert graph["devportal.target"] <= {"devportal.errors"}  # one decision of where, base layer
    allowed = {"devportal.errors", "devportal.duckdb_destination"} | warehouse
    allowed |= {"devportal.config", "devportal.target"}
    packages = allowed | {"devportal.pipeline"}
    assert graph["devportal.packages"] <= packages, sorted(graph["devportal.packages"] - packages)
    assert graph["devportal.pipeline"] <= allowed, sorted(graph["devportal.pipeline"] - allowed)
    cli = {m for m in graph if m == "devportal.cli" or m.startswith("devportal.cli.")}
    for module in sorted(set(graph) - cli - {"devportal.__main__"}):
        assert not graph[module] & cli, f"{module} imports {sorted(graph[module] & cli)}"


def test_the_cli_parser_imports_no_heavy_library() -> None:
    """Building every command's parser (what `devportal --help` does) loads neither dlt, DuckDB,
    pandas, pyarrow nor the sandbox server: the handlers import them."""
    script = (
        "import sys\n"
        "from devportal.cli import build_parser\n"
        "build_parser()\n"
        "heavy = ('dlt', 'duckdb', 'pandas', 'pyarrow', 'numpy', 'sqlglot', 'matplotlib',\n"
        "         'jsonschema', 'requests', 'devportal.sandbox', 'devportal.sync')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout


# -- packages: each reads as its module map says ---------------------------------------------

# Packages whose `__init__` docstring lists its modules in import order ("One job per module,
# imports running one way"): a line `    <module>  <what it owns>` per module.
MAPPED_PACKAGES = (
    "client",
    "models",
    "transform",
    "reading",
    "extras",
    "warehouse",
    "report",
    "charts",
)
MAP_LINE = re.compile(r"^    ([a-z_]+)\s{2,}\S")
MAX_LINES = 600  # issue 19: no module over 600 lines (the sandbox aside)


def module_map(package: str) -> list[str]:
    """The modules a package's docstring lists, in its order."""
    init = ROOT / PACKAGE / package / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text("utf-8"))) or ""
    return [m.group(1) for line in doc.splitlines() if (m := MAP_LINE.match(line))]


def test_each_package_imports_down_its_module_map() -> None:
    """Every module of a split package is on its docstring's map, the map names no module that
    is not there, and a module imports only the modules listed above it: the map a newcomer
    reads is the code's real shape."""
    graph = import_graph()
    for package in MAPPED_PACKAGES:
        prefix = f"{PACKAGE}.{package}."
        listed = module_map(package)
        present = sorted(m.removeprefix(prefix) for m in graph if m.startswith(prefix))
        assert sorted(listed) == present, f"{package}: map {listed} vs modules {present}"
        for i, name in enumerate(listed):
            inside = {m.removeprefix(prefix) for m in graph[prefix + name] if m.startswith(prefix)}
            above = set(listed[:i])
            assert inside <= above, f"{package}.{name} imports {sorted(inside - above)} from below"
            assert f"{PACKAGE}.{package}" not in graph[prefix + name], f"{package}.{name}"


def test_the_client_is_free_of_dlt_and_the_warehouse() -> None:
    """The HTTP client (and the settings it defines for everyone) imports neither dlt nor DuckDB
    nor anything of devportal above the base layer: the early start and the benchmark's floor
    build it before dlt is imported."""
    graph = import_graph()
    client = [m for m in graph if m == f"{PACKAGE}.client" or m.startswith(f"{PACKAGE}.client.")]
    base = {f"{PACKAGE}.errors", f"{PACKAGE}.values", f"{PACKAGE}.concurrency", f"{PACKAGE}.api"}
    for module in client:
        outside = {m for m in graph[module] if m not in client}
        assert outside <= base, f"{module} imports {sorted(outside - base)}"
        tree = ast.parse(module_names()[module].read_text("utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in ("dlt", "duckdb", "pyarrow"), (module, name)


def test_no_module_is_over_600_lines() -> None:
    """One job per module: none of the package's modules is over 600 lines (the sandbox, a
    separate server, aside)."""
    sandbox = ROOT / PACKAGE / "sandbox"
    long = {
        str(path.relative_to(ROOT)): n
        for path in (ROOT / PACKAGE).rglob("*.py")
        if sandbox not in path.parents and (n := len(path.read_text("utf-8").splitlines())) > 600
    }
    assert not long, long
