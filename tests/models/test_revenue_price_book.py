"""The price book's settings through the real CLI (`devportal models`): every bad input is one
line naming the key and leaves the warehouse as it was; a TOML prices_file and a relative path
(relative to the current folder) are read; the demo's price book and the user's own settings.
Known answers of the money models: test_revenue_known_answers.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devportal import models
from devportal.settings.config import resolve_analytics
from devportal.starter import demo
from tests.helpers import query, sync_from
from tests.models.revenue_story import environment

Cli = Any  # the `devportal` fixture: devportal(*argv, env=...) -> CliResult

FIX = "fix it in .dlt/config.toml or ANALYTICS__"
GOOD = {
    "ANALYTICS__CURRENCY": "EUR",
    "ANALYTICS__PRICE_MONTHLY": "4.99",
    "ANALYTICS__PRICE_YEARLY": "49.99",
}


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A warehouse synced twice from a small sandbox world, its models built with GOOD."""
    from devportal.sandbox import Sandbox

    warehouse = tmp_path_factory.mktemp("price-book") / "warehouse.duckdb"
    with Sandbox(subscriptions=60, users=20, seed=11, start="2026-03-01 00:00:00") as sb:
        sync_from(sb, warehouse)
        sb.advance(days=40)
        sync_from(sb, warehouse)
    with environment(GOOD):
        models.build(warehouse, check=True)
    yield warehouse


@pytest.fixture
def no_analytics_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("ANALYTICS__")]:
        monkeypatch.delenv(key)


def prices_of(warehouse: Path) -> list[tuple[Any, ...]]:
    return query(
        warehouse,
        "select period, amount, valid_from, valid_to, currency, mrr_amount "
        "from analytics.prices order by period, valid_from nulls first",
    )


FLAT_CASES = {
    "negative": (
        {"ANALYTICS__PRICE_MONTHLY": "-4.99"},
        "configuration [analytics] price_monthly = -4.99 is negative (a price is a number >= 0): "
        f"{FIX}PRICE_MONTHLY",
    ),
    "not a number": (
        {"ANALYTICS__PRICE_YEARLY": "49,99"},
        f"configuration [analytics] price_yearly = '49,99' is not a number: {FIX}PRICE_YEARLY",
    ),
    "not finite": (
        {"ANALYTICS__PRICE_UNKNOWN": "nan"},
        "configuration [analytics] price_unknown = nan is not a finite number (a price is a "
        f"number >= 0): {FIX}PRICE_UNKNOWN",
    ),
    "unknown currency": (
        {"ANALYTICS__CURRENCY": "EURO"},
        "configuration [analytics] currency = 'EURO' is not an ISO 4217 currency code (e.g. "
        f"EUR, USD, GBP): {FIX}CURRENCY",
    ),
    "withdrawn currency": (
        {"ANALYTICS__CURRENCY": "HRK"},
        "configuration [analytics] currency = 'HRK' is not an ISO 4217 currency code (e.g. "
        f"EUR, USD, GBP): {FIX}CURRENCY",
    ),
    "share of 0": (
        {"ANALYTICS__REVENUE_SHARE": "0"},
        "configuration [analytics] revenue_share = 0.0 must be above 0 and at most 1 (1.0: "
        f"gross, 0.7: 70% net): {FIX}REVENUE_SHARE",
    ),
    "share above 1": (
        {"ANALYTICS__REVENUE_SHARE": "1.3"},
        "configuration [analytics] revenue_share = 1.3 must be above 0 and at most 1 (1.0: "
        f"gross, 0.7: 70% net): {FIX}REVENUE_SHARE",
    ),
    "share not a number": (
        {"ANALYTICS__REVENUE_SHARE": "70%"},
        f"configuration [analytics] revenue_share = '70%' is not a number: {FIX}REVENUE_SHARE",
    ),
}


@pytest.mark.parametrize("case", sorted(FLAT_CASES))
def test_a_bad_flat_setting_is_one_line_naming_the_key(
    case: str, synced: Path, devportal: Cli, no_analytics_env: None
) -> None:
    before = prices_of(synced)
    change, line = FLAT_CASES[case]
    result = devportal("models", "--warehouse", str(synced), env={**GOOD, **change})
    assert (result.code, result.out) == (2, "")
    assert result.err == f"devportal: error: {line}\n"
    assert prices_of(synced) == before  # the previous build stays


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"ANALYTICS__CURRENCY": "EUR", "ANALYTICS__PRICE_MONTHLY": "4.99"},
            "configuration [analytics] price_yearly is not set while price_monthly is: set "
            "price_yearly too (a subscription's period is inferred from its history, so any may "
            "turn out monthly or yearly)",
        ),
        (
            {"ANALYTICS__PRICE_MONTHLY": "4.99", "ANALYTICS__PRICE_YEARLY": "49.99"},
            "configuration [analytics] currency is not set while prices are: set the ISO 4217 "
            'code the prices are in (e.g. currency = "EUR") in .dlt/config.toml or '
            "ANALYTICS__CURRENCY",
        ),
    ],
    ids=["no yearly price", "no currency"],
)
def test_an_incomplete_price_book_is_one_line_naming_the_missing_key(
    env: dict[str, str], line: str, synced: Path, devportal: Cli, no_analytics_env: None
) -> None:
    result = devportal("models", "--warehouse", str(synced), env=env)
    assert (result.code, result.err) == (2, f"devportal: error: {line}\n")


FILE_CASES = {
    "unknown period": (
        "prices.csv",
        "period,amount,valid_from\nmonthly,4.99,2026-01-01\nweekly,1.99,2026-01-01\n"
        "yearly,49.99,2026-01-01\n",
        "line 3: period 'weekly' is not one of monthly, yearly, unknown",
    ),
    "negative amount": (
        "prices.csv",
        "period,amount,valid_from\nmonthly,-4.99,2026-01-01\nyearly,49.99,2026-01-01\n",
        "line 2: amount '-4.99' is negative",
    ),
    "amount not a number": (
        "prices.csv",
        "period,amount,valid_from\nmonthly,4.99 EUR,2026-01-01\nyearly,49.99,2026-01-01\n",
        "line 2: amount '4.99 EUR' is not a number",
    ),
    "not a date": (
        "prices.csv",
        "period,amount,valid_from\nmonthly,4.99,01/01/2026\nyearly,49.99,2026-01-01\n",
        "line 2: valid_from '01/01/2026' is not a date (YYYY-MM-DD)",
    ),
    "overlapping validity": (
        "prices.csv",
        "period,amount,valid_from,valid_to\nmonthly,4.99,2026-01-01,2026-04-01\n"
        "yearly,49.99,2026-01-01,\nmonthly,5.99,2026-03-01,\n",
        "the monthly prices of line 2 (from 2026-01-01, until 2026-04-01) and line 4 (from "
        "2026-03-01) overlap",
    ),
    "two prices from one day": (
        "prices.csv",
        "period,amount,valid_from\nyearly,49.99,2026-01-01\nmonthly,4.99,2026-01-01\n"
        "yearly,39.99,2026-01-01\nmonthly,5.99,2026-06-01\n",
        "the yearly prices of line 2 (from 2026-01-01, with no valid_to) and line 4 (from "
        "2026-01-01) overlap",
    ),
    "valid_to not after valid_from": (
        "prices.csv",
        "period,amount,valid_from,valid_to\nmonthly,4.99,2026-01-01,2026-01-01\n"
        "yearly,49.99,2026-01-01,\n",
        "line 2: valid_to 2026-01-01 is not after valid_from 2026-01-01",
    ),
    "no yearly row": (
        "prices.csv",
        "period,amount,valid_from\nmonthly,4.99,2026-01-01\n",
        "has no yearly row (any subscription may be yearly)",
    ),
    "unknown column": (
        "prices.csv",
        "period,amount,valid_from,currency\nmonthly,4.99,2026-01-01,EUR\n",
        "its header has the column 'currency'; columns: period, amount, valid_from, valid_to",
    ),
    "toml unknown period": (
        "prices.toml",
        '[[prices]]\nperiod = "monthly"\namount = 4.99\nvalid_from = 2026-01-01\n\n'
        '[[prices]]\nperiod = "quarterly"\namount = 12.99\nvalid_from = 2026-01-01\n',
        "[[prices]] table 2: period 'quarterly' is not one of monthly, yearly, unknown",
    ),
    "toml without prices": (
        "prices.toml",
        "monthly = 4.99\n",
        "has no [[prices]] tables (rows of period, amount, valid_from)",
    ),
    "neither csv nor toml": ("prices.json", "{}", "is neither .csv nor .toml"),
}


@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_a_bad_prices_file_is_one_line_naming_the_key_and_the_line(
    case: str, synced: Path, devportal: Cli, tmp_path: Path, no_analytics_env: None
) -> None:
    name, text, why = FILE_CASES[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    before = prices_of(synced)
    env = {"ANALYTICS__CURRENCY": "EUR", "ANALYTICS__PRICES_FILE": str(path)}
    result = devportal("models", "--warehouse", str(synced), env=env)
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"devportal: error: configuration [analytics] prices_file {str(path)!r} {why}: "
        "fix the file\n"
    )
    assert prices_of(synced) == before


def test_a_relative_prices_file_is_read_from_the_current_folder(
    synced: Path,
    devportal: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_analytics_env: None,
) -> None:
    """A TOML file (date literals), named relative to the folder the command runs in; it
    overrides the flat keys also set; no unknown row: 'unknown' is priced as monthly."""
    (tmp_path / "prices.toml").write_text(
        '[[prices]]\nperiod = "monthly"\namount = 5\nvalid_from = 2026-01-01\n'
        "valid_to = 2026-06-01\n\n"
        '[[prices]]\nperiod = "monthly"\namount = "6.50"\nvalid_from = "2026-06-01"\n\n'
        '[[prices]]\nperiod = "yearly"\namount = 60.0\nvalid_from = 2026-01-01\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    env = {**GOOD, "ANALYTICS__PRICES_FILE": "prices.toml", "ANALYTICS__REVENUE_SHARE": "0.7"}
    result = devportal("models", "--warehouse", str(synced), "--check", env=env)
    assert result.code == 0, result.err
    jan, jun = date(2026, 1, 1), date(2026, 6, 1)
    assert prices_of(synced) == [
        ("monthly", 5.0, jan, jun, "EUR", Decimal("3.5")),
        ("monthly", 6.5, jun, None, "EUR", Decimal("4.55")),
        ("unknown", 5.0, jan, jun, "EUR", Decimal("3.5")),
        ("unknown", 6.5, jun, None, "EUR", Decimal("4.55")),
        ("yearly", 60.0, jan, None, "EUR", Decimal("3.5")),
    ]
    assert query(synced, "select * from analytics.price_book") == [("EUR", 0.7, True, "net")]

    # the same name from another folder: one line saying where it was looked for
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = devportal("models", "--warehouse", str(synced), env=env)
    assert (result.code, result.err) == (
        2,
        "devportal: error: configuration [analytics] prices_file 'prices.toml' is not a file (a "
        f"relative path is relative to the current folder, {elsewhere}): fix the file\n",
    )


def test_the_demo_price_book_fills_only_what_the_user_left_unset(
    no_analytics_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing set: the demo's EUR 4.99 / 49.99. The user's own prices (any of them, or a
    prices_file) win whole; the user's currency and share are kept with the demo's prices."""
    with demo.demo_prices():
        cfg = resolve_analytics()
        assert (cfg.currency, cfg.price_monthly, cfg.price_yearly) == ("EUR", 4.99, 49.99)
    assert not any(k.startswith("ANALYTICS__") for k in os.environ)  # restored

    monkeypatch.setenv("ANALYTICS__CURRENCY", "GBP")
    monkeypatch.setenv("ANALYTICS__REVENUE_SHARE", "0.85")
    with demo.demo_prices():
        cfg = resolve_analytics()
        assert (cfg.currency, cfg.revenue_share, cfg.price_monthly) == ("GBP", 0.85, 4.99)

    monkeypatch.setenv("ANALYTICS__PRICE_MONTHLY", "2.99")
    monkeypatch.setenv("ANALYTICS__PRICE_YEARLY", "29.99")
    with demo.demo_prices():
        cfg = resolve_analytics()
        assert (cfg.currency, cfg.price_monthly, cfg.price_yearly) == ("GBP", 2.99, 29.99)
    assert os.environ["ANALYTICS__PRICE_MONTHLY"] == "2.99"
