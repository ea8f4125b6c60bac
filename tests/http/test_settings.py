"""The HTTP settings and the checks made before anything is sent (settings/http.py): plain
http to a remote host, credentials in base_url, the one definition of the HTTP settings."""

from __future__ import annotations

import pytest

from devportal.base.errors import ConfigError
from devportal.http import ApiClient, HttpSettings
from devportal.settings.config import DevportalConfig


def test_plain_http_to_a_remote_host_is_refused() -> None:
    with pytest.raises(ConfigError, match="plain http"):
        ApiClient(DevportalConfig(base_url="http://example.com", access_token="t"))
    with pytest.raises(ConfigError, match="no access token"):
        ApiClient(DevportalConfig(base_url="https://example.com", access_token=""))


def test_the_http_settings_are_defined_once_and_the_token_stays_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`[sources.devportal]` is `client.settings.HttpSettings` plus the run's own fields: dlt
    resolves the inherited HTTP fields like any other (environment, types), the token is a
    secret to dlt, and no representation of the settings shows it."""
    from dataclasses import fields

    from devportal.settings.config import resolve

    assert issubclass(DevportalConfig, HttpSettings)
    http = {f.name for f in fields(HttpSettings)}
    assert http < {f.name for f in fields(DevportalConfig)}
    assert "timeout_s" in http and "include_test" not in http
    hints = DevportalConfig.get_resolvable_fields()
    assert "SecretSentinel" in str(hints["access_token"])
    monkeypatch.setenv("SOURCES__DEVPORTAL__BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("SOURCES__DEVPORTAL__ACCESS_TOKEN", "s3cret-t0ken")
    monkeypatch.setenv("SOURCES__DEVPORTAL__TIMEOUT_S", "4.5")
    monkeypatch.setenv("SOURCES__DEVPORTAL__ALLOW_INSECURE_REMOTE", "true")
    cfg = resolve(workers=3)
    assert (cfg.timeout_s, cfg.allow_insecure_remote, cfg.workers) == (4.5, True, 3)
    assert cfg.max_attempts == HttpSettings().max_attempts == 8  # the one default
    assert "s3cret-t0ken" not in repr(cfg) and "timeout_s=4.5" in repr(cfg)
    assert "s3cret-t0ken" not in repr(HttpSettings(access_token="s3cret-t0ken"))


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
