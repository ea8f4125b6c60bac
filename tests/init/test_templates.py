"""`devportal init`'s files have one source each: the package's templates are links to this
checkout's `.dlt/config.toml`, `.dlt/secrets.toml.example` and `notebooks/` (as `sql/` and the
demo app are), so the packaged copy cannot drift; a wheel copies what they point at
(tests/packaging/test_wheel.py runs `devportal init` from one)."""

from __future__ import annotations

from pathlib import Path

from devportal.starter.init import planned, templates

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "pipelines" / "devportal"
# packaged template -> the checkout's file it is
SOURCES = {
    "starter/templates/config.toml": ".dlt/config.toml",
    "starter/templates/secrets.toml": ".dlt/secrets.toml.example",
    "starter/templates/notebooks": "notebooks",
}


def test_each_template_is_a_link_to_the_checkouts_file() -> None:
    for packaged, source in SOURCES.items():
        link = PACKAGE / packaged
        assert link.is_symlink(), f"{packaged} must be a link to {source} (one source), not a copy"
        assert link.resolve() == (REPO / source).resolve(), f"{packaged} -> {link.resolve()}"


def test_init_writes_the_checkouts_files_byte_for_byte() -> None:
    """What `init` reads through importlib.resources is what the checkout has, every notebook
    included and nothing more."""
    expected = {
        ".dlt/config.toml": REPO / ".dlt" / "config.toml",
        ".dlt/secrets.toml": REPO / ".dlt" / "secrets.toml.example",
        **{f"notebooks/{p.name}": p for p in (REPO / "notebooks").glob("*.ipynb")},
    }
    shipped = {path: template.read_bytes() for path, template, _mode in planned()}
    assert sorted(shipped) == sorted(expected)
    for path, source in expected.items():
        assert shipped[path] == source.read_bytes(), path
    assert templates().is_dir()


def test_the_wheel_ships_the_templates() -> None:
    """pyproject's package data names the templates (a wheel built without them would install
    an `init` with nothing to write)."""
    import tomllib

    data = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["devportal"]
    assert {"starter/templates/*.toml", "starter/templates/notebooks/*.ipynb"} <= set(patterns)
