"""The content check of a migration: per table, a fingerprint over every column of every row,
computed the same way whichever engine the rows were read from (`ends` reads both into the same
Arrow types), so a table and its copy on the other engine have the same fingerprint exactly when
they hold the same rows.

Each value becomes one canonical text: instants in UTC, decimals at their scale, floats in
their shortest exact form, JSON parsed and written back with sorted keys (PostgreSQL's `jsonb`
keeps neither the key order nor the spacing of the text it was given), binary in hex, NULL as a
marker no text can hold. Each row's texts are hashed (64 bits, columns in name order) and the
row hashes summed modulo 2**64: the order rows are read in does not matter, a missing,
duplicated or changed row does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

NULL = "\x00"  # PostgreSQL text cannot hold U+0000: no value is ever this text


@dataclass
class Fingerprint:
    rows: int = 0
    total: int = 0  # the sum of the row hashes, modulo 2**64

    @property
    def digest(self) -> str:
        return f"{self.total:016x}"

    def add(self, batch: pa.RecordBatch, json_columns: Iterable[str] = ()) -> None:
        if batch.num_rows == 0:
            return
        hashes = row_hashes(batch, set(json_columns))
        # numpy sums unsigned 64-bit integers modulo 2**64
        self.total = (self.total + int(hashes.sum(dtype=np.uint64))) % 2**64
        self.rows += batch.num_rows

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fingerprint):
            return NotImplemented
        return (self.rows, self.total) == (other.rows, other.total)

    __hash__ = None  # type: ignore[assignment]


def row_hashes(batch: pa.RecordBatch, json_columns: set[str]) -> np.ndarray:
    """One 64-bit hash per row of BATCH over the canonical texts of its columns."""
    names = sorted(batch.schema.names)
    texts = {
        name: canonical(batch.column(batch.schema.get_field_index(name)), name in json_columns)
        for name in names
    }
    frame = pd.DataFrame(texts, columns=names)
    return pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64)


def canonical(array: pa.Array, is_json: bool = False) -> list[str]:
    """Each value of ARRAY as its canonical text (`NULL` for a null)."""
    if is_json:
        return [NULL if v is None else _json(v) for v in array.to_pylist()]
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        return [NULL if v is None else v.hex() for v in array.to_pylist()]
    if pa.types.is_timestamp(array.type) and array.type.tz is not None:
        array = pc.cast(array, pa.timestamp("us", tz="UTC"))
    texts = pc.fill_null(pc.cast(array, pa.string()), NULL)
    return [str(v) for v in texts.to_pylist()]


def _json(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:  # not JSON after all: compared as the text it is
        return text
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
