"""Where dlt reads devportal's settings from, asked of dlt itself, and what was written there.

dlt 1.31 reads, in this order: the environment (`SECTION__KEY`, upper case), then
`secrets.toml` and `config.toml` in the project's settings folder, `.dlt/` in the current
folder (`DLT_PROJECT_DIR` moves it), then the same two files in dlt's global folder (`~/.dlt`,
`/var/dlt` as root, `$XDG_DATA_HOME/dlt` when set and `~/.dlt` does not exist). The folders are
not guessed here: they are the files dlt's own TOML providers tried (`dlt.config.
config_providers`), so a message names exactly what dlt looked at.

`lookup_without_dlt(section)` finds a key where dlt would, without importing it (the early
start of `devportal sync`). `where_read()` is that, for a one-line message ("no base_url: ..."); `written(section)` the
tables a user wrote under a section in each file, and `environment(prefix)` the variables, for
the unknown-key warnings (`config.warn_unknown_keys`).

Every command reads the settings through here first (`config.warn_unknown_keys`), so a file
dlt cannot read (a TOML syntax error, a byte order mark, bytes that are not UTF-8) is caught
here once: `SettingsFileError`, one line naming the file, the line and column and what to fix,
never the line's text (a secret may be on it). `settings_file_error` words it.
"""

from __future__ import annotations

import ast
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
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
    # deferred: loads dlt, kept out of startup
    import dlt  # here: the modules that only name this one need no dlt

    with readable_settings():
        return [p for p in dlt.config.config_providers if hasattr(p, "present_locations")]


def folders() -> list[Folder]:
    """The settings folders dlt reads, the project's first, as its TOML providers tried them."""
    import dlt  # deferred: loads dlt, kept out of startup

    with readable_settings():
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


def _documents() -> Iterator[tuple[Path, dict[str, Any]]]:
    """Each TOML file dlt read, parsed, with its path; one that does not parse is left out
    (dlt says so itself)."""
    for provider in _toml_providers():
        for location in provider.present_locations:
            path = Path(os.path.abspath(location))
            try:
                yield path, tomllib.loads(path.read_text("utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue


def written(section: tuple[str, ...]) -> list[tuple[Path, dict[str, Any]]]:
    """The table under SECTION (`("sources", "devportal")`) in each TOML file dlt read, with
    the file; a file without it is left out."""
    tables = []
    for path, document in _documents():
        node: Any = document
        for key in section:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            tables.append((path, node))
    return tables


def sections() -> list[tuple[Path, tuple[str, ...]]]:
    """Every table of one or two levels (`("sources", "devportal")`, `("analytics",)`) in each
    TOML file dlt read, with the file: where a misspelt section shows."""
    found: list[tuple[Path, tuple[str, ...]]] = []
    for path, document in _documents():
        for name, table in document.items():
            if isinstance(table, dict):
                found.append((path, (name,)))
                found.extend((path, (name, sub)) for sub, v in table.items() if isinstance(v, dict))
    return found


def environment(prefix: str) -> list[str]:
    """The names of the environment variables dlt would read under PREFIX (`SOURCES__DEVPORTAL__`):
    upper case, as dlt looks them up."""
    return sorted(k for k in os.environ if k.startswith(prefix) and k == k.upper())


# -- the same lookup without dlt -----------------------------------------------------------------


def folders_without_dlt() -> list[Path]:
    """The settings folders dlt 1.31 reads, found without importing it (for the early start of
    `devportal sync`, which reads the API while dlt imports): the project's
    (`$DLT_PROJECT_DIR/.dlt`, else `./.dlt`), then the global one (`/var/dlt` as root,
    `$XDG_DATA_HOME/dlt` when set and `~/.dlt` does not exist, else `~/.dlt`). The folder's
    name follows `DLT_CONFIG_FOLDER` as dlt's does. `folders()` asks dlt itself; a test holds
    the two equal."""
    dot = os.environ.get("DLT_CONFIG_FOLDER", ".dlt")
    project = Path(os.environ.get("DLT_PROJECT_DIR", ".")) / dot
    home = Path(os.path.expanduser("~"))
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        global_dir = Path("/var/dlt")
    elif "XDG_DATA_HOME" in os.environ and not (home / dot).is_dir():
        global_dir = Path(os.environ["XDG_DATA_HOME"]) / "dlt"
    else:
        global_dir = home / dot
    return [Path(os.path.abspath(project)), Path(os.path.abspath(global_dir))]


def lookup_without_dlt(section: tuple[str, ...]) -> Callable[[str], Any]:
    """A lookup of a key of SECTION (`("sources", "devportal")`) where dlt would find it, made
    without importing dlt: the environment (`SOURCES__DEVPORTAL__KEY`), then `secrets.toml` and
    `config.toml` of each of `folders_without_dlt()`, each under the section, its parent or the
    top level. None where nothing is set. A file that does not parse is passed over (dlt says
    what is wrong with it when it reads the settings)."""
    tables: list[dict[str, Any]] = []
    for folder in folders_without_dlt():
        for name in ("secrets.toml", "config.toml"):
            try:
                tables.append(tomllib.loads((folder / name).read_text("utf-8")))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue

    def lookup(key: str) -> Any:
        env = os.environ.get("__".join((*section, key)).upper())
        if env is not None:
            return env
        for table in tables:
            for depth in range(len(section), -1, -1):
                node: Any = table
                for part in section[:depth]:
                    node = node.get(part) if isinstance(node, dict) else None
                if isinstance(node, dict) and key in node and not isinstance(node[key], dict):
                    return node[key]
        return None

    return lookup


# -- a settings file dlt cannot read ------------------------------------------------------------


class SettingsFileError(Exception):
    """A settings file dlt cannot read: one line, the file, the line and column, what to fix
    (`config.warn_unknown_keys`, which every command's first read of settings passes, says
    it as a `ConfigError`; this module imports nothing of devportal)."""


@contextmanager
def readable_settings() -> Iterator[None]:
    """Around a use of dlt's settings: dlt reading a TOML file it cannot parse (its
    `TomlProviderReadException`, raised again at every later use of dlt) becomes
    `SettingsFileError`, once. dlt then reads on without that file, so that what a failed
    command still does (its failure record, its alert, a report's figures) works and never
    prints dlt's message. Raised apart from dlt's exception (neither cause nor context): dlt's
    message quotes the character it stopped at, which may be part of a secret."""
    # deferred: loads dlt, kept out of startup
    from dlt.common.configuration.providers.toml import TomlProviderReadException

    problem = None
    try:
        yield
    except TomlProviderReadException as err:
        problem = settings_file_error(err.full_paths, err.file_name)
        _read_without_unreadable_files()
    if problem is not None:
        raise SettingsFileError(problem)


def _read_without_unreadable_files() -> None:
    """Give dlt the run context it would make, less the TOML files it cannot read (each of
    its TOML providers that fails is left out)."""
    from dlt.common.configuration import plugins  # deferred: loads dlt, kept out of startup

    # deferred: loads dlt, kept out of startup
    from dlt.common.configuration.container import Container

    # deferred: loads dlt, kept out of startup
    from dlt.common.configuration.providers import EnvironProvider

    # deferred: loads dlt, kept out of startup
    from dlt.common.configuration.providers.toml import (
        ConfigTomlProvider,
        SecretsTomlProvider,
        TomlProviderReadException,
    )

    # deferred: loads dlt, kept out of startup
    from dlt.common.configuration.specs.pluggable_run_context import PluggableRunContext

    try:
        context = plugins.manager().hook.plug_run_context(run_dir=None, runtime_kwargs=None)
        providers: list[Any] = [EnvironProvider()]
        for kind in (SecretsTomlProvider, ConfigTomlProvider):
            try:
                providers.append(kind(context.settings_dir, context.global_dir))
            except TomlProviderReadException:
                continue
        context.initial_providers = lambda: list(providers)
        Container()[PluggableRunContext] = PluggableRunContext(context)
    except Exception:  # dlt's internals moved: every use of dlt fails as before, not worse
        return


def settings_file_error(paths: Iterable[str], file_name: str = "") -> str:
    """The one line for the first of PATHS (the files dlt tried, in its order) that dlt's TOML
    reader (tomlkit) refuses: the file, where, and what to fix; never the text of the line."""
    for location in paths:
        path = Path(os.path.abspath(location))
        if not path.is_file():
            continue
        problem = _file_problem(path)
        if problem is not None:
            return f"settings file {path} {problem}"
    tried = ", ".join(str(Path(os.path.abspath(p))) for p in paths) or file_name
    return f"dlt could not read its settings file {file_name} ({tried}); no setting was read"


def _file_problem(path: Path) -> str | None:
    """What is wrong with the settings file at PATH, None when dlt's reader takes it."""
    import tomlkit  # deferred: loads tomlkit, kept out of startup
    from tomlkit.exceptions import ParseError  # deferred: loads tomlkit, kept out of startup

    try:
        data = path.read_bytes()
    except OSError as err:
        return f"cannot be read: {err.strerror or type(err).__name__}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line, column = _position(data[: err.start].decode("utf-8", "replace"))
        return f"is not UTF-8 text at line {line}, column {column}: save the file as UTF-8"
    if text.startswith("\ufeff"):
        return (
            "is not valid TOML at line 1, column 1: it starts with a byte order mark (BOM); "
            "save the file as UTF-8 without a BOM"
        )
    try:
        tomlkit.parse(text)
    except ParseError as err:  # dlt's own verdict, at tomlkit's place (0-based column)
        found: tuple[int, int] | None = (err.line, err.col + 1)
    except Exception:  # a key or a table set twice: tomlkit names no place
        found = None
    else:
        return None
    # Python's reader words the problem and places it (a key set twice too): what to fix
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        line, column, fix = _located(str(err), text)
        return f"is not valid TOML at line {line}, column {column}: {fix}"
    if found is None:
        return "is not valid TOML: a key or a section is set twice; keep one"
    line, column = found
    return f"is not valid TOML at line {line}, column {column} (where dlt's reader stops)"


def _position(before: str) -> tuple[int, int]:
    """(line, column), both from 1, of the character after BEFORE."""
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


# Python's tomllib messages (their start) -> what to fix, never quoting the text
_FIXES = (
    ("Invalid value", 'a value TOML cannot read (or none): quote text, key = "text"'),
    ("Cannot declare", "a section written twice: merge the two into one"),
    ("Cannot overwrite a value", "a key set twice (or a section over a key): keep one"),
    ("Cannot mutate", "a table or array set twice: keep one"),
    (
        "Expected newline or end of document after a statement",
        "more than one value on the line: one key = value per line, quote text with spaces",
    ),
    ("Expected '=' after a key", 'a key without "=": write key = value'),
    ("Expected ']' at the end of a table", "a section header not closed: write [section]"),
    ("Expected ']]' at the end of an array", "an array of tables not closed: write [[name]]"),
    ("Invalid statement", "a line that is neither [section] nor key = value"),
    ("Invalid initial character for a key part", "a key TOML cannot read: quote it"),
    ("Unclosed array", "an array not closed with ]"),
    ("Unclosed inline table", "an inline table not closed with }"),
    ("Unterminated string", "a string not closed: end it with its quote"),
    ("Illegal character", "a string not closed on its line, or a control character in it"),
    ("Unescaped '\\'", "a backslash in a \"...\" string: double it, or use '...' quotes"),
    ("Unescaped", "a character to escape in a string"),
    ("Invalid hex value", "a \\u escape that is not 4 hex digits"),
    ("Invalid date or datetime", "a date or time TOML cannot read: quote it as text"),
)


def _located(message: str, text: str) -> tuple[int, int, str]:
    """(line, column, what to fix) of a tomllib MESSAGE about TEXT."""
    at = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if at:
        line, column = int(at.group(1)), int(at.group(2))
    else:  # "(at end of document)"
        line, column = _position(text)
    fix = next((fix for start, fix in _FIXES if message.startswith(start)), "not valid TOML")
    lines = text.splitlines()
    if message.startswith(("Cannot declare", "Cannot overwrite")) and 0 < line <= len(lines):
        # tomllib stops after the second declaration: the place is where it starts
        column = len(lines[line - 1]) - len(lines[line - 1].lstrip()) + 1
    declared = re.match(r"Cannot declare (\(.*?\)) twice", message)
    if declared:  # a section's name is no value: named
        try:
            keys = ast.literal_eval(declared.group(1))
            fix = f"the section [{'.'.join(map(str, keys))}] written twice: merge the two into one"
        except (ValueError, SyntaxError, TypeError):
            pass
    elif message.startswith("Cannot overwrite a value"):
        key = lines[line - 1].partition("=")[0].strip() if 0 < line <= len(lines) else ""
        if _KEY.fullmatch(key):  # the key, never what follows its "="
            fix = f"the key {key} set twice (or a section over a key): keep one"
    return line, column, fix


_KEY = re.compile(r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*")
