"""Where dlt reads devportal's settings from, asked of dlt itself, and what was written there.

dlt 1.31 reads, in this order: the environment (`SECTION__KEY`, upper case), then
`secrets.toml` and `config.toml` in the project's settings folder, `.dlt/` in the current
folder (`DLT_PROJECT_DIR` moves it), then the same two files in dlt's global folder (`~/.dlt`,
`/var/dlt` as root, `$XDG_DATA_HOME/dlt` when set and `~/.dlt` does not exist). The folders are
not guessed here: they are the files dlt's own TOML providers tried (`dlt.config.
config_providers`), so a message names exactly what dlt looked at.

`where_read()` is that, for a one-line message ("no base_url: ..."); `written(section)` the
tables a user wrote under a section in each file, and `environment(prefix)` the variables, for
the unknown-key warnings (`config.warn_unknown_keys`).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FILES = ("config.toml", "secrets.toml")


@dataclass(frozen=True)
class Folder:
    """A settings folder dlt reads: its absolute path, which of FILES it holds, and whether it
    is dlt's global folder (else the project's)."""

    path: Path
    present: tuple[str, ...]
    is_global: bool

    def describe(self) -> str:
        """`/abs/.dlt (the current folder's: config.toml)`, for a message."""
        kind = "dlt's global folder" if self.is_global else "the current folder's"
        if os.environ.get("DLT_PROJECT_DIR") and not self.is_global:
            kind = "DLT_PROJECT_DIR's"
        held = ", ".join(self.present) if self.present else "no config.toml or secrets.toml"
        return f"{self.path} ({kind}: {held})"


def _toml_providers() -> list[Any]:
    import dlt  # here: the modules that only name this one need no dlt

    return [p for p in dlt.config.config_providers if hasattr(p, "present_locations")]


def folders() -> list[Folder]:
    """The settings folders dlt reads, the project's first, as its TOML providers tried them."""
    import dlt

    global_dir = Path(os.path.abspath(dlt.current.run_context().global_dir))
    tried: dict[Path, set[str]] = {}
    for provider in _toml_providers():
        present = {os.path.abspath(p) for p in provider.present_locations}
        for location in provider.locations or ():
            path = os.path.abspath(location)
            names = tried.setdefault(Path(path).parent, set())
            if path in present:
                names.add(Path(path).name)
    return [
        Folder(path, tuple(n for n in FILES if n in names), path == global_dir)
        for path, names in tried.items()
    ]


def where_read() -> str:
    """One clause naming the folders dlt read settings from, and what each holds."""
    found = folders()
    if not found:
        return "dlt read no .dlt/ folder"
    return "dlt reads .dlt/ from the current folder, then its global folder: " + "; ".join(
        f.describe() for f in found
    )


def written(section: tuple[str, ...]) -> list[tuple[Path, dict[str, Any]]]:
    """The table under SECTION (`("sources", "devportal")`) in each TOML file dlt read, with
    the file; a file without it, or one that does not parse (dlt says so itself), is left out.
    """
    tables = []
    for provider in _toml_providers():
        for location in provider.present_locations:
            path = Path(os.path.abspath(location))
            try:
                node: Any = tomllib.loads(path.read_text("utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            for key in section:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict):
                tables.append((path, node))
    return tables


def environment(prefix: str) -> list[str]:
    """The names of the environment variables dlt would read under PREFIX (`SOURCES__DEVPORTAL__`):
    upper case, as dlt looks them up."""
    return sorted(k for k in os.environ if k.startswith(prefix) and k == k.upper())
