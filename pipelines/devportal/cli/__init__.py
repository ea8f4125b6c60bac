"""Command-line interface: `devportal sync | status | digest | demo | models | packages | report |
manifest | migrate | init | sandbox`.

One module per command (`devportal.cli.<command>`), each exposing `register(subparsers)` and
its handler, which parses nothing more, calls the feature, prints, and returns the exit code;
`options` holds what several commands share. Heavy libraries (dlt, duckdb, pandas, pyarrow, the
sandbox server) are imported by the handlers only, so `devportal --help` stays fast. Expected
failures (`DevportalError`) print one line, without a traceback unless `--debug`.

Signals that end a run (SIGTERM from a scheduler, systemd or a CI timeout; SIGHUP from a closed
terminal) are failures like any other: `Stopped`, raised where the run is, unwinds it (the lock
freed, spooled reads removed, a load put back), is recorded and posted as any failure is
(`alerts.events.watched`), prints one line and exits 128 + the signal's number. Ctrl-C stays
"devportal: interrupted", 130.

Last line of defence for secrets: the one-line error, the traceback (`--debug`, or a bug's) and
every log record (devportal's, dlt's, any library's) pass through `errors.scrub`, which takes out the access token, any
`Bearer <credential>` and terminal control sequences, whatever text quoted them.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any

from devportal import __version__
from devportal.base.errors import DevportalError, Stopped, scrub
from devportal.cli import (
    demo_command,
    digest_command,
    init_command,
    manifest_command,
    migrate_command,
    models_command,
    options,
    packages_command,
    report_command,
    sandbox_command,
    status_command,
    sync_command,
)

# the order of `devportal --help`
COMMANDS = (
    sync_command,
    status_command,
    digest_command,
    demo_command,
    models_command,
    packages_command,
    report_command,
    manifest_command,
    migrate_command,
    init_command,
    sandbox_command,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="devportal",
        description="Sync the Developer Portal API into a warehouse and report on subscriptions.",
    )
    parser.add_argument("--version", action="version", version=f"devportal {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def _one_line_dlt_records(record: logging.LogRecord) -> bool:
    """Without --debug, dlt's own error records (tracebacks of a failed job) are not shown:
    devportal reports the cause in its one-line error. Its warnings keep their first line."""
    if record.levelno >= logging.ERROR:
        return False
    message = record.getMessage()
    if "Traceback (most recent call last)" in message:
        return False  # a job dlt retries: if it fails for good, devportal's one line says why
    if message.startswith("Exiting runner due to signal"):
        return False  # a stopped run's one line says so (`Stopped`)
    record.msg = message.split("\n")[0]
    record.args, record.exc_info, record.exc_text = None, None, None
    return True


def _scrubbed_records() -> None:
    """Make every log record of this process carry its message scrubbed (`errors.scrub`).

    A record factory, not a filter: it reaches the records of every logger, dlt's included,
    whose handlers are created later and do not propagate to the root. Installed once."""
    make = logging.getLogRecordFactory()
    if getattr(make, "devportal_scrubs", False):
        return

    def scrubbed(*args: object, **kwargs: object) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it when it emits the record
            return record
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        return record

    scrubbed.devportal_scrubs = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(scrubbed)


class _CurrentStderr(logging.StreamHandler):
    """Log records to whatever `sys.stderr` is when each is written: while a progress bar is
    drawn (`devportal.base.progress.Bar`), rich's stand-in, which prints them above the bar."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass  # always the current sys.stderr


_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Said(logging.Formatter):
    """devportal's own warnings and errors in the words of its other messages, `devportal:
    warning: ...` (what cron mails reads alike, whichever part said it); other records, and
    every record under --debug, with their time, level and logger."""

    def __init__(self, *, debug: bool) -> None:
        super().__init__(_LOG_FORMAT)
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        own = record.name == "devportal" or record.name.startswith("devportal.")
        if own and record.levelno >= logging.WARNING and not self.debug:
            return f"devportal: {record.levelname.lower()}: {record.getMessage()}"
        return super().format(record)


def _configure_logging(args: argparse.Namespace) -> None:
    """Records to stderr: warnings and errors always (--quiet included: what a scheduler mails
    is what needs a look); devportal's info records too with --verbose; everything with
    --debug."""
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format=_LOG_FORMAT,
        handlers=[_CurrentStderr()],
    )
    for handler in logging.getLogger().handlers:  # set on every call, as the levels below
        if isinstance(handler, _CurrentStderr):
            handler.setFormatter(_Said(debug=args.debug))
    verbose = options.verbosity(args) >= options.VERBOSE and not args.debug
    # set on every call: main may run more than once in a process (tests, a notebook)
    logging.getLogger("devportal").setLevel(logging.INFO if verbose else logging.NOTSET)
    _scrubbed_records()
    _dlt_to_current_stderr()
    if not args.debug:
        logging.getLogger("dlt").addFilter(_one_line_dlt_records)


def _dlt_to_current_stderr() -> None:
    """dlt's own logger (it does not propagate once dlt set it up) writes through a
    `_CurrentStderr` too. dlt makes a `StreamHandler` bound to the `sys.stderr` of the moment
    it sets its logger up: a later `main` in the same process (a notebook, the tests) whose
    stderr was swapped would meet a closed stream ("--- Logging error ---") just when dlt
    reports a full disk. Before dlt's set-up nothing is added (its records reach the root
    logger's handler until then)."""
    dlt_log = logging.getLogger("dlt")
    for handler in list(dlt_log.handlers):
        if type(handler) is logging.StreamHandler:
            dlt_log.removeHandler(handler)
            current = _CurrentStderr()
            current.setFormatter(handler.formatter)
            current.setLevel(handler.level)
            dlt_log.addHandler(current)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit code. A reader that stops reading stdout (`devportal report |
    head -1`) ends the command quietly with 141, as the shell reports a program SIGPIPE ended
    (`cat`, `grep`): no traceback, and `set -o pipefail` sees what it would of any of them.
    As its own program, SIGTERM and SIGHUP end the run as a failure (`Stopped`)."""
    own = argv is None
    Stopped.received = None  # this run's (main may run more than once in a process)
    if own:
        _catch_stop_signals()
    try:
        try:
            code = _main(argv)
        finally:
            # what is still buffered: a closed pipe is found here, inside main, not at exit
            # (argparse's --help swallows the error of its own write and exits)
            sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Stopped as err:  # before the command ran, or after it ended
        print(f"devportal: error: {err}", file=sys.stderr)
        code = err.exit_code
    code = _stopped_code(code)
    if own:  # its own program: nothing of it is needed once its work is done
        # stopped (a signal, Ctrl-C): requests still in flight are not waited for
        _exit_now(code, force=Stopped.received is not None or code == EXIT_INTERRUPTED)
    return code


# the signals that end a run as a failure (where the platform has them)
STOP_SIGNALS = ("SIGTERM", "SIGHUP")


def _catch_stop_signals() -> None:
    """SIGTERM and SIGHUP raise `Stopped` in the main thread, wherever the run is. A signal
    the process was started ignoring stays ignored (`nohup` ignores SIGHUP)."""
    for name in STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, _on_stop_signal)


def _on_stop_signal(signum: int, frame: Any) -> None:
    """The first stop signal ends the run (`Stopped`); any later one is ignored while it winds
    down (its record written, its lock freed): `timeout` sends SIGTERM to the process and to
    its group, twice in a row, and SIGKILL is there for a run that must end at once."""
    if Stopped.received is not None:
        return
    Stopped.received = signum
    if _deferred_to_dlt(signum):
        return
    raise Stopped(signum)


def _deferred_to_dlt(signum: int) -> bool:
    """While dlt normalizes or loads it holds SIGINT and SIGTERM back (its own handlers: the
    step stops at its next safe point and raises `SignalReceivedException`). A SIGHUP then
    joins that, rather than raising inside a load job dlt runs on this thread (dlt would take
    it for the job's failure and wait on). Whether dlt holds them: its handler is in place."""
    held = sys.modules.get("dlt.common.runtime.signals")
    receiver = getattr(held, "_signal_receiver", None)
    if receiver is None or signal.getsignal(signal.SIGTERM) is not receiver:
        return False
    try:
        held.set_received_signal(signum)  # type: ignore[union-attr]
        held.wake_all()  # type: ignore[union-attr]
    except AttributeError:  # another dlt: raise as anywhere else
        return False
    return True


def _stopped_code(code: int) -> int:
    """CODE, or the stop signal's when one arrived and the run's end did not say so (a step
    that caught the `Stopped` as any error and went on): one line more, its exit code."""
    signum = Stopped.received
    if signum is None or code == 128 + signum:
        return code
    print(f"devportal: error: {Stopped(signum)}", file=sys.stderr)
    return 128 + signum


def _exit_now(code: int, force: bool = False) -> None:
    """End the process with CODE at once, as Python would but without tearing down its heap:
    after a sync that is a few hundred thousand objects (frames, arrays, dlt's modules), whose
    release took about a quarter of a second of every run for nothing. What exit must still do
    is done first: stdout and stderr flushed, the `atexit` callbacks (logging's flush, dlt's,
    temporary files' finalizers). While a thread that is not a daemon still runs (work Python
    would wait for), the normal exit, unless FORCE (a run a signal stopped: requests still in
    flight are not waited for)."""
    main_thread = threading.main_thread()
    alive = (t for t in threading.enumerate() if t is not main_thread and t.is_alive())
    if not force and any(not t.daemon for t in alive):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # closed, or its reader gone: Python's own exit ignores that too
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


# 128 + SIGPIPE: what a shell reports for a program its reader left (`yes | head -1`)
EXIT_BROKEN_PIPE = 141
# 128 + SIGINT: Ctrl-C
EXIT_INTERRUPTED = 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null: Python flushes it again at exit, and a flush into the closed
    pipe would print "Exception ignored ... BrokenPipeError" (Python's own recipe, see the
    `signal` module's documentation). Only the process's own stdout (a file descriptor)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # replaced (a test's capture): nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # devportal runs as its own program (the console script, `python -m devportal`), not inside
    # a caller's process: a command may then hand the rest of its work to a fresh process image
    args.own_process = argv is None
    _configure_logging(args)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        raise  # main's
    except DevportalError as err:
        if args.debug:
            _print_traceback(err)
        print(f"devportal: error: {scrub(str(err))}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt as err:
        if getattr(err, "signal_code", signal.SIGINT) != signal.SIGINT:  # dlt held it back
            stopped = Stopped(err.signal_code)  # type: ignore[attr-defined]
            print(f"devportal: error: {stopped}", file=sys.stderr)
            return stopped.exit_code
        print("devportal: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # a bug: its traceback as Python prints it, but scrubbed
        if not args.own_process:
            raise  # a caller's process (a test, a notebook) sees the bug itself
        _print_traceback(err)
        return 1


def _print_traceback(err: BaseException) -> None:
    """ERR's traceback, its causes included, scrubbed: a cause kept (`raise ... from err`) may
    quote what a server echoed, the token among it."""
    print(scrub("".join(traceback.format_exception(err))), end="", file=sys.stderr)
