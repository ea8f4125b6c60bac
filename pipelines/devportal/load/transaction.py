"""The one whole-or-nothing run every writer of the API's data and of manifests goes through.

    with writing(target) as run:                    # lock, pipeline, recover, begin writing
        data = ...                                  # read what the run loads
        load_id = run.load(data, what="sync")      # one package, loaded whole or not at all

`writing` holds the writer lock (`warehouse.writer_lock`), opens the pipeline, recovers what a killed run left
(`pipeline.finish_pending`: pending packages are loaded first, so new data never makes dlt load
only the old package, and one that cannot load is set aside while this run goes on) and, on
DuckDB, starts the draft this run writes. `Transaction.load` extracts and normalizes the data into one
package and loads it whole (`pipeline.load_whole`); a failed extract or normalize leaves
nothing behind (`pipeline.discard_unfinished`) and ends in one line naming the step. What the
run leaves in dlt's folder is pruned when it ends (`pruning`): the folder does not grow per run.

A signal that stops the run (`errors.Stopped`: SIGTERM, SIGHUP; or dlt's own, which holds
SIGTERM back while it normalizes and loads) unwinds it like any failure: nothing read is
loaded, a load is put back (and its package set aside), the spooled reads are removed and the
lock freed; its one line says at which step it stopped and what the run left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from devportal.base.errors import (
    DevportalError,
    Stopped,
    causes,
    devportal_cause,
    first_line,
    stop_signal,
)
from devportal.load.packages import Recovered, discard_unfinished, finish_pending, load_whole
from devportal.load.pipeline import begin_writing, open_pipeline
from devportal.load.pruning import clear_spools, prune_loaded
from devportal.warehouse import disk_error
from devportal.warehouse.target import Target
from devportal.warehouse.writer_lock import writer_lock

if TYPE_CHECKING:  # the dlt pipeline, for the type checker only
    from dlt import Pipeline

log = logging.getLogger("devportal.transaction")


@dataclass
class Transaction:
    """One writer's transaction on a recovered pipeline: `load` what it read."""

    pipeline: Pipeline
    target: Target
    recovered: Recovered  # what a killed run left, loaded or set aside first
    loaded: bool = False  # this run's package has loaded (a stop after it changes nothing)
    # what publishes the loaded package (`load(publish=False)`): run by `publish`, or when the
    # transaction ends, whatever ends it
    unpublished: Callable[[], None] | None = None

    def load(
        self,
        data: Any,
        *,
        what: str,
        publish: bool = True,
        refusal: Callable[[BaseException], DevportalError | None] | None = None,
    ) -> str | None:
        """Extract and normalize DATA (a dlt source or resources) into one package and load it
        whole; its load id (None when DATA held nothing). PUBLISH False keeps the loaded package
        unpublished until `publish()` or the end of the transaction, so what it loaded can be
        read from the pipeline first (on DuckDB, from the draft). REFUSAL(cause) may turn a
        cause of a failed extract or normalize into the run's one line (the sync's schema
        contract). WHAT names the run in that line."""
        from dlt.pipeline.exceptions import PipelineStepFailed  # deferred: dlt is heavy

        try:
            self.pipeline.extract(data)
            self.pipeline.normalize()
        except PipelineStepFailed as err:
            # nothing of the run may stay behind: a later run starts from a clean extract, with
            # the local state and schema as they were
            try:
                discard_unfinished(self.pipeline)
            except Exception as cleanup:  # a cleanup: whatever it raises must not hide `err`
                log.warning("could not discard what the failed run left: %s", first_line(cleanup))
            raise self._failure(err, what, refusal) from err
        load_ids = list(self.pipeline.list_normalized_load_packages())
        if not load_ids:
            return None
        load_id = str(load_ids[0])
        try:
            self.unpublished = load_whole(self.pipeline, self.target, publish=publish)
        except DevportalError as err:
            signum = stop_signal(err)
            if signum is None:
                raise
            Stopped.received = Stopped.received or signum  # dlt's: the run is ending
            # the load's own line says what it left (put back, the package kept aside)
            left = str(err).split("; ", 1)[-1] if "; " in str(err) else str(err)
            raise Stopped(signum).during(f"while loading: {left}") from err
        self.loaded = True
        return load_id

    def publish(self) -> None:
        """Publish the package `load(publish=False)` loaded (once; nothing when none waits)."""
        waiting, self.unpublished = self.unpublished, None
        if waiting is not None:
            waiting()

    def _failure(
        self,
        err: BaseException,
        what: str,
        refusal: Callable[[BaseException], DevportalError | None] | None,
    ) -> DevportalError:
        signum = stop_signal(err)
        if signum is not None:
            Stopped.received = Stopped.received or signum
            extract = getattr(err, "step", "extract") == "extract"
            step = "reading" if extract else "preparing the load"
            return Stopped(signum).during(f"while {step}: nothing was loaded")
        for cause in causes(err):
            refused = refusal(cause) if refusal is not None else None
            if refused is not None:
                return refused
        ours = devportal_cause(err)
        if ours is not None:
            return ours
        disk = next(filter(None, (disk_error(e, self.target.warehouse) for e in causes(err))), None)
        if disk is not None:
            return disk
        step = getattr(err, "step", "extract")
        return DevportalError(
            f"{what} failed at dlt's {step} step: {first_line(err)}; nothing was loaded "
            "(rerun with --debug for the details)"
        )


@contextmanager
def writing(target: Target, progress: Any = None) -> Iterator[Transaction]:
    """Hold TARGET's writer lock for the whole run, open the pipeline, recover what a killed run
    left and begin writing (DuckDB: the draft); publish what the run loaded when it ends. A run that succeeds leaves one loaded package's
    record in dlt's folder (`prune_loaded`); any run, its spooled reads removed. A disk that
    fills or turns read-only under the run, or a warehouse path that cannot be used, ends it in
    one line."""
    try:
        with writer_lock(target):
            pipeline = open_pipeline(target, progress)
            try:
                recovered = finish_pending(pipeline, target)
                clear_spools(pipeline)  # a killed run's
                begin_writing(target)
                run = Transaction(pipeline, target, recovered)
                try:
                    yield run
                except Stopped as err:
                    if not run.loaded and _bare(err):
                        raise err.during("while reading: nothing was loaded") from err
                    raise
                finally:
                    run.publish()  # a load that waited for its caller's read-back
                prune_loaded(pipeline)
            finally:
                clear_spools(pipeline)  # this run's, whatever its end: the next may be a day away
    except OSError as err:
        raise disk_error(err, target.warehouse) or DevportalError(
            f"cannot use warehouse {target.warehouse}: {err.strerror or err}; "
            "pass --warehouse a writable file path"
        ) from err


def _bare(err: Stopped) -> bool:
    """ERR says only which signal stopped the run (as the signal handler raised it)."""
    return str(err) == str(Stopped(err.signum))
