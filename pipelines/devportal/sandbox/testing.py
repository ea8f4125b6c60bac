"""Helpers for tests anywhere in the project: a started sandbox, an authorised session, paging.

from devportal.sandbox.testing import sandbox_fixture, api_session

@pytest.fixture
def sandbox():
    with sandbox_fixture(subscriptions=0, users=0) as sb:
        yield sb
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests

from devportal.base import api
from devportal.sandbox.server import Sandbox

# the API's paths under the short names the tests use
SUBSCRIPTIONS = api.SUBSCRIPTIONS_PATH
SETTINGS = api.USER_SETTINGS_PATH
USERS = api.USER_ACCOUNTS_PREFIX


@contextmanager
def sandbox_fixture(**kwargs: Any) -> Iterator[Sandbox]:
    """A started `Sandbox(**kwargs)` on an ephemeral port, stopped (threads joined) after."""
    sandbox = Sandbox(**kwargs).start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


def api_session(sandbox: Sandbox) -> requests.Session:
    """A keep-alive session sending the bearer token and the spec's JSON headers."""
    session = requests.Session()
    session.headers.update(
        {
            "Authorization": f"Bearer {sandbox.token}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        }
    )
    return session


def fetch_all(
    session: requests.Session, url: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Every row of a paginated list, following `next_page_url` (no retries: test helper)."""
    rows: list[dict[str, Any]] = []
    response = session.get(url, params=params, timeout=30)
    while True:
        response.raise_for_status()
        body = response.json()
        rows.extend(body["data"])
        nxt = body["next_page_url"]
        if nxt is None:
            return rows
        response = session.get(nxt, timeout=30)
