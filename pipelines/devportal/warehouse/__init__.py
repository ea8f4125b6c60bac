"""The warehouse file: its name rules, its folder, its lock, writing it, opening it with DuckDB.

Writers (sync, models, manifest load) hold `warehouse_lock` and never open the warehouse file
for writing: they write a `Draft` (a copy) and publish it with one rename, so readers may hold
the file open read-only at any time. dlt keeps its state for a warehouse in
`pipelines_dir(warehouse)`, next to it. `devportal.load.pipeline` binds the dlt pipeline to
the warehouse; only `destination` (dlt's destination class) imports dlt. Every problem with
the file is one line with the cause and the fix.

One job per module, imports running one way (filelock <- draft, lock; paths <- connection <-
draft <- lock; target <- engines <- writer_lock):

    filelock      advisory file locks, the one place devportal asks the OS for one
    paths         name rules, the folder, the spool folder, what is wrong with a path or the disk
    connection    opening it with DuckDB (`open_duckdb`, `connect`), DuckDB's refusals; quoting
    draft         the copy a writer changes and publishes with one rename; the shared guard lock
    lock          `warehouse_lock`, the writers' lock, and `looks_busy`
    fit           whether a load's tables fit DuckDB's memory cap, known before it starts
    target        `Target`: the destination, how a load is made whole, the models' engine
    engines       one connection API over DuckDB and PostgreSQL for the models and the report
    moved         the mark `devportal migrate` leaves on a DuckDB file it moved elsewhere
    destination   dlt's DuckDB destination with the exact copy job
    writer_lock   the lock a writer holds for its whole run (PostgreSQL's advisory lock too)

Callers use the names below (`from devportal.warehouse import warehouse_lock`).
"""

from devportal.warehouse.connection import (
    NO_EXTENSION_AUTOLOAD,
    SESSION_SETTINGS,
    catalog_of,
    connect,
    damage_in,
    open_duckdb,
    open_error,
    quote_ident,
    sql_literal,
)
from devportal.warehouse.draft import Draft
from devportal.warehouse.lock import looks_busy, warehouse_lock
from devportal.warehouse.paths import (
    ANALYTICS_SCHEMA,
    DEFAULT_WAREHOUSE,
    RAW_SCHEMA,
    WarehouseDamaged,
    check_warehouse_path,
    damaged_error,
    delete_warehouse,
    disk_error,
    locate_warehouse,
    make_parent,
    pipelines_dir,
    require_warehouse,
    shown,
)

__all__ = [
    "ANALYTICS_SCHEMA",
    "DEFAULT_WAREHOUSE",
    "NO_EXTENSION_AUTOLOAD",
    "RAW_SCHEMA",
    "SESSION_SETTINGS",
    "Draft",
    "WarehouseDamaged",
    "catalog_of",
    "check_warehouse_path",
    "connect",
    "damage_in",
    "damaged_error",
    "delete_warehouse",
    "disk_error",
    "locate_warehouse",
    "looks_busy",
    "make_parent",
    "open_duckdb",
    "open_error",
    "pipelines_dir",
    "quote_ident",
    "require_warehouse",
    "shown",
    "sql_literal",
    "warehouse_lock",
]
