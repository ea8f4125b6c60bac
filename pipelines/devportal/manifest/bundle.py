"""Resolving the files a manifest references inside its bundle, as the desktop client does.

The client opens `<app folder>/<buildPath trimmed>/<file>` for an unpacked app (the one a
developer validates before release). A reference must stay inside the app folder: absolute
paths, URLs, `..` climbing above the folder and symlinks leading out of it are refused here,
so a bundle that validates cannot read the developer's other files once packed.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Resolved:
    """Where a reference lands. `problem` set means it escapes the bundle (an error)."""

    relative: str  # normalised, "/"-separated, relative to the bundle folder
    path: Path | None
    problem: str | None = None


def is_file(path: Path) -> bool:
    """Path.is_file that answers False instead of raising: a manifest may name a path the OS
    refuses outright (ENAMETOOLONG is not among the errors pathlib swallows)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _normalise(value: str) -> str:
    # Windows developers write backslashes and the client runs on Windows too: treat both as
    # separators so `..\\..\\x` cannot slip past the escape check.
    return value.strip().replace("\\", "/")


def escape_problem(value: str) -> str | None:
    """Why VALUE on its own is not a bundle-relative path, or None."""
    text = _normalise(value)
    if "\x00" in text:
        return "contains a NUL character"
    if _URL.match(text):
        return "is a URL; reference a file inside the bundle by its relative path"
    if text.startswith("/") or _DRIVE.match(text):
        return "is an absolute path; use a path relative to the bundle folder"
    return None


def climbs_out(relative: str) -> bool:
    """Whether RELATIVE, a normalised "/"-separated path, climbs above the bundle folder."""
    return relative == ".." or relative.startswith("../")


def normalise_build_path(build_path: str | None) -> str:
    """buildPath as a bundle-relative folder ("" when unset, empty or ".")."""
    if build_path is None:
        return ""
    text = posixpath.normpath(_normalise(build_path)) if build_path.strip() else ""
    return "" if text == "." else text


def resolve(bundle: Path, build_path: str, value: str) -> Resolved:
    """Resolve VALUE under BUILD_PATH (already normalised) inside BUNDLE."""
    problem = escape_problem(value)
    if problem is not None:
        return Resolved(relative=_normalise(value), path=None, problem=problem)
    joined = posixpath.normpath(posixpath.join(build_path, _normalise(value)))
    if climbs_out(joined):
        where = f" (under buildPath {build_path!r})" if build_path else ""
        return Resolved(
            relative=joined,
            path=None,
            problem=f"resolves to {joined!r}{where}, outside the bundle folder; "
            "keep every file inside the app folder",
        )
    path = bundle / joined
    try:
        real = path.resolve()
        root = bundle.resolve()
    except (OSError, RuntimeError):  # RuntimeError: symlink loop on older Pythons
        return Resolved(relative=joined, path=None, problem="cannot be resolved (symlink loop?)")
    if real != root and root not in real.parents:
        return Resolved(
            relative=joined,
            path=None,
            problem=f"is a symlink leading outside the bundle folder (to {real}); "
            "copy the file into the bundle",
        )
    return Resolved(relative=joined, path=path)
