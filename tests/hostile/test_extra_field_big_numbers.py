"""An integer beyond 64 bits in a field the spec does not show is kept digit for digit.

Such an integer cannot be a BIGINT: the plan sends it to the column's text variant
(`<column>__v_text`), and inside a list it stays in the JSON text as sent. Before the spool
kept extra fields as typed columns, they travelled as JSON text read back by orjson, which
reads such an integer as a float: the sync failed ("no variant column for a double value"),
or the digits were rounded away.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.helpers import CliResult, query, subscription
from tests.hostile.conftest import token_env
from tests.hostile.server import HostileApi

Devportal = Callable[..., CliResult]
SyncArgs = Callable[..., list[str]]
BIG = 2**70  # 1180591620717411303424


def test_integers_beyond_64_bits_are_kept_exactly(
    api: HostileApi, devportal: Devportal, sync_args: SyncArgs
) -> None:
    api.subscriptions = [
        subscription(1, credits=5, ledger=[1, 2]),
        subscription(2, credits=BIG, ledger=[1, BIG]),
    ]
    args = sync_args()
    result = devportal(*args, env=token_env(api))
    assert result.code == 0, result.err
    warehouse = Path(args[args.index("--warehouse") + 1])
    rows = query(
        warehouse,
        "SELECT id, credits, credits__v_text, ledger FROM devportal.subscriptions ORDER BY id",
    )
    assert [(r[0], r[1], r[2], json.loads(r[3])) for r in rows] == [
        (1, 5, None, [1, 2]),
        (2, None, str(BIG), [1, BIG]),
    ]
