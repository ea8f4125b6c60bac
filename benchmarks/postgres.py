"""A throwaway PostgreSQL server for the benchmark's Postgres scenarios, and what it costs.

The server is the pip package `pgserver` (PostgreSQL 16 binaries, in `make setup`'s venv), as in
`devportal demo --destination postgres`: a fresh cluster in a folder of its own, made by
`tempfile.mkdtemp` (not under a 0700 folder: as root, pgserver runs the server as its OS user
`pgserver`, which must reach it), listening on a Unix socket in that folder only, trusting
local connections, with pgserver's default settings. One server serves the whole bench; every
Postgres sweep gets a fresh database of its own, dropped after its round, so each is a first
sweep like DuckDB's on a fresh file.

DuckDB runs inside the devportal process, so its memory is in the contender's peak RSS;
PostgreSQL's is not (the server is a separate process tree). So while a contender runs against
it, the server's CPU seconds (postmaster, its live children and the backends it reaped) and the
peak of the server tree's summed PSS (proportional set size: shared buffers counted once, not
once per process) are taken here and reported beside the contender's own figures.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

PSS_POLL_S = 0.25
PASSWORD = "throwaway"  # a placeholder: the server trusts local connections, dlt wants one


class PostgresServer:
    """pgserver in a temporary folder; a context manager that always stops and removes it."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.startup_s = 0.0
        self.version = ""
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

    # -- databases --------------------------------------------------------------------------

    def uri(self, database: str) -> str:
        """dlt's form, for DESTINATION__POSTGRES__CREDENTIALS."""
        return f"postgresql://postgres:{PASSWORD}@localhost/{database}?host={self.folder}"

    def _connect(self, database: str) -> Any:
        import psycopg2

        con = psycopg2.connect(host=str(self.folder), user="postgres", dbname=database)
        con.autocommit = True
        return con

    def scalar(self, database: str, sql: str) -> Any:
        con = self._connect(database)
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

    def count_current(self, database: str) -> int | None:
        """Current subscription rows in a devportal dataset on this server."""
        try:
            value = self.scalar(
                database,
                "SELECT count(*) FROM devportal.subscriptions WHERE _dlt_valid_to IS NULL",
            )
        except Exception:
            return None
        return int(value) if value is not None else None

    def last_row(self, database: str, table: str, columns: tuple[str, ...]) -> dict[str, Any]:
        """The newest row (by `_dlt_load_id`) of `devportal.<table>`, the `columns` it has;
        {} when it cannot be read."""
        try:
            con = self._connect(database)
            try:
                with con.cursor() as cur:
                    cur.execute(
                        "SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = 'devportal' AND table_name = %s",
                        (table,),
                    )
                    present = {r[0] for r in cur.fetchall()}
                    names = [c for c in columns if c in present]
                    if not names:
                        return {}
                    cur.execute(
                        f"SELECT {', '.join(names)} FROM devportal.{table} "
                        "ORDER BY _dlt_load_id DESC LIMIT 1"
                    )
                    row = cur.fetchone()
            finally:
                con.close()
        except Exception:
            return {}
        return {k: v for k, v in zip(names, row or (), strict=False) if v is not None}

    # -- cost -------------------------------------------------------------------------------

    def postmaster(self) -> psutil.Process | None:
        if self._server is None:
            return None
        try:
            return psutil.Process(int(self._server.get_pid()))
        except (psutil.Error, TypeError, ValueError, AssertionError):
            return None

    def cpu_seconds(self) -> float | None:
        """User + system CPU of the server so far: postmaster, reaped backends, live children."""
        postmaster = self.postmaster()
        if postmaster is None:
            return None
        try:
            t = postmaster.cpu_times()
            total = t.user + t.system + t.children_user + t.children_system
            children = postmaster.children(recursive=True)
        except psutil.Error:
            return None
        for child in children:
            try:
                c = child.cpu_times()
            except psutil.Error:
                continue  # exited between the listing and the read: folded into children_*
            total += c.user + c.system
        return float(total)

    def pss_bytes(self) -> int | None:
        """Summed proportional set size of the server's process tree now."""
        postmaster = self.postmaster()
        if postmaster is None:
            return None
        try:
            procs = [postmaster, *postmaster.children(recursive=True)]
        except psutil.Error:
            return None
        total = 0
        for proc in procs:
            try:
                total += proc.memory_full_info().pss
            except (psutil.Error, AttributeError):
                continue
        return total

    def watch(self) -> ServerCost:
        return ServerCost(self)


class ServerCost:
    """`with server.watch() as cost:` the server's CPU seconds and peak PSS over the block."""

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self.cpu_s: float | None = None
        self.idle_pss: int | None = None  # just before the block
        self.peak_pss: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="pg-pss", daemon=True)
        self._cpu0: float | None = None

    def __enter__(self) -> ServerCost:
        self.idle_pss = self.server.pss_bytes()
        self.peak_pss = self.idle_pss
        self._cpu0 = self.server.cpu_seconds()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        cpu1 = self.server.cpu_seconds()
        self.cpu_s = cpu1 - self._cpu0 if cpu1 is not None and self._cpu0 is not None else None

    def _sample(self) -> None:
        while not self._stop.wait(PSS_POLL_S):
            pss = self.server.pss_bytes()
            if pss is not None:
                self.peak_pss = max(self.peak_pss or 0, pss)
