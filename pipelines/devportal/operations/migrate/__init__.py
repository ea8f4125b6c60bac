"""`devportal migrate`: carry the raw dataset `devportal` from one engine to the other (the
DuckDB warehouse file <-> PostgreSQL) so that the next sync on the target continues the
history.

The API shows only the present: the SCD2 history of subscriptions (every version with its
`_dlt_valid_from`/`_dlt_valid_to` and row hash) exists nowhere but in the warehouse. So every
table of the dataset is copied, row for row, types kept (instants with their time zone,
decimals, JSON): the subscription versions, user settings and accounts with their child tables,
`sync_runs`, `data_quality`, the manifest tables, and dlt's own tables, which are what lets dlt
carry on there: `_dlt_loads` (every row's load), `_dlt_version` (the stored schema with the
SCD2 hints) and `_dlt_pipeline_state` (the window cursor), re-addressed to the target's dlt
pipeline. The first sync on the target then merges into the versions it finds: it closes and
adds versions as it would have on the source, and inserts no second copy of the history.

A migration, step by step (`migration.migrate`):
1. Both ends are locked as a sync locks them (the lock file, PostgreSQL's advisory lock).
2. The source is read as it is, refused when an interrupted sync left a load unfinished.
3. A target holding data is refused unless told to replace it.
4. A staging copy is made on the target (`stage`): its tables by dlt from the source's stored
   schemas, filled through the engine's bulk path, the target itself untouched.
5. Each table is checked: its row count on both ends, and a fingerprint over every column of
   every row as written and as read back from the copy (`fingerprint`).
6. The copy is published whole (PostgreSQL: one transaction renames it to `devportal`; DuckDB:
   one rename of the file), and the target's local dlt pipeline is rebuilt from it.

Killed at any point, the target is as it was or holds the whole checked copy.

One job per module, imports running one way:

    sides        the two engines: tables, columns, counts, Arrow batches read and appended
    fingerprint  the content check: one order-free fingerprint per table, either engine
    bookkeeping  dlt's rows carried over: stored schemas, the state re-addressed
    stage        the target's staging copy: made by dlt, published whole, or discarded
    migration    the run: locks, refusals, copy, check, publish; its result
"""

from devportal.operations.migrate.migration import migrate

__all__ = [
    "migrate",
]
