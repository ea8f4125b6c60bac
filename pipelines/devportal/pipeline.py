"""The dlt pipeline bound to one warehouse: its destination, its working folder, whole loads.

Every writer (sync, manifest load) goes through `open_pipeline` while it holds
`warehouse.warehouse_lock`, and loads through `load_whole`: a package loads whole or not at
all (a snapshot of the DuckDB file is put back on failure) and one that cannot load is set
aside with its files. The warehouse file itself (name rules, folder, lock, opening it with
DuckDB) is `devportal.warehouse`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

from devportal.errors import DevportalError, first_line
from devportal.warehouse import (
    NO_EXTENSION_AUTOLOAD,
    RAW_SCHEMA,
    check_warehouse_path,
    make_parent,
    pipelines_dir,
    quote_ident,
)

PIPELINE_NAME = "devportal"
DATASET = RAW_SCHEMA  # dlt's dataset is the warehouse's raw schema


def warehouse_or(destination: Any) -> Any:
    """None, meaning the DuckDB warehouse file at --warehouse, for None and `duckdb` (dlt's own
    `duckdb` would be a file named after the pipeline in the working directory); any other
    destination as given."""
    return None if destination is None or destination == "duckdb" else destination


def open_pipeline(warehouse: str | Path, destination: Any = None, progress: Any = None) -> Any:
    """The `devportal` dlt pipeline writing dataset `devportal`.

    `destination` None means DuckDB at `warehouse`; any other dlt destination (name or object)
    is taken as configured in `.dlt/config.toml` / secrets, `warehouse` then only places the
    dlt working folder. Each destination has a pipeline (state, pending packages) of its own,
    `devportal_<destination>`: syncing DuckDB and PostgreSQL from one folder never mixes them.
    """
    import dlt  # here, not at import: the CLI's other commands need no dlt

    path = check_warehouse_path(warehouse)
    make_parent(path)
    dest = destination if destination is not None else _duckdb(dlt, path)
    kwargs: dict[str, Any] = {}
    if progress is not None:
        kwargs["progress"] = progress
    return dlt.pipeline(
        pipeline_name=pipeline_name(destination),
        pipelines_dir=str(pipelines_dir(path)),
        destination=dest,
        dataset_name=DATASET,
        **kwargs,
    )


def pipeline_name(destination: Any = None) -> str:
    """`devportal` for the DuckDB warehouse, `devportal_<name>` for another destination."""
    if destination is None:
        return PIPELINE_NAME
    name = destination if isinstance(destination, str) else destination.destination_name
    return f"{PIPELINE_NAME}_{name}"


def _duckdb(dlt: Any, path: Path) -> Any:
    """DuckDB at `path`, its load connection tuned for a flat memory profile.

    One thread and a buffer cap keep the SCD2 merge (an anti-join over every current version)
    from growing with the table; DuckDB spills past the cap instead. Insertion order means
    nothing to a merge and costs memory. Measured in benchmarks/results: at 1M subscriptions
    the peak went from 381 MB to 339 MB, and the load got faster on 2 cores.
    """
    from devportal.config import resolve
    from devportal.loader import warehouse_duckdb

    cfg = resolve(require_api=False)
    settings = {
        **NO_EXTENSION_AUTOLOAD,
        "preserve_insertion_order": False,
        "threads": cfg.duckdb_threads,
        "memory_limit": cfg.duckdb_memory_limit,
    }
    return warehouse_duckdb({"database": str(path), "global_config": settings})


class Snapshot:
    """A copy of the DuckDB warehouse file taken before a package loads, to put back on failure.

    Named after the package's load id and written under a temporary name first, so a snapshot
    that exists is complete; one left by a killed process is the state before that package
    began loading, and is reused if the next run's attempt to finish the package fails.
    """

    def __init__(self, warehouse: Path, copy: Path) -> None:
        self.warehouse = warehouse
        self.copy = copy

    @staticmethod
    def folder(warehouse: str | Path) -> Path:
        return pipelines_dir(warehouse) / "snapshots"

    @classmethod
    def take(cls, warehouse: str | Path, load_id: str) -> Snapshot:
        path = Path(warehouse).resolve()
        folder = cls.folder(path)
        folder.mkdir(parents=True, exist_ok=True)
        copy = folder / f"{load_id}.duckdb"
        for stale in folder.iterdir():  # other packages' snapshots belong to settled runs
            if stale.name not in (copy.name, copy.name + ".wal"):
                stale.unlink(missing_ok=True)
        if not copy.exists():
            try:
                for source, target in ((path, copy), (_wal(path), _wal(copy))):
                    if source.exists():
                        partial = target.with_name(target.name + ".partial")
                        shutil.copyfile(source, partial)
                        os.replace(partial, target)
                if not path.exists():
                    copy.touch()  # a new warehouse: putting it back means removing it
            except OSError as err:
                for leftover in folder.iterdir():
                    leftover.unlink(missing_ok=True)
                raise DevportalError(
                    f"cannot copy the warehouse before loading ({err.strerror or err}) into "
                    f"{folder}; nothing was loaded: free disk space there and run again"
                ) from None
        return cls(path, copy)

    def restore(self) -> bool:
        """Put the warehouse back as it was; True when it was."""
        if not self.copy.exists():
            return False
        _wal(self.warehouse).unlink(missing_ok=True)
        if self.copy.stat().st_size == 0:
            self.warehouse.unlink(missing_ok=True)
            self.copy.unlink()
        else:
            if _wal(self.copy).exists():
                os.replace(_wal(self.copy), _wal(self.warehouse))
            os.replace(self.copy, self.warehouse)
        return True

    def drop(self) -> None:
        self.copy.unlink(missing_ok=True)
        _wal(self.copy).unlink(missing_ok=True)


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def set_aside_dir(warehouse: str | Path) -> Path:
    return pipelines_dir(warehouse) / "set_aside"


def set_aside_packages(warehouse: str | Path) -> list[Path]:
    """The folders of the packages set aside for WAREHOUSE, by load id."""
    folder = set_aside_dir(warehouse)
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def set_aside_reason(package: Path) -> str:
    """Why PACKAGE (a folder of `set_aside_packages`) was set aside."""
    note = package / "SET_ASIDE.txt"
    return note.read_text(encoding="utf-8").strip() if note.exists() else "(no reason recorded)"


def set_aside(pipeline: Any, warehouse: str | Path, load_id: str, reason: str) -> Path:
    """Move a package that cannot load out of dlt's way, keeping its files for inspection.

    The package is copied to `<dlt folder>/set_aside/<load_id>/` with the reason, then aborted
    through dlt (which rewinds the local pipeline state to before the package, so a window
    cursor does not skip the data that never loaded). The next sync proceeds without it.
    """
    storage = pipeline._get_load_storage().normalized_packages
    source = Path(storage.storage.make_full_path(storage.get_package_path(load_id)))
    target = set_aside_dir(warehouse) / load_id
    if source.exists() and not target.exists():
        shutil.copytree(source, target)
    target.mkdir(parents=True, exist_ok=True)
    (target / "SET_ASIDE.txt").write_text(reason + "\n", encoding="utf-8")
    # dlt raises the abort it just did as the original failure: it is expected here
    with contextlib.suppress(Exception):
        pipeline.abort_packages()
    if load_id in pipeline.list_normalized_load_packages():
        storage.delete_package(load_id)
    return target


class PackageSetAside(DevportalError):
    """A load package failed to load; the warehouse was put back and the package kept aside."""

    def __init__(self, message: str, load_id: str) -> None:
        super().__init__(message)
        self.load_id = load_id


def load_whole(pipeline: Any, warehouse: str | Path, destination: Any) -> None:
    """Load the pending package whole or not at all.

    dlt commits each table's job on its own, so a job failing halfway (a value the warehouse
    refuses, a full disk) would leave the other tables of the run committed and the package
    pending for ever. A snapshot is taken first (of the DuckDB file, or of the dataset's tables
    on PostgreSQL; it survives a killed process: the next run restores to it if finishing
    fails) and put back if the load fails; the package is then set aside, with the command that
    discards it. Other destinations load without a snapshot (the message says so on failure).
    """
    load_ids = pipeline.list_normalized_load_packages()
    if not load_ids:
        return
    load_id = load_ids[0]
    snapshot = _snapshot(pipeline, warehouse, destination, load_id)
    try:
        pipeline.load()
    except Exception as err:  # dlt wraps every load failure in PipelineStepFailed
        restored = snapshot.restore() if snapshot is not None else False
        where = set_aside(pipeline, warehouse, load_id, first_line(err))
        state = (
            "the warehouse is as it was before the run"
            if restored
            else "tables already loaded by it may hold part of the run"
        )
        raise PackageSetAside(
            f"loading run {load_id} failed: {first_line(err)}; {state}. Its data is kept in "
            f"{where}; `devportal packages discard {load_id}` deletes it",
            load_id,
        ) from None
    if snapshot is not None:
        snapshot.drop()


def _snapshot(
    pipeline: Any, warehouse: str | Path, destination: Any, load_id: str
) -> Snapshot | SchemaSnapshot | None:
    if destination is None:
        return Snapshot.take(warehouse, load_id)
    if str(getattr(pipeline.destination, "destination_name", "")) == "postgres":
        return SchemaSnapshot.take(pipeline, load_id)
    return None


class SchemaSnapshot:
    """On PostgreSQL: a copy of every table of the dataset, in the schema `<dataset>_snapshot`,
    taken before a package loads, to put back on failure (the server's counterpart of the file
    copy `Snapshot`; PostgreSQL copies a million rows in about a second).

    The schema is written in one transaction, its marker table naming the load id last: a
    snapshot that exists is complete, and one left by a killed process is reused for the same
    package, like the file snapshot.
    """

    MARKER = "_devportal_snapshot"

    def __init__(self, pipeline: Any, schema: str) -> None:
        self.pipeline = pipeline
        self.schema = schema

    @classmethod
    def take(cls, pipeline: Any, load_id: str) -> SchemaSnapshot:
        with pipeline.sql_client() as client:
            dataset = client.dataset_name
            snapshot = cls(pipeline, f"{dataset}_snapshot")
            if snapshot._marker(client) != load_id:
                with client.begin_transaction():
                    client.execute_sql(
                        f"drop schema if exists {quote_ident(snapshot.schema)} cascade"
                    )
                    client.execute_sql(f"create schema {quote_ident(snapshot.schema)}")
                    for table in _tables(client, dataset):
                        client.execute_sql(
                            f"create table {snapshot._name(table)} as table "
                            f"{quote_ident(dataset)}.{quote_ident(table)}"
                        )
                    client.execute_sql(
                        f"create table {snapshot._name(cls.MARKER)} as select %s as load_id",
                        load_id,
                    )
        return snapshot

    def _name(self, table: str) -> str:
        return f"{quote_ident(self.schema)}.{quote_ident(table)}"

    def _marker(self, client: Any) -> str | None:
        try:
            rows = client.execute_sql(f"select load_id from {self._name(self.MARKER)}")
        except Exception:  # no snapshot schema
            return None
        return str(rows[0][0]) if rows else None

    def restore(self) -> bool:
        """Put every table back as it was (and drop those the failed load created)."""
        with self.pipeline.sql_client() as client:
            dataset = client.dataset_name
            saved = set(_tables(client, self.schema)) - {self.MARKER}
            with client.begin_transaction():
                for table in _tables(client, dataset):
                    target = f"{quote_ident(dataset)}.{quote_ident(table)}"
                    if table not in saved:
                        client.execute_sql(f"drop table {target} cascade")
                        continue
                    columns = ", ".join(
                        quote_ident(c) for c in _columns(client, self.schema, table)
                    )
                    client.execute_sql(f"truncate table {target}")
                    client.execute_sql(
                        f"insert into {target} ({columns}) select {columns} from {self._name(table)}"
                    )
                client.execute_sql(f"drop schema {quote_ident(self.schema)} cascade")
        return True

    def drop(self) -> None:
        with self.pipeline.sql_client() as client:
            client.execute_sql(f"drop schema if exists {quote_ident(self.schema)} cascade")


def _tables(client: Any, schema: str) -> list[str]:
    rows = client.execute_sql(
        "select table_name from information_schema.tables "
        "where table_schema = %s and table_type = 'BASE TABLE' order by table_name",
        schema,
    )
    return [str(r[0]) for r in rows or ()]


def _columns(client: Any, schema: str, table: str) -> list[str]:
    rows = client.execute_sql(
        "select column_name from information_schema.columns "
        "where table_schema = %s and table_name = %s order by ordinal_position",
        schema,
        table,
    )
    return [str(r[0]) for r in rows or ()]
