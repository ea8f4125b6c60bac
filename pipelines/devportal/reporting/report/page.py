"""The self-contained HTML page (`--html PATH`): a one-page dashboard read in 30 seconds, then
every figure; and `print_report`, what `devportal report` (devportal.cli.report_command) runs.

Top to bottom: the tiles (MRR, usable subscribers, last month's churn, renewal rate), each with
its change against the month before; the money tiles (ARR, ARPU, LTV, the last month's net MRR
change, the 30-day forecast); the charts of `devportal.reporting.charts` on the page (`Chart.on_page`),
MRR over time and its movements first; then the table of every figure. A chart that cannot
show anything yet (`Chart.needs`: too little history, no prices) is its one line of text, never
an empty plot. Charts are PNG images inline (matplotlib, as the notebooks draw them): the file
opens offline, with no script, no font or library to fetch, and reads the same printed or
mailed; their values are written on them (labels on points and bars) instead of tooltips.
Every text is escaped."""

from __future__ import annotations

import base64
import html as html_lib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devportal.base import safe_text
from devportal.base.errors import DevportalError
from devportal.reporting import charts, number_format
from devportal.reporting.report.coverage import FULL_MONTH, first_full_month
from devportal.reporting.report.figures import (
    OLD_BUILD_HINT,
    AnalyticsReader,
    ReportFigures,
    Unapplied,
    open_reader,
    read_figures,
    report_from_row,
)
from devportal.reporting.report.formats import FORMATS, as_of_text, render, section_rows
from devportal.warehouse.target import Where

if TYPE_CHECKING:
    import pandas as pd

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222;
  padding: 0 1rem; overflow-wrap: break-word; }}
h1 {{ font-size: 1.5rem; margin-bottom: 0.2rem; }}
h2 {{ font-size: 1.15rem; margin: 2rem 0 0.5rem; }}
p.note {{ color: #666; margin-top: 0; }}
p.basis {{ margin: 0.4rem 0; }}
p.partial {{ border-left: 4px solid #b8323a; padding: 0.3rem 0.6rem; background: #fbeaea; }}
div.tiles {{ display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr));
  gap: 0.8rem; margin: 1.2rem 0; }}
div.tiles.minor {{ grid-template-columns: repeat(auto-fit, minmax(9.5rem, 1fr)); margin-top: 0; }}
div.tile {{ border: 1px solid #ddd; border-radius: 6px; padding: 0.6rem 0.8rem; min-width: 0;
  overflow-wrap: anywhere; }}
div.tile .name {{ font-size: 0.85rem; color: #555; }}
div.tile .value {{ font-size: 1.6rem; font-weight: 600; font-variant-numeric: tabular-nums;
  margin: 0.15rem 0; }}
div.tiles.minor .value {{ font-size: 1.1rem; }}
div.tile .value.unmeasured {{ font-size: 1rem; color: #666; font-weight: 500; }}
div.tile .change {{ font-size: 0.8rem; color: #555; }}
div.tile .change.good {{ color: #2e7d32; }}
div.tile .change.bad {{ color: #b8323a; }}
div.tile .part {{ font-size: 0.8rem; color: #555; margin-top: 0.3rem; }}
div.tile .part strong {{ color: #222; font-variant-numeric: tabular-nums; }}
div.tile.wide {{ grid-column: span 2; }}
table {{ border-collapse: collapse; margin: 1rem 0 2rem; max-width: 100%; }}
td {{ padding: 0.2rem 1.2rem 0.2rem 0; overflow-wrap: anywhere; }}
td.value {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
td.note {{ text-align: left; }}
td.needs {{ color: #666; font-size: 0.85rem; padding-left: 2.4rem; }}
tr.section td {{ font-weight: 600; padding-top: 0.8rem; }}
td.sub {{ padding-left: 1.2rem; }}
figure {{ margin: 0 0 1.5rem; overflow-x: auto; overscroll-behavior-x: contain; }}
figure img {{ display: block; width: 100%; max-width: {chart_px}px; min-width: {chart_min_px}px;
  height: auto; }}
figcaption.swipe {{ display: none; font-size: 0.8rem; color: #666; }}
p.chart {{ margin: 0 0 1.5rem; padding: 0.5rem 0.8rem; background: #f6f6f6; border-radius: 6px;
  overflow-wrap: anywhere; }}
@media (max-width: 30rem) {{
  body {{ margin: 1rem auto; padding: 0 0.6rem; }}
  div.tile.wide {{ grid-column: auto; }}
  td {{ padding-right: 0.6rem; }}
  td.sub {{ padding-left: 0.4rem; }}
  td.needs {{ padding-left: 1rem; }}
}}
@media (max-width: {chart_min_px}px) {{
  figcaption.swipe {{ display: block; position: sticky; left: 0; }}
}}
</style>
</head>
<body>
<h1>{title}</h1>
<p class="note">All figures are live subscriptions, computed as of the latest successful sync
(the API server's clock), not the time this page was written.</p>
{basis}
{tiles}
{charts}
<h2>All figures</h2>
<table>
{rows}
</table>
</body>
</html>
"""


# a labelled part of a tile's figure, on a line of its own: (label, value, what it is)
Part = tuple[str, str, str]


@dataclass(frozen=True)
class Tile:
    """One tile: NAME, its VALUE as read (or "not measurable yet", UNMEASURED), and the line
    under it, LINE: its change against the month before, or what the value still needs;
    TONE colours the change: "good", "bad" or "" (neutral)."""

    name: str
    value: str
    line: str = ""
    tone: str = ""
    unmeasured: bool = False
    # further lines under it, each (label, value, what it is): a labelled part of the figure
    parts: tuple[Part, ...] = ()


def _esc(text: str) -> str:
    """TEXT for the page: one line without control characters (`safe_text.terminal`: a
    right-to-left override would reorder what the page shows), `html.escape`d."""
    return html_lib.escape(safe_text.terminal(text))


def _tone(change: float, up_is_good: bool = True) -> str:
    if change == 0:
        return ""
    return "good" if (change > 0) == up_is_good else "bad"


def _previous(month: date) -> date:
    return (month - timedelta(days=1)).replace(day=1)


def _versus(
    report: ReportFigures, now: float, before: float | None, signed: Callable[[float], str]
) -> tuple[str, str]:
    """The change from BEFORE (at the end of the month before as_of's) to NOW, as (line,
    tone): the difference (SIGNED makes it read) and its share of BEFORE. BEFORE None: not
    measured then (the history starts with the first sync)."""
    month = "month before"
    if report.as_of is not None:
        # as_of at 00:00:00 on the 1st ends the month before (sql/report/report_row.sql)
        as_of_month = (report.as_of - timedelta(microseconds=1)).date().replace(day=1)
        month = f"end of {_previous(as_of_month):%Y-%m}"
    if before is None:
        first = report.context.get("first_sync_at")
        since = f"; history starts {first:%Y-%m-%d}" if first is not None else ""
        return f"no figure for the {month}{since}", ""
    change = now - before
    share = f" ({change / before:+.1%})" if before else ""
    return f"{signed(change)}{share} vs {month}", _tone(change)


def _needs(report: ReportFigures, key: str, name: str) -> Tile | None:
    """The tile NAME of figure KEY when the history cannot measure it yet, else None."""
    needs = report.unmeasured.get(key)
    return None if needs is None else Tile(name, "not measurable yet", f"needs {needs}", "", True)


def _rate_tile(report: ReportFigures, what: str, key: str, before: str) -> Tile:
    """The tile of a rate of the last full month (WHAT: "churn", where up is bad, or "renewal
    rate"), with its change in percentage points against the month before it (the context's
    BEFORE). A rate of a month that began before the first sync rests on an estimate: the tile
    says it is not measurable yet, and gives the estimate as one."""
    values = report.values()
    month = values["last_full_month"]
    name = what.capitalize() + (f", {month:%Y-%m}" if month is not None else "")
    first = report.context.get("first_sync_at")
    watched = FULL_MONTH.format(
        month=f"{first_full_month(first):%Y-%m}" if first is not None else "the month after it"
    )
    rate = values[key]
    unmeasured = _needs(report, key, name)
    if unmeasured is not None:
        return unmeasured
    if rate is None:
        return Tile(name, "not measurable yet", f"needs {watched}", "", True)
    if values["last_full_month_is_estimate"]:
        estimate = f"; estimated from the first sync's list: at least {number_format.percent(rate)}"
        return Tile(name, "not measurable yet", f"needs {watched}{estimate}", "", True)
    previous = report.context.get(before)
    if report.context.get("month_before_last_is_estimate"):
        previous = None  # an estimated month is no base to compare with
    if previous is None or month is None:
        return Tile(name, number_format.percent(rate), "no measured month before it")
    change = rate - previous
    return Tile(
        name,
        number_format.percent(rate),
        f"{number_format.points(change)} vs {_previous(month):%Y-%m}",
        _tone(change, up_is_good=what != "churn"),
    )


def _tiles(report: ReportFigures) -> list[Tile]:
    """The four tiles an owner reads first: MRR, usable subscribers, last month's churn and
    renewal rate, each with its change against the month before."""
    values = report.values()
    currency = report.currency
    mrr = values["mrr"]
    if mrr is None:
        hint = values["prices_hint"] or ""
        if hint == charts.PRICES_HINT:
            value = "no prices set"
        elif hint == OLD_BUILD_HINT:
            value = "not built"
        else:  # prices set now, not yet in the figures: the line says which and how
            value = "prices not applied yet"
        mrr_tile = Tile("MRR", value, hint, "", True)
    else:
        line, tone = _versus(
            report,
            mrr,
            values["mrr_month_before"],
            lambda change: number_format.money(change, currency, signed=True, cents=None),
        )
        basis = values["revenue_basis"] or "gross"
        # settings set now that the figures were not built with: said on the tile too
        stale: tuple[Part, ...] = ()
        if values["prices_hint"]:
            stale = (("", "", values["prices_hint"]),)
        mrr_tile = Tile(
            f"MRR ({basis})",
            number_format.money(mrr, currency, cents=None),
            line,
            tone,
            parts=stale,
        )
    usable = values["usable_subscribers"]
    line, tone = _versus(
        report, usable, report.context.get("usable_month_before"), lambda c: f"{c:+,.0f}"
    )
    return [
        mrr_tile,
        Tile("Usable subscribers", number_format.count(usable), line, tone),
        _rate_tile(report, "churn", "last_full_month_churn_rate", "month_before_last_churn_rate"),
        _rate_tile(
            report,
            "renewal rate",
            "last_full_month_renewal_rate",
            "month_before_last_renewal_rate",
        ),
    ]


# The forecast's tile: what it counts is in its name, what it leaves out on the line under it
# (an owner reads a bare forecast below today's MRR as a decline).
_FORECAST = "MRR in 30 days from today's subscriptions"
_FORECAST_LINE = "their renewals only; new sales left out"


def _forecast_parts(values: Mapping[str, Any], currency: str | None) -> tuple[Part, ...]:
    """The forecast tile's further lines: its interval (`forecast_30d_mrr_low`/`_high`) and the
    expected new MRR from the observed rate of new sales (`forecast_30d_new_mrr`, None while
    not measurable), each when the figures carry it (read with `.get`: older figures have
    neither)."""

    def money(amount: Any, signed: bool = False) -> str:
        # one unit on a narrow tile: the code and the amount kept together
        return number_format.money(float(amount), currency, signed=signed, cents=None).replace(
            " ", "\u00a0"
        )

    parts = []
    low, high = values.get("forecast_30d_mrr_low"), values.get("forecast_30d_mrr_high")
    if low is not None and high is not None:
        parts.append(("likely between", f"{money(low)} and {money(high)}", ""))
    new = values.get("forecast_30d_new_mrr")
    forecast = values.get("forecast_30d_mrr")
    if new is not None:
        total = ""
        if forecast is not None:
            total = f"; with them about {money(float(forecast) + float(new))}"
        parts.append(("plus new sales", money(new, signed=True), f"at the rate seen so far{total}"))
    return tuple(parts)


# The money tiles under the four, while prices are set: (figure key, tile name, line under it).
_MONEY_TILES = (
    ("arr", "ARR", "12 x MRR"),
    ("arpu", "ARPU", "MRR per paying user"),
    ("ltv", "LTV", "{ltv_method}"),
    ("last_full_month_mrr_net_change", "Net MRR change, {month}", ""),
    ("forecast_30d_mrr", _FORECAST, ""),
)
_LTV_METHODS = {
    "churn_rate": "ARPU / monthly churn rate",
    "survival": "ARPU x expected lifetime (survival curve)",
}


def _money_tiles(report: ReportFigures) -> list[Tile]:
    """ARR, ARPU, LTV (and how it is estimated), the last full month's net MRR change and the
    30-day forecast; none while no price is set (the MRR tile says how to set them)."""
    values = report.values()
    if values["mrr"] is None:
        return []
    month = values["last_full_month"]

    def _signed(amount: float) -> str:
        return number_format.money(amount, report.currency, signed=True, cents=None)

    tiles = []
    for key, name, line in _MONEY_TILES:
        name = name.format(month=f"{month:%Y-%m}" if month is not None else "last full month")
        unmeasured = _needs(report, key, name)
        if unmeasured is not None:
            tiles.append(unmeasured)
            continue
        value = values[key]
        signed = key.endswith("_change")
        if value is None:
            text = "n/a"
        else:
            text = (
                _signed(value)
                if signed
                else number_format.money(value, report.currency, cents=None)
            )
        if key == "arr" and value is not None:
            # the MRR it is 12 x, to the cent: the MRR tile rounds to whole units
            line = f"12 x MRR {number_format.money(values['mrr'], report.currency)}"
        if key == "ltv":
            line = _LTV_METHODS.get(values["ltv_method"] or "", "")
        if key == "last_full_month_mrr_net_change":
            line = ", ".join(
                f"{part} {_signed(sign * (values[f'last_full_month_mrr_{part}'] or 0.0))}"
                for part, sign in (("new", 1), ("churned", -1), ("reactivated", 1))
            )
        parts: tuple[Part, ...] = ()
        if key == "forecast_30d_mrr":
            line = _FORECAST_LINE
            parts = _forecast_parts(values, report.currency)
        tone = _tone(value) if signed and value is not None else ""
        tiles.append(Tile(name, text, line, tone, parts=parts))
    return tiles


def _tiles_html(tiles: Sequence[Tile], minor: bool = False) -> str:
    if not tiles:
        return ""
    cells = [
        '<div class="tile">'
        f'<div class="name">{_esc(t.name)}</div>'
        f'<div class="value{" unmeasured" if t.unmeasured else ""}">{_esc(t.value)}</div>'
        f'<div class="change{" " + t.tone if t.tone else ""}">{_esc(t.line)}</div>'
        + "".join(
            f'<div class="part">{_esc(label)} <strong>{_esc(value)}</strong>'
            + (f" {_esc(what)}" if what else "")
            + "</div>"
            for label, value, what in t.parts
        )
        + "</div>"
        for t in tiles
    ]
    return f'<div class="tiles{" minor" if minor else ""}">\n' + "\n".join(cells) + "\n</div>"


def _chart_frames(reader: AnalyticsReader) -> dict[str, pd.DataFrame]:
    """The DataFrame of every chart whose models exist (e.g. no users before any model could
    build it)."""
    frames = {}
    for chart in charts.CHARTS:
        if chart.on_page and set(re.findall(r"analytics\.(\w+)", chart.query)) <= reader.tables:
            frames[chart.name] = reader.frame(chart.query)
    return frames


# A money chart's line while the prices set now are not in the figures (the MRR tile says which
# and the command that applies them).
_UNAPPLIED_CHART = (
    "prices are set but not in these figures yet: the MRR tile says how to apply them"
)
_NO_PRICES = (None, charts.PRICES_HINT, OLD_BUILD_HINT)


def _chart_images(
    frames: Mapping[str, pd.DataFrame], report: ReportFigures
) -> list[tuple[str, bytes | str]]:
    """The charts, as (title, PNG), drawn after the connection is closed; or (title, the line
    saying what the chart still needs) for one that cannot show anything yet."""
    shown: list[tuple[str, bytes | str]] = []
    as_of = report.as_of
    for name, frame in frames.items():
        chart = charts.BY_NAME[name]
        needs = chart.needs_history(frame, report.history)
        if needs == charts.PRICES_HINT and report.values()["prices_hint"] not in _NO_PRICES:
            needs = _UNAPPLIED_CHART  # prices set now, not in the figures: never "no prices set"
        shown.append((chart.title, needs or charts.png_bytes(chart.draw(frame, as_of))))
    return shown


# A chart is drawn CHART_PX wide (8 inches at 110 dpi) and never shown narrower than
# CHART_MIN_PX: its labels (10 and 8 points: 15 and 12 px as drawn) stay 9 px or more. On a
# narrower screen (a phone) the chart keeps that width and its figure scrolls sideways, said
# under it; the page itself never does.
CHART_PX, CHART_MIN_PX = 880, 680


def _chart_html(title: str, shown: bytes | str) -> str:
    if isinstance(shown, str):
        return f'<p class="chart"><strong>{_esc(title)}</strong>: {_esc(shown)}</p>'
    return (
        f'<figure><img alt="{_esc(title)}" '
        f'src="data:image/png;base64,{base64.b64encode(shown).decode()}">'
        '<figcaption class="swipe">swipe sideways for the whole chart</figcaption></figure>'
    )


def _windowed(title: str, window_days: Any) -> str:
    """TITLE with its "Last 30 days" saying the span its figures cover (WINDOW_DAYS, the
    figures' `window_days`, when they carry it: shorter while the history is)."""
    if window_days is None or not re.fullmatch(r"Last 30 days", title):
        return title
    days = int(window_days)
    return f"Last {days} day{'' if days == 1 else 's'} (watched so far)" if days < 30 else title


def format_html(report: ReportFigures, images: Sequence[tuple[str, bytes | str]]) -> str:
    """The page: the tiles, the charts (IMAGES: PNG, or the line of a chart that cannot show
    anything yet), every figure; every text `_esc`aped."""
    rows = []
    for section in report.sections[1:]:
        title = _windowed(section.title, report.values().get("window_days"))
        rows.append(f'<tr class="section"><td colspan="2">{_esc(title)}</td></tr>')
        for label, text, how in section_rows(section, grouped=True):
            if how in ("note", "needs"):
                rows.append(f'<tr><td class="needs" colspan="2">{_esc(text)}</td></tr>')
            else:
                cell = "note" if how == "statuses" else "value"
                rows.append(
                    f'<tr><td class="sub">{_esc(label)}</td>'
                    f'<td class="{cell}">{_esc(text)}</td></tr>'
                )
    basis_class = "basis partial" if report.partial else "basis"
    if report.partial:
        head, _, rest = report.basis.partition(":")
        basis = f'<p class="{basis_class}"><strong>{_esc(head)}:</strong>{_esc(rest)}</p>'
    else:
        basis = f'<p class="{basis_class}">{_esc(report.basis)}</p>'
    tiles = _tiles_html(_tiles(report)) + "\n" + _tiles_html(_money_tiles(report), minor=True)
    return _PAGE.format(
        title=_esc(f"Subscriptions as of {as_of_text(report)}"),
        basis=basis,
        tiles=tiles.strip(),
        rows="\n".join(rows),
        charts="\n".join(_chart_html(title, shown) for title, shown in images),
        chart_px=CHART_PX,
        chart_min_px=CHART_MIN_PX,
    )


def _write(path: str | Path, text: str) -> Path:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as err:
        raise DevportalError(f"cannot write {target}: {err.strerror or err}") from err
    return target


def _read_page(
    reader: AnalyticsReader, with_charts: bool = True, unapplied: Unapplied | None = None
) -> tuple[ReportFigures, dict[str, pd.DataFrame]]:
    """The figures and (WITH_CHARTS) the charts' data, read in one go on one connection;
    UNAPPLIED: settings set now that the figures were not built with (`Unapplied`)."""
    report = report_from_row(read_figures(reader), unapplied)
    return report, _chart_frames(reader) if with_charts else {}


def write_html(target: Where, path: str | Path) -> Path:
    """Write the self-contained HTML page (figures and charts) of TARGET to PATH."""
    with open_reader(target) as reader:
        report, frames = _read_page(reader)
    return _write(path, format_html(report, _chart_images(frames, report)))


def print_report(
    target: Where,
    fmt: str = "table",
    html: str | Path | None = None,
    unapplied: Unapplied | None = None,
) -> None:
    """Print the report of TARGET (a `Target`, or the DuckDB warehouse file's path) in FMT;
    with HTML, also write the page there. UNAPPLIED: settings set now that the figures were
    not built with (`cli.options.figures_current`), said in the revenue section."""
    if fmt not in FORMATS:
        raise DevportalError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    with open_reader(target) as reader:
        report, frames = _read_page(reader, with_charts=html is not None, unapplied=unapplied)
    print(render(report, fmt))
    if html is not None:
        page = _write(html, format_html(report, _chart_images(frames, report)))
        # stdout stays one document for json/csv/markdown; the note goes with the logs
        print(f"wrote {page}", file=sys.stdout if fmt == "table" else sys.stderr)
