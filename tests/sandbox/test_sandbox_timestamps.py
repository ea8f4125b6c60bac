"""The sandbox writes the API's timestamps (`devportal.base.api.TIMESTAMP_FORMAT`), the form the
pipeline parses: its fast formatter (`clock.fmt`) may not drift from that one definition."""

from __future__ import annotations

from datetime import datetime

import pytest

from devportal.base.api import TIMESTAMP_FORMAT
from devportal.sandbox.clock import fmt, from_epoch, parse_datetime, to_epoch


@pytest.mark.parametrize(
    "when",
    ["1970-01-01 00:00:00", "2024-02-29 23:59:59", "2026-01-05 07:08:09", "9999-12-31 23:59:59"],
)
def test_the_sandbox_writes_and_reads_the_api_timestamp_format(when: str) -> None:
    moment = datetime.strptime(when, TIMESTAMP_FORMAT)
    assert fmt(to_epoch(moment)) == when == from_epoch(to_epoch(moment)).strftime(TIMESTAMP_FORMAT)
    assert parse_datetime(when) == moment
