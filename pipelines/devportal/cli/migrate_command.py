"""`devportal migrate`: move the warehouse's raw dataset, history included, between the DuckDB
file and PostgreSQL, so that the next sync there continues it (devportal.operations.migrate).

The source is named with `--from-warehouse PATH` (a DuckDB file) or `--from-destination
postgres`; the target with the options every other command writes with, `--warehouse PATH`
and `--destination postgres`, so the next `devportal sync` with the same options continues
where the migration put the data.
"""

from __future__ import annotations

import argparse
from typing import Any

from devportal.cli import options
from devportal.warehouse.target import Target


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "migrate",
        help="move the warehouse (its whole history) between DuckDB and PostgreSQL",
        description=(
            "Copy every raw table of the dataset devportal (all subscription versions with "
            "their validity, sync_runs, data_quality, manifests, user settings and accounts, "
            "and dlt's schemas, loads and state) from the source to the target, check each "
            "table on both ends (row count and a fingerprint over every column), and publish "
            "the copy whole, so that the next `devportal sync` on the target continues the "
            "history. The target is named as `devportal sync` names it. Examples: `devportal "
            "migrate --from-warehouse warehouse/warehouse.duckdb --destination postgres`; back: "
            "`devportal migrate --from-destination postgres --warehouse warehouse/new.duckdb`."
        ),
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--from-warehouse", metavar="PATH", help="the DuckDB file to copy")
    source.add_argument(
        "--from-destination",
        metavar="NAME",
        help="copy from this destination: postgres (DESTINATION__POSTGRES__CREDENTIALS or "
        ".dlt/secrets.toml)",
    )
    options.add_warehouse(
        p,
        help="the target DuckDB file (default %(default)s); with --destination postgres, "
        "where dlt's folder and the lock file go, as for `devportal sync`",
    )
    options.add_destination(
        p,
        help="copy to this destination: postgres; default: the DuckDB file at --warehouse",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace what the target holds (its dataset devportal and the models built on "
        "it); without it a target holding any data is refused",
    )
    p.add_argument("--no-models", action="store_true", help="do not build the SQL models after")
    options.add_verbosity(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.operations.migrate import migrate
    from devportal.settings.config import home_destination

    home = home_destination()  # a bad setting stops the command before anything is copied
    # the target: as `devportal sync` names it, the configured warehouse included (a DuckDB
    # file marked moved may be migrated into again); when the source is that warehouse, the
    # DuckDB file at --warehouse
    target = options.target(args, moved_ok=True)
    if args.from_warehouse is not None:
        source = Target.of(args.from_warehouse)
    else:
        source = Target.of(target.warehouse, args.from_destination)
        if args.destination is None and source.name == target.name:
            target = Target.of(args.warehouse)
    migration = migrate(source, target, replace=args.replace)
    # the check's figures are the result: each table's rows on both ends and its fingerprint
    for line in migration.table_lines():
        options.say(args, line)
    options.say(args, migration.summary())
    if not args.no_models:
        options.build_models(args, target, after_sync=False)
    options.say(args, migration.home_line(home))
    return 0
