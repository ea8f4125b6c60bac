"""The HTTP client's contract against the sandbox: what is retried, what is not, pagination."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import dlt
import pytest

from devportal.client import SUBSCRIPTIONS_PATH, ApiClient, HttpSettings, NotFound, parse_json
from devportal.config import DevportalConfig
from devportal.errors import ApiError, ConfigError
from devportal.source import devportal_source
from devportal.sync import sync
from tests.helpers import current_rows, query, truth_rows


def client_for(sb: Any, **kwargs: Any) -> ApiClient:
    kwargs.setdefault("backoff_initial_s", 0.001)
    kwargs.setdefault("backoff_max_s", 0.01)
    return ApiClient(DevportalConfig(base_url=sb.base_url, access_token=sb.token, **kwargs))


def test_pages_concurrently_in_order(sandbox_factory: Any) -> None:
    sb = sandbox_factory(subscriptions=2100, users=10, seed=61)
    with client_for(sb, workers=4) as client:
        pages = list(client.iter_pages(SUBSCRIPTIONS_PATH))
    assert [p.number for p in pages] == list(range(1, pages[0].last_page + 1))  # type: ignore[operator]
    ids = [row["id"] for p in pages for row in p.data]
    assert ids == [r["id"] for r in sb.truth()]


def test_follows_next_page_url_without_last_page_and_accepts_string_per_page(
    sandbox_factory: Any, warehouse: Path
) -> None:
    sb = sandbox_factory(subscriptions=900, users=10, seed=62)

    def no_last_page(endpoint: str, number: int, body: dict[str, Any]) -> dict[str, Any]:
        body = dict(body)
        body.pop("last_page", None)
        body["per_page"] = str(body["per_page"])
        return body

    sb.set_page_override(no_last_page)
    with client_for(sb) as client:
        pages = list(client.iter_pages(SUBSCRIPTIONS_PATH))
    assert len(pages) == 5 and pages[-1].next_page_url is None
    assert sum(len(p.data) for p in pages) == len(sb.truth())
    sync(warehouse, base_url=sb.base_url, access_token=sb.token, build_models=False)
    assert current_rows(warehouse) == truth_rows(sb)


def test_page_url_on_another_origin_is_refused(sandbox_factory: Any) -> None:
    sb = sandbox_factory(subscriptions=450, users=10, seed=63)

    def elsewhere(endpoint: str, number: int, body: dict[str, Any]) -> dict[str, Any]:
        body = dict(body)
        body.pop("last_page", None)
        if body.get("next_page_url"):
            body["next_page_url"] = "http://attacker.invalid/steal?page=2"
        return body

    sb.set_page_override(elsewhere)
    with client_for(sb) as client, pytest.raises(ApiError, match="another origin"):
        list(client.iter_pages(SUBSCRIPTIONS_PATH))


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


def test_plain_http_to_a_remote_host_is_refused() -> None:
    with pytest.raises(ConfigError, match="plain http"):
        ApiClient(DevportalConfig(base_url="http://example.com", access_token="t"))
    with pytest.raises(ConfigError, match="no access token"):
        ApiClient(DevportalConfig(base_url="https://example.com", access_token=""))


def test_devportal_source_in_a_users_own_pipeline(sandbox_factory: Any, tmp_path: Path) -> None:
    sb = sandbox_factory(subscriptions=500, users=40, seed=67)
    pipeline = dlt.pipeline(
        pipeline_name="mine",
        pipelines_dir=str(tmp_path / "dlt"),
        destination=dlt.destinations.duckdb(str(tmp_path / "mine.duckdb")),
        dataset_name="portal",
    )
    pipeline.run(devportal_source(base_url=sb.base_url, access_token=sb.token))
    rows = query(tmp_path / "mine.duckdb", "SELECT count(*) FROM portal.subscriptions")
    assert rows == [(len(sb.truth()),)]
    users = query(tmp_path / "mine.duckdb", "SELECT count(*) FROM portal.user_settings")
    assert users == [(len(sb.truth_users()),)]


def test_spelled_out_http_defaults_are_devportals() -> None:
    """The settings of the early start and of the benchmark floor (client.DefaultHttpSettings)
    are the configuration's defaults, field for field."""
    from dataclasses import fields

    from devportal.client import DefaultHttpSettings

    spelled = DefaultHttpSettings(base_url="http://127.0.0.1:1", access_token="t")
    defaults = DevportalConfig()
    names = {f.name for f in fields(DefaultHttpSettings)} - {"base_url", "access_token"}
    assert names == set(HttpSettings.__annotations__) - {"base_url", "access_token"}
    for name in names:
        assert getattr(spelled, name) == getattr(defaults, name), name


# -- NUL (U+0000): valid JSON, but no PostgreSQL text can hold it ---------------------------------


@pytest.mark.parametrize(
    ("content", "parsed", "nul"),
    [
        (rb'{"a\u0000b": "x\u0000y"}', {"a\ufffdb": "x\ufffdy"}, 2),  # in keys and values
        (rb'["\u0000\u0000"]', ["\ufffd\ufffd"], 2),
        (rb'["\\u0000"]', ["\\u0000"], 0),  # an escaped backslash, then the text u0000
        (rb'["\\\u0000"]', ["\\\ufffd"], 1),  # an escaped backslash, then the escape
        (rb'["\\\\u0000"]', ["\\\\u0000"], 0),
        (rb'["\\\\\u0000"]', ["\\\\\ufffd"], 1),
        (rb'["a\u0000", "\\u0000", "b\\\u0000"]', ["a\ufffd", "\\u0000", "b\\\ufffd"], 2),
        (rb'{"k": "\u00001"}', {"k": "\ufffd1"}, 1),  # the escape ends after four digits
        (rb'["\u00000000"]', ["\ufffd0000"], 1),
        (rb'["\u000a", "\u0001", "u0000"]', ["\n", "\x01", "u0000"], 0),  # other escapes stay
    ],
)
def test_parse_json_replaces_nul_escapes_and_counts_them(
    content: bytes, parsed: Any, nul: int
) -> None:
    assert parse_json(content, 200) == (parsed, 0, nul)


def test_parse_json_counts_nul_beside_lone_surrogates_and_big_integers() -> None:
    content = rb'{"big": 123456789012345678901234567890, "s": "\ud800\u0000", "\u0000": "\udc00"}'
    body, surrogates, nul = parse_json(content, 200)
    assert body == {"big": 123456789012345678901234567890, "s": "\ufffd\ufffd", "\ufffd": "\ufffd"}
    assert (surrogates, nul) == (2, 2)


def test_parse_json_leaves_a_body_without_nul_as_it_was() -> None:
    assert parse_json(rb'{"a": "\\u0000 and \u00e9", "n": [1, 2.5, null]}', 200) == (
        {"a": "\\u0000 and \u00e9", "n": [1, 2.5, None]},
        0,
        0,
    )


def test_a_truncated_body_with_a_nul_escape_is_still_not_json() -> None:
    from devportal.client import RetryableError

    with pytest.raises(RetryableError, match=r"truncated JSON \(11 bytes\)"):
        parse_json(rb'{"a": "\u00', 200)
    with pytest.raises(RetryableError, match="truncated JSON"):
        parse_json(rb'{"a": "\u0000', 200)


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
