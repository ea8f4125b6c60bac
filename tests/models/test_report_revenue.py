"""The report's revenue block in every format: with prices, amounts with thousands separators
and the currency, the basis (gross or net) in the title, JSON and CSV the exact numbers; without
prices, every money figure null and one line saying how to set them, not an error. Amounts are
exact at the currency's minor unit everywhere (a model's 12345.678 is 12345.68 in JSON, CSV and
the table alike).

The figures with prices are a row as `report.collect` reads it from report_figures (the models'
amounts are tested by the revenue known answers); the row without prices is the known-answer
story's, read from its warehouse."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devportal.base import safe_text
from devportal.reporting import charts, report
from devportal.reporting.report.figures import (
    _KINDS,
    FORECAST_SCOPE,
    ReportFigures,
    report_from_row,
)
from devportal.reporting.report.formats import (
    format_csv,
    format_json,
    format_markdown,
    format_table,
)
from devportal.reporting.report.page import format_html, write_html

MONEY = {
    "currency": "EUR",
    "revenue_basis": "net",
    "mrr": 12345.678,
    "arr": 148148.136,
    "arpu": 4.99,
    "ltv": 1234567.0,
    "ltv_method": "churn_rate",
    "last_full_month_mrr_new": 1500.0,
    "last_full_month_mrr_churned": 250.5,
    "last_full_month_mrr_reactivated": 0.0,
    "last_full_month_mrr_net_change": -12.25,
    "forecast_30d_mrr": 12000.0,
    "forecast_30d_mrr_low": 11900.004,
    "forecast_30d_mrr_high": 12100.5,
    "forecast_30d_new_mrr": 1480.125,
    "mrr_month_before": 11000.0,
}
# MONEY as JSON gives it: each amount rounded half up to the cent; ARR 12 x the MRR shown
EXACT = MONEY | {
    "mrr": 12345.68,
    "arr": 148148.16,
    "forecast_30d_mrr_low": 11900.0,
    "forecast_30d_new_mrr": 1480.13,
}
TEXTS = {
    "mrr": "EUR 12,345.68",
    "arr": "EUR 148,148.16",
    "arpu": "EUR 4.99",
    "ltv": "EUR 1,234,567.00",
    "last_full_month_mrr_new": "EUR 1,500.00",
    "last_full_month_mrr_churned": "EUR 250.50",
    "last_full_month_mrr_reactivated": "EUR 0.00",
    "last_full_month_mrr_net_change": "-EUR 12.25",
    "forecast_30d_mrr": "EUR 12,000.00",
    "forecast_30d_mrr_low": "EUR 11,900.00",
    "forecast_30d_mrr_high": "EUR 12,100.50",
    "forecast_30d_new_mrr": "EUR 1,480.13",
    "mrr_month_before": "EUR 11,000.00",
}
TITLE = "Revenue (net of the platform's share, EUR)"


def _priced() -> ReportFigures:
    row: dict[str, Any] = dict.fromkeys(_KINDS)
    row |= {
        "as_of": datetime(2026, 3, 5),
        "first_sync_at": datetime(2026, 1, 15),
        "has_verified_sweep": True,
        "last_verified_sweep_at": datetime(2026, 3, 5),
        "last_full_month": datetime(2026, 2, 1),
        "last_full_month_is_estimate": False,
        "survival_curve_days": 2,
        "usable_subscribers": 16804,
        **MONEY,
    }
    return report_from_row(row)


def test_json_has_the_money_keys_at_the_top_level_exactly() -> None:
    text = format_json(_priced())
    figures = json.loads(text)
    assert {key: figures[key] for key in MONEY} == EXACT
    # the digits as written: exactly two decimals, never a float's repr
    assert '"mrr": 12345.68,' in text and '"ltv": 1234567.00,' in text
    assert '"last_full_month_mrr_reactivated": 0.00,' in text
    assert figures["forecast_30d_mrr_scope"] == FORECAST_SCOPE
    assert figures["prices_hint"] is None
    assert figures["not_measurable_yet"] == {}


def test_people_read_amounts_with_separators_and_the_currency() -> None:
    priced = _priced()
    table = format_table(priced).splitlines()
    start = table.index(TITLE)
    shown = {m.key: m.label for m in priced.metrics() if m.key in TEXTS}
    block = [
        re.split(r"\s{2,}", line.strip()) for line in table[start + 1 : start + 1 + len(shown)]
    ]
    assert block == [[shown[key], text] for key, text in TEXTS.items()]
    markdown = format_markdown(priced).splitlines()
    assert f"| **{safe_text.markdown_cell(TITLE)}** | |" in markdown
    assert f"| {shown['mrr']} | EUR 12,345.68 |" in markdown
    rows = {r["metric"]: r["value"] for r in csv.DictReader(io.StringIO(format_csv(priced)))}
    assert rows["mrr"] == "12345.68" and rows["currency"] == "EUR" and rows["prices_hint"] == ""


def test_the_page_leads_with_the_mrr_tile_and_its_change() -> None:
    page = format_html(_priced(), [])
    tile = re.search(r'<div class="tile">.*?</div></div>', page, re.S)
    assert tile is not None
    assert "MRR (net)" in tile.group(0) and "EUR 12,346" in tile.group(0)
    # against the end of February: 11,000 -> 12,345.68
    assert "+EUR 1,346 (+12.2%) vs end of 2026-02" in tile.group(0)
    assert '<td class="value">EUR 148,148.16</td>' in page
    assert '<td class="value">16,804</td>' in page  # counts thousands separated on the page


def test_arr_is_12_times_the_mrr_shown() -> None:
    """The model's MRR to 6 decimals, 83,731.6325: the report shows MRR 83,731.63 and ARR
    12 x that, 1,004,779.56 (not 12 x the unrounded 1,004,779.59 -> .58 or .59), in JSON, the
    table and the page, whose ARR tile says the MRR, to the cent, it is 12 x."""
    row: dict[str, Any] = dict.fromkeys(_KINDS)
    row |= {
        "as_of": datetime(2026, 3, 5),
        "has_verified_sweep": True,
        "currency": "EUR",
        "mrr": Decimal("83731.632500"),
        "arr": Decimal("1004779.590000"),
        "arpu": 4.99,
        "usable_subscribers": 16780,
    }
    priced = report_from_row(row)
    figures = json.loads(format_json(priced), parse_float=Decimal)
    assert (figures["mrr"], figures["arr"]) == (Decimal("83731.63"), Decimal("1004779.56"))
    assert figures["arr"] == 12 * figures["mrr"]
    table = format_table(priced)
    assert re.search(r"MRR \(monthly recurring revenue\) +EUR 83,731.63\n", table)
    assert re.search(r"ARR \(12 x MRR\) +EUR 1,004,779.56\n", table)
    page = format_html(priced, [])
    arr_tile = re.search(r'<div class="tile"><div class="name">ARR</div>.*?</div></div>', page)
    assert arr_tile is not None
    assert "EUR 1,004,780" in arr_tile.group(0) and "12 x MRR EUR 83,731.63" in arr_tile.group(0)


def test_without_prices_one_line_says_how_to_set_them(
    story_warehouse: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report.print_report(story_warehouse, fmt="json")
    figures = json.loads(capsys.readouterr().out)
    assert {key: figures[key] for key in MONEY} == dict.fromkeys(MONEY)
    assert figures["prices_hint"] == charts.PRICES_HINT
    assert (
        "ANALYTICS__PRICE_MONTHLY" in charts.PRICES_HINT
        and ".dlt/config.toml" in charts.PRICES_HINT
    )
    report.print_report(story_warehouse, fmt="table")
    table = capsys.readouterr().out.splitlines()
    start = table.index("Revenue")
    assert table[start + 1] == f"    {charts.PRICES_HINT}"
    assert not table[start + 2].startswith(" ")  # the next section: no money rows
    report.print_report(story_warehouse, fmt="markdown")
    hint = safe_text.markdown_cell(charts.PRICES_HINT)  # shown literally: [ ] _ escaped
    assert f"| *{hint}* | |" in capsys.readouterr().out.splitlines()
    page = write_html(story_warehouse, tmp_path / "page.html").read_text(encoding="utf-8")
    assert "no prices set" in page and ">EUR " not in page  # no amount anywhere
