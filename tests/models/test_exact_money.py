"""Exact money: every amount of the report is a Decimal at its currency's minor unit (ISO 4217
exponent: EUR 2, JPY 0, KWD 3), read alike from DuckDB's doubles and PostgreSQL's numerics,
written by JSON as a number with exactly those digits, by CSV and Markdown the same."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from devportal.reporting import number_format
from devportal.reporting.report.figures import _KINDS, ReportFigures, _figure, report_from_row
from devportal.reporting.report.formats import (
    exact_json,
    format_csv,
    format_json,
    format_markdown,
    format_table,
)
from devportal.settings import currencies


def _priced(currency: str, **money: Any) -> ReportFigures:
    row: dict[str, Any] = dict.fromkeys(_KINDS)
    row |= {
        "as_of": datetime(2026, 3, 5),
        "first_sync_at": datetime(2026, 1, 15),
        "has_verified_sweep": True,
        "last_verified_sweep_at": datetime(2026, 3, 5),
        "last_full_month": datetime(2026, 2, 1),
        "last_full_month_is_estimate": False,
        "survival_curve_days": 2,
        "usable_subscribers": 10,
        "currency": currency,
        "revenue_basis": "gross",
        "ltv_method": "churn_rate",
        **money,
    }
    return report_from_row(row)


@pytest.mark.parametrize(
    ("value", "currency", "expected"),
    [
        (223321.83122399997, "EUR", Decimal("223321.83")),  # the ARR
        (20.72400067037862, "EUR", Decimal("20.72")),  # the ARPU
        (Decimal("20.724000670378620000"), "EUR", Decimal("20.72")),  # PostgreSQL's numeric
        (199.79999999999998, "EUR", Decimal("199.80")),
        (2.005, "EUR", Decimal("2.01")),  # half up, though the double is 2.00499999...
        (-0.001, "EUR", Decimal("0.00")),  # no negative zero
        (123456.5, "JPY", Decimal("123457")),
        (12.3455, "KWD", Decimal("12.346")),
        (1.23456789, "CLF", Decimal("1.2346")),
        (1.2345678, "XAU", Decimal("1.234568")),  # no minor unit: the models' 6 decimals
        (4.99, None, Decimal("4.99")),
        (None, "EUR", None),
        (float("nan"), "EUR", None),
    ],
)
def test_an_amount_is_exact_at_the_minor_unit(
    value: Any, currency: str | None, expected: Decimal | None
) -> None:
    got = number_format.exact(value, currency)
    assert got == expected
    if expected is not None:
        assert str(got) == str(expected)  # the digits too: 199.80, not 199.8


def test_a_double_and_a_numeric_give_the_same_figure() -> None:
    for double, numeric in [
        (20.72400067037862, Decimal("20.72400067037862")),
        (82169.929018, Decimal("82169.929018")),
        (2.675, Decimal("2.675000")),
    ]:
        on_duckdb = _figure(double, "money", "EUR")
        on_postgres = _figure(numeric, "money", "EUR")
        assert on_duckdb == on_postgres and type(on_duckdb) is Decimal
        assert str(on_duckdb) == str(on_postgres)


def test_every_currency_has_a_minor_unit() -> None:
    """The exponents that are not 2 name currencies of the checked-in ISO 4217 list."""
    assert set(number_format._EXPONENTS) <= currencies.CURRENCIES
    assert {number_format.minor_unit(code) for code in currencies.CURRENCIES} == {0, 2, 3, 4, 6}
    assert (
        number_format.minor_unit("EUR"),
        number_format.minor_unit("JPY"),
        number_format.minor_unit("KWD"),
    ) == (
        2,
        0,
        3,
    )


def test_json_csv_and_markdown_say_the_same_digits_in_yen() -> None:
    figures = _priced(
        "JPY", mrr=123456.5, arr=1481478.0, arpu=12345.649999999998, forecast_30d_mrr=120000.4
    )
    text = format_json(figures)
    lines = [line.strip() for line in text.splitlines()]
    # ARR is 12 x the MRR shown (123,457), not 12 x the model's 123,456.5
    assert '"mrr": 123457,' in lines and '"arr": 1481484,' in lines
    assert '"arpu": 12346,' in lines and '"forecast_30d_mrr": 120000,' in lines
    parsed = json.loads(text, parse_float=Decimal)
    assert parsed["mrr"] == 123457 and parsed["currency"] == "JPY"
    rows = {r["metric"]: r["value"] for r in csv.DictReader(io.StringIO(format_csv(figures)))}
    assert (rows["mrr"], rows["arpu"]) == ("123457", "12346")
    markdown = format_markdown(figures).splitlines()
    assert "| MRR (monthly recurring revenue) | JPY 123,457 |" in markdown
    assert number_format.money(figures.values()["arpu"], "JPY", cents=None) == "JPY 12,346"


def test_cents_are_written_even_when_zero() -> None:
    figures = _priced("EUR", mrr=1000.0, arr=12000.0, arpu=10.5, mrr_month_before=0.0)
    lines = [line.strip() for line in format_json(figures).splitlines()]
    assert '"mrr": 1000.00,' in lines and '"arpu": 10.50,' in lines
    assert '"mrr_month_before": 0.00,' in lines


def test_exact_json_writes_decimals_only_where_they_are() -> None:
    """A text that looks like a placeholder stays text; nested values keep their layout."""
    values = {
        "amount": Decimal("12.50"),
        "name": "0",
        "nested": {"a": [1, 2]},
        "negative": Decimal("-3.10"),
        "big": Decimal("1E+3").quantize(Decimal("0.01")),
    }
    text = exact_json(values)
    assert json.loads(text) == {
        "amount": 12.5,
        "name": "0",
        "nested": {"a": [1, 2]},
        "negative": -3.1,
        "big": 1000,
    }
    assert '"amount": 12.50,' in text and '"negative": -3.10,' in text
    assert '"big": 1000.00' in text
    plain = {key: value for key, value in values.items() if not isinstance(value, Decimal)}
    assert exact_json(plain) == json.dumps(plain, indent=2)


def test_the_table_and_the_page_read_the_same_amounts() -> None:
    figures = _priced("EUR", mrr=12345.675, arr=148148.1, arpu=4.995)
    table = format_table(figures)
    assert "EUR 12,345.68" in table and "EUR 5.00" in table  # 4.995 half up, as JSON
    assert figures.values()["mrr"] == Decimal("12345.68")
