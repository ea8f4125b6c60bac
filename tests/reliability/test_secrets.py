"""After runs with faults and failures the token appears nowhere: logs, warehouse, dlt folder."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from devportal.base.errors import DevportalError
from devportal.load.sync import sync
from devportal.warehouse import pipelines_dir
from tests.helpers import FAST_RETRY, run_devportal

TOKEN = "sEcReT-t0ken-" + "q" * 24


def test_token_never_leaks(sandbox_factory: Any, warehouse: Path, caplog: Any, capsys: Any) -> None:
    caplog.set_level(logging.DEBUG)
    sb = sandbox_factory(subscriptions=800, users=80, seed=51, token=TOKEN)
    common = {"base_url": sb.base_url, **FAST_RETRY}
    errors: list[str] = []

    sb.set_faults(rate=0.3, seed=5, retry_after=0)
    sync(warehouse, access_token=TOKEN, max_attempts=15, **common)  # retries are logged
    sb.set_faults(rate=1.0, seed=5, retry_after=0)
    with pytest.raises(DevportalError) as failed:
        sync(warehouse, access_token=TOKEN, max_attempts=2, **common)
    errors.append(str(failed.value))
    sb.set_faults(None)
    with pytest.raises(DevportalError) as rejected:
        sync(warehouse, access_token=TOKEN[:-1], **common)
    errors.append(str(rejected.value))
    sb.advance(days=3)
    sync(warehouse, access_token=TOKEN, **common)

    # the CLI, in a process of its own, with --debug logging
    proc = run_devportal(
        "--debug", "sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), "--no-models",
        env={"SOURCES__DEVPORTAL__ACCESS_TOKEN": TOKEN},
    )  # fmt: skip
    assert proc.code == 0, proc.err

    captured = capsys.readouterr()
    texts = [caplog.text, captured.out, captured.err, proc.out, proc.err, *errors]
    assert "retry" in caplog.text  # the logs we searched are the ones that talk about retries
    for text in texts:
        assert TOKEN not in text
        assert TOKEN[:-1] not in text

    files = [warehouse, *pipelines_dir(warehouse).rglob("*")]
    searched = 0
    for path in files:
        if path.is_file():
            data = path.read_bytes()
            searched += 1
            assert TOKEN.encode() not in data, f"token found in {path}"
            assert TOKEN[:-1].encode() not in data, f"token found in {path}"
    assert searched > 5  # the dlt folder (state, schemas, trace) was really there
