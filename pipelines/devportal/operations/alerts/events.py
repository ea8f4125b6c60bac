"""The events alerts are about, each recorded and posted: a failed `sync` or `models` run
(`watched`: recorded beside the warehouse by `devportal.operations.outcomes`, then posted with its one-line
cause), churn above a threshold after the models are built (`check_churn`, once per month),
stale data found by `devportal status` (`stale`, once per last successful sync), and the daily
digest (`send`). Without a webhook configured nothing is posted and nothing is read for it,
but failures are still recorded for `devportal status`. Nothing here raises into the command
it reports on.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devportal.base.errors import ConfigError, DevportalError, WarehouseBusy, first_line
from devportal.operations import outcomes
from devportal.operations.alerts import churn
from devportal.operations.alerts.webhook import post
from devportal.operations.status import Status, where
from devportal.warehouse.target import Target

if TYPE_CHECKING:
    from devportal.settings.alerts import AlertsConfig
    from devportal.settings.command import CommandSettings

log = logging.getLogger("devportal.alerts")


@dataclass(frozen=True)
class Hooks:
    """Where alerts go (`[alerts] webhook_url`, dlt's `[runtime] slack_incoming_hook`) and the
    settings they were found with."""

    urls: list[str]
    cfg: AlertsConfig

    def post(self, message: str) -> int:
        return post(self.urls, message, self.cfg.timeout_s)


def configured(settings: CommandSettings | None = None) -> Hooks | None:
    """The webhooks to post to; None when there is none (or, with one warning line, when
    `[alerts]` cannot be read: an alert setting never fails a run)."""
    # dlt's configuration, loaded only once an alert may be due: `devportal sync` imports this
    # module before its early read, which overlaps with dlt's import (cli.speedups)
    # deferred: loads dlt, kept out of startup
    from devportal.settings.alerts import hooks, resolve_alerts

    # deferred: loads dlt, kept out of startup
    from devportal.settings.config import warn_unknown_keys

    warn_unknown_keys()  # a misspelt [alerts] key: one warning per run (not in settings.py: a cycle)
    try:
        cfg = settings.alerts() if settings is not None else resolve_alerts()
    except ConfigError as err:
        log.warning("alerts are off: %s", err)
        return None
    urls = hooks(cfg)
    return Hooks(urls, cfg) if urls else None


def send(message: str, settings: CommandSettings | None = None) -> int:
    """Post MESSAGE to every configured webhook (SETTINGS: the command's); how many took it (0
    without any)."""
    found = configured(settings)
    return found.post(message) if found is not None else 0


def _on(target: Target) -> str:
    return f"{where(target)} on {socket.gethostname()}"


def watched(
    command: str, target: Target, work: Callable[[], int], *, builds_models: bool = True
) -> int:
    """Run WORK (the body of `devportal COMMAND` on TARGET) and return its exit code. If it
    raises, the failure is recorded and posted (`failed`) and the exception goes on as it was.
    If it returns and BUILDS_MODELS (the models were built in this process), the build is
    recorded and the churn checked (`check_churn`)."""
    try:
        code = work()
    except Exception as err:  # DevportalError and bugs alike; KeyboardInterrupt is no failure
        failed(command, target, err)
        raise
    if builds_models and target.engine is not None:
        outcomes.record_models_built(target)
        check_churn(target)
    return code


def failed(command: str, target: Target, err: BaseException) -> None:
    """Record that COMMAND failed on TARGET because of ERR and post its one-line cause. Never
    raises: whatever goes wrong here must not hide ERR.

    A run that found another holding the warehouse (`WarehouseBusy`, exit 3) is no failure:
    the run holding it is the one whose outcome counts (overlapping cron runs are harmless), and
    one that hangs holding it shows as stale data."""
    if isinstance(err, WarehouseBusy):
        return
    # deferred: loads dlt, kept out of startup
    from devportal.settings.alerts import AlertsConfigError

    posting = not isinstance(err, AlertsConfigError)  # the alerts' own settings are the fault
    try:
        if isinstance(err, DevportalError):
            code, cause = err.exit_code, str(err)
        else:
            code, cause = 1, f"unexpected error ({type(err).__name__}): {first_line(err)}"
        failure = outcomes.record_failure(target, command, code, cause)
        if posting:
            send(f"devportal {command} failed ({_on(target)}): {failure.cause}", target.settings)
    except Exception as problem:  # a cleanup's: the run's own error is what the user must see
        log.warning("could not record or post the failure: %s", first_line(problem))


# Set by a sync for the `devportal models` it execs in its place (`cli.speedups`) when no churn
# alert is configured: that process then need not load dlt's configuration to find out.
CHURN_ALERTS = "DEVPORTAL_CHURN_ALERTS"


def churn_alerts_configured() -> bool:
    """Whether a churn alert can be posted: a webhook and a churn rule set."""
    found = configured()
    return found is not None and (
        found.cfg.churn_rate_above is not None or found.cfg.churn_spike_factor is not None
    )


def check_churn(target: Target) -> None:
    """After the models are built: post once per month when the last full month's churn is
    above `churn_rate_above` or `churn_spike_factor` x the three months before. Never raises."""
    if os.environ.pop(CHURN_ALERTS, None) == "off":  # the sync that started us found none
        return
    try:
        found = configured(target.settings)
        if found is None:
            return
        cfg = found.cfg
        if cfg.churn_rate_above is None and cfg.churn_spike_factor is None:
            return
        finding = churn.judge(
            churn.complete_months(target), cfg.churn_rate_above, cfg.churn_spike_factor
        )
        if finding is None:
            return
        month = f"{finding.month.month:%Y-%m}"
        if outcomes.already_alerted(target, "churn", month):
            return
        if found.post(f"devportal: {finding.message()} ({_on(target)})"):
            outcomes.mark_alerted(target, "churn", month)
    except Exception as problem:  # the models are built; an alert that cannot be made is a note
        log.warning("could not check churn for an alert: %s", first_line(problem))


def stale(status: Status) -> None:
    """`devportal status` found the data stale (or no sync yet): post once per last successful
    sync (a status run every hour says it once, not every hour). Never raises."""
    reason = status.staleness()
    if reason is None:
        return
    target = status.target
    key = status.last_sync.run_id if status.last_sync is not None else "none"
    try:
        if outcomes.already_alerted(target, "stale", key):
            return
        if send(f"devportal: the data is stale: {reason} ({_on(target)})", target.settings):
            outcomes.mark_alerted(target, "stale", key)
    except Exception as problem:
        log.warning("could not post the stale-data alert: %s", first_line(problem))
