"""dlt's own rows in the dataset, carried so that dlt on the target goes on where the source left
off: the stored schemas (`_dlt_version`: every table's columns and types, the SCD2 hints of
`subscriptions`), from which the target's tables are made, and the pipeline state
(`_dlt_pipeline_state`: the window cursor), whose rows name the pipeline they belong to and are
re-addressed to the target's pipeline (`devportal` writes the DuckDB file, `devportal_postgres`
PostgreSQL: `Target.pipeline_name`). `_dlt_loads` is copied as it is: every `_dlt_load_id`
keeps the load it names.

The stored schemas are carried less what the source's syncs chose for their own destination:
the tables' `file_format` hints (`resources.formats_for`: JSON lines on DuckDB, CSV for the
subscriptions on PostgreSQL). Each is a format the other engine does not load (PostgreSQL
loads no JSON lines, devportal's DuckDB loader no CSV), so dlt on the target warned at every
sync that it ignores them (issue 35); the target's syncs choose their own
(`without_source_choices`). dlt's own hint on its state table (`preferred`: the destination's
preferred format, wherever it is) is kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from dlt.common.schema import Schema
from dlt.common.schema.utils import bump_version_if_modified
from dlt.common.versioned_state import compress_state, decompress_state
from dlt.pipeline.state_sync import generate_pipeline_state_version_hash

from devportal.base.errors import DevportalError
from devportal.operations.migrate.sides import End
from devportal.warehouse import quote_ident

VERSION_TABLE = "_dlt_version"
STATE_TABLE = "_dlt_pipeline_state"
LOADS_TABLE = "_dlt_loads"


def stored_schemas(end: End, dataset: str, where: str) -> list[Schema]:
    """The newest stored version of each dlt schema of DATASET on END (WHERE names it in an
    error): what the target's tables are made from."""
    rows = end.execute(
        f"select schema_name, version, inserted_at, {quote_ident('schema')} "
        f"from {end.qualify(dataset, VERSION_TABLE)}"
    )
    newest: dict[str, tuple[Any, ...]] = {}
    for name, version, inserted_at, text in rows:
        if name not in newest or (inserted_at, version) > newest[name][:2]:
            newest[name] = (inserted_at, version, text)
    schemas = []
    for name, (_, _, text) in sorted(newest.items()):
        try:
            schemas.append(Schema.from_stored_schema(json.loads(text)))
        except (ValueError, KeyError, TypeError) as err:
            raise DevportalError(
                f"{where}: dlt's stored schema {name} cannot be read ({err}); nothing was copied"
            ) from err
    if not schemas:
        raise DevportalError(
            f"{where} has no dlt schema in {dataset}.{VERSION_TABLE}: it was not loaded by "
            "dlt, so its tables' types and history hints are unknown; nothing was copied"
        )
    return schemas


# the one `file_format` hint that names no engine's format: dlt's, on its state table
DESTINATIONS_OWN = "preferred"


def without_source_choices(stored: dict[str, Any]) -> bool:
    """Drop from the stored schema STORED (a dict, as in `_dlt_version.schema`) each table's
    `file_format` hint but dlt's own `preferred`, bumping its version and hash as dlt does when
    a schema changes; whether anything was dropped."""
    dropped = False
    for table in (stored.get("tables") or {}).values():
        if table.get("file_format") not in (None, DESTINATIONS_OWN):
            del table["file_format"]
            dropped = True
    if dropped:
        stored.setdefault("previous_hashes", [])
        bump_version_if_modified(stored)  # type: ignore[arg-type]
    return dropped


def versions_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """BATCH of `_dlt_version` rows, each stored schema `without_source_choices` (its version
    and hash columns following the schema's)."""
    rows = batch.to_pylist()
    for row in rows:
        text = row.get("schema")
        if not isinstance(text, str):
            continue
        stored = json.loads(text)
        if without_source_choices(stored):
            row["schema"] = json.dumps(stored)
            row["version"] = stored["version"]
            row["version_hash"] = stored["version_hash"]
    return pa.RecordBatch.from_pylist(rows, schema=batch.schema)


@dataclass(frozen=True)
class Readdress:
    """How the state rows of the source's pipeline become the target's: the pipeline's name and
    destination in the row and in the state it carries, and the state's hash, which covers them
    (dlt restores a pipeline's state from the newest loaded row with its name). Rows of any
    other pipeline are kept as they are."""

    source_pipeline: str
    target_pipeline: str
    destination_type: str
    destination_name: str | None

    def batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        rows = batch.to_pylist()
        for row in rows:
            if row.get("pipeline_name") != self.source_pipeline:
                continue
            state = decompress_state(row["state"])
            state["pipeline_name"] = self.target_pipeline
            state["destination_type"] = self.destination_type
            state["destination_name"] = self.destination_name
            state["_version_hash"] = generate_pipeline_state_version_hash(state)  # type: ignore[arg-type]
            row["pipeline_name"] = self.target_pipeline
            row["state"] = compress_state(state)  # type: ignore[arg-type]
            row["version_hash"] = state["_version_hash"]
        return pa.RecordBatch.from_pylist(rows, schema=batch.schema)

    @property
    def note(self) -> str:
        if self.source_pipeline == self.target_pipeline:
            return ""
        return f"pipeline {self.source_pipeline} -> {self.target_pipeline}"
