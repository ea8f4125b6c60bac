"""`devportal` run as its own program with its stderr (and, if asked, its stdout) on a
pseudo-terminal, as a person at a terminal runs it: what it wrote there, byte for byte, and what
it wrote to the other, piped stream."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import REPO

# CSI sequences (colours, cursor moves, erase), OSC sequences, and the other ESC pairs
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07]*(\x07|\x1b\\)|[@-Z\\-_])")


@dataclass
class TerminalRun:
    code: int
    terminal: str  # what the terminal received (stderr, and stdout when it was on it too)
    piped: str  # what went to the pipe: the stream that was not on the terminal, if any

    @property
    def screen_lines(self) -> list[str]:
        """The terminal's text without escape sequences, split at every line end and carriage
        return: each state a redrawn line went through."""
        return [line for line in re.split(r"[\r\n]+", strip_ansi(self.terminal)) if line.strip()]


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def run_on_terminal(
    *argv: str,
    env: dict[str, str | None] | None = None,
    cwd: Path | None = None,
    stdout_on_terminal: bool = False,
    stderr_on_terminal: bool = True,
    timeout: float = 300,
) -> TerminalRun:
    """`python -m devportal ARGV` with stdin on a new pseudo-terminal, and stderr (unless not
    STDERR_ON_TERMINAL) and stdout (with STDOUT_ON_TERMINAL) on it too; the other one piped.
    ENV on top of this process's (a key set to None is left out); TERM is a colour terminal
    unless ENV says otherwise. Reads until the program exits."""
    assert stdout_on_terminal or stderr_on_terminal
    merged = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", **(env or {})}
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "devportal", *argv],
        cwd=cwd or REPO,
        env={key: value for key, value in merged.items() if value is not None},
        stdin=slave,
        stdout=slave if stdout_on_terminal else subprocess.PIPE,
        stderr=slave if stderr_on_terminal else subprocess.PIPE,
    )
    os.close(slave)
    piped: list[bytes] = []
    other = proc.stdout or proc.stderr
    reader = threading.Thread(target=lambda: piped.append(other.read() if other else b""))
    reader.start()
    received = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every copy of the terminal's other end is closed
                break
            if not chunk:
                break
            received += chunk
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        reader.join(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return TerminalRun(code, received.decode("utf-8", "replace"), b"".join(piped).decode("utf-8"))
