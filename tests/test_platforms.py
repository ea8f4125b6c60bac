"""Where `fcntl` is missing (Windows): every module imports, and the writer lock still works.

The package is imported in a subprocess whose import system refuses `fcntl` (a meta-path
blocker installed before anything of devportal loads), module by module, walking the package as
tests/test_import_layers.py does. The Windows writer lock (one byte far into the lock file,
`devportal.warehouse.filelock`, `msvcrt.locking` there) is driven on Linux through its seam
(`filelock.WRITER_LOCK = "range"`, POSIX record locks standing in for msvcrt) by the real CLI in
subprocesses: a second writer is refused in one line naming the holder, and the lock is gone
once the holder is killed. What these cannot show is `msvcrt.locking` itself: that needs
Windows (docs/platforms.md).
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from devportal.warehouse import filelock
from tests.helpers import holding
from tests.test_import_layers import module_names

# Installed first in every subprocess below: `import fcntl` fails as it does on Windows.
HIDE_FCNTL = """
import sys

class NoFcntl:
    def find_spec(self, name, path=None, target=None):
        if name == "fcntl":
            raise ModuleNotFoundError("No module named 'fcntl' (hidden by the test)", name=name)
        return None

sys.modules.pop("fcntl", None)
sys.meta_path.insert(0, NoFcntl())
"""

IMPORT_EACH = (
    HIDE_FCNTL
    + """
import importlib, json
failed = {}
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except BaseException as err:  # anything at all: the test names the module and the error
        failed[name] = f"{type(err).__name__}: {err}"
import devportal.warehouse.filelock as filelock
print(json.dumps({"failed": failed, "fcntl_loaded": "fcntl" in sys.modules,
                  "has_fcntl": filelock.HAS_FCNTL, "writer_lock": filelock.WRITER_LOCK}))
"""
)

# the real CLI, in a process of its own, with the writer lock taken the Windows way
CLI_WITH_RANGE_LOCK = """
import sys
import devportal.warehouse.filelock as filelock
filelock.WRITER_LOCK = "range"
from devportal.cli import main
raise SystemExit(main(sys.argv[1:]))
"""

HOLD_WITH_RANGE_LOCK = """
import sys
import devportal.warehouse.filelock as filelock
filelock.WRITER_LOCK = "range"
from devportal.warehouse import warehouse_lock
with warehouse_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()  # held until the test closes stdin or kills this process
"""

CLI_WITHOUT_FCNTL = (
    HIDE_FCNTL
    + """
from devportal.cli import main
raise SystemExit(main(sys.argv[1:]))
"""
)


def run_python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300
    )


def one_line_error(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.strip().splitlines() if line.startswith("devportal:")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.fixture
def duckdb_warehouse(tmp_path: Path) -> Path:
    """An empty DuckDB warehouse file (a writer such as `devportal models` needs one)."""
    import duckdb

    path = tmp_path / "wh" / "warehouse.duckdb"
    path.parent.mkdir()
    duckdb.connect(str(path)).close()
    return path


def held_the_windows_way(warehouse: Path) -> AbstractContextManager[subprocess.Popen[str]]:
    """Another process holding the warehouse lock with the "range" lock until the block ends
    (killed then); yields once it holds it."""
    return holding(HOLD_WITH_RANGE_LOCK, "held", str(warehouse))


def range_byte_locked(lock_file: Path) -> bool:
    """Whether another descriptor holds a write lock on the byte the "range" lock takes."""
    import fcntl

    fd = os.open(lock_file, os.O_RDONLY)
    try:
        request = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, filelock.RANGE_OFFSET, 1, 0)
        kind = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_OFD_GETLK, request))[0]
        return bool(kind != fcntl.F_UNLCK)
    finally:
        os.close(fd)


def flock_held(lock_file: Path) -> bool:
    import fcntl

    fd = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_every_module_imports_without_fcntl() -> None:
    names = sorted(name for name in module_names() if not name.endswith("__main__"))
    assert "devportal.warehouse" in names and "devportal.warehouse.filelock" in names
    done = run_python(IMPORT_EACH, json.dumps(names))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["failed"] == {}
    assert found["fcntl_loaded"] is False  # the blocker held: nothing loaded it another way
    assert found["has_fcntl"] is False
    # Linux has no msvcrt: no lock at all here (on Windows: "range")
    assert found["writer_lock"] == (None if sys.platform != "win32" else "range")


@pytest.mark.skipif(not hasattr(filelock, "fcntl"), reason="POSIX stands in for msvcrt")
@pytest.mark.skipif(sys.platform != "linux", reason="open file description locks: Linux")
def test_the_windows_lock_refuses_a_second_writer_and_dies_with_its_holder(
    duckdb_warehouse: Path,
) -> None:
    lock_file = duckdb_warehouse.with_name(duckdb_warehouse.name + ".lock")
    argv = ["models", "--warehouse", str(duckdb_warehouse)]
    with held_the_windows_way(duckdb_warehouse) as holder:
        # the holder took the one byte, not flock: the Windows path is what is under test
        assert range_byte_locked(lock_file)
        assert not flock_held(lock_file)
        second = run_python(CLI_WITH_RANGE_LOCK, *argv)
        assert second.returncode == 3, second.stderr
        line = one_line_error(second.stderr)
        assert "is busy" in line and f"pid {holder.pid}" in line, line
        assert holder.poll() is None  # it held the lock all along
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    assert not range_byte_locked(lock_file)  # the OS dropped it with the process
    third = run_python(CLI_WITH_RANGE_LOCK, *argv)
    assert third.returncode == 0, third.stderr
    assert not range_byte_locked(lock_file)  # let go at the end of the run


def test_without_any_file_lock_a_writer_stops_in_one_line(duckdb_warehouse: Path) -> None:
    """Neither fcntl nor msvcrt (Linux with fcntl hidden): the CLI runs, and a writer says in
    one line that it cannot keep two writers apart, instead of writing unguarded."""
    if sys.platform == "win32":
        pytest.skip("Windows has msvcrt")
    done = run_python(CLI_WITHOUT_FCNTL, "models", "--warehouse", str(duckdb_warehouse))
    assert done.returncode == 1, done.stderr
    line = one_line_error(done.stderr)
    assert "offers no file lock" in line and "fcntl" in line and "msvcrt" in line, line
