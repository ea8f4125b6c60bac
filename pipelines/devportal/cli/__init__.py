"""Command-line interface: `devportal sync | demo | models | packages | report | manifest | sandbox`.

One module per command (`devportal.cli.<command>`), each exposing `register(subparsers)` and
its handler, which parses nothing more, calls the feature, prints, and returns the exit code;
`options` holds what several commands share. Heavy libraries (dlt, duckdb, pandas, pyarrow, the
sandbox server) are imported by the handlers only, so `devportal --help` stays fast. Expected
failures (`DevportalError`) print one line, without a traceback unless `--debug`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from devportal import __version__
from devportal.cli import demo, manifest, models, packages, report, sandbox, sync
from devportal.errors import DevportalError

# the order of `devportal --help`
COMMANDS = (sync, demo, models, packages, report, manifest, sandbox)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="devportal",
        description="Sync the Developer Portal API into a warehouse and report on subscriptions.",
    )
    parser.add_argument("--version", action="version", version=f"devportal {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def _one_line_dlt_records(record: logging.LogRecord) -> bool:
    """Without --debug, dlt's own error records (tracebacks of a failed job) are not shown:
    devportal reports the cause in its one-line error. Its warnings keep their first line."""
    if record.levelno >= logging.ERROR:
        return False
    record.msg = record.getMessage().split("\n")[0]
    record.args, record.exc_info, record.exc_text = None, None, None
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # devportal runs as its own program (the console script, `python -m devportal`), not inside
    # a caller's process: a command may then hand the rest of its work to a fresh process image
    args.own_process = argv is None
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not args.debug:
        logging.getLogger("dlt").addFilter(_one_line_dlt_records)
    try:
        return int(args.func(args))
    except DevportalError as err:
        if args.debug:
            raise
        print(f"devportal: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("devportal: interrupted", file=sys.stderr)
        return 130
