"""Nothing read vanishes (issue 33, class 8): subscriptions whose `expires_at` is no date.

A hostile API (tests/hostile/server.py) lists subscriptions whose expiry is every shape a real
backend sends instead of the spec's `YYYY-MM-DD HH:MM:SS`: null and no key at all (a lifetime
plan), a MySQL zero date, an empty string, text, an object, 0, and Unix epoch numbers (seconds
and milliseconds, as a number and as a string). Through the real sync, on both engines:

* an epoch number is read as the date it is (UTC), its raw text kept in `expires_at_raw`;
* no expiry sent is a lifetime plan: usable while listed, whatever its status, counted in the
  usable line and on a line of its own (`usable_no_expiry`), never churn; a removal ends it;
* an expiry that is no date is listed, not usable, and counted on a line of its own
  (`expiry_unreadable`), in every format of the report;
* listed = usable + expiry passed + unreadable (sql/tests/report_figures_listed_add_up), the
  daily series' last day is subscriptions_current, every data test passes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from devportal import models
from tests.helpers import CliResult, OnEngine, _environ, subscription
from tests.hostile.conftest import token_env
from tests.hostile.server import HostileApi

Devportal = Callable[..., CliResult]

EPOCH = 1798761600  # 2027-01-01 00:00:00 UTC
EPOCH_DATE = datetime(2027, 1, 1)
PRICES = {
    "ANALYTICS__PRICE_MONTHLY": "5",
    "ANALYTICS__PRICE_YEARLY": "50",
    "ANALYTICS__CURRENCY": "EUR",
}


def without_expiry(i: int, **changes: Any) -> dict[str, Any]:
    row = subscription(i, **changes)
    del row["expires_at"]
    return row


# (row as sent, what devportal reads: 'date', 'lifetime' or 'unreadable', usable now)
SHAPES: list[tuple[dict[str, Any], str, bool]] = [
    (subscription(1), "date", True),
    (subscription(2, expires_at=None), "lifetime", True),
    (without_expiry(3), "lifetime", True),
    (subscription(4, expires_at="0000-00-00 00:00:00"), "unreadable", False),
    (subscription(5, expires_at=""), "unreadable", False),
    (subscription(6, expires_at=EPOCH), "date", True),
    (subscription(7, expires_at=str(EPOCH)), "date", True),
    (subscription(8, expires_at="next year"), "unreadable", False),
    (subscription(9, expires_at=EPOCH * 1000), "date", True),  # milliseconds
    (subscription(10, status="canceled", expires_at=None), "lifetime", True),
    (subscription(11, expires_at="2020-01-01 00:00:00"), "date", False),  # passed
    (subscription(12, expires_at={"date": "2027-01-01"}), "unreadable", False),
    (subscription(13, expires_at=0), "unreadable", False),
    (subscription(14, expires_at="0000-00-00"), "unreadable", False),
]


def _sync(api: HostileApi, devportal: Devportal, engine: OnEngine) -> CliResult:
    args = ["sync", "--base-url", api.base_url, *engine.argv(), "--no-models"]
    result = devportal(*args, env={**token_env(api), **engine.env})
    assert result.code == 0, result.err
    with _environ(engine.env):
        models.build(engine.target, check=True)  # every data test and reconciliation
    return result


def _report(devportal: Devportal, engine: OnEngine, fmt: str, **env: str) -> str:
    result = devportal("report", *engine.argv(), "--format", fmt, env={**engine.env, **env})
    assert result.code == 0, result.err
    return result.out


def _line(table: str, label: str) -> str:
    lines = [line for line in table.splitlines() if line.strip().startswith(label)]
    assert len(lines) == 1, (label, table)
    return lines[0]


def test_every_expiry_shape_is_read_or_counted(
    api: HostileApi, devportal: Devportal, engine: OnEngine, tmp_path: Path
) -> None:
    api.subscriptions = [row for row, _, _ in SHAPES]
    _sync(api, devportal, engine)

    # epoch numbers read as their date (UTC), the text as sent kept beside it
    stored = {
        int(i): (expires, raw)
        for i, expires, raw in engine.query(
            "SELECT id, expires_at, expires_at_raw FROM devportal.subscriptions ORDER BY id"
        )
    }
    assert stored[6] == (EPOCH_DATE, str(EPOCH)) and stored[7] == (EPOCH_DATE, str(EPOCH))
    assert stored[9] == (EPOCH_DATE, str(EPOCH * 1000))
    assert stored[2] == (None, None) and stored[3] == (None, None)  # nothing sent
    assert stored[4] == (None, "0000-00-00 00:00:00") and stored[5] == (None, '""')

    current = {
        int(i): (str(kind), bool(usable))
        for i, kind, usable in engine.query(
            "SELECT id, expiry_kind, is_usable FROM analytics.subscriptions_current"
        )
    }
    assert current == {row["id"]: (kind, usable) for row, kind, usable in SHAPES}

    figures = json.loads(_report(devportal, engine, "json"))
    listed = len(SHAPES)
    usable = sum(u for _, _, u in SHAPES)
    unreadable = sum(kind == "unreadable" for _, kind, _ in SHAPES)
    assert (figures["subscriptions_read"], figures["subscriptions_listed"]) == (listed, listed)
    assert (figures["usable_subscribers"], figures["usable_no_expiry"]) == (usable, 3)
    assert (figures["expiry_unreadable"], figures["listed_expired"]) == (unreadable, 1)
    assert usable + unreadable + figures["listed_expired"] == listed  # nothing vanishes
    # the usable line adds up, the canceled lifetime plan (10) among the canceled
    assert (figures["usable_active"], figures["usable_canceled"]) == (usable - 1, 1)
    assert (
        figures["usable_active"] + figures["usable_canceled"] + figures.get("usable_other", 0)
        == usable
    )  # no other status: its line is not shown
    assert figures["expiring_30d"] == 0  # a lifetime plan never expires soon
    ((last_day,),) = engine.query(
        "SELECT usable FROM analytics.daily_subscribers ORDER BY day DESC LIMIT 1"
    )
    assert int(last_day) == usable

    # every format says it: the count and the assumption
    table = _report(devportal, engine, "table")
    assert _line(table, "usable now").split()[-1] == str(usable)
    lifetime = _line(table, "of them, no expiry sent")
    assert "lifetime: usable while listed" in lifetime
    assert lifetime.split()[-1] == "3"
    assert _line(table, "expiry unreadable (listed, not counted as usable)").split()[-1] == str(
        unreadable
    )
    cells = {
        row["metric"]: row["value"]
        for row in csv.DictReader(io.StringIO(_report(devportal, engine, "csv")))
    }
    assert (cells["usable_no_expiry"], cells["expiry_unreadable"]) == ("3", str(unreadable))
    markdown = _report(devportal, engine, "markdown")
    assert f"| expiry unreadable (listed, not counted as usable) | {unreadable} |" in markdown
    page = tmp_path / "page.html"
    html = devportal("report", *engine.argv(), "--html", str(page), env=engine.env)
    assert html.code == 0, html.err
    text = page.read_text(encoding="utf-8")
    assert "expiry unreadable (listed, not counted as usable)" in text
    assert "no expiry sent (lifetime: usable while listed)" in text

    # the lifetime plan 2 is no longer listed: its use ends there (removed, not churn); the
    # zero date 4 becomes a date: usable
    api.subscriptions = [
        subscription(4) if row["id"] == 4 else row for row, _, _ in SHAPES if row["id"] != 2
    ]
    _sync(api, devportal, engine)
    after = json.loads(_report(devportal, engine, "json"))
    assert (after["subscriptions_read"], after["subscriptions_listed"]) == (listed, listed - 1)
    assert (after["usable_subscribers"], after["usable_no_expiry"]) == (usable, 2)
    assert after["expiry_unreadable"] == unreadable - 1
    assert after["churned_30d"] == 0  # nor churns: a removal is no churn
    assert (after["usable_active"], after["usable_canceled"]) == (usable - 1, 1)

    # with prices: a lifetime plan is a subscriber that adds 0 to MRR, every check passes
    with _environ({**engine.env, **PRICES}):
        models.build(engine.target, check=True)
    lifetime_mrr = engine.query(
        "SELECT subscription_id, mrr_amount FROM analytics.mrr_spells "
        "WHERE period = 'lifetime' ORDER BY subscription_id"
    )
    # 2 while it was listed, 3 and 10 still
    assert [(int(i), float(amount)) for i, amount in lifetime_mrr] == [
        (2, 0.0),
        (3, 0.0),
        (10, 0.0),
    ]
    ((subscribers, mrr),) = engine.query(
        "SELECT subscribers, mrr FROM analytics.mrr_daily ORDER BY day DESC LIMIT 1"
    )
    assert int(subscribers) == usable
    priced = json.loads(_report(devportal, engine, "json", **PRICES))
    assert priced["mrr"] is not None and float(priced["mrr"]) == float(mrr)


def test_no_line_when_every_expiry_is_a_date(
    api: HostileApi, devportal: Devportal, engine: OnEngine
) -> None:
    api.subscriptions = [subscription(1), subscription(2, expires_at="2020-01-01 00:00:00")]
    _sync(api, devportal, engine)
    figures = json.loads(_report(devportal, engine, "json"))
    assert "usable_no_expiry" not in figures and "expiry_unreadable" not in figures
    assert (figures["subscriptions_listed"], figures["listed_expired"]) == (2, 1)
    assert "expiry unreadable" not in _report(devportal, engine, "table")
