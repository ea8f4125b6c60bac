"""The options and argument types several commands share, written once.

`--warehouse` (every command that reads or writes the warehouse), `--destination`, the one
`Target` a command makes of them (`target`) and the rule that goes with it after a load (the
SQL models are built on DuckDB and PostgreSQL, not on other destinations), options handed on
as they are (`passed`), and the argument types for dates and resource lists. Nothing heavy is
imported here.

How much a command says (`add_verbosity`: `--quiet`, `--verbose`), written once for all:

- its result, one line on stdout (`say`): `sync ok ...`, `models ok ...`; nothing with --quiet;
- detail a person at a terminal wants and a scheduler's log does not (`detail`): the models'
  line after a sync, the reasons a model was skipped. On stdout when it is a terminal, or
  with --verbose; so a sync run by cron logs one line per success;
- progress (`progress`): on stderr only, a bar when stderr is a terminal (`--progress` and
  `devportal.base.progress.for_run` decide), lines with --verbose when it is not;
- warnings and errors: on stderr always, --quiet included (what a scheduler mails);
  --verbose adds devportal's info records (`cli.main`).
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from devportal.base.progress import Progress, for_run, is_terminal
from devportal.warehouse import DEFAULT_WAREHOUSE
from devportal.warehouse.target import Target

if TYPE_CHECKING:
    from devportal.reporting.report import Unapplied

# how much a command says (`verbosity`)
QUIET, NORMAL, VERBOSE = 0, 1, 2


def add_warehouse(
    parser: argparse.ArgumentParser,
    *,
    default: str | None = DEFAULT_WAREHOUSE,
    help: str = "DuckDB file (default %(default)s)",
    **kwargs: Any,
) -> None:
    """`--warehouse PATH`: the DuckDB file the command works on (given: `warehouse_given`)."""
    kwargs.setdefault("action", _Given)
    parser.add_argument("--warehouse", default=default, help=help, **kwargs)


class _Given(argparse.Action):
    """Stores the option's value and notes that it was given (`warehouse_given`): an explicit
    --warehouse names the DuckDB file, over the configured warehouse (`target`)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.warehouse_given = True


def add_destination(
    parser: argparse.ArgumentParser,
    *,
    help: str = "a dlt destination name (postgres, motherduck, ...) configured in .dlt/; "
    "default: DuckDB at --warehouse",
) -> None:
    """`--destination NAME`: work somewhere else than the DuckDB warehouse; without it (and
    without --warehouse), where the settings put the warehouse (`target`)."""
    parser.add_argument("--destination", help=help)
    parser.set_defaults(configured_home=True)


def target(args: argparse.Namespace, *, moved_ok: bool = False) -> Target:
    """The command's one `Target`, made once by the handler and handed down: `--destination`
    (`duckdb`: the file), else the DuckDB file at an explicit `--warehouse`, else the
    configured warehouse (`[sources.devportal] warehouse_destination`, `config.home_destination`: with
    `postgres`, --warehouse's default only places dlt's folder and the lock), else the DuckDB
    file at --warehouse's default. A command without `--destination` (`add_destination`)
    works on the DuckDB file.

    A DuckDB file that `devportal migrate` moved elsewhere (`devportal.warehouse.moved`) is refused in
    one line saying where and the setting that makes that the home, rather than read as if
    current; MOVED_OK (`status`, `migrate`) takes it as it is."""
    destination = getattr(args, "destination", None)
    explicit = destination is not None or getattr(args, "warehouse_given", False)
    if not explicit and getattr(args, "configured_home", False):
        # deferred: the handler's own imports; the parser (every command) stays light
        from devportal.settings.config import home_destination

        destination = home_destination()
    chosen = Target.of(args.warehouse, destination)
    if chosen.is_file and not moved_ok:
        # deferred: the handler's own imports; the parser (every command) stays light
        from devportal.warehouse.moved import refuse_moved

        refuse_moved(chosen.warehouse)
    return chosen


def build_models(args: argparse.Namespace, target: Target, *, after_sync: bool = True) -> None:
    """Build the SQL models after a load and say so (`detail` AFTER_SYNC: the sync's line said
    the result; else `say`), or say why not: they are built on DuckDB (the warehouse) and
    PostgreSQL only (`models.build_after_load`)."""
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal import models

    with progress(args) as shown:
        summary = models.build_after_load(target, shown)
    tell = detail if after_sync else say
    if summary is None:
        tell(
            args,
            f"models: skipped (they are built on DuckDB and PostgreSQL, not on {target.name}; "
            "query the raw tables in the dataset devportal there)",
        )
    else:
        tell(args, models.summary_line(summary, reasons=shows_detail(args)))


def figures_current(args: argparse.Namespace, target: Target) -> Unapplied | None:
    """Before a command prints figures (`report`, `digest`): when the settings the models use
    (the price book, the status map) differ from those they were built with
    (`models.differences`), rebuild them (recorded as `devportal models` records a build).
    When the warehouse cannot be written now (another run holds it, a read-only file or
    folder), one warning on stderr: what differs, the command that applies it and that it
    needs the warehouse writable, why not now in words (no raw error, no path); and the same
    line returned (`report.Unapplied`) for the report to say in place of "no prices set". The
    figures are then read as built. The rebuild's line goes to stderr, at a terminal or with
    --verbose: a report's stdout stays its figures, a cron's digest stays quiet. Where no
    `[analytics]` setting is set at all (a command run outside the project's folder), the
    figures keep the settings of their build."""
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal import models
    from devportal.base.errors import ConfigError, DevportalError
    from devportal.models.seeds import PRICES
    from devportal.reporting.report import Unapplied
    from devportal.warehouse import engines

    if target.engine is None:
        return None
    try:
        configured = models.seeds_from_settings(target.settings)
    except ConfigError as err:  # a broken setting: the figures as built, and why not newer
        warn(f"{err}; the figures use the settings of their last build")
        return None
    try:
        with engines.connect(target, read_only=True) as engine:
            differ = models.differences(engine, configured)
    except DevportalError:
        return None  # the figures' own read says what is wrong with the warehouse
    if not differ or not _analytics_set():
        # no [analytics] setting where dlt reads (run from another folder than the project's):
        # the figures keep the settings they were built with, rather than none
        return None
    changed = "; ".join(differ)
    try:
        models.build(target)
    except DevportalError as err:
        command = "devportal models" + ("" if target.is_file else f" --destination {target.name}")
        line = (
            f"the figures use the settings of their last build, not those set now ({changed}); "
            f"`{command}` applies them once the warehouse can be written "
            f"(not now: {why_not_written(err)})"
        )
        warn(line)
        prices_set = any(seed.rows for seed in configured if seed.name == PRICES)
        return Unapplied(line, prices_set)
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.operations import outcomes
    from devportal.operations.alerts.events import check_churn

    outcomes.record_models_built(target)
    check_churn(target)
    # on stderr: the command's output (a report's JSON) stays only the figures
    if verbosity(args) >= VERBOSE or is_terminal(sys.stderr):
        print(f"devportal: models rebuilt with the settings set now ({changed})", file=sys.stderr)
    return None


# errno of a file or folder that cannot be written: no permission, read-only, immutable
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def why_not_written(err: BaseException) -> str:
    """Why the models could not be rebuilt, in words and without a path or errno: the
    warehouse read-only (an OSError of permission anywhere in ERR's causes), another run
    writing it (`WarehouseBusy`), else ERR's own first line with any `[Errno N] ...: 'path'`
    left out."""
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.base.errors import WarehouseBusy, causes

    chain = causes(err)
    if any(isinstance(e, OSError) and e.errno in _READ_ONLY_ERRNOS for e in chain):
        return "the warehouse file or its folder is read-only for this user"
    if any(isinstance(e, WarehouseBusy) for e in chain):
        return "another run is writing the warehouse"
    text = (str(err).strip().splitlines() or [type(err).__name__])[0]
    text = re.sub(r"\[Errno \d+\]\s*", "", text)
    text = re.sub(r":?\s*'[^']*[/\\][^']*'(\s*->\s*'[^']*')?", "", text)
    return text[:300] or type(err).__name__


def _analytics_set() -> bool:
    """Whether any `[analytics]` setting is set where dlt reads settings now (a settings file
    of the current or global folder, or the environment): a key with a value. A header with
    every key commented out (the template `devportal init` writes), or empty tables under it,
    sets nothing."""
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.settings import files

    tables = [table for _, table in files.written(("analytics",))]
    return any(_has_key(table) for table in tables) or bool(files.environment("ANALYTICS__"))


def _has_key(table: Any) -> bool:
    """Whether TABLE (a TOML table) holds a key with a value, in it or a table under it."""
    if not isinstance(table, dict):
        return True
    return any(_has_key(value) for value in table.values())


def warn(text: str) -> None:
    """A warning in one line on stderr, --quiet included (what a scheduler mails)."""
    print(f"devportal: warning: {text}", file=sys.stderr)


def add_verbosity(parser: argparse.ArgumentParser) -> None:
    """`-q/--quiet` and `-v/--verbose` (one or the other): how much the command says."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const=QUIET,
        help="print nothing on success (warnings and errors still go to stderr)",
    )
    group.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const=VERBOSE,
        help="say more: each step's detail and, when stderr is not a terminal, progress lines",
    )


def verbosity(args: argparse.Namespace) -> int:
    """QUIET, NORMAL or VERBOSE; NORMAL for a command without `add_verbosity`."""
    level = getattr(args, "verbosity", None)
    return NORMAL if level is None else int(level)


def verbosity_flags(args: argparse.Namespace) -> list[str]:
    """The options giving ARGS' verbosity to another devportal command (`-q`, `-v`, none)."""
    return {QUIET: ["--quiet"], VERBOSE: ["--verbose"]}.get(verbosity(args), [])


def shows_detail(args: argparse.Namespace) -> bool:
    """Whether `detail` prints: with --verbose, or on a terminal unless --quiet."""
    level = verbosity(args)
    return level >= VERBOSE or (level > QUIET and is_terminal(sys.stdout))


def say(args: argparse.Namespace, text: str) -> None:
    """The command's result TEXT on stdout, unless --quiet."""
    if verbosity(args) > QUIET:
        print(text, flush=True)


def detail(args: argparse.Namespace, text: str) -> None:
    """TEXT on stdout when a person reads it (a terminal) or asked for it (--verbose)."""
    if shows_detail(args):
        print(text, flush=True)


def progress(args: argparse.Namespace) -> Progress:
    """What the command shows on stderr while it works (`devportal.base.progress.for_run`), for its
    `--progress` (auto when it has none) and verbosity."""
    level = verbosity(args)
    mode = getattr(args, "progress", None) or "auto"
    return for_run(mode, quiet=level == QUIET, verbose=level >= VERBOSE)


def under_make(target: str) -> bool:
    """Whether this command was started by make (which exports MAKELEVEL to what it runs) from
    a folder whose Makefile has TARGET: then a hint may name `make TARGET`; otherwise it names
    the devportal command (a pip user has no such Makefile)."""
    if not os.environ.get("MAKELEVEL"):
        return False
    try:
        with open("Makefile", encoding="utf-8") as makefile:
            return any(line.startswith(f"{target}:") for line in makefile)
    except (OSError, UnicodeDecodeError):
        return False


def passed(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """The options NAMES as they were given, for a feature taking them by the same names."""
    return {name: getattr(args, name) for name in names}


def positive_int(text: str) -> int:
    """A whole number >= 1 (argparse type)."""
    try:
        value = int(text)
    except ValueError:  # from None: argparse prints only this message, a usage error
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def date(text: str) -> datetime:
    """`YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS`."""
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"{text!r} is not YYYY-MM-DD or 'YYYY-MM-DD HH:MM:SS'")


def resources(text: str) -> list[str]:
    """A comma list of names from `devportal.http.RESOURCES`."""
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.http import RESOURCES  # not config: that imports dlt

    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in RESOURCES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(RESOURCES)} (comma separated)")
    return names
