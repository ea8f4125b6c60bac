"""Fixtures for the sandbox conformance tests: real servers on 127.0.0.1, real HTTP.

`sb` is one generated world shared by a module and must not be mutated there; tests that
advance the clock, script rows or inject faults take `fresh` or `scripted` (their own server).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from devportal.sandbox import Sandbox
from devportal.sandbox.testing import api_session, sandbox_fixture


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with sandbox_fixture(subscriptions=1000, users=200, seed=7) as sandbox:
        yield sandbox


@pytest.fixture
def fresh() -> Iterator[Sandbox]:
    with sandbox_fixture(subscriptions=1000, users=200, seed=11) as sandbox:
        yield sandbox


@pytest.fixture
def scripted() -> Iterator[Sandbox]:
    with sandbox_fixture(subscriptions=0, users=0) as sandbox:
        yield sandbox


def _session(sandbox: Sandbox) -> Iterator[requests.Session]:
    session = api_session(sandbox)
    yield session
    session.close()


@pytest.fixture
def api(sb: Sandbox) -> Iterator[requests.Session]:
    yield from _session(sb)


@pytest.fixture
def fresh_api(fresh: Sandbox) -> Iterator[requests.Session]:
    yield from _session(fresh)


@pytest.fixture
def scripted_api(scripted: Sandbox) -> Iterator[requests.Session]:
    yield from _session(scripted)
