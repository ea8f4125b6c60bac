"""`devportal sandbox`: run the Developer API sandbox in the foreground until Ctrl-C.

Owns the sub-command's arguments and the start banner. The banner is the only place the
token is ever printed (one `export` line); the sample curl refers to it by variable. The
sandbox (devportal.sandbox, an HTTP server) is imported by the handler only.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from devportal.base.api import SUBSCRIPTIONS_PATH
from devportal.base.errors import ConfigError

DESCRIPTION = """\
Serve the Developer Portal API (spec: subscriptions, users/settings, users/{id}) from a
deterministic simulated world on 127.0.0.1, with a clock you can advance and optional faults.

Assumption: the start/end filters of /subscriptions apply to each subscription's creation time,
which responses do not carry (bounds inclusive; a date-only end covers the whole day).

Control endpoints (same bearer token; never faulted):
  GET  /__sandbox/state                     clock, counts, fault settings, request counters
  POST /__sandbox/advance?days=N&hours=H    move the clock; returns what changed
  POST /__sandbox/faults   {"rate":0.1,"kinds":["429","reset"],"seed":1,"retry_after":1}
                           {} clears; {"queue":["503",null]} scripts the next requests
  POST /__sandbox/latency  {"ms": 50}
  POST /__sandbox/rate-limit {"per_second": 20, "burst": 20}   {} clears
  POST /__sandbox/server-ms  {"ms": 5}

Slowness: --latency-ms X delays every API request by X ms on its own thread, so concurrent
requests overlap (8 at once take ~X ms); --server-ms X is serial server time, one global lock
held X ms per request like a single-worker backend (8 at once take >= 8*X ms).
Rate limit (--rate-limit R): a token bucket per bearer token, like Laravel's throttle
middleware; beyond it, 429 with Retry-After (whole seconds); API answers, 200s included,
carry X-RateLimit-Limit (R, per second) and X-RateLimit-Remaining. Control endpoints are never
limited; /__sandbox/state counts the 429s as stats.rate_limited.
"""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "sandbox",
        help="run the Developer API sandbox (a local fake of the API)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port; 0 picks a free one (default 8765)")
    _add_world_options(p)
    _add_fault_options(p)
    _add_load_options(p)
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    p.set_defaults(func=run)


def _add_world_options(p: argparse.ArgumentParser) -> None:
    """What the simulated world holds and how it answers."""
    p.add_argument(
        "--subscriptions",
        type=int,
        default=10_000,
        metavar="N",
        help="generated subscriptions (default 10000)",
    )
    p.add_argument(
        "--users",
        type=int,
        default=None,
        metavar="M",
        help="generated users (default N/5, at least 10)",
    )
    p.add_argument(
        "--seed", type=int, default=7, help="world seed: same seed, same data (default 7)"
    )
    p.add_argument(
        "--token", default=None, help="bearer token to require (default: random, printed)"
    )
    p.add_argument(
        "--start", default="2026-11-01 00:00:00", help="clock start, UTC (default %(default)s)"
    )
    p.add_argument(
        "--test-share",
        type=float,
        default=0.05,
        metavar="F",
        help="share of test subscriptions (default 0.05)",
    )
    p.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        metavar="X",
        help="delay per API request; concurrent requests overlap (default 0)",
    )


def _add_fault_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fault-rate",
        type=float,
        default=0.0,
        metavar="R",
        help="share of API requests that fail (default 0)",
    )
    # the kinds are devportal.sandbox.faults', named by the handler: importing the sandbox
    # here would load its HTTP server for every `devportal` command
    p.add_argument(
        "--fault-kinds",
        default=None,
        metavar="K,K",
        help="comma list of fault kinds, e.g. 429,503,reset (default: the usual kinds, named "
        "in the banner; an unknown kind lists every kind)",
    )
    p.add_argument(
        "--fault-seed", type=int, default=1, help="seed of the fault sequence (default 1)"
    )
    p.add_argument(
        "--retry-after",
        type=int,
        default=1,
        metavar="S",
        help="Retry-After seconds of injected 429s (default 1)",
    )


def _add_load_options(p: argparse.ArgumentParser) -> None:
    """How much load the server takes before it slows down or pushes back."""
    p.add_argument(
        "--rate-limit",
        type=float,
        default=None,
        metavar="R",
        help="API requests per second per bearer token, then 429 (default: no limit)",
    )
    p.add_argument(
        "--rate-burst",
        type=float,
        default=None,
        metavar="B",
        help="bucket size of --rate-limit: requests allowed at once (default max(1, R))",
    )
    p.add_argument(
        "--signups-per-s",
        type=float,
        default=0.0,
        metavar="R",
        help="a busy app: R new subscriptions a second join the end of the live list while it "
        "is read (between pages; default 0)",
    )
    p.add_argument(
        "--server-ms",
        type=float,
        default=0.0,
        metavar="X",
        help="serial server time per admitted API request: one at a time, like a single worker "
        "(default 0)",
    )


def run(args: argparse.Namespace) -> int:
    sandbox, banner = _sandbox(args)
    try:
        sandbox.start()
    except OSError as err:
        raise ConfigError(
            f"sandbox: cannot listen on {args.host}:{args.port} ({err.strerror}); "
            "pick another --port or use --port 0"
        ) from err

    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    url = sandbox.base_url
    lines = (
        f"devportal sandbox serving {url} ({banner})",
        f"export SOURCES__DEVPORTAL__ACCESS_TOKEN={sandbox.token}",
        'curl -s -H "Authorization: Bearer $SOURCES__DEVPORTAL__ACCESS_TOKEN" '
        f'"{url}{SUBSCRIPTIONS_PATH}?page=1"',
        f"devportal sync --base-url {url}  # reads the token exported above",
        "Ctrl-C stops; control endpoints under /__sandbox/ (see --help)",
    )
    print("\n".join(lines), flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        sandbox.stop()
    print("devportal sandbox stopped", file=sys.stderr, flush=True)
    return 0


def _sandbox(args: argparse.Namespace) -> tuple[Any, str]:
    """The sandbox the arguments describe (not started), and the banner's description of it."""
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.sandbox import DEFAULT_KINDS, FaultConfig, Sandbox

    users = args.users if args.users is not None else max(10, args.subscriptions // 5)
    fault_kinds = args.fault_kinds if args.fault_kinds is not None else ",".join(DEFAULT_KINDS)
    try:
        faults = None
        if args.fault_rate > 0:
            kinds = tuple(k.strip() for k in fault_kinds.split(",") if k.strip())
            faults = FaultConfig(
                rate=args.fault_rate,
                kinds=kinds,
                seed=args.fault_seed,
                retry_after=args.retry_after,
            )
        if args.rate_burst is not None and args.rate_limit is None:
            raise ValueError("--rate-burst needs --rate-limit")
        rate_limit = None
        if args.rate_limit is not None and args.rate_limit != 0:
            rate_limit = {"per_second": args.rate_limit, "burst": args.rate_burst}
        sandbox = Sandbox(
            subscriptions=args.subscriptions,
            users=users,
            seed=args.seed,
            token=args.token,
            latency_ms=args.latency_ms,
            faults=faults,
            test_share=args.test_share,
            start=args.start,
            host=args.host,
            port=args.port,
            verbose=args.verbose,
            rate_limit=rate_limit,
            server_ms=args.server_ms,
            signups_per_s=args.signups_per_s,
        )
    except ValueError as err:
        raise ConfigError(f"sandbox: {err}; see `devportal sandbox --help`") from err
    notes = f", faults {args.fault_rate:g} of {fault_kinds}" if faults else ""
    if sandbox.rate_limit is not None:
        limit = sandbox.rate_limit
        notes += f", rate limit {limit.per_second:g}/s burst {limit.capacity:g}"
    if sandbox.server_ms > 0:
        notes += f", server {sandbox.server_ms:g} ms serial"
    if args.signups_per_s > 0:
        notes += f", {args.signups_per_s:g} signups/s while read"
    return sandbox, (
        f"{args.subscriptions} subscriptions, {users} users, seed {args.seed}, "
        f"clock {sandbox.world.now:%Y-%m-%d %H:%M:%S}{notes}"
    )
