"""What the client's tests share: a client on a sandbox that retries without pausing."""

from __future__ import annotations

from typing import Any

from devportal.http import ApiClient
from devportal.settings.config import DevportalConfig
from tests.helpers import FAST_RETRY


def client_for(sb: Any, **kwargs: Any) -> ApiClient:
    return ApiClient(
        DevportalConfig(base_url=sb.base_url, access_token=sb.token, **{**FAST_RETRY, **kwargs})
    )
