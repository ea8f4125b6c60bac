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

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from devportal.starter.demo import LocalPostgres, local_postgres


@dataclass
class Cluster:
    local: LocalPostgres

    def uri(self, database: str = "postgres") -> str:
        return self.local.uri(database)

    def create_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.local.server.psql(f"create database {name};")
        return name

    def drop_database(self, name: str) -> None:
        self.local.server.psql(f"drop database if exists {name} with (force);")


@contextmanager
def cluster() -> Iterator[Cluster]:
    """`devportal.starter.demo.local_postgres`, with a fresh database per test."""
    with local_postgres() as local:
        yield Cluster(local)
