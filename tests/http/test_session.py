"""The client (http/session.py) against the sandbox: what is retried and what is not, the
`Retry-After` cap, what it counts, and adopting the early start's client."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from devportal.base.errors import ApiError
from devportal.http import SUBSCRIPTIONS_PATH, ApiClient, NotFound
from devportal.settings.config import DevportalConfig
from tests.http.conftest import client_for


@pytest.mark.parametrize(
    ("path", "params", "error", "match"),
    [
        (SUBSCRIPTIONS_PATH, {"start": "2026-01-01"}, ApiError, r"422.*end"),
        (SUBSCRIPTIONS_PATH, {"id": "987654321"}, NotFound, "404"),
        ("/api/v1/developer/users/987654321", None, NotFound, "404"),
    ],
)
def test_answers_are_not_retried(
    sandbox_factory: Any, path: str, params: Any, error: type[Exception], match: str
) -> None:
    sb = sandbox_factory(subscriptions=10, users=5, seed=64)
    before = sb.stats["api_requests"]
    with client_for(sb) as client, pytest.raises(error, match=match):
        client.get_json(path, params)
    assert sb.stats["api_requests"] - before == 1


def test_bad_token_is_not_retried(sandbox_factory: Any) -> None:
    sb = sandbox_factory(subscriptions=10, users=5, seed=65)
    before = sb.stats["unauthorized"]
    config = DevportalConfig(base_url=sb.base_url, access_token="nope")
    with ApiClient(config) as client, pytest.raises(ApiError, match="access token rejected"):
        client.get_json(SUBSCRIPTIONS_PATH)
    assert sb.stats["unauthorized"] - before == 1


def test_retry_after_is_honoured_up_to_the_cap(sandbox_factory: Any, caplog: Any) -> None:
    caplog.set_level(logging.WARNING, logger="devportal.client")
    sb = sandbox_factory(subscriptions=10, users=5, seed=66)
    sb.set_faults(rate=1.0, kinds=("429",), seed=1, retry_after=120)
    with (
        client_for(sb, max_attempts=3, retry_after_cap_s=0.05) as client,
        pytest.raises(ApiError, match="still failing after 3 attempts"),
    ):
        client.get_json(SUBSCRIPTIONS_PATH)
    waits = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert len(waits) == 2
    assert all(" in 0.05s: 429 rate limited" in w for w in waits)


def test_the_client_counts_replaced_nul_characters(sandbox_factory: Any) -> None:
    sb = sandbox_factory(subscriptions=5, users=5, seed=68)

    def with_nul(endpoint: str, number: int, body: dict[str, Any]) -> dict[str, Any]:
        body = dict(body)
        body["data"] = [{**row, "status": "act\x00ive\x00"} for row in body["data"]]
        return body

    sb.set_page_override(with_nul)
    with client_for(sb) as client:
        body, _ = client.get_json(SUBSCRIPTIONS_PATH)
        assert {row["status"] for row in body["data"]} == {"act\ufffdive\ufffd"}
        assert client.stats.replaced_nul == 2 * len(body["data"]) > 0
        assert client.stats.replaced_surrogates == 0


def test_the_early_client_reads_every_http_setting_as_dlt_does(
    sandbox_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`devportal sync`'s early client (cli.early) is adopted only when every HTTP setting
    agrees with what dlt resolves: an optional float (max_body_mb) must be read as one."""
    from devportal.cli import early_start
    from devportal.http import adopt
    from devportal.settings.config import resolve

    sb = sandbox_factory(subscriptions=10, users=5, seed=69)
    for name, value in {"ACCESS_TOKEN": sb.token, "MAX_BODY_MB": "2.5", "WORKERS": "3"}.items():
        monkeypatch.setenv(f"SOURCES__DEVPORTAL__{name}", value)
    started = early_start.start(sb.base_url, None, None)
    assert started is not None
    cfg = resolve(base_url=sb.base_url)
    assert (cfg.max_body_mb, cfg.workers) == (2.5, 3)
    adopted = adopt(started, cfg)
    try:
        assert adopted is started
        assert adopted.body_cap() == int(2.5 * 1024 * 1024)
    finally:
        started.close()
