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

The layers: `docs/architecture.md`'s module map is the package's folder tree, every folder and
module in import order. The tests below read it and hold the code to it, with no exceptions:
the tree names every module there is and none that is not, and every import runs down it.
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
            if name and name != module:
                edges.add(name)
        graph[module] = edges
    return graph


def test_the_graph_sees_the_package() -> None:
    graph = import_graph()
    assert "devportal.manifest.validate" in graph
    assert "devportal.manifest.findings" in graph["devportal.manifest.validate"]


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
        for name in ("reader", "schema", "rules", "findings", "facts", "bundle", "images")
    } | {"devportal.manifest.validate"}
    allowed = validation | {"devportal.base.errors", "devportal.base.coercion"}  # the base layer
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


def test_the_cli_parser_imports_no_heavy_library() -> None:
    """Building every command's parser (what `devportal --help` does) loads neither dlt, DuckDB,
    pandas, pyarrow nor the sandbox server: the handlers import them."""
    script = (
        "import sys\n"
        "from devportal.cli import build_parser\n"
        "build_parser()\n"
        "heavy = ('dlt', 'duckdb', 'pandas', 'pyarrow', 'numpy', 'sqlglot', 'matplotlib',\n"
        "         'jsonschema', 'requests', 'devportal.sandbox', 'devportal.load.sync')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout


# -- the layers: docs/architecture.md's module map is the tree ---------------------------------

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
TREE_LINE = re.compile(r"^((?:  )*)([a-z_]+)(/|\.py)(?:\s{2,}\S.*)?$")
MAP_LINE = re.compile(r"^    ([a-z_]+)\s{2,}\S")  # a package docstring's map: `    module  owns`


def documented_tree() -> dict[str, list[str]]:
    """The module map of docs/architecture.md (the fenced block under "## Module map"): each
    package (dotted) -> its children (dotted), in the order the map lists them."""
    text = DOC.read_text("utf-8")
    block = text.split("## Module map", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    children: dict[str, list[str]] = {PACKAGE: []}
    parents = [PACKAGE]
    for line in block.splitlines():
        found = TREE_LINE.match(line)
        assert found, f"docs/architecture.md: not a module map line: {line!r}"
        depth = len(found.group(1)) // 2
        assert depth < len(parents), f"docs/architecture.md: indented too far: {line!r}"
        del parents[depth + 1 :]
        name = f"{parents[depth]}.{found.group(2)}"
        children[parents[depth]].append(name)
        if found.group(3) == "/":
            children[name] = []
            parents.append(name)
    return children


def _position(tree: dict[str, list[str]], module: str) -> list[int]:
    """Where MODULE sits in the tree: its index among its package's children, at each depth."""
    parts = module.split(".")
    return [tree[".".join(parts[:i])].index(".".join(parts[: i + 1])) for i in range(1, len(parts))]


def test_the_module_map_is_the_folder_tree() -> None:
    """docs/architecture.md's map names every module and package there is, and nothing else."""
    tree = documented_tree()
    listed = {child for kids in tree.values() for child in kids}
    present = set(module_names()) - {PACKAGE}
    assert sorted(listed - present) == [], "the map names modules that are not there"
    assert sorted(present - listed) == [], "modules missing from docs/architecture.md's map"
    top = [c for c in tree[PACKAGE] if c in tree]  # the layers: folders only
    assert len(tree[PACKAGE]) <= 15, f"{len(tree[PACKAGE])} entries at the top: {top}"


def test_every_import_runs_down_the_tree() -> None:
    """A module imports only what the map lists before it: where the importer and the imported
    part ways in the tree, the imported one's branch comes first. A package's `__init__` may
    import its own modules (what it re-exports); no module imports a package it sits in (the
    root aside, which holds only `__version__`)."""
    tree, graph = documented_tree(), import_graph()
    upward = []
    for module, imported in graph.items():
        if module == PACKAGE:
            continue
        for other in imported:
            if other == PACKAGE or other.startswith(module + "."):
                continue  # the root, or a package's own module
            if module.startswith(other + "."):
                upward.append(f"{module} imports its own package {other}")
                continue
            mine, theirs = _position(tree, module), _position(tree, other)
            depth = next(i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b)
            if theirs[depth] > mine[depth]:
                upward.append(f"{module} imports {other}, listed after it")
    assert not upward, "\n".join(sorted(upward))


def module_map(package: str) -> list[str]:
    """The modules a package's docstring lists, in its order (none when it lists none)."""
    init = ROOT / PACKAGE.replace(".", "/") / package.replace(".", "/") / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text("utf-8"))) or ""
    return [m.group(1) for line in doc.splitlines() if (m := MAP_LINE.match(line))]


def test_each_package_docstring_lists_its_modules_as_the_map_does() -> None:
    """A package whose `__init__` docstring lists its modules (`    name  what it owns`) lists
    all of them, in the map's order: the docstring a reader of the code sees is the map."""
    tree = documented_tree()
    mapped = 0
    for package, children in tree.items():
        if package == PACKAGE:
            continue
        listed = module_map(package.removeprefix(PACKAGE + "."))
        if listed:
            mapped += 1
            assert listed == [c.rsplit(".", 1)[1] for c in children], package
    assert mapped >= 10  # the maps are read: a change to MAP_LINE cannot silence this test


def test_the_client_is_free_of_dlt_and_the_warehouse() -> None:
    """The HTTP client (`http/`) and its settings (`settings/http.py`) import neither dlt nor
    DuckDB nor anything of devportal but the base layer: the early start and the benchmark's
    floor build it before dlt is imported."""
    graph = import_graph()
    client = [m for m in graph if m == f"{PACKAGE}.http" or m.startswith(f"{PACKAGE}.http.")]
    client.append(f"{PACKAGE}.settings.http")
    base = {m for m in graph if m.startswith(f"{PACKAGE}.base.")}
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


WHY = re.compile(r"#.*\b(deferred|startup|cycle)\b", re.I)


def test_an_import_inside_a_function_says_why() -> None:
    """An import inside a function hides a dependency from the top of its module: it is there
    only for a measured startup cost (dlt, DuckDB, pandas, matplotlib, the sandbox server...;
    a command's handler imports what it runs so the parser stays light), and a comment says so,
    on the import, above it, or above the run of imports it belongs to."""
    unexplained = []
    for module, path in module_names().items():
        lines = path.read_text("utf-8").splitlines()
        for function in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            said = False  # the run of imports this one belongs to has its why
            last = -1
            for node in sorted(
                (n for n in ast.walk(function) if isinstance(n, ast.Import | ast.ImportFrom)),
                key=lambda n: n.lineno,
            ):
                own = [*lines[node.lineno - 1 : node.end_lineno], lines[node.lineno - 2]]
                between = lines[last : node.lineno - 1]  # only blank lines: the same run
                said = any(WHY.search(x) for x in own) or (
                    said and not any(map(str.strip, between))
                )
                last = node.end_lineno or node.lineno
                if not said:
                    unexplained.append(f"{module}:{node.lineno}")
    assert not unexplained, unexplained
