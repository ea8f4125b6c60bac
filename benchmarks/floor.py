"""The floor: devportal's own HTTP client fetching every subscriptions page and parsing it.

Nothing is transformed, spooled or loaded, so the time is what the network, the server and JSON
parsing cost on this machine: no sync can be faster than this with the same client. Prints one
JSON line with the rows seen.

    python -m benchmarks.floor --base-url URL [--workers N]

Without `--workers` the client adapts its concurrency as devportal's does by default.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import dataclass, field

from devportal.client import SUBSCRIPTIONS_PATH, ApiClient

TOKEN_ENV = "SOURCES__DEVPORTAL__ACCESS_TOKEN"


@dataclass(frozen=True)
class FloorSettings:
    """devportal's HTTP defaults (`config.DevportalConfig`), spelled out here so the floor does
    not import dlt's configuration machinery; a test keeps the two equal."""

    base_url: str
    access_token: str = field(repr=False)
    workers: int | None = None
    min_workers: int = 1
    max_workers: int = 32
    timeout_s: float = 30.0
    max_attempts: int = 8
    max_wait_s: float = 120.0
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 10.0
    retry_after_cap_s: float = 30.0
    allow_insecure_remote: bool = False


def fetch_all(base_url: str, token: str, workers: int | None) -> tuple[int, int]:
    """(rows, pages) of one full read of the list."""
    rows = pages = 0
    settings = FloorSettings(base_url=base_url, access_token=token, workers=workers)
    with ApiClient(settings) as client:
        for page in client.iter_pages(SUBSCRIPTIONS_PATH):
            rows += len(page.data)
            pages += 1
    return rows, pages


def token_from_env() -> str:
    """The bearer token, from where dlt users keep it (the environment, never argv)."""
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        raise SystemExit(f"set {TOKEN_ENV}")
    return token


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows, pages = fetch_all(args.base_url, token_from_env(), args.workers)
    seconds = time.perf_counter() - started
    print(json.dumps({"rows": rows, "pages": pages, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
