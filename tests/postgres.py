"""A throwaway PostgreSQL cluster for the tests, from the pip package `pgserver`.

Why pgserver and not Debian's `postgresql`: it is a locked Python dependency (PostgreSQL 16
binaries in the wheel), so `make test` needs nothing beyond python3 and make; it starts a
cluster in under a second; and it runs as root (it creates an OS user `pgserver` to own the
data) as well as an ordinary user. The cluster listens on a Unix socket in its own folder
only, trusts local connections (so the password in the URI is a placeholder), and is stopped
and deleted at the end of the session. A cluster that cannot start fails the tests that need
it with the reason: no skip hides it.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class Cluster:
    server: Any
    folder: str

    def uri(self, database: str = "postgres") -> str:
        """dlt's form: a host is required (the socket folder goes in `host=`), and a password."""
        return f"postgresql://postgres:throwaway@localhost/{database}?host={self.folder}"

    def create_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.server.psql(f"create database {name};")
        return name

    def drop_database(self, name: str) -> None:
        self.server.psql(f"drop database if exists {name} with (force);")


@contextmanager
def cluster() -> Iterator[Cluster]:
    import pgserver

    # not under pytest's 0700 temp root: the `pgserver` OS user must reach the folder
    folder = tempfile.mkdtemp(prefix="devportal-pg-")
    try:
        server = pgserver.get_server(folder, cleanup_mode="stop")
    except Exception as err:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(
            f"cannot start a throwaway PostgreSQL cluster with pgserver: {err}"
        ) from err
    try:
        yield Cluster(server, folder)
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
