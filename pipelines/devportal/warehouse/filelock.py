"""Advisory file locks: the one place devportal asks the operating system for one.

Two kinds, used by the `warehouse` package:
- the writer lock on `<warehouse>.lock` (`try_exclusive`, `release`, `held_elsewhere`, with
  the holder's pid written at the start of the file: `write_holder`, `read_holder`): one
  writer per warehouse, dropped by the OS when the process dies;
- the record locks DuckDB itself takes on the warehouse file (`lock_shared`, `writer_of`), so
  a writer and a program writing the file with DuckDB see each other.

Where each comes from (docs/platforms.md says what is supported where):
- POSIX (`fcntl`): the writer lock is `flock`; the record locks are open file description
  locks where the OS has them (Linux), `lockf` elsewhere (macOS).
- Windows (no `fcntl`): the writer lock is `msvcrt.locking` on one byte at `RANGE_OFFSET`, far
  past the pid at the start: Windows' byte-range locks are mandatory (a locked byte cannot be
  read), and the second writer reads the pid to name the holder. msvcrt has no shared lock and
  cannot name the holder of DuckDB's lock, so there `lock_shared` holds nothing and `writer_of`
  says None: a program writing the warehouse during a run is caught when the copy is published
  (`Draft.is_stale`: the warehouse changed since it was copied, nothing is published).
- Neither (a Python built without both): the package imports; taking the writer lock is a
  one-line error.
Nothing here fails at import on any system.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import sys

from devportal.base.errors import DevportalError

if sys.platform == "win32":
    import msvcrt

try:
    import fcntl
except ImportError:  # Windows, or a Python built without it: see the module docstring
    HAS_FCNTL = False
else:
    HAS_FCNTL = True

# How the writer lock is taken: "flock" (POSIX), "range" (one byte at RANGE_OFFSET: msvcrt on
# Windows), None (no lock on this system). A seam for the tests: a process that sets "range" on
# Linux takes the Windows path with POSIX record locks standing in for msvcrt (open file
# description locks: per descriptor, like a Windows handle's lock).
WRITER_LOCK: str | None = "flock" if HAS_FCNTL else "range" if sys.platform == "win32" else None
# the byte the "range" lock holds: past any pid, so the holder's pid stays readable
RANGE_OFFSET = 1 << 30
# what a refused byte-range lock raises (msvcrt: EACCES or EDEADLOCK; fcntl: EAGAIN or EACCES)
_REFUSED = {errno.EACCES, errno.EAGAIN, errno.EDEADLK, getattr(errno, "EDEADLOCK", errno.EDEADLK)}
# struct flock on Linux (64-bit): l_type, l_whence, l_start, l_len, l_pid, padding
_FLOCK = "hhqqi4x"
_HOLDER_BYTES = 64


def try_exclusive(fd: int) -> bool:
    """Take the writer lock on the lock file FD without waiting: False when another holds it.
    A one-line DevportalError on a system with no file lock at all."""
    if WRITER_LOCK == "flock":
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    if WRITER_LOCK == "range":
        try:
            _lock_byte(fd, lock=True)
        except OSError as err:
            if err.errno in _REFUSED:
                return False
            raise
        return True
    raise DevportalError(
        "this Python offers no file lock (neither fcntl nor msvcrt), so devportal cannot keep "
        "two writers of a warehouse apart; run it with CPython on Linux, macOS or Windows"
    )


def release(fd: int) -> None:
    """Let go of the writer lock on FD before it is closed (closing drops it too, but Windows
    asks for an unlock first). Nothing when FD does not hold it."""
    if WRITER_LOCK == "range":
        with contextlib.suppress(OSError):  # not held by this descriptor: nothing to let go
            _lock_byte(fd, lock=False)


def held_elsewhere(fd: int) -> bool:
    """Whether another descriptor holds the writer lock on FD's file: a probe that holds
    nothing (False where the system has no lock: the writer lock then says why)."""
    if WRITER_LOCK is None:
        return False
    try:
        taken = try_exclusive(fd)
    except OSError:
        return True
    if taken:
        release(fd)
    return not taken


def write_holder(fd: int) -> None:
    """Write this process's pid at the start of the lock file FD (its holder, for a message)."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, str(os.getpid()).encode())


def read_holder(fd: int) -> str:
    """The pid the holder of the lock file FD wrote there ("" when none)."""
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, _HOLDER_BYTES).decode(errors="replace").strip()


def _lock_byte(fd: int, *, lock: bool) -> None:
    """Lock (or unlock) the byte at RANGE_OFFSET of FD without waiting; OSError if refused."""
    if sys.platform == "win32":
        os.lseek(fd, RANGE_OFFSET, os.SEEK_SET)  # msvcrt locks from the file's position
        msvcrt.locking(fd, msvcrt.LK_NBLCK if lock else msvcrt.LK_UNLCK, 1)
    elif hasattr(fcntl, "F_OFD_SETLK"):
        kind = fcntl.F_WRLCK if lock else fcntl.F_UNLCK
        request = struct.pack(_FLOCK, kind, os.SEEK_SET, RANGE_OFFSET, 1, 0)
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, request)
    else:
        fcntl.lockf(fd, (fcntl.LOCK_EX | fcntl.LOCK_NB) if lock else fcntl.LOCK_UN, 1, RANGE_OFFSET)


def lock_shared(fd: int) -> None:
    """A shared lock on the whole file FD, as DuckDB's readers take (OSError if a writer holds
    it). An open file description lock where the OS has them (Linux): it belongs to FD alone,
    so this process opening and closing the file elsewhere (a copy, a DuckDB reader) does not
    drop it, and it conflicts with DuckDB's own locks even in this process. Without fcntl
    (Windows) nothing is held: see the module docstring."""
    if not HAS_FCNTL:
        return
    if hasattr(fcntl, "F_OFD_SETLK"):
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack(_FLOCK, fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0))
    else:  # a process-wide lock: the best this system offers
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)


def writer_of(path: str | os.PathLike[str]) -> int | None:
    """The pid of a process that has the DuckDB file PATH open for writing (DuckDB's exclusive
    fcntl lock; 0 when the OS does not say), None when none has. Readers (shared locks) do not
    count. A probe that holds nothing. Without fcntl (Windows) always None: it cannot tell."""
    if not HAS_FCNTL:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None  # not there (yet): nobody writes it
    try:
        if hasattr(fcntl, "F_OFD_GETLK"):
            request = struct.pack(_FLOCK, fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0)
            kind, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_OFD_GETLK, request))
            return None if kind == fcntl.F_UNLCK else max(pid, 0)
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return 0
        return None
    finally:
        os.close(fd)
