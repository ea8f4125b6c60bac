"""`devportal` with what-if changes applied from outside, to measure a proposed fix before it is made.

    BENCH_WHATIF=no-pandas,jsonl,no-mmap,duckdb-lean python benchmarks/whatif.py sync ...

Nothing in devportal is edited; the changes are made to the libraries it calls, in this process:
- `no-pandas`: pandas cannot be imported. pyarrow's `pa.array(numpy array)` imports pandas
  through its pandas shim (0.35 s, ~40 MB); dlt itself does not need it on devportal's path.
- `jsonl`: `Pipeline.run` defaults to `loader_file_format="jsonl"` instead of DuckDB's preferred
  `insert_values` for the resources that yield dicts (user settings, accounts, run records).
- `no-mmap`: `pyarrow.memory_map` opens the file with a plain reader instead, so reading the
  sweep's spool back does not count its mapped pages in RSS.
- `duckdb-lean`: DuckDB connections get `threads=1` and `preserve_insertion_order=false`.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

KNOWN = ("no-pandas", "jsonl", "no-mmap", "duckdb-lean")


class _BlockPandas(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def apply(changes: set[str]) -> None:
    unknown = changes - set(KNOWN)
    if unknown:
        raise SystemExit(f"unknown what-if {sorted(unknown)}; choose from {', '.join(KNOWN)}")
    if "no-pandas" in changes:
        sys.meta_path.insert(0, _BlockPandas())
    if "duckdb-lean" in changes:
        os.environ["DESTINATION__DUCKDB__CREDENTIALS__GLOBAL_CONFIG"] = json.dumps(
            {"threads": 1, "preserve_insertion_order": False}
        )
    if "no-mmap" in changes:
        import pyarrow as pa

        def plain_reader(path: str, mode: str = "r") -> Any:
            return pa.OSFile(path, "rb")

        pa.memory_map = plain_reader
    if "jsonl" in changes:
        from dlt.pipeline.pipeline import Pipeline

        original = Pipeline.run

        def run(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("loader_file_format", "jsonl")
            return original(self, *args, **kwargs)

        Pipeline.run = run  # type: ignore[method-assign]


def main() -> int:
    apply({c.strip() for c in os.environ.get("BENCH_WHATIF", "").split(",") if c.strip()})
    from devportal.cli import main as devportal_main

    result: int = devportal_main(sys.argv[1:])
    return result


if __name__ == "__main__":
    raise SystemExit(main())
