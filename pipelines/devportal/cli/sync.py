"""`devportal sync`: read the Developer API into the warehouse, then the manifest and models."""

from __future__ import annotations

import argparse
import importlib.abc
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from devportal.cli import options


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "sync",
        help="sync the Developer API into the warehouse",
        description=(
            "Read subscriptions, user settings and user accounts into the warehouse "
            "(SCD2 history for subscriptions), then rebuild the SQL models. Default: a full "
            "sweep. --since/--window read only a start/end window (see README: Sync modes)."
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
        "--progress", choices=("auto", "on", "off"), default="auto", help="progress log on stderr"
    )
    p.set_defaults(func=run)


class _NoPandas(importlib.abc.MetaPathFinder):
    """While the sync runs, `import pandas` fails: pyarrow's C++ converter imports pandas the
    first time `pa.array()` meets Python values (and tries again on every call while it is
    missing) only to recognise pandas' NA objects, which a sync never hands it. That import
    costs about 35 MB of memory and 0.35 s of a run that never uses pandas; nothing on the
    sync's path needs it. Only `devportal sync` does this, only around the sync itself, and
    only when pandas is not imported yet; the report, notebooks and library users are
    untouched."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


@contextmanager
def _without_pandas() -> Iterator[None]:
    if "pandas" in sys.modules:
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def _early_start(args: argparse.Namespace) -> Any:
    """A client already reading the subscription list while dlt and DuckDB import (see
    `cli.early`), for a sweep that reads subscriptions; else None."""
    wanted = args.resources or ["subscriptions"]
    if args.since or args.window or "subscriptions" not in wanted:
        return None
    from devportal.cli import early
    from devportal.warehouse import looks_busy

    if args.destination in (None, "duckdb") and looks_busy(args.warehouse):
        return None  # the sync will stop at once: no API requests for nothing

    return early.start(args.base_url, args.workers, args.max_workers)


def run(args: argparse.Namespace) -> int:
    early = _early_start(args)
    try:
        with _without_pandas():
            result = _sync(args, early)
    finally:
        if early is not None:
            early.close()
    print(result.summary())
    from devportal.config import resolve

    code = 0
    manifest = args.manifest or resolve(require_api=False).manifest_path
    if manifest:
        from devportal.manifest.output import load_and_report

        # a manifest with errors is recorded with its findings; exit 1 so a scheduler notices
        code = load_and_report(manifest, args.warehouse, destination=args.destination)
    if not args.no_models:
        engines = (None, "duckdb", "postgres")
        if code == 0 and args.own_process and os.name == "posix" and args.destination in engines:
            _models_in_a_fresh_process(args)
        options.build_models(args.warehouse, args.destination)
    return code


def _models_in_a_fresh_process(args: argparse.Namespace) -> NoReturn:
    """Build the models with `devportal models` in this process's place (exec), not beside the
    sync: what the sync holds (its libraries, what reading and loading left in the allocators,
    about 220 MB at 100k subscriptions) is gone before DuckDB builds them, so the run peaks at
    the larger of the two instead of their sum (about 65 MB less). Only when devportal runs as
    its own program (`args.own_process`), never inside a caller's process, and on POSIX only
    (elsewhere exec starts a new process and ends this one: the shell would not wait); the
    output and exit code are `devportal models`' own, as the in-process build's would be."""
    argv = [sys.executable, "-m", "devportal", *(["--debug"] if args.debug else [])]
    argv += ["models", "--warehouse", str(args.warehouse)]
    argv += ["--destination", args.destination] if args.destination else []
    logging.getLogger("devportal.cli").debug("models: building them in a fresh process: exec")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)


def _sync(args: argparse.Namespace, early: Any) -> Any:
    from devportal.client import RESOURCES
    from devportal.sync import sync

    return sync(
        args.warehouse,
        base_url=args.base_url,
        resources=args.resources or list(RESOURCES),
        since=args.since,
        window=args.window,
        include_test=args.include_test,
        destination=args.destination,
        progress=args.progress,
        build_models=False,
        allow_mass_close=args.allow_mass_close,
        workers=args.workers,
        max_workers=args.max_workers,
        early=early,
    )
