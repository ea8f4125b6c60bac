"""`python -m devportal.sandbox.bench`: how many subscription pages per second the sandbox serves.

Owns the sandbox's own throughput check (the project's side-by-side benchmarks live in
`benchmarks/`). The server runs as a separate `devportal sandbox` process, as in real use, so
client and server do not share one GIL; clients are keep-alive `requests.Session`s, one
sequential loop and then N threads, each request a full page of 200 rows; the first sweep
over all pages is reported apart (rows are serialised on first use, then cached). `--in-process`
measures the embedded server (the test-suite setting) instead.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import requests

from devportal.base.api import SUBSCRIPTIONS_PATH
from devportal.sandbox.server import Sandbox


@contextmanager
def standalone(subscriptions: int, token: str) -> Iterator[str]:
    cmd = [
        sys.executable, "-m", "devportal", "sandbox", "--port", "0",
        "--subscriptions", str(subscriptions), "--token", token,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        match = re.search(r"http://[0-9.]+:\d+", proc.stdout.readline())
        if match is None:
            raise RuntimeError("the sandbox printed no URL")
        yield match.group(0)
    finally:
        proc.terminate()
        proc.wait(10)


def pages_per_second(base: str, token: str, pages: int, threads: int, last_page: int) -> float:
    counts: list[int] = []

    def worker(k: int) -> None:
        with requests.Session() as s:
            s.headers["Authorization"] = f"Bearer {token}"
            n = 0
            for i in range(k, pages, threads):
                r = s.get(base + SUBSCRIPTIONS_PATH, params={"page": i % last_page + 1}, timeout=30)
                if r.status_code != 200 or len(r.content) < 1000:
                    raise RuntimeError(f"unexpected answer {r.status_code}")
                n += 1
            counts.append(n)

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - t0
    if sum(counts) != pages:
        raise RuntimeError("a client thread failed")
    return pages / elapsed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--subscriptions", type=int, default=100_000)
    p.add_argument("--pages", type=int, default=2000, help="pages per measurement")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--in-process", action="store_true", help="embedded server, same process")
    args = p.parse_args(argv)
    token = "bench-token"
    last_page = max(1, int(args.subscriptions * 0.95) // 200)
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cpu, python {platform.python_version()};"
        f" {args.subscriptions} subscriptions, {args.pages} pages of 200 rows per run"
    )
    with ExitStack() as stack:
        if args.in_process:
            sandbox = Sandbox(subscriptions=args.subscriptions, users=1000, token=token)
            base = stack.enter_context(sandbox).base_url
        else:
            base = stack.enter_context(standalone(args.subscriptions, token))
        where = "in-process" if args.in_process else "standalone"
        # First sweep: every page once, each row serialised on first use (cold row cache).
        rate = pages_per_second(base, token, last_page, 1, last_page)
        print(f"{where}, 1 keep-alive client thread, first sweep (cold): {rate:,.0f} pages/s")
        for threads in (1, args.threads):
            rate = pages_per_second(base, token, args.pages, threads, last_page)
            print(f"{where}, {threads} keep-alive client thread(s): {rate:,.0f} pages/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
