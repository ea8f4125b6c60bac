"""The early read in a forked child (`devportal.http.forked`, the `fork-read` speed-up): the
parent takes the same pages, in the same order, as a read in one process; every request is
counted, the child's retries too; an error that ends the read (a 401, a page the guard refuses)
is raised in the parent with the same message; and no child outlives its parent.

A process with more than one thread never forks (pytest's workers have several), so each case
runs a small driver (`DRIVER`) in a process of its own against the hostile API over real HTTP,
and the CLI case runs `python -m devportal sync` itself.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import query, run_devportal
from tests.hostile.server import SUBSCRIPTIONS, Answer, HostileApi, Request

# what a run's early start does (`cli.early_start`): a client, its list prefetched (FORK as
# argv[3] says), then the list read from page 1 as the sync reads it; one JSON line out
DRIVER = r"""
import json, os, sys
from devportal.base.errors import DevportalError
from devportal.http import SUBSCRIPTIONS_PATH, ApiClient, HttpSettings

base_url, token, fork = sys.argv[1], sys.argv[2], sys.argv[3] == "fork"
settings = HttpSettings(base_url=base_url, access_token=token, max_attempts=3, backoff_initial_s=0.01)
client = ApiClient(settings)
client.prefetch(SUBSCRIPTIONS_PATH, fork=fork)
ahead = client._prefetch
print(json.dumps({"kind": type(ahead).__name__, "child": getattr(ahead, "_pid", None)}), flush=True)
out = {}
try:
    first = client.first_page(SUBSCRIPTIONS_PATH)
    pages = list(client.iter_pages(SUBSCRIPTIONS_PATH, first=first))
    out["ids"] = [row["id"] for page in pages for row in page.data]
    out["numbers"] = [page.number for page in pages]
except DevportalError as err:
    out["error"] = str(err)
me = os.getpid()
out["children"] = open(f"/proc/{me}/task/{me}/children").read().split()
out["requests"], out["retries"] = client.stats.requests, client.stats.retries
out["peak"] = client.concurrency.stats().peak
client.close()
print(json.dumps(out), flush=True)
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def drive(
    api: HostileApi, mode: str = "fork", token: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The driver's two lines: what prefetches (and its child), then what it read."""
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, api.base_url, token or api.token, mode],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    started, read = (json.loads(line) for line in done.stdout.splitlines())
    return started, read


def listed(api: HostileApi, rows: int, per_page: int = 2) -> None:
    api.per_page = per_page
    api.subscriptions = [
        {"id": i, "service_id": 100 + i, "status": "active", "expires_at": "2027-01-01 00:00:00"}
        for i in range(1, rows + 1)
    ]


def list_hits(api: HostileApi) -> list[int]:
    return [int(r.query.get("page", "1")) for r in api.requests if r.path == SUBSCRIPTIONS]


def test_the_parent_takes_every_page_in_order_and_counts_every_request(api: HostileApi) -> None:
    listed(api, 160)
    started, read = drive(api)
    assert started["kind"] == "ForkedPrefetch" and started["child"] > 0
    assert read["ids"] == list(range(1, 161)) and read["numbers"] == list(range(1, 81))
    assert sorted(list_hits(api)) == list(range(1, 81))  # each page asked once
    assert read["requests"] == 80 and read["retries"] == 0  # the child's, taken over
    assert read["peak"] > 4  # what its concurrency controller learned came along
    assert read["children"] == []  # reaped


def test_a_server_error_in_the_child_is_retried_as_in_one_process(api: HostileApi) -> None:
    listed(api, 40)
    failed: list[int] = []

    def once_500(req: Request) -> Answer:
        if req.query.get("page") == "7" and not failed:
            failed.append(7)
            return Answer(500, {"message": "boom"})
        return api.subscriptions_answer(req)

    api.route(SUBSCRIPTIONS, once_500)
    _, read = drive(api)
    assert read["ids"] == list(range(1, 41))
    assert list_hits(api).count(7) == 2
    # every request counted, the retry too
    assert read["requests"] == len(list_hits(api)) and read["retries"] == 1
    assert read["children"] == []


@pytest.mark.parametrize("answer", ["401", "repeats"])
def test_an_error_is_the_same_as_in_one_process(api: HostileApi, answer: str) -> None:
    """A 401, or a server that ignores `page` (its page 3 repeats page 2: refused by the page
    guard), ends the read with the same message whether a child read ahead or not."""
    listed(api, 20)
    token = "a-revoked-token" if answer == "401" else api.token
    if answer == "repeats":

        def page_3_repeats(req: Request) -> Answer:
            if req.query.get("page") == "3":
                asked = Request(req.path, {**req.query, "page": "2"}, req.headers, req.base_url)
                return Answer(200, {**api.page(asked, api.subscriptions), "current_page": 3})
            return api.subscriptions_answer(req)

        api.route(SUBSCRIPTIONS, page_3_repeats)
    forked, in_one = drive(api, "fork", token)[1], drive(api, "thread", token)[1]
    assert forked["error"] and forked["error"] == in_one["error"]
    assert ("401" in forked["error"]) == (answer == "401")
    assert "ids" not in forked and forked["children"] == []


def gone(pid: int) -> bool:
    """PID has ended (a zombie no one reaped yet counts: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_the_child_dies_with_its_parent(api: HostileApi) -> None:
    listed(api, 20)
    held, release = threading.Event(), threading.Event()

    def hold_page_4(req: Request) -> Answer:
        if req.query.get("page") == "4":
            held.set()
            release.wait(120)  # past the test's deadline: only the parent's death ends the child
        return api.subscriptions_answer(req)

    api.route(SUBSCRIPTIONS, hold_page_4)
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, api.base_url, api.token, "fork"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        child = json.loads(proc.stdout.readline())["child"]
        assert held.wait(30), "the child never asked for page 4"
        assert not gone(child)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        deadline = time.monotonic() + 15
        while not gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(child), f"the early read's child {child} outlived its parent"
    finally:
        release.set()
        proc.kill()
        proc.wait(30)


def test_a_sync_with_a_forked_read_loads_what_one_without_loads(
    api: HostileApi, tmp_path: Path
) -> None:
    """`devportal sync` as its own program, with a 503 on the way: the same rows and the same
    count of requests in `sync_runs` as the server saw."""
    listed(api, 60, per_page=3)
    failed: list[int] = []

    def once_503(req: Request) -> Answer:
        if req.query.get("page") == "5" and not failed and "id" not in req.query:
            failed.append(5)
            return Answer(503, {"message": "busy"})
        return api.subscriptions_answer(req)

    api.route(SUBSCRIPTIONS, once_503)
    rows = {}
    for speedups in ("on", "off"):
        before = len(api.requests)
        warehouse = tmp_path / speedups / "wh.duckdb"
        env: dict[str, str | None] = {
            "SOURCES__DEVPORTAL__ACCESS_TOKEN": api.token,
            "SOURCES__DEVPORTAL__BACKOFF_INITIAL_S": "0.01",
            "DEVPORTAL_SPEEDUPS": speedups,
        }
        argv = ("sync", "--base-url", api.base_url, "--warehouse", str(warehouse))
        done = run_devportal(*argv, "--resources", "subscriptions", "--no-models", env=env)
        assert done.code == 0, done.err
        rows[speedups] = query(
            warehouse, "select id, service_id, status, expires_at from devportal.subscriptions"
        )
        [(requests,)] = query(warehouse, "select requests from devportal.sync_runs")
        assert requests == len(api.requests) - before
    assert sorted(rows["on"]) == sorted(rows["off"]) and len(rows["on"]) == 60


def test_an_error_crosses_only_when_it_comes_back_the_same() -> None:
    """What the child raises is raised in the parent only if it unpickles to the same type,
    text and exit code; else the parent reads on and meets the error itself."""
    from devportal.base.errors import ApiError, ConfigError, Stopped
    from devportal.http.forked import _crosses

    assert _crosses(ApiError("access token rejected (401)"))
    assert _crosses(ConfigError("bad", exit_code=2)) and _crosses(ValueError("x"))
    assert not _crosses(Stopped(15))  # its signal number is not its argument
