"""What `devportal sync` does only to be faster or smaller, and the one switch that turns it off.

    DEVPORTAL_SPEEDUPS=off devportal sync ...            # none of them
    DEVPORTAL_SPEEDUPS=early,no-pandas devportal sync ...  # only these

- `early`: the subscription list is read while dlt and DuckDB import (`cli.early`).
- `fork-read`: that early read runs in a forked child process (`http.forked`, Linux), so its
  HTTP work and the imports run on two cores instead of taking turns on one interpreter lock.
- `no-pandas`: `import pandas` fails while the sync runs (see `without_pandas`).
- `fresh-models`: the models are built by `devportal models` exec'd in the sync's place.

Each changes when the work happens or where memory goes, never what is loaded: the warehouse
is the same with the switch on or off (the tests run both ways). `make bench` measures them;
benchmarks/results/ has the figures with the switch on and off.
"""

from __future__ import annotations

import argparse
import importlib.abc
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from devportal.cli import options

if TYPE_CHECKING:
    from devportal.warehouse.target import Target

SWITCH = "DEVPORTAL_SPEEDUPS"
ALL = ("early", "fork-read", "no-pandas", "fresh-models")


def enabled(name: str) -> bool:
    """Whether the speed-up NAME is on: all are, unless DEVPORTAL_SPEEDUPS says otherwise
    (`off`/`none`/`0`: none; a comma list: those)."""
    value = os.environ.get(SWITCH, "on").strip().lower()
    if value in ("", "on", "all", "1", "true", "yes"):
        return True
    if value in ("off", "none", "0", "false", "no"):
        return False
    return name in {part.strip() for part in value.split(",")}


def early_client(args: argparse.Namespace, target: Target) -> Any:
    """A client already reading the subscription list while dlt and DuckDB import, for a sweep
    that reads subscriptions (`cli.early_start`); else None."""
    wanted = args.resources or ["subscriptions"]
    if not enabled("early") or args.since or args.window or "subscriptions" not in wanted:
        return None
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.cli import early_start
    from devportal.warehouse import looks_busy

    if target.is_file and looks_busy(target.warehouse):
        return None  # the sync will stop at once: no API requests for nothing
    fork = bool(args.own_process) and enabled("fork-read")
    return early_start.start(args.base_url, args.workers, args.max_workers, fork=fork)


class _NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


@contextmanager
def without_pandas() -> Iterator[None]:
    """While the sync runs, `import pandas` fails. pyarrow's C++ converter imports pandas the
    first time `pa.array()` meets Python values (and tries again on every call while it is
    missing) only to recognise pandas' NA objects, which a sync never hands it: about 35 MB
    and 0.35 s of a run that never uses pandas. Only around the sync itself, and only when
    pandas is not imported yet; the report, notebooks and library users are untouched."""
    if not enabled("no-pandas") or "pandas" in sys.modules:
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def models_in_a_fresh_process(args: argparse.Namespace, target: Target) -> None:
    """Build the models with `devportal models` in this process's place (exec), when that is
    on and possible; otherwise return, and the caller builds them in process.

    What the sync holds (its libraries, what reading and loading left in the allocators, about
    220 MB at 100k subscriptions) is gone before DuckDB builds them, so the run peaks at the
    larger of the two instead of their sum (about 65 MB less). Only when devportal runs as its
    own program (`args.own_process`), never inside a caller's process, and on POSIX only
    (elsewhere exec starts a new process and ends this one: the shell would not wait); the
    output and exit code are `devportal models`' own, as the in-process build's would be."""
    own = args.own_process and os.name == "posix" and target.engine is not None
    if own and enabled("fresh-models"):
        _exec_models(args, target)


def _hand_over_settings() -> None:
    """What the models' process would resolve through dlt's configuration (about 0.3 s to
    import), resolved here where it is loaded already, and handed over in its environment: the
    seeds (`models.seeds.HANDED_OVER`: prices, status treatments) and whether a churn alert
    can be due at all (`alerts.events.CHURN_ALERTS`). Nothing secret: a webhook's URL stays
    for the models' process to resolve itself when an alert is configured. A setting that
    cannot be read is left for that process to refuse in its own words."""
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.base.errors import ConfigError
    from devportal.models.seeds import HANDED_OVER, encode_seeds, seeds_from_settings
    from devportal.operations.alerts.events import CHURN_ALERTS, churn_alerts_configured

    try:
        os.environ[HANDED_OVER] = encode_seeds(seeds_from_settings())
    except ConfigError:
        os.environ.pop(HANDED_OVER, None)
    if not churn_alerts_configured():
        os.environ[CHURN_ALERTS] = "off"


def _exec_models(args: argparse.Namespace, target: Target) -> NoReturn:
    argv = [sys.executable, "-m", "devportal", *(["--debug"] if args.debug else [])]
    argv += ["models", "--after-sync", *options.verbosity_flags(args)]
    argv += ["--warehouse", str(target.warehouse)]
    argv += [] if target.is_file else ["--destination", target.name]
    _hand_over_settings()
    logging.getLogger("devportal.cli").debug("models: building them in a fresh process: exec")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)
