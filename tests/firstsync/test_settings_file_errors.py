"""A settings file dlt cannot read is input, not a crash: one line naming the file, the line and
column and what to fix, never the text of that line (a secret may be on it), from every command.

dlt reads `.dlt/secrets.toml` and `.dlt/config.toml` once per process, at the first use of its
settings; a file its TOML reader (tomlkit) refuses raises there, whichever command runs. Each
case runs `python -m devportal` in a project folder of its own (tests/firstsync/conftest.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devportal.settings.files import settings_file_error
from tests.firstsync.conftest import write_settings
from tests.helpers import CliResult

SECRET = "s3cr3t-Zq9"
GOOD_CONFIG = '[sources.devportal]\nbase_url = "{base_url}"\n'
GOOD_SECRETS = '[sources.devportal]\naccess_token = "{token}"\n'

# name -> (text of the file, line, column, words of what to fix); the secret sits on the line
BROKEN: dict[str, tuple[str, int, int, str]] = {
    "unquoted value": (f"[sources.devportal]\naccess_token = {SECRET}\n", 2, 16, "quote text"),
    "section written twice": (
        f'[sources.devportal]\naccess_token = "{SECRET}"\n\n[sources.devportal]\nx = 1\n',
        4,
        1,
        "[sources.devportal] written twice",
    ),
    "key set twice": (
        f'[sources.devportal]\naccess_token = "{SECRET}"\naccess_token = "{SECRET}"\n',
        3,
        1,
        "access_token set twice",
    ),
    "byte order mark": (f'\ufeff[sources.devportal]\naccess_token = "{SECRET}"\n', 1, 1, "BOM"),
    "string not closed": (
        f'[sources.devportal]\naccess_token = "{SECRET}\n',
        2,
        27,
        "not closed",
    ),
    "two values on a line": (
        f'[sources.devportal]\naccess_token = "{SECRET}" {SECRET}\n',
        2,
        29,
        "one key = value per line",
    ),
    "backslash": (f'[sources.devportal]\naccess_token = "a\\{SECRET}"\n', 2, 20, "backslash"),
    "header not closed": (f'[sources.devportal\naccess_token = "{SECRET}"\n', 1, 19, "[section]"),
    "crlf line ends": (f"[sources.devportal]\r\naccess_token = {SECRET}\r\n", 2, 16, "quote text"),
}


def _one_line(result: CliResult, path: Path) -> str:
    """The run's stderr: one line naming PATH; no traceback, no part of the secret."""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err and "tomlkit" not in result.err, result.err
    for part in (SECRET, SECRET[:4], SECRET[-4:], "'s'", "Unexpected character"):
        assert part not in result.err + result.out, result.err
    assert str(path) in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_syntax_error_is_one_line_with_its_place_and_fix(case: str, tmp_path: Path) -> None:
    """The wording itself, per shape: the file, line and column (from 1), what to fix."""
    text, line, column, fix = BROKEN[case]
    path = tmp_path / "secrets.toml"
    path.write_bytes(text.encode("utf-8"))
    said = settings_file_error([str(tmp_path / "missing.toml"), str(path)], "secrets.toml")
    assert said.startswith(f"settings file {path} "), said
    assert f"line {line}, column {column}" in said, said
    assert fix in said, said
    assert SECRET not in said and SECRET[:4] not in said, said


def test_bytes_that_are_not_utf8_are_placed_too(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'[sources.devportal]\nbase_url = "http://h\xff\xfe"\n')
    said = settings_file_error([str(path)])
    assert (
        said
        == f"settings file {path} is not UTF-8 text at line 2, column 21: save the file as UTF-8"
    )


@pytest.mark.parametrize(
    ("command", "broken_file", "case"),
    [
        (["status"], "secrets.toml", "unquoted value"),
        (["sync"], "secrets.toml", "section written twice"),
        (["sync"], "config.toml", "byte order mark"),
        (["models"], "config.toml", "key set twice"),
        (["digest"], "secrets.toml", "string not closed"),
        (["report"], "secrets.toml", "two values on a line"),
        (["report", "--format", "json"], "config.toml", "crlf line ends"),
        (["status", "--format", "json"], "config.toml", "header not closed"),
    ],
)
def test_every_command_says_it_in_one_line(
    in_folder: Callable[..., CliResult],
    project: Path,
    sandbox_factory: Callable[..., Any],
    command: list[str],
    broken_file: str,
    case: str,
) -> None:
    """A warehouse synced with good files; then one file broken: the command says the file,
    the place and the fix in one line and stops with exit 2 (`report` and `digest` too: the
    settings say which warehouse is home, `warehouse_destination`)."""
    sb = sandbox_factory(subscriptions=20, users=4, seed=3)
    dot_dlt = write_settings(
        project, GOOD_CONFIG.format(base_url=sb.base_url), GOOD_SECRETS.format(token=sb.token)
    )
    synced = in_folder("sync")
    assert synced.code == 0, synced.err
    text, line, column, _ = BROKEN[case]
    (dot_dlt / broken_file).write_bytes(text.encode("utf-8"))
    result = in_folder(*command)
    said = _one_line(result, dot_dlt / broken_file)
    assert f"line {line}, column {column}" in said, said
    assert result.code == 2, result.err
    assert said.startswith("devportal: error: settings file"), said


def test_a_broken_global_file_is_named_with_its_own_path(
    in_folder: Callable[..., CliResult], project: Path, tmp_path: Path
) -> None:
    """dlt's global folder (`~/.dlt`, HOME moved; as root `/var/dlt`, which a test does not
    write: then the project's own file stands in) is read the same way and named by its path."""
    import os

    home = tmp_path / "home"
    folder = project if hasattr(os, "geteuid") and os.geteuid() == 0 else home
    dot_dlt = write_settings(folder, secrets=BROKEN["unquoted value"][0])
    result = in_folder("status", env={"HOME": str(home)})
    said = _one_line(result, dot_dlt / "secrets.toml")
    assert result.code == 2 and re.search(r"line 2, column 16: .*quote text", said), said
