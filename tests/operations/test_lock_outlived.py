"""A writer lock that outlived its holder (issue 35): the devportal run that took the lock has
ended, but a process it started inherited the lock file's descriptor and holds it still. Every
run fails until that process ends, so it is no harmless exit 3: exit 5, recorded for `status`,
posted to the webhook, and mailed by the documented cron line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import CliResult, subscription
from tests.hostile.conftest import token_env
from tests.hostile.server import HostileApi
from tests.operations.receiver import Receiver
from tests.operations.test_cron_line import as_cron, nightly_line

Cli = Callable[..., CliResult]

# A run that takes the lock, starts a child that inherits it, and ends without letting go:
# the lock file names the run's pid, now gone; the child holds the lock until its stdin closes.
OUTLIVED = """
import os, sys
from devportal.warehouse import warehouse_lock
with warehouse_lock(sys.argv[1]):
    if os.fork() == 0:
        print("holding", flush=True)
        sys.stdin.read()
        os._exit(0)
    os._exit(0)
"""


@contextmanager
def outlived_lock(warehouse: Path) -> Iterator[None]:
    """The lock on WAREHOUSE held by a process whose parent, the lock's taker, has ended."""
    child = subprocess.Popen(
        [sys.executable, "-c", OUTLIVED, str(warehouse)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        assert child.stdout.readline() == "holding\n"  # the child has the lock; its parent ends
        child.wait(timeout=30)  # the taker is gone (its child outlives it)
        yield
    finally:
        child.stdin.close()  # the child reads EOF and ends: the lock is let go


@pytest.mark.skipif(sys.platform == "win32", reason="fork: POSIX only")
def test_a_lock_that_outlived_its_holder_is_mailed_recorded_and_posted(
    api: HostileApi, devportal: Cli, hook: Receiver, tmp_path: Path
) -> None:
    api.subscriptions = [subscription(i) for i in range(1, 4)]
    (tmp_path / "warehouse").mkdir()
    warehouse = tmp_path / "warehouse" / "warehouse.duckdb"
    env = {
        "SOURCES__DEVPORTAL__BASE_URL": api.base_url,
        **token_env(api),
        "ALERTS__WEBHOOK_URL": hook.url,
    }
    assert as_cron(nightly_line(), tmp_path, env).returncode == 0
    lock = warehouse.with_name("warehouse.duckdb.lock")
    with outlived_lock(warehouse):
        mailed = as_cron(nightly_line(), tmp_path, env)  # its output is what cron mails
        assert mailed.stdout.rstrip("\n").splitlines()[-1].startswith("devportal: error: "), mailed
        assert "has ended: a process it started still holds" in mailed.stdout
        assert f"fuser -v {lock}" in mailed.stdout
        argv = ["sync", "--base-url", api.base_url, "--warehouse", str(warehouse), "--no-models"]
        refused = devportal(*argv, env=token_env(api))
        assert refused.code == 5, refused.err  # not 3: no live run is doing the work
        result = devportal("status", "--warehouse", str(warehouse), "--format", "json")
    said = json.loads(result.out)
    assert said["state"] == "failed" and result.code != 0, said
    assert "has ended" in said["last_failure"]["cause"], said
    assert len(hook.posts) == 2 and all("has ended" in json.dumps(p) for p in hook.posts)
    # once that process ends, the next run works again
    assert as_cron(nightly_line(), tmp_path, env).returncode == 0
