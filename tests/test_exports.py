"""Each package exports what other code uses, and nothing else (issue 34), as httpx's
`test_exported_members` holds its `__all__`.

A package's `__all__` is its surface: the names that other packages of devportal, the
notebooks (`notebooks/*.ipynb`, also written by `devportal init`) and the Python shown in the
docs take from it, by `from devportal.pkg import name` or as `pkg.name` after importing the
package. A name only a test uses is imported by that test from the module that defines it. The
graph is read from the source with `ast`, nothing is imported. `make lint` runs this file.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_ROOT = REPO / "pipelines"
PACKAGE = PACKAGE_ROOT / "devportal"


def exported() -> dict[str, list[str]]:
    """Package (dotted) -> its `__all__`, for every package that declares one."""
    found = {}
    for init in PACKAGE.rglob("__init__.py"):
        for node in ast.parse(init.read_text("utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                dotted = ".".join(init.relative_to(PACKAGE_ROOT).parts[:-1])
                found[dotted] = list(ast.literal_eval(node.value))
    return found


def _submodules(package: str) -> set[str]:
    folder = PACKAGE_ROOT.joinpath(*package.split("."))
    return {p.stem for p in folder.glob("*.py")} | {
        p.name for p in folder.iterdir() if (p / "__init__.py").is_file()
    }


def _modules_only(package: str, packages: dict[str, list[str]]) -> set[str]:
    """PACKAGE's submodules whose name the package does not also export (`models.build` is the
    function `models/__init__` re-exports, not the module `models/build.py`)."""
    return _submodules(package) - set(packages[package])


def _sources() -> list[tuple[str, str]]:
    """(who, Python text) of every user of the packages that counts: devportal's modules, the
    notebooks' code cells, the docs' Python blocks."""
    found = [
        (".".join(p.relative_to(PACKAGE_ROOT).with_suffix("").parts), p.read_text("utf-8"))
        for p in PACKAGE.rglob("*.py")
    ]
    for notebook in (REPO / "notebooks").glob("*.ipynb"):
        cells = json.loads(notebook.read_text("utf-8"))["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        lines = "\n".join(code).splitlines()  # IPython's magics (`%matplotlib`) are no Python
        found.append(("notebook", "\n".join(x for x in lines if not x.startswith(("%", "!")))))
    for doc in [*(REPO / "docs").glob("*.md"), REPO / "README.md"]:
        blocks = re.findall(r"```python\n(.*?)```", doc.read_text("utf-8"), re.S)
        found.append(("docs", "\n".join(blocks)))
    return found


def used(packages: dict[str, list[str]]) -> dict[str, set[str]]:
    """Package -> the names code outside it takes from it (its own submodules aside)."""
    uses: dict[str, set[str]] = {p: set() for p in packages}
    for who, text in _sources():
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            module = node.module
            if module in packages and not (who == module or who.startswith(module + ".")):
                uses[module] |= {a.name for a in node.names} - _modules_only(module, packages)
            for alias in node.names:  # `from devportal.x import pkg`, then `pkg.name`
                package = f"{module}.{alias.name}"
                if package not in packages or who == package or who.startswith(package + "."):
                    continue
                local = alias.asname or alias.name
                uses[package] |= {
                    n.attr
                    for n in ast.walk(tree)
                    if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name)
                    and n.value.id == local
                } - _modules_only(package, packages)
    return uses


def test_the_surfaces_are_found() -> None:
    packages = exported()
    assert {"devportal.http", "devportal.warehouse", "devportal.models"} <= set(packages)
    assert "frame" in used(packages)["devportal.reporting.charts"]  # the notebooks' use


def test_each_package_exports_what_other_code_uses_and_nothing_else() -> None:
    packages = exported()
    uses = used(packages)
    wrong = {}
    for package, names in sorted(packages.items()):
        extra, missing = sorted(set(names) - uses[package]), sorted(uses[package] - set(names))
        if extra or missing:
            wrong[package] = {
                "exported, used by no other code": extra,
                "used, not exported": missing,
            }
    assert not wrong, json.dumps(wrong, indent=1)


def test_no_module_imports_a_private_name_of_another() -> None:
    """`from devportal.x import _name` only inside the package that defines it (a test may
    reach the privates of the module it tests)."""
    reached = []
    for who, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("devportal"):
                reached += [
                    f"{who}: {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and a.name != "__version__"
                ]
    assert not reached, reached
