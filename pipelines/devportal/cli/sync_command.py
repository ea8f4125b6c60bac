"""`devportal sync`: read the Developer API into the warehouse, then the manifest and models."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from typing import Any

from devportal.base.progress import MODES
from devportal.cli import options, speedups
from devportal.warehouse.target import Target


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "sync",
        help="sync the Developer API into the warehouse",
        description=(
            "Read subscriptions, user settings and user accounts into the warehouse "
            "(SCD2 history for subscriptions), then rebuild the SQL models. Default: a full "
            "sweep. --since/--window read only a start/end window (see README: Sync modes). "
            "On success it prints one line naming the warehouse it wrote (--quiet: none); "
            "warnings and errors go to stderr. On a terminal, a progress bar on stderr; "
            "elsewhere (cron, a log file) no progress unless --verbose or --progress on."
        ),
    )
    p.add_argument("--base-url", help="API base URL (else [sources.devportal] base_url)")
    options.add_warehouse(p)
    options.add_destination(p)
    p.add_argument(
        "--resources",
        type=options.resources,
        default=None,
        help="comma list of resources to read, e.g. subscriptions,user_settings "
        "(default: all; an unknown name lists them)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--since", type=options.date, help="window mode from this date (YYYY-MM-DD)")
    mode.add_argument(
        "--window",
        action="store_true",
        help="window mode from the last run's cursor minus the lookback",
    )
    p.add_argument(
        "--include-test", action="store_true", default=None, help="also load is_test=true rows"
    )
    p.add_argument(
        "--workers",
        type=options.positive_int,
        help="pin the requests in flight to N (default: adaptive between min and max workers)",
    )
    p.add_argument(
        "--max-workers",
        type=options.positive_int,
        help="most requests in flight while adapting (default 64, [sources.devportal])",
    )
    p.add_argument(
        "--allow-mass-close",
        action="store_true",
        default=None,
        help="accept a sweep that closes more than mass_close_max_share (20%%) of current "
        "subscriptions (refused by default: an API outage looks like mass churn)",
    )
    p.add_argument("--manifest", help="also validate and record this manifest.json or bundle")
    p.add_argument("--no-models", action="store_true", help="do not rebuild the SQL models")
    p.add_argument(
        "--progress",
        choices=MODES,
        default="auto",
        help="progress on stderr: auto (default) a bar when stderr is a terminal, else none "
        "(lines with --verbose); on: a bar, or lines every 2 s when not a terminal; off: none",
    )
    options.add_verbosity(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.operations.alerts.events import watched

    target = options.target(args)
    # a failure is recorded for `devportal status` and posted to the alert webhooks; models
    # built here are recorded and their churn checked (devportal.operations.alerts.events)
    return watched("sync", target, lambda: _run(args, target), builds_models=not args.no_models)


def _run(args: argparse.Namespace, target: Target) -> int:
    early = speedups.early_client(args, target)
    try:
        with speedups.without_pandas():
            result = _sync(args, target, early)
    finally:
        if early is not None:
            early.close()
    options.say(args, result.summary())
    code = 0
    passed = options.passed(args, SETTINGS_PASSED)
    manifest = args.manifest or target.settings.source(require_api=False, **passed).manifest_path
    if manifest:
        code = _record_manifest(args, manifest, target)
    if not args.no_models:
        if code == 0:
            speedups.models_in_a_fresh_process(args, target)  # returns when it does not exec
        options.build_models(args, target)
    return code


def _record_manifest(args: argparse.Namespace, manifest: str, target: Target) -> int:
    """Record the manifest, as `devportal manifest load` does; its exit code. What that prints
    (the findings, the `recorded ...` line) is the sync's detail: the same manifest is recorded
    on every scheduled run. A manifest with errors is recorded with its findings, which then
    go to stderr, and exits 1, so that a scheduler notices."""
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.manifest.output import load_and_report

    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code = load_and_report(manifest, target)
    if code != 0:
        print(said.getvalue(), end="", file=sys.stderr)
    elif text := said.getvalue().rstrip("\n"):
        options.detail(args, text)
    return code


# the options `devportal sync` hands to `sync.sync` as they are
PASSED = (
    "base_url",
    "since",
    "window",
    "include_test",
    "allow_mass_close",
    "workers",
    "max_workers",
)
# those of them that are `[sources.devportal]` settings (the rest choose the run's mode): the
# sync resolves the section with them on top, once (`target.settings`)
SETTINGS_PASSED = tuple(name for name in PASSED if name not in ("since", "window"))


def _sync(args: argparse.Namespace, target: Target, early: Any) -> Any:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.http import RESOURCES
    from devportal.load.sync import sync

    if not args.no_models and target.engine is not None:
        # the settings the models read, checked before anything is loaded: a misspelt price
        # key must not be found after the data loaded (one line, exit 2, nothing written)
        # deferred: the handler's own imports; the parser (every command) stays light
        from devportal.models import seeds_from_settings

        seeds_from_settings(target.settings)
    # [alerts] too: a bad one stops the sync here, not at the first alert it would post
    target.settings.alerts()
    if target.is_file:  # room for the copy the load writes, known before the API is read
        # deferred: the handler's own imports; the parser (every command) stays light
        from devportal.warehouse.draft import check_room

        check_room(target.warehouse)
    resources = args.resources or list(RESOURCES)
    passed = options.passed(args, PASSED)
    shown = options.progress(args)
    return sync(target, resources=resources, early=early, progress=shown, **passed)
