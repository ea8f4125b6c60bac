"""Auth, 404/405, keep-alive and clean shutdown of the HTTP layer."""

from __future__ import annotations

import socket
import threading

import pytest
import requests

from devportal.sandbox import Sandbox
from devportal.sandbox.testing import SETTINGS, SUBSCRIPTIONS, USERS, api_session

ENDPOINTS = [SUBSCRIPTIONS, SETTINGS, USERS + "1", "/__sandbox/state", "/nope"]


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
    ],
)
def test_missing_or_wrong_token_is_401_json(
    sb: Sandbox, path: str, headers: dict[str, str]
) -> None:
    response = requests.get(sb.base_url + path, headers=headers)
    assert response.status_code == 401
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {"message": "Unauthenticated."}
    assert sb.token not in response.text


def test_bearer_scheme_is_case_insensitive(sb: Sandbox) -> None:
    response = requests.get(
        sb.base_url + SUBSCRIPTIONS, headers={"Authorization": f"bearer {sb.token}"}
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/developer/nothing",
        "/api/v2/developer/subscriptions",
        USERS + "abc",
        USERS + "-5",
        USERS + "12x",
        USERS + "999999999",
        USERS + "1/extra",
        "/",
    ],
)
def test_unknown_paths_and_users_are_404_json(
    sb: Sandbox, api: requests.Session, path: str
) -> None:
    response = api.get(sb.base_url + path)
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/json"
    assert isinstance(response.json()["message"], str)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_non_get_on_api_routes_is_405(sb: Sandbox, api: requests.Session, method: str) -> None:
    response = api.request(method, sb.base_url + SUBSCRIPTIONS, json={"x": 1})
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET"
    assert "message" in response.json()
    # the connection stays usable after a request with a body
    assert api.get(sb.base_url + SUBSCRIPTIONS).status_code == 200


def test_keep_alive_reuses_one_connection(fresh: Sandbox) -> None:
    before = fresh.stats["connections"]
    with api_session(fresh) as session:
        for page in range(1, 6):
            assert session.get(fresh.base_url + SUBSCRIPTIONS, params={"page": page}).ok
    stats = fresh.stats
    assert stats["connections"] == before + 1
    assert stats["pages_subscriptions"] == 5 and stats["pages"] == 5


def test_responses_are_one_segment_friendly(sb: Sandbox) -> None:
    # Raw HTTP/1.1 on one socket: two requests back to back, both answered, headers sane.
    with socket.create_connection(("127.0.0.1", sb.port), timeout=5) as conn:
        request = (
            f"GET {SUBSCRIPTIONS}?id={sb.truth()[0]['id']} HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {sb.token}\r\n\r\n"
        ).encode()
        conn.sendall(request + request)
        data = b""
        while data.count(b"HTTP/1.1 200") < 2 or not data.endswith(b"}"):
            chunk = conn.recv(65536)
            assert chunk
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode()
    assert "Content-Length:" in head and "Connection: close" not in head


def test_stop_ends_keep_alive_connections_and_threads() -> None:
    sandbox = Sandbox(subscriptions=10, users=5).start()
    sessions = [api_session(sandbox) for _ in range(3)]
    for s in sessions:
        assert s.get(sandbox.base_url + SUBSCRIPTIONS).ok  # idle keep-alive connections now
    port = sandbox.port
    sandbox.stop()
    alive = [
        t.name for t in threading.enumerate() if t.name.startswith(f"devportal-sandbox:{port}")
    ]
    assert alive == []
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    for s in sessions:
        s.close()


def test_repr_and_errors_never_show_the_token() -> None:
    sandbox = Sandbox(subscriptions=5, users=2, token="s3cr3t-token")
    assert "s3cr3t" not in repr(sandbox)
    with pytest.raises(RuntimeError):
        _ = sandbox.base_url
    with sandbox:
        assert "s3cr3t" not in repr(sandbox)
        assert sandbox.token == "s3cr3t-token"


def test_random_token_when_none_given() -> None:
    a, b = Sandbox(subscriptions=0, users=0), Sandbox(subscriptions=0, users=0)
    assert len(a.token) >= 20 and a.token != b.token


def test_head_gets_405_without_a_body_and_the_connection_survives(
    sb: Sandbox, api: requests.Session
) -> None:
    response = api.head(sb.base_url + SUBSCRIPTIONS)
    assert response.status_code == 405 and response.content == b""
    assert api.get(sb.base_url + SUBSCRIPTIONS).status_code == 200


def test_date_header_is_the_simulated_clock(fresh: Sandbox, fresh_api: requests.Session) -> None:
    from email.utils import parsedate_to_datetime

    for _ in range(2):
        response = fresh_api.get(fresh.base_url + SUBSCRIPTIONS, params={"page": 99})
        served = parsedate_to_datetime(response.headers["Date"]).replace(tzinfo=None)
        assert served == fresh.now
        fresh.advance(days=3, hours=1)
