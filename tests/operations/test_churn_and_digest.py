"""Churn alerts after the models are built, and `devportal digest`, through the real CLI on a
warehouse with four complete months after its first sync (tests/operations/conftest.py
`history`). The thresholds are set around the rates `analytics.monthly_churn` holds, so each
test sees the alert fire just above them and stay quiet just below."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devportal.reporting import number_format
from tests.helpers import CliResult, query, run_devportal
from tests.operations.conftest import History
from tests.operations.receiver import Receiver, refusing

Cli = Callable[..., CliResult]


def complete_months(warehouse: Path) -> list[tuple[Any, ...]]:
    """(month, churned, base, rate, is_estimate) of the complete months, latest first."""
    return query(
        warehouse,
        "select month, churned, subscribers_at_start, churn_rate, is_estimate "
        "from analytics.monthly_churn where is_complete order by month desc limit 4",
    )


def test_churn_above_the_rate_threshold_is_posted_once_per_month(
    history: History, devportal: Cli, hook: Receiver, tmp_path: Path
) -> None:
    warehouse = history.copy(tmp_path / "wh")
    [(month, churned, base, rate, _), *_] = complete_months(warehouse)
    assert rate > 0
    models = ("models", "--warehouse", str(warehouse))
    assert devportal(*models, env={"ALERTS__CHURN_RATE_ABOVE": str(rate * 1.01)}).code == 0
    assert hook.posts == []

    below = str(rate * 0.99)
    sb = history.sandbox
    env = {"ALERTS__CHURN_RATE_ABOVE": below, "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token}
    result = devportal("sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), env=env)
    assert result.code == 0, result.err
    hook.wait_for(1)
    [text] = hook.texts()
    assert text.startswith(
        f"devportal: churn in {month:%B %Y} was {number_format.percent(rate)} ({churned:,} of "
        f"{base:,} subscribers at the month's start): above churn_rate_above "
        f"{number_format.percent(float(below))} ({warehouse} on "
    )
    # the same month is not posted again, by the next build or sync
    assert devportal(*models, env={"ALERTS__CHURN_RATE_ABOVE": below}).code == 0
    assert len(hook.posts) == 1


def test_a_churn_spike_against_the_three_months_before(
    history: History, devportal: Cli, hook: Receiver, tmp_path: Path
) -> None:
    warehouse = history.copy(tmp_path / "wh")
    [latest, *before] = complete_months(warehouse)
    assert len(before) == 3 and not any(m[4] for m in before)  # measured months, no estimate
    mean = sum(m[3] for m in before) / 3
    factor = latest[3] / mean
    models = ("models", "--warehouse", str(warehouse))
    assert devportal(*models, env={"ALERTS__CHURN_SPIKE_FACTOR": str(factor * 1.01)}).code == 0
    assert hook.posts == []
    assert devportal(*models, env={"ALERTS__CHURN_SPIKE_FACTOR": str(factor * 0.99)}).code == 0
    hook.wait_for(1)
    [text] = hook.texts()
    assert f"churn in {latest[0]:%B %Y} was {number_format.percent(latest[3])}" in text
    assert (
        f": {factor:.1f}x the mean of the 3 months before ({number_format.percent(mean)})" in text
    )


def test_the_sync_that_builds_the_models_in_a_fresh_process_checks_churn(
    history: History, hook: Receiver, tmp_path: Path
) -> None:
    """As cron runs it: `devportal sync` in a process of its own execs `devportal models` to
    build them (cli.speedups); that process records the build and posts the churn alert."""
    warehouse = history.copy(tmp_path / "wh")
    sb = history.sandbox
    env = {
        "ALERTS__WEBHOOK_URL": hook.url,
        "ALERTS__CHURN_RATE_ABOVE": "0.0001",
        "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token,
    }
    result = run_devportal(
        "sync", "--base-url", sb.base_url, "--warehouse", str(warehouse), env=env
    )
    assert result.code == 0 and result.err == "", result.err
    hook.wait_for(1)
    assert hook.texts()[0].startswith("devportal: churn in ")
    status = run_devportal("status", "--warehouse", str(warehouse), "--format", "json")
    assert status.code == 0, status.out
    models = json.loads(status.out)["models"]
    assert models["current"] is True and models["built_at"] is not None


def test_a_sync_whose_churn_alert_cannot_be_posted_succeeds_with_one_warning(
    history: History, tmp_path: Path
) -> None:
    warehouse = history.copy(tmp_path / "wh")
    sb = history.sandbox
    with refusing() as url:
        env = {
            "ALERTS__WEBHOOK_URL": url,
            "ALERTS__CHURN_RATE_ABOVE": "0.0001",
            "SOURCES__DEVPORTAL__ACCESS_TOKEN": sb.token,
            "DEVPORTAL_SPEEDUPS": "off",  # the models built in the sync's own process
        }
        argv = ("sync", "--base-url", sb.base_url, "--warehouse", str(warehouse))
        result = run_devportal(*argv, env=env)
    assert result.code == 0
    [warning] = result.err.splitlines()
    assert warning.endswith("connection refused (the run goes on)")
    assert result.out.startswith("sync ok")


def test_digest_prints_and_posts_the_reports_headline(
    history: History, devportal: Cli, hook: Receiver, tmp_path: Path
) -> None:
    warehouse = history.copy(tmp_path / "wh")
    prices = {
        "ANALYTICS__CURRENCY": "EUR",
        "ANALYTICS__PRICE_MONTHLY": "4.99",
        "ANALYTICS__PRICE_YEARLY": "49.99",
    }
    assert devportal("models", "--warehouse", str(warehouse), env=prices).code == 0
    result = devportal("digest", "--warehouse", str(warehouse), env=prices)
    assert result.code == 0, result.err
    [line] = result.out.splitlines()
    hook.wait_for(1)
    assert hook.texts() == [line]
    [(as_of, mrr, usable, month, rate, churned, base, new, gone)] = query(
        warehouse,
        "select as_of, mrr, usable_subscribers, last_full_month, last_full_month_churn_rate, "
        "last_full_month_churned, last_full_month_subscribers_at_start, new_30d, churned_30d "
        "from analytics.report_figures",
    )
    assert line == (
        f"devportal digest for {warehouse}, as of {as_of:%Y-%m-%d %H:%M} (server clock): "
        f"MRR {number_format.money(mrr, 'EUR')}; {usable:,} usable subscribers; churn {month:%B %Y} "
        f"{number_format.percent(rate)} ({churned:,} of {base:,}); last 30 days +{new:,} new, "
        f"{gone:,} churned"
    )

    # no prices: no MRR; --no-post: printed only
    assert devportal("models", "--warehouse", str(warehouse)).code == 0
    quiet = devportal("digest", "--warehouse", str(warehouse), "--no-post")
    assert quiet.code == 0 and "MRR" not in quiet.out
    assert quiet.out.startswith(f"devportal digest for {warehouse}, as of ")
    assert len(hook.posts) == 1


def test_a_digest_no_webhook_took_exits_1(history: History, tmp_path: Path) -> None:
    warehouse = history.copy(tmp_path / "wh")
    with refusing() as url:
        result = run_devportal(
            "digest", "--warehouse", str(warehouse), env={"ALERTS__WEBHOOK_URL": url}
        )
    assert result.code == 1
    assert result.out.startswith(f"devportal digest for {warehouse}")
    [warning] = result.err.splitlines()
    assert warning.endswith("connection refused (the run goes on)")
