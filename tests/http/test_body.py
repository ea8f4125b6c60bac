"""One body's cap (http/body.py): sized from the list's per_page unless max_body_mb is set."""

from __future__ import annotations

import pytest

from devportal.base.errors import ConfigError
from devportal.http import ApiClient
from devportal.http.body import MIB
from devportal.settings.config import DevportalConfig


def test_the_body_cap_is_sized_from_per_page_unless_set() -> None:
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
