"""`devportal init`: the files a folder needs to run devportal from, written without ever
overwriting one.

What is written is package data (`devportal/starter/templates/`), each file in this repository a link to
the one it ships, so there is one source of each: `.dlt/config.toml` (every setting, commented,
with its default), `.dlt/secrets.toml` (from `.dlt/secrets.toml.example`: every secret,
commented) and the notebooks (`notebooks/*.ipynb`). A file already there is kept byte for byte
(a user's edits, or a link) and said so; `.gitignore` gets `.dlt/secrets.toml` appended only
when it does not ignore that file yet, or is created with it.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from devportal.base.errors import ConfigError, DevportalError

SECRETS = ".dlt/secrets.toml"
GITIGNORE = ".gitignore"
# .gitignore lines that certainly ignore .dlt/secrets.toml (from the folder's .gitignore); any
# other spelling (`*.toml`, a pattern with a later `!` exception, ...) gets the entry appended
IGNORING_SECRETS = frozenset(
    f"{anchor}{pattern}"
    for anchor in ("", "/", "**/")
    for pattern in (SECRETS, ".dlt", ".dlt/", ".dlt/*", ".dlt/**")
) | {"secrets.toml", "**/secrets.toml"}
# the secrets file is readable by its owner only
SECRET_MODE = 0o600
FILE_MODE = 0o666  # less the umask, as any file a program creates


@dataclass(frozen=True)
class Written:
    """What `init` did with one file: `path` relative to the folder (with `/`), `action`
    `wrote` (created), `added` (an entry appended) or `kept` (left as it was), and why."""

    path: str
    action: str
    note: str = ""


def templates() -> Traversable:
    """The packaged templates (`devportal/starter/templates/`)."""
    return resources.files("devportal") / "starter" / "templates"


def planned() -> Iterator[tuple[str, Traversable, int]]:
    """(path in the folder, packaged file, mode) of every file `init` writes but .gitignore."""
    shipped = templates()
    yield ".dlt/config.toml", shipped / "config.toml", FILE_MODE
    yield SECRETS, shipped / "secrets.toml", SECRET_MODE
    notebooks = sorted(
        (entry for entry in (shipped / "notebooks").iterdir() if entry.name.endswith(".ipynb")),
        key=lambda entry: entry.name,
    )
    for notebook in notebooks:
        yield f"notebooks/{notebook.name}", notebook, FILE_MODE


def init(folder: Path) -> list[Written]:
    """Write the missing files of FOLDER (created if needed); never overwrite one."""
    _make_folder(folder)
    done = []
    for relative, template, mode in planned():
        created = _create(folder / relative, template.read_bytes(), mode)
        done.append(Written(relative, "wrote") if created else Written(relative, "kept"))
        if relative == SECRETS:
            done.append(_ignore_secrets(folder / GITIGNORE))
    return done


def _make_folder(path: Path) -> None:
    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise ConfigError(f"cannot init {path}: {blocker} is a file, not a folder; choose a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DevportalError(
            f"cannot create the folder {path}: {err.strerror or err}; choose a writable folder"
        ) from err


def _create(path: Path, content: bytes, mode: int) -> bool:
    """Write CONTENT to PATH if nothing is there (not even a link); False when something is.

    The file is created exclusively (`O_EXCL`): a file appearing meanwhile is kept, never
    truncated. A write that fails half way removes what it wrote, so a rerun writes it whole."""
    if path.exists() or path.is_symlink():
        if path.is_dir():
            raise ConfigError(f"{path} is a folder: move it away and run `devportal init` again")
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        return False
    except OSError as err:
        raise _cannot_write(path, err) from err
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
    except OSError as err:
        path.unlink(missing_ok=True)
        raise _cannot_write(path, err) from err
    return True


def _cannot_write(path: Path, err: OSError) -> DevportalError:
    fix = (
        "free some space"
        if err.errno in (errno.ENOSPC, errno.EDQUOT)
        else "check the folder's permissions (and that its file system is writable)"
    )
    return DevportalError(f"cannot write {path}: {err.strerror or err}; {fix} and run again")


def ignores_secrets(text: str) -> bool:
    """Whether a .gitignore's TEXT has a line that ignores .dlt/secrets.toml (one of
    `IGNORING_SECRETS`) with no `!` exception after it that could let it in again."""
    ignored = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("!"):
            if "secrets" in line or ".dlt" in line:
                ignored = False
            continue
        if line in IGNORING_SECRETS:
            ignored = True
    return ignored


def _ignore_secrets(path: Path) -> Written:
    """Create .gitignore with the secrets' entry, or append the entry when it is missing."""
    if _create(path, f"{SECRETS}\n".encode(), FILE_MODE):
        return Written(GITIGNORE, "wrote", f"ignores {SECRETS}")
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as err:
        raise DevportalError(
            f"cannot read {path}: {err.strerror or err}; add the line {SECRETS} to it yourself"
        ) from err
    if ignores_secrets(text):
        return Written(GITIGNORE, "kept", f"already ignores {SECRETS}")
    separator = "" if not text or text.endswith("\n") else "\n"
    try:
        with path.open("a", encoding="utf-8") as out:
            out.write(f"{separator}{SECRETS}\n")
    except OSError as err:
        raise DevportalError(
            f"cannot append to {path}: {err.strerror or err}; add the line {SECRETS} to it yourself"
        ) from err
    return Written(GITIGNORE, "added", f"{SECRETS} appended")
