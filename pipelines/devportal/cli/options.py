"""The options and argument types several commands share, written once.

`--warehouse` (every command that reads or writes the warehouse), `--destination`, the one
`Target` a command makes of them (`target`) and the rule that goes with it after a load (the
SQL models are built on DuckDB and PostgreSQL, not on other destinations), options handed on
as they are (`passed`), and the argument types for dates and resource lists. Nothing heavy is
imported here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from devportal.target import Target
from devportal.warehouse import DEFAULT_WAREHOUSE


def add_warehouse(
    parser: argparse.ArgumentParser,
    *,
    default: str | None = DEFAULT_WAREHOUSE,
    help: str = "DuckDB file (default %(default)s)",
    **kwargs: Any,
) -> None:
    """`--warehouse PATH`: the DuckDB file the command works on."""
    parser.add_argument("--warehouse", default=default, help=help, **kwargs)


def add_destination(
    parser: argparse.ArgumentParser,
    *,
    help: str = "a dlt destination name (postgres, motherduck, ...) configured in .dlt/; "
    "default: DuckDB at --warehouse",
) -> None:
    """`--destination NAME`: work somewhere else than the DuckDB warehouse."""
    parser.add_argument("--destination", help=help)


def target(args: argparse.Namespace) -> Target:
    """The command's one `Target`, from `--warehouse` and `--destination` (a command without
    `--destination` works on the DuckDB file); made once by the handler and handed down."""
    return Target.of(args.warehouse, getattr(args, "destination", None))


def build_models(target: Target) -> None:
    """Build the SQL models after a load and print the summary line, or say why not: they are
    built on DuckDB (the warehouse) and PostgreSQL only (`models.build_after_load`)."""
    from devportal import models

    summary = models.build_after_load(target)
    if summary is None:
        print(
            f"models: skipped (they are built on DuckDB and PostgreSQL, not on {target.name}; "
            "query the raw tables in the dataset devportal there)"
        )
    else:
        print(models.summary_line(summary))


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
    """A comma list of names from `devportal.client.RESOURCES`."""
    from devportal.client import RESOURCES  # not config: that imports dlt

    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in RESOURCES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(RESOURCES)} (comma separated)")
    return names
