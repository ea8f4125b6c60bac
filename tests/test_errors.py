"""Text that reaches messages and logs (devportal/errors.py): the token, bearer credentials and
terminal controls scrubbed out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_devportal

TOKEN = "errors-test-t0ken-" + "k" * 20


def test_scrub_takes_out_the_token_any_bearer_credential_and_terminal_controls() -> None:
    from devportal.base.errors import register_secret, scrub, server_text

    token = "scrub-test-token-" + "z" * 16
    register_secret(token)
    register_secret("short")  # too short to tell from words: never looked for
    assert scrub(f"got {token}!") == "got [redacted]!"
    assert scrub(f"got {token[:9]}\x1b[0m{token[9:]}") == "got [redacted]"  # split by an escape
    assert (
        scrub('{"authorization": "Bearer eyJ0.e30.x-y"}')
        == '{"authorization": "Bearer [redacted]"}'
    )
    assert scrub("bearer%20abc123 and BEARER  q") == "Bearer [redacted] and Bearer [redacted]"
    assert scrub("Missing bearer token. Bearer header required") == (
        "Missing bearer token. Bearer header required"
    )
    assert scrub("a short story") == "a short story"
    assert scrub("\x1b]0;title\x07\x1b[2Jred\x9b1m\x00 \u202eok\r\nnext") == "red ok\nnext"
    assert server_text("line one\r\n\tline two\u2028three", 14) == "line one li..."
    assert scrub(scrub(f"Bearer {token}")) == "Bearer [redacted]"


def test_a_failing_model_keeps_the_duckdb_error_as_its_cause(tmp_path: Path) -> None:
    """`raise ... from err`: the one line for people, the engine's own error behind it."""
    import duckdb

    from devportal import models
    from devportal.base.errors import DevportalError

    sql = tmp_path / "sql"
    (sql / "staging").mkdir(parents=True)
    (sql / "marts").mkdir(parents=True)
    (sql / "marts" / "broken.sql").write_text("-- broken: x\nselect no_such_column\n")
    warehouse = tmp_path / "toy.duckdb"
    duckdb.connect(str(warehouse)).close()
    with pytest.raises(DevportalError, match=r"model analytics\.broken .* failed") as failed:
        models.build(warehouse, sql_dir=sql)
    assert isinstance(failed.value.__cause__, duckdb.Error)
    assert "no_such_column" in str(failed.value.__cause__)


def test_debug_traceback_shows_the_cause_and_never_the_token(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=30, users=10, seed=7, token=TOKEN)
    sb.set_faults(rate=1.0, seed=3, retry_after=0)
    proc = run_devportal(
        "--debug", "sync", "--base-url", sb.base_url, "--warehouse",
        str(tmp_path / "wh" / "warehouse.duckdb"), "--no-models",
        env={
            "SOURCES__DEVPORTAL__ACCESS_TOKEN": TOKEN,
            "SOURCES__DEVPORTAL__MAX_ATTEMPTS": "2",
            "SOURCES__DEVPORTAL__BACKOFF_INITIAL_S": "0.001",
            "SOURCES__DEVPORTAL__BACKOFF_MAX_S": "0.01",
        },
    )  # fmt: skip
    assert proc.code == 1, proc.err
    assert "Traceback (most recent call last)" in proc.err
    assert "direct cause of the following exception" in proc.err  # a cause kept, shown
    assert proc.err.rstrip().splitlines()[-1].startswith("devportal: error: ")
    assert TOKEN not in proc.err and TOKEN not in proc.out


def test_the_debug_traceback_is_scrubbed(capsys: Any) -> None:
    """A kept cause may quote what a server echoed: the traceback passes the scrub too."""
    from devportal.base.errors import DevportalError, register_secret
    from devportal.cli import _print_traceback

    register_secret(TOKEN)
    try:
        try:
            raise ValueError(f"the server said: your token is {TOKEN}")
        except ValueError as err:
            raise DevportalError("the server refused the answer; run again") from err
    except DevportalError as err:
        _print_traceback(err)
    shown = capsys.readouterr().err
    assert "ValueError: the server said: your token is [redacted]" in shown
    assert TOKEN not in shown
