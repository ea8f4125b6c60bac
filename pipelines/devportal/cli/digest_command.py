"""`devportal digest`: the report's headline in one line (MRR when prices are set, usable
subscribers, the last full month's churn), printed and posted to the [alerts] webhooks: a line
for a daily cron (devportal.operations.alerts.digest)."""

from __future__ import annotations

import argparse
from typing import Any

from devportal.cli import options


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "digest",
        help="print the report's headline and post it to the alert webhooks (a daily cron)",
        description=(
            "Print one line with the report's headline, as of the latest successful sync: MRR "
            "(when [analytics] prices are set), usable subscribers, the last full month's churn "
            "and the last 30 days; and post it to [alerts] webhook_url (and dlt's [runtime] "
            "slack_incoming_hook). Exit 1 when a webhook is configured and none took the post "
            "(the warning says why), so a daily cron mails that."
        ),
    )
    options.add_warehouse(p)
    options.add_destination(p)
    p.add_argument("--no-post", action="store_true", help="print only; post nothing")
    options.add_verbosity(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.operations.alerts.digest import headline
    from devportal.operations.alerts.events import configured
    from devportal.operations.status import where

    target = options.target(args)
    options.figures_current(args, target)
    text = headline(target, where(target))
    options.say(args, text)
    hooks = None if args.no_post else configured(target.settings)
    if hooks is None:
        return 0
    return 0 if hooks.post(text) else 1
