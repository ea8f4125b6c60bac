"""What a run shows while it works: on stderr only, never on stdout (which carries results).

A run reports its phases to one `Progress`: each list's pages as they are read (`page`), the
requests made one by one (`items`: the accounts of the users due, the subscriptions asked about
before closing them) and dlt's own steps (`collector`: extract, normalize, load). Three kinds:

- `Progress`: says nothing (a scheduler's log, `--quiet`, `--progress off`, a library caller);
- `Lines(every_s)`: a `progress: ...` line at most every EVERY_S seconds and dlt's log
  collector's blocks: for a log that wants the detail (`--verbose`, `--progress on` when stderr
  is not a terminal);
- `Bar(stream)`: bars drawn with rich on a terminal: one per phase, with the count, the
  percentage and the time left, erased when the run ends (its summary line says the rest).

`for_run(mode, quiet=, verbose=)` picks one the way the commands do (`cli.options.progress`);
`of(setting)` reads what `sync.sync(progress=...)` always took (`auto`, `on`, `off`).

The bar is rich's: dlt already brings it (dlt -> rich-argparse -> rich, pinned in
requirements.lock), so nothing new is installed, where dlt's own bar collectors need tqdm,
enlighten or alive-progress, none of them installed. It redraws in place from a thread of its
own and prints what is written to `sys.stderr` meanwhile above the bars. rich is imported only
when a bar is drawn, dlt only when a collector is asked for: `devportal --help` stays fast.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

# seconds between lines: `--progress on` when not a terminal, and `--verbose`
LINE_PERIOD = 2.0
VERBOSE_PERIOD = 10.0
# what `--progress` takes: auto (a bar on a terminal; lines with --verbose elsewhere), on, off
MODES = ("auto", "on", "off")


class Progress:
    """A run's progress, said nowhere. The base of the others: what a run may report."""

    def page(
        self, what: str, pages: int, last_page: int | None, rows: int, attempt: int = 1
    ) -> None:
        """PAGES of the WHAT list read (of LAST_PAGE, when the API says), ROWS rows so far;
        ATTEMPT: which read of that list (a list that moved while it was paged is read again)."""

    def items(self, what: str, done: int, total: int, unit: str = "requests") -> None:
        """DONE of TOTAL of WHAT: requests answered (one per account, per subscription asked),
        or another UNIT (models built)."""

    def collector(self) -> Any:
        """dlt's collector for its own steps (`dlt.pipeline(progress=...)`), or None."""
        return None

    def close(self) -> None:
        """The run is over: nothing more is shown (a bar is erased)."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Lines(Progress):
    """A line on STREAM (stderr) at most every EVERY_S seconds while a list is paged or requests
    are made (dlt sees the rows only once a read is verified, so its own progress would stay
    silent meanwhile), and dlt's log collector at the same period."""

    def __init__(self, every_s: float, stream: TextIO | None = None) -> None:
        self.every_s = every_s
        self._stream = stream
        self._last = 0.0
        self._lock = threading.Lock()

    def _due(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if now - self._last < self.every_s:
                return False
            self._last = now
            return True

    def _say(self, text: str) -> None:
        print(f"progress: {text}", file=self._stream or sys.stderr, flush=True)

    def page(
        self, what: str, pages: int, last_page: int | None, rows: int, attempt: int = 1
    ) -> None:
        if self._due():
            again = f" (read {attempt})" if attempt > 1 else ""
            self._say(f"{what} page {pages}/{last_page or '?'}, {rows} rows read{again}")

    def items(self, what: str, done: int, total: int, unit: str = "requests") -> None:
        if self._due():
            self._say(f"{what} {done}/{total} {unit}")

    def collector(self) -> Any:
        import dlt  # deferred: dlt loads only for a run that loads

        # memory and CPU figures where psutil is installed (without it dlt would warn)
        stats = importlib.util.find_spec("psutil") is not None
        stream = self._stream or sys.stderr
        return dlt.progress.log(log_period=self.every_s, logger=stream, dump_system_stats=stats)


class Bar(Progress):
    """Bars on STREAM, a terminal: one per phase (each list's pages, the requests made one by
    one, dlt's extract, normalize and load), with the count, the percentage and the time left;
    drawn from the first report on and erased by `close`. Log records written to `sys.stderr`
    meanwhile are printed above the bars (rich's redirect; `cli.main`'s handler looks
    `sys.stderr` up at each record); stdout is left alone."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.RLock()
        self._tasks: dict[str, Any] = {}
        self._rich: Any = None
        self._closed = False

    def _started(self) -> Any:
        """rich's Progress, started on the first report (None once closed)."""
        if self._closed:
            return None
        if self._rich is None:
            # deferred: loads rich, kept out of startup
            from rich import progress as rp  # only for a terminal
            from rich.console import Console  # deferred: loads rich, kept out of startup

            console = Console(file=self._stream, highlight=False, soft_wrap=True)
            self._rich = rp.Progress(
                rp.TextColumn("{task.description}", markup=False),
                rp.BarColumn(),
                rp.TaskProgressColumn(),
                rp.MofNCompleteColumn(),
                rp.TextColumn("{task.fields[unit]}", markup=False),
                rp.TimeRemainingColumn(elapsed_when_finished=True),
                console=console,
                transient=True,
                redirect_stdout=False,  # stdout carries the results, never the bars
                redirect_stderr=True,
            )
            self._rich.start()
        return self._rich

    def _task(self, key: str, total: int | None, unit: str) -> Any:
        rich = self._started()
        if rich is None:
            return None
        task = self._tasks.get(key)
        if task is None:
            task = rich.add_task(key, total=total, unit=unit)
            self._tasks[key] = task
        return task

    def page(
        self, what: str, pages: int, last_page: int | None, rows: int, attempt: int = 1
    ) -> None:
        with self._lock:
            task = self._task(what, last_page, "pages")
            if task is None:
                return
            again = f" (read {attempt})" if attempt > 1 else ""
            self._rich.update(
                task,
                completed=pages,
                total=last_page if last_page else max(pages + 1, 1),
                description=f"{what}{again}",
                unit=f"pages, {rows:,} rows",
            )

    def items(self, what: str, done: int, total: int, unit: str = "requests") -> None:
        with self._lock:
            task = self._task(what, total, unit)
            if task is not None:
                self._rich.update(task, completed=done, total=max(total, 1))

    def step(self, name: str, done: int, total: int | None, unit: str) -> None:
        """dlt's step NAME (extract, normalize, load): DONE of TOTAL."""
        with self._lock:
            task = self._task(name, total, unit)
            if task is not None:
                self._rich.update(task, completed=done, total=total)

    def collector(self) -> Any:
        return _steps_collector(self)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            rich, self._rich = self._rich, None
        if rich is not None:
            rich.stop()


def _steps_collector(bar: Bar) -> Any:
    """A dlt collector feeding BAR: each step's main counter (the first with a total:
    Resources, Files, Jobs); the per-table counters and labelled sub-counters are left out.
    A step that runs twice (dlt extracts the data, then its state) adds to the same bar."""
    # deferred: dlt loads only for a run that loads
    from dlt.common.runtime.collector_base import Collector

    class Steps(Collector):
        def __init__(self) -> None:
            self.step = ""
            self._name = ""
            self._main: str | None = None
            self._counts: dict[str, list[int]] = {}  # step name -> [done, total]

        def __deepcopy__(self, memo: dict[int, Any]) -> Steps:
            return self  # one display: dlt copies a collector only for another pipeline

        def _start(self, step: str) -> None:
            self._name = (step.split() or ["dlt"])[0].lower()
            self._main = None

        def update(
            self,
            name: str,
            inc: int = 1,
            total: int | None = None,
            inc_total: int | None = None,
            message: str | None = None,
            label: str | None = None,
        ) -> None:
            if label:
                return
            counts = self._counts.setdefault(self._name, [0, 0])
            if self._main is None and total is not None:
                self._main = name
                counts[1] += total
            if name != self._main:
                return
            counts[0] += inc
            counts[1] += inc_total or 0
            bar.step(self._name, counts[0], max(counts[1], counts[0]), name.lower())

        def _stop(self) -> None:
            self._main = None

    return Steps()


def is_terminal(stream: Any) -> bool:
    """Whether STREAM is a terminal (a person reads it), not a file, a pipe or a log."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def can_redraw(stream: Any) -> bool:
    """Whether STREAM is a terminal that can redraw a line in place (not `TERM=dumb`)."""
    return is_terminal(stream) and os.environ.get("TERM", "") != "dumb"


def for_run(
    mode: str = "auto",
    *,
    quiet: bool = False,
    verbose: bool = False,
    stream: TextIO | None = None,
) -> Progress:
    """The progress a command shows on STREAM (stderr) for `--progress MODE`: `off` none; `on`
    a bar on a terminal, else lines every LINE_PERIOD s; `auto` none with QUIET, else a bar on
    a terminal, else lines every VERBOSE_PERIOD s with VERBOSE, else none (a scheduler's log
    gets the summary line, not the progress)."""
    stream = stream or sys.stderr
    if mode == "off" or (mode == "auto" and quiet):
        return Progress()
    if can_redraw(stream):
        return Bar(stream)
    if mode == "on":
        return Lines(LINE_PERIOD, stream)
    return Lines(VERBOSE_PERIOD, stream) if verbose else Progress()


# what `sync.sync(progress=...)` took before `for_run`: a library caller's setting, kept
_PERIODS = {"auto": VERBOSE_PERIOD, "on": LINE_PERIOD}


def of(setting: str | Progress | None) -> Progress:
    """SETTING as a Progress: one as it is; None or `off` none; `auto` and `on` lines every
    VERBOSE_PERIOD and LINE_PERIOD s, whatever the stream (as `sync.sync` always did)."""
    if isinstance(setting, Progress):
        return setting
    period = _PERIODS.get(setting or "off")
    return Lines(period) if period else Progress()
