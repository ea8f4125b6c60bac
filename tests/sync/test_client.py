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


# -- answers a retry cannot change, bodies, credentials, scrubbing ---------------------------------


def test_parse_json_skips_a_utf8_byte_order_mark() -> None:
    assert parse_json(b'\xef\xbb\xbf{"data": [1]}', 200) == ({"data": [1]}, 0, 0)
    assert parse_json(b'\xef\xbb\xbf{"big": 123456789012345678901234567890}', 200)[0] == {
        "big": 123456789012345678901234567890
    }


def test_the_body_cap_is_sized_from_per_page_unless_set() -> None:
    from devportal.client import MIB

    with ApiClient(DevportalConfig(base_url="http://127.0.0.1:1", access_token="t" * 20)) as c:
        assert c.body_cap() == 16 * MIB  # page 1, an account, an error: per_page unknown
        assert c.body_cap(200) == 16 * MIB
        assert c.body_cap(1000) == 1000 * 64 * 1024
        assert c.body_cap(10**9) == 64 * MIB  # a server's absurd per_page buys no more
    config = DevportalConfig(base_url="http://127.0.0.1:1", access_token="t" * 20, max_body_mb=2.5)
    with ApiClient(config) as c:
        assert c.body_cap() == c.body_cap(10**6) == int(2.5 * MIB)
    with pytest.raises(ConfigError, match=r"max_body_mb = 0\.0 must be above 0"):
        ApiClient(DevportalConfig(base_url="http://127.0.0.1:1", access_token="t", max_body_mb=0.0))


@pytest.mark.parametrize(
    ("base_url", "shown"),
    [
        ("http://alice:pa55word@127.0.0.1:8000", "base_url for 127.0.0.1:8000 holds"),
        ("https://:pa55word@api.example.com/v1", "base_url for api.example.com holds"),
        ("alice:pa55word@api.example.com", "base_url given (not shown: it holds an '@')"),
    ],
)
def test_credentials_in_base_url_are_refused_unseen(base_url: str, shown: str) -> None:
    with pytest.raises(ConfigError) as refused:
        ApiClient(DevportalConfig(base_url=base_url, access_token="t" * 20))
    assert shown in str(refused.value)
    assert "pa55word" not in str(refused.value) and "alice" not in str(refused.value)


def test_scrub_takes_out_the_token_any_bearer_credential_and_terminal_controls() -> None:
    from devportal.errors import register_secret, scrub, server_text

    token = "scrub-test-token-" + "z" * 16
    register_secret(token)
    register_secret("short")  # too short to tell from words: never looked for
    assert scrub(f"got {token}!") == "got [redacted]!"
    assert scrub(f"got {token[:9]}\x1b[0m{token[9:]}") == "got [redacted]"  # split by an escape
    assert (
        scrub('{"authorization": "Bearer eyJ0.e30.x-y"}')
        == '{"authorization": "Bearer [redacted]"}'
    )
    assert scrub("bearer%20abc123 and BEARER  q") == "Bearer [redacted] and Bearer [redacted]"
    assert scrub("Missing bearer token. Bearer header required") == (
        "Missing bearer token. Bearer header required"
    )
    assert scrub("a short story") == "a short story"
    assert scrub("\x1b]0;title\x07\x1b[2Jred\x9b1m\x00 \u202eok\r\nnext") == "red ok\nnext"
    assert server_text("line one\r\n\tline two\u2028three", 14) == "line one li..."
    assert scrub(scrub(f"Bearer {token}")) == "Bearer [redacted]"


def test_the_early_client_reads_every_http_setting_as_dlt_does(
    sandbox_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`devportal sync`'s early client (cli.early) is adopted only when every HTTP setting
    agrees with what dlt resolves: an optional float (max_body_mb) must be read as one."""
    from devportal.cli import early
    from devportal.client import adopt
    from devportal.config import resolve

    sb = sandbox_factory(subscriptions=10, users=5, seed=69)
    for name, value in {"ACCESS_TOKEN": sb.token, "MAX_BODY_MB": "2.5", "WORKERS": "3"}.items():
        monkeypatch.setenv(f"SOURCES__DEVPORTAL__{name}", value)
    started = early.start(sb.base_url, None, None)
    assert started is not None
    cfg = resolve(base_url=sb.base_url)
    assert (cfg.max_body_mb, cfg.workers) == (2.5, 3)
    adopted = adopt(started, cfg)
    try:
        assert adopted is started
        assert adopted.body_cap() == int(2.5 * 1024 * 1024)
    finally:
        started.close()
