"""Every fault kind as a client sees it over HTTP, determinism under a seed, and the counters."""

from __future__ import annotations

import json
import socket

import pytest
import requests

from devportal.sandbox import FaultConfig, Sandbox
from devportal.sandbox.testing import SUBSCRIPTIONS, USERS, api_session, sandbox_fixture


def is_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def test_429_has_retry_after_and_json(fresh: Sandbox, fresh_api: requests.Session) -> None:
    fresh.set_faults(rate=1.0, kinds=("429",), retry_after=3)
    response = fresh_api.get(fresh.base_url + SUBSCRIPTIONS)
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "3"
    assert response.json() == {"message": "Too Many Attempts."}
    fresh.set_faults(rate=1.0, kinds=("429",), retry_after=0)
    assert fresh_api.get(fresh.base_url + SUBSCRIPTIONS).headers["Retry-After"] == "0"
    fresh.set_faults(None)
    assert fresh_api.get(fresh.base_url + SUBSCRIPTIONS).status_code == 200


@pytest.mark.parametrize("kind", ["500", "502", "503"])
def test_server_errors_have_html_bodies(
    fresh: Sandbox, fresh_api: requests.Session, kind: str
) -> None:
    fresh.queue_faults(kind)
    response = fresh_api.get(fresh.base_url + SUBSCRIPTIONS)
    assert response.status_code == int(kind)
    assert response.headers["Content-Type"].startswith("text/html")
    assert response.text.lstrip().startswith("<") and not is_json(response.content)
    assert fresh_api.get(fresh.base_url + SUBSCRIPTIONS).status_code == 200  # queue used up


def test_reset_drops_the_connection(fresh: Sandbox, fresh_api: requests.Session) -> None:
    assert fresh_api.get(fresh.base_url + SUBSCRIPTIONS).ok  # a pooled keep-alive connection
    fresh.queue_faults("reset")
    with pytest.raises(requests.ConnectionError):
        fresh_api.get(fresh.base_url + SUBSCRIPTIONS)
    assert fresh_api.get(fresh.base_url + SUBSCRIPTIONS).ok  # the session recovers


def test_reset_on_a_raw_socket_sends_nothing(fresh: Sandbox) -> None:
    fresh.queue_faults("reset")
    with socket.create_connection(("127.0.0.1", fresh.port), timeout=5) as conn:
        conn.sendall(
            f"GET {SUBSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {fresh.token}\r\n\r\n".encode()
        )
        try:
            data = conn.recv(1024)
        except ConnectionResetError:
            data = b""
    assert data == b""


def test_cut_drops_the_connection_mid_body(fresh: Sandbox, fresh_api: requests.Session) -> None:
    fresh.queue_faults("cut")
    with pytest.raises((requests.ConnectionError, requests.exceptions.ChunkedEncodingError)):
        fresh_api.get(fresh.base_url + SUBSCRIPTIONS).content  # noqa: B018
    assert fresh_api.get(fresh.base_url + SUBSCRIPTIONS).ok


def test_truncated_is_a_prefix_with_matching_length(
    fresh: Sandbox, fresh_api: requests.Session
) -> None:
    url = fresh.base_url + SUBSCRIPTIONS
    whole = fresh_api.get(url, params={"page": 2}).content
    fresh.queue_faults("truncated")
    response = fresh_api.get(url, params={"page": 2})
    assert response.status_code == 200
    assert int(response.headers["Content-Length"]) == len(response.content)
    assert 0 < len(response.content) < len(whole)
    assert whole.startswith(response.content)
    with pytest.raises(requests.exceptions.JSONDecodeError):
        response.json()


def test_malformed_bodies_are_not_json(fresh: Sandbox, fresh_api: requests.Session) -> None:
    fresh.set_faults(rate=1.0, kinds=("malformed",), seed=4)
    bodies = set()
    for _ in range(12):
        response = fresh_api.get(fresh.base_url + SUBSCRIPTIONS)
        assert response.status_code == 200
        assert not is_json(response.content)
        bodies.add(response.content[:10])
    assert len(bodies) >= 2  # several variants: '{"data": [', an HTML page, empty


def test_faults_hit_all_api_endpoints_but_not_control_or_auth(fresh: Sandbox) -> None:
    fresh.set_faults(rate=1.0, kinds=("503",))
    with api_session(fresh) as s:
        assert (
            s.get(fresh.base_url + SUBSCRIPTIONS, params={"id": fresh.truth()[0]["id"]}).status_code
            == 503
        )
        assert s.get(f"{fresh.base_url}{USERS}{fresh.user_ids()[0]}").status_code == 503
        assert s.get(fresh.base_url + "/__sandbox/state").status_code == 200
        assert s.get(fresh.base_url + "/api/v1/developer/unknown").status_code == 404
    assert requests.get(fresh.base_url + SUBSCRIPTIONS).status_code == 401


def test_same_fault_seed_same_sequence() -> None:
    def sequence(sb: Sandbox) -> list[object]:
        out: list[object] = []
        with api_session(sb) as s:
            for page in range(1, 41):
                try:
                    r = s.get(sb.base_url + SUBSCRIPTIONS, params={"page": page % 5 + 1})
                except requests.ConnectionError:
                    out.append("reset")
                    continue
                out.append((r.status_code, is_json(r.content)))
        return out

    config = FaultConfig(rate=0.4, seed=9)
    with sandbox_fixture(subscriptions=1000, users=10, faults=config) as sb:
        first = sequence(sb)
        stats = sb.stats
        sb.set_faults(rate=0.4, seed=9)  # restarts the same sequence
        second = sequence(sb)
    assert first == second
    faulted = [x for x in first if x != (200, True)]
    assert 5 < len(faulted) < 30
    assert stats["faults"] == len(faulted)
    assert stats["api_requests"] == 40
    assert stats["pages_subscriptions"] == 40 - len(faulted)


def test_fault_control_endpoint(fresh: Sandbox, fresh_api: requests.Session) -> None:
    url = fresh.base_url + "/__sandbox/faults"
    answer = fresh_api.post(url, json={"rate": 1, "kinds": ["502"], "seed": 2}).json()
    assert answer["faults"]["kinds"] == ["502"]
    assert fresh_api.get(fresh.base_url + SUBSCRIPTIONS).status_code == 502
    assert fresh_api.post(url, json={}).json() == {"faults": None}
    assert fresh_api.get(fresh.base_url + SUBSCRIPTIONS).status_code == 200
    fresh_api.post(url, json={"queue": ["429", None, "500"]})
    codes = [fresh_api.get(fresh.base_url + SUBSCRIPTIONS).status_code for _ in range(4)]
    assert codes == [429, 200, 500, 200]
    bad = fresh_api.post(url, json={"rate": 2})
    assert bad.status_code == 422
    stats = fresh.stats
    assert stats["faults"] == 3
    assert (stats["fault_502"], stats["fault_429"], stats["fault_500"], stats["fault_reset"]) == (
        1,
        1,
        1,
        0,
    )
    # every "fault*" counter is an int: summing them is safe
    assert sum(v for k, v in stats.items() if k.startswith("fault")) == 6


def test_latency_setting_is_applied_and_reported(
    fresh: Sandbox, fresh_api: requests.Session
) -> None:
    fresh.set_latency(20)
    assert fresh_api.get(fresh.base_url + SUBSCRIPTIONS).ok
    assert fresh_api.get(fresh.base_url + "/__sandbox/state").json()["latency_ms"] == 20.0
    with pytest.raises(ValueError):
        fresh.set_latency(-1)


def test_bad_fault_configs_are_refused() -> None:
    with pytest.raises(ValueError):
        FaultConfig(rate=0.1, kinds=("418",))
    with pytest.raises(ValueError):
        FaultConfig(rate=-0.1)
    with pytest.raises(ValueError):
        Sandbox(subscriptions=0, users=0).queue_faults("boom")
