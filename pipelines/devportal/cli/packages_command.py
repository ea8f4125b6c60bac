"""`devportal packages`: the load packages a sync set aside because they could not load.

A run whose load fails is put back out of the warehouse (all or nothing) and its package is
kept in `<dlt folder>/set_aside/<load_id>/` with the reason (devportal.load.pipeline), so nothing
read is lost and later syncs proceed. This command lists them and discards them once looked at:
every file of a discarded package goes, dlt's archived copy of its failed jobs included.
"""

from __future__ import annotations

import argparse
from typing import Any

from devportal.base.errors import ConfigError, DevportalError
from devportal.cli import options


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "packages",
        help="list or discard load packages set aside by failed loads",
        description=(
            "A sync whose load fails leaves the warehouse as it was and keeps the run's load "
            "package aside. `devportal packages` lists them with the reason; "
            "`devportal packages discard LOAD_ID` (or `--all`) deletes them."
        ),
    )
    p.add_argument("action", nargs="?", choices=("list", "discard"), default="list")
    p.add_argument("load_id", nargs="?", help="the package to discard")
    p.add_argument("--all", action="store_true", help="discard every set-aside package")
    options.add_warehouse(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.load.packages import discard_set_aside, set_aside_packages, set_aside_reason

    packages = set_aside_packages(args.warehouse)
    if args.action == "list":
        if not packages:
            print(f"no packages set aside for {args.warehouse}")
        for package in packages:
            files = sum(1 for f in package.rglob("*") if f.is_file())
            print(f"{package.name}  {files} files  {package}\n    {set_aside_reason(package)}")
        return 0
    if args.all:
        chosen = packages
    elif args.load_id:
        chosen = [p for p in packages if p.name == args.load_id]
        if not chosen:
            known = ", ".join(p.name for p in packages) or "none"
            raise ConfigError(
                f"no package {args.load_id} set aside for {args.warehouse} (set aside: {known})"
            )
    else:
        raise ConfigError("name the package to discard (LOAD_ID) or pass --all")
    for package in chosen:
        try:
            discard_set_aside(args.warehouse, package)
        except OSError as err:
            raise DevportalError(
                f"cannot delete {package}: {err.strerror or err}; check that folder's "
                "permissions (and that its file system is writable) and run again"
            ) from err
        print(f"discarded {package.name}")
    return 0
