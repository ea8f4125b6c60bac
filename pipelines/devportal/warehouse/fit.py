"""Whether a load fits DuckDB's memory cap (`duckdb_memory_limit`), known before it starts.

The load streams: rows are read a buffer at a time and the SCD2 merge spills past the cap. What
does not spill is the width of a table: DuckDB writes each column of a row group through its
own blocks, so the memory an `INSERT ... SELECT` holds grows with the number of columns, and a
table of many columns (an API that sends a map keyed by ids as an object, hundreds of extra
fields) fails with "Out of Memory" however few rows it has, once the whole package was read.

`unfit` tells that from the package's tables before anything loads, so the sync refuses at once,
naming the setting and the value that fits. The estimate is measured (DuckDB 1.x, one thread,
JSON lines with declared types, every field filled, 300 to 30,000 rows, caps of 64 and 128 MB):
32 MiB for the statement (its JSON read buffer), then per column 64 KiB plus 66 bytes per row,
at most 640 KiB (a row group's blocks). It errs on the safe side by about a tenth for wide tables
of many rows. At the default 128MB that is about 140 columns for a large table and about 1,000
for a few hundred rows; devportal's own tables have 10 to 40, and 16 columns of 160,000 rows load
in 48MB.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

STATEMENT = 32 * 2**20
PER_COLUMN = 64 * 1024
PER_COLUMN_ROW = 66
PER_COLUMN_MAX = 640 * 1024

_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?\s*$", re.IGNORECASE)


def cap_bytes(text: str) -> int | None:
    """DuckDB's reading of a memory setting such as "128MB" or "1GiB" in bytes (MB = 10^6, MiB
    = 2^20, as DuckDB counts); None for what this does not read (DuckDB then judges it)."""
    match = _SIZE.match(str(text))
    if match is None:
        return None
    number, unit = match.groups()
    return int(float(number) * _UNITS[(unit or "b").lower()])


def need_bytes(columns: int, rows: int) -> int:
    """The memory DuckDB holds to load ROWS rows of a table of COLUMNS columns (estimated)."""
    return STATEMENT + columns * min(PER_COLUMN_MAX, PER_COLUMN + PER_COLUMN_ROW * rows)


def may_not_fit(columns: int, cap: int) -> bool:
    """Whether a table this wide can exceed CAP at all (else its rows need not be counted)."""
    return STATEMENT + columns * PER_COLUMN_MAX > cap


@dataclass(frozen=True)
class Unfit:
    table: str
    columns: int
    rows: int
    need: int  # bytes

    def setting(self) -> str:
        """A `duckdb_memory_limit` that fits, rounded up to a plain figure."""
        mb = -(-self.need * 5 // 4 // 10**6)  # a quarter above the estimate
        step = 64 if mb <= 1024 else 256
        mb = -(-mb // step) * step
        return f"{mb}MB" if mb < 1024 else f"{mb / 1000:g}GB"


def unfit(tables: Mapping[str, tuple[int, int]], cap: int) -> Unfit | None:
    """The widest need among TABLES ({name: (columns, rows)}) above CAP bytes, or None."""
    worst = None
    for name, (columns, rows) in tables.items():
        need = need_bytes(columns, rows)
        if need > cap and (worst is None or need > worst.need):
            worst = Unfit(name, columns, rows, need)
    return worst
