"""The README's first real sync and its cron lines, run as written: `devportal init`, base_url
and the token set in the written files, `devportal sync`, then each cron line by `/bin/sh` in
cron's bare environment (no terminal). A run that succeeds adds one line to the log and prints
nothing (cron mails nothing), so does a run that finds another devportal run holding the
warehouse (exit 3); a run that fails, one that finds another program writing the warehouse
(exit 4) included, prints the end of the log, its one-line error last (cron mails it)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import CliResult, held_open_for_writing

REPO = Path(__file__).resolve().parents[2]
# what a crontab line runs: the five time fields, then the command
CRON_LINE = re.compile(r"^(\S+\s+){5}(?P<command>.+)$")


def readme_cron_commands() -> list[str]:
    """The commands of the README's ```cron block (comments and MAILTO left out)."""
    text = (REPO / "README.md").read_text("utf-8")
    (block,) = re.findall(r"```cron\n(.*?)```", text, re.S)
    commands = []
    for line in block.splitlines():
        if not line.strip() or line.startswith("#") or "=" in line.split()[0]:
            continue
        match = CRON_LINE.match(line)
        assert match, line
        commands.append(match["command"])
    assert commands, "the README shows no cron line"
    return commands


def cron_env() -> dict[str, str]:
    """Roughly what cron gives a job: a PATH, HOME, a shell; no terminal, no devportal
    variables."""
    return {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "SHELL": "/bin/sh"}


def as_cron(command: str, folder: Path) -> CliResult:
    """COMMAND with the README's folder and program replaced by FOLDER and this Python's
    devportal, run by /bin/sh as cron runs it."""
    devportal = f"{shlex.quote(sys.executable)} -m devportal"
    assert "cd /srv/devportal && .venv/bin/devportal " in command, command
    command = command.replace("cd /srv/devportal", f"cd {shlex.quote(str(folder))}")
    command = command.replace(".venv/bin/devportal", devportal)
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        env=cron_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def set_line(path: Path, key: str, value: str) -> None:
    """Uncomment KEY's line in PATH (a file `devportal init` wrote) with VALUE."""
    text = path.read_text("utf-8")
    (line,) = [ln for ln in text.splitlines() if ln.startswith(f"# {key} = ")]
    path.write_text(text.replace(line, f'{key} = "{value}"'), "utf-8")


def test_the_readme_first_sync_and_cron_lines(tmp_path: Path, sandbox_factory: Any) -> None:
    sb = sandbox_factory(subscriptions=150, users=30, seed=23)
    folder = tmp_path / "devportal"
    run = [sys.executable, "-m", "devportal"]
    subprocess.run([*run, "init", str(folder)], check=True, capture_output=True, env=cron_env())
    set_line(folder / ".dlt" / "config.toml", "base_url", sb.base_url)
    set_line(folder / ".dlt" / "secrets.toml", "access_token", sb.token)
    first = subprocess.run(
        [*run, "sync"], cwd=folder, env=cron_env(), capture_output=True, text=True, timeout=300
    )
    assert first.returncode == 0, first.stderr
    log = folder / "warehouse" / "sync.log"

    for n, command in enumerate(readme_cron_commands() * 2, start=1):
        sb.advance(hours=1)
        result = as_cron(command, folder)
        assert (result.out, result.err) == ("", ""), f"cron would mail: {result.out}{result.err}"
        lines = log.read_text("utf-8").splitlines()
        assert len(lines) == n, f"run {n} logged {len(lines) - n + 1} lines:\n" + "\n".join(lines)
        assert lines[-1].startswith("sync ok"), lines[-1]

    # another devportal run holds the warehouse (exit 3): harmless, nothing mailed
    from devportal.warehouse import warehouse_lock

    with warehouse_lock(folder / "warehouse" / "warehouse.duckdb"):
        for command in readme_cron_commands():
            result = as_cron(command, folder)
            assert (result.out, result.err) == ("", ""), f"cron would mail: {result.out}"
            # logged; not mailed: the exit was 3 (any other non-zero runs `tail`)
            assert log.read_text("utf-8").splitlines()[-1].startswith("devportal: error: ")

    # another program holds it open for writing (a duckdb shell): every run fails until it is
    # closed, so cron mails it (exit 4)
    with held_open_for_writing(folder / "warehouse" / "warehouse.duckdb"):
        for command in readme_cron_commands():
            result = as_cron(command, folder)
            mailed = result.out.splitlines()
            assert mailed and "not a devportal run" in mailed[-1], result.out

    # a failure: the token no longer valid; cron mails the end of the log, the error last
    secrets = folder / ".dlt" / "secrets.toml"
    secrets.write_text(secrets.read_text("utf-8").replace(sb.token, "revoked-token-0000"), "utf-8")
    for command in readme_cron_commands():
        result = as_cron(command, folder)
        mailed = result.out.splitlines()
        assert mailed and mailed[-1].startswith("devportal: error: "), result.out
        assert "401" in mailed[-1] or "rejected" in mailed[-1], mailed[-1]
        assert log.read_text("utf-8").splitlines()[-1] == mailed[-1]  # logged as well
