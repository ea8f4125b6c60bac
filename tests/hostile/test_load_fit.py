"""A load that cannot fit DuckDB's memory cap is refused before it starts, naming the setting
(issue 31; `devportal.warehouse.fit`). A hostile API sends subscriptions with hundreds of extra
fields; with a small `duckdb_memory_limit` the sync refuses before loading anything, says which
table and which value fits, keeps the package aside and leaves the warehouse as it was; with
the value it names the same data loads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devportal.load.packages import set_aside_packages
from devportal.warehouse import fit
from tests.helpers import CliResult, query, subscription
from tests.hostile.conftest import token_env
from tests.hostile.server import HostileApi

Devportal = Callable[..., CliResult]

WIDE = 400  # extra fields per subscription: each one a column


def _wide(i: int) -> dict[str, Any]:
    return subscription(i, **{f"field_{n:03d}": f"value {i} {n}" for n in range(WIDE)})


def test_a_table_too_wide_for_the_cap_is_refused_before_loading(
    api: HostileApi, devportal: Devportal, sync_args: Callable[..., list[str]], tmp_path: Path
) -> None:
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    api.subscriptions = [subscription(i) for i in range(1, 4)]
    args = sync_args(warehouse=warehouse)
    first = devportal(*args, env=token_env(api))
    assert first.code == 0, first.err
    before = query(warehouse, "SELECT count(*) FROM devportal.subscriptions")[0][0]

    api.subscriptions = [_wide(i) for i in range(1, 301)]
    refused = devportal(*args, env=token_env(api, duckdb_memory_limit="32MB"))
    assert refused.code != 0
    said = refused.err
    assert "was not loaded" in said and "table subscriptions has" in said, said
    assert "duckdb_memory_limit" in said and "(32MB)" in said, said
    assert "Traceback" not in said and "Out of Memory" not in said, said
    # the value it names is one the estimate fits
    suggested = said.split('duckdb_memory_limit = "', 1)[1].split('"', 1)[0]
    columns = int(said.split("has ", 1)[1].split(" columns", 1)[0].replace(",", ""))
    assert columns > WIDE
    cap = fit.cap_bytes(suggested)
    assert cap is not None and fit.need_bytes(columns, 300) < cap
    # nothing loaded, the package is kept with its reason
    assert query(warehouse, "SELECT count(*) FROM devportal.subscriptions")[0][0] == before
    kept = set_aside_packages(warehouse)
    assert len(kept) == 1 and "duckdb_memory_limit" in (kept[0] / "SET_ASIDE.txt").read_text()

    # with the value it names, the same rows load
    loaded = devportal(*args, env=token_env(api, duckdb_memory_limit=suggested))
    assert loaded.code == 0, loaded.err
    with duckdb.connect(str(warehouse), read_only=True) as con:
        row = con.execute(
            "SELECT field_399 FROM devportal.subscriptions WHERE id = 300 AND _dlt_valid_to IS NULL"
        ).fetchone()
    assert row == ("value 300 399",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("128MB", 128 * 10**6), ("1GiB", 2**30), ("512 mb", 512 * 10**6), ("2.5GB", 25 * 10**8)],
)
def test_memory_settings_read_as_duckdb_reads_them(text: str, expected: int) -> None:
    assert fit.cap_bytes(text) == expected
    with duckdb.connect(config={"memory_limit": text}) as con:
        shown = con.execute("SELECT current_setting('memory_limit')").fetchone()
    assert shown is not None
    # DuckDB shows the cap in binary units, to one decimal: the same bytes, to its rounding
    number, unit = str(shown[0]).split()
    assert abs(float(number) * fit._UNITS[unit.lower()] - expected) < 0.05 * expected


def test_our_own_tables_are_far_from_the_default_cap() -> None:
    cap = fit.cap_bytes("128MB")
    assert cap is not None
    # devportal's widest table has about 40 columns: not even counted at the default
    assert not fit.may_not_fit(40, cap)
