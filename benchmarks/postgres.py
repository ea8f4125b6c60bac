"""A throwaway PostgreSQL server (`pgserver`, as `devportal demo --destination postgres` uses)
in a `tempfile.mkdtemp` folder (not under a 0700 one: as root, pgserver runs the server as its
OS user `pgserver`), a database per run, and what the server costs (`watch()`: its memory is
not in the contender's RSS, DuckDB's is)."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

PASSWORD = "throwaway"  # a placeholder: the server trusts local connections, dlt wants one


@dataclass
class Cost:
    cpu_s: float | None = None
    idle_pss: int | None = None  # just before the block
    peak_pss: int | None = None


class PostgresServer:
    """pgserver in a temporary folder; a context manager that always stops and removes it."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.startup_s, self.version = 0.0, ""
        self._server: Any = None

    def __enter__(self) -> PostgresServer:
        import pgserver  # the harness runs without it (`--skip-postgres`)

        t0 = time.perf_counter()
        self.folder = Path(tempfile.mkdtemp(prefix="devportal-pg-"))
        try:
            self._server = pgserver.get_server(self.folder, cleanup_mode="stop")
            self.version = str(self.scalar("postgres", "SHOW server_version"))
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.perf_counter() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        server, self._server = self._server, None
        try:
            if server is not None:
                server.cleanup()
        finally:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)

    def uri(self, database: str) -> str:
        """dlt's form, for DESTINATION__POSTGRES__CREDENTIALS."""
        return f"postgresql://postgres:{PASSWORD}@localhost/{database}?host={self.folder}"

    def connect(self, database: str) -> Any:
        import psycopg2

        con = psycopg2.connect(host=str(self.folder), user="postgres", dbname=database)
        con.autocommit = True
        return con

    def scalar(self, database: str, sql: str) -> Any:
        con = self.connect(database)
        try:
            with con.cursor() as cur:
                cur.execute(sql)
                row = cur.fetchone() if cur.description else None
        finally:
            con.close()
        return row[0] if row else None

    def create_database(self, name: str) -> None:
        self.drop_database(name)
        self.scalar("postgres", f'CREATE DATABASE "{name}"')

    def drop_database(self, name: str) -> None:
        self.scalar("postgres", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _tree(self) -> list[psutil.Process]:
        """The postmaster and its live children; [] without a server."""
        try:
            postmaster = psutil.Process(int(self._server.get_pid()))
            return [postmaster, *postmaster.children(recursive=True)]
        except (psutil.Error, TypeError, ValueError, AssertionError, AttributeError):
            return []

    def cpu_seconds(self) -> float | None:
        """User + system CPU of the server so far: postmaster, reaped backends, live children."""
        total = None
        for i, proc in enumerate(self._tree()):
            try:
                t = proc.cpu_times()
            except psutil.Error:
                if i == 0:
                    return None
                continue  # exited between the listing and the read: in children_*
            total = (total or 0.0) + t.user + t.system
            total += t.children_user + t.children_system if i == 0 else 0.0
        return total

    def pss_bytes(self) -> int | None:
        """Summed proportional set size of the server's process tree now."""
        tree = self._tree()
        total = 0
        for proc in tree:
            try:
                total += proc.memory_full_info().pss
            except (psutil.Error, AttributeError):
                continue
        return total if tree else None

    @contextmanager
    def watch(self) -> Iterator[Cost]:
        """The server's CPU seconds and peak PSS over the block."""
        cost, stop = Cost(idle_pss=self.pss_bytes()), threading.Event()
        cost.peak_pss, cpu0 = cost.idle_pss, self.cpu_seconds()

        def sample() -> None:
            while not stop.wait(0.25):
                if (pss := self.pss_bytes()) is not None:
                    cost.peak_pss = max(cost.peak_pss or 0, pss)

        thread = threading.Thread(target=sample, name="pg-pss", daemon=True)
        thread.start()
        try:
            yield cost
        finally:
            stop.set()
            thread.join()
            cpu1 = self.cpu_seconds()
            cost.cpu_s = cpu1 - cpu0 if cpu1 is not None and cpu0 is not None else None
