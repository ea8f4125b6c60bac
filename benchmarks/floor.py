"""The floor: devportal's own HTTP client fetching and parsing every subscriptions page, loading
nothing: no sync with the same client can be faster. Prints one JSON line (rows, pages,
seconds, the concurrency controller's stats). `python -m benchmarks.floor --base-url URL
[--workers N]`; without `--workers` it adapts as devportal does by default."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from typing import Any

from devportal.http import SUBSCRIPTIONS_PATH, ApiClient, HttpSettings

TOKEN_ENV = "SOURCES__DEVPORTAL__ACCESS_TOKEN"


def fetch_all(base_url: str, token: str, workers: int | None) -> tuple[int, int, dict[str, Any]]:
    """(rows, pages, the concurrency controller's stats) of one full read of the list."""
    rows = pages = 0
    # devportal's HTTP defaults, spelled out in the client so the floor imports no dlt
    settings = HttpSettings(base_url=base_url, access_token=token, workers=workers)
    with ApiClient(settings) as client:
        for page in client.iter_pages(SUBSCRIPTIONS_PATH):
            rows += len(page.data)
            pages += 1
        stats = asdict(client.concurrency.stats())
        stats["requests"] = client.stats.requests
    return rows, pages, stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    token = os.environ.get(TOKEN_ENV) or sys.exit(f"set {TOKEN_ENV}")  # never in argv
    started = time.perf_counter()
    rows, pages, concurrency = fetch_all(args.base_url, token, args.workers)
    seconds = time.perf_counter() - started
    out = {"rows": rows, "pages": pages, "seconds": seconds, "concurrency": concurrency}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
