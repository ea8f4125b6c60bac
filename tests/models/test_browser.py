"""The report's HTML page as a person sees it: opened in a real headless Chromium (Debian's
`chromium`, driven by selenium through Debian's `chromedriver`, tests/models/browser.py), every
chart on it must have loaded, decoded to a non-empty picture, be laid out on the page and hold
data in its plot area; a chart without enough history is one line of text instead. For the
known-answer story, the demo (prices set) and the demo after its first sync only; each page's
screenshot is left in `screenshots/` (git-ignored) for a person to open.

No Chromium or no chromedriver is a failure naming the fix, never a skip: `make test` installs
both (Makefile, target `chromium`).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from devportal.cli import main
from devportal.reporting import charts
from devportal.reporting.charts.registry import PAGE, TITLES
from devportal.reporting.charts.style import ACTIVE_COLOR, CANCELED_COLOR
from devportal.reporting.report.page import CHART_MIN_PX, format_html, write_html
from tests.models.browser import (
    Browser,
    Page,
    cut,
    find_chromedriver,
    find_chromium,
    images,
    layout,
    too_small,
    unrendered,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser(find_chromium()) as started:
        yield started


def screenshots() -> Path:
    """Where the browser tests leave their screenshots for a person to open: `screenshots/` at
    the repository's root (git-ignored), or $DEVPORTAL_SCREENSHOTS."""
    folder = Path(os.environ.get("DEVPORTAL_SCREENSHOTS") or REPO / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _demo(folder: Path, *argv: str) -> Path:
    """A warehouse made by `devportal demo` (in-process) with ARGV, small; prices set."""
    warehouse = folder / "demo.duckdb"
    with pytest.MonkeyPatch.context() as env:
        for key, value in PRICES.items():
            env.setenv(key, value)
        code = main(["demo", "--warehouse", str(warehouse), "--subscriptions", "1500",
                     "--users", "150", *argv])  # fmt: skip
    assert code == 0
    return warehouse


# the demo's prices, set as a user would in the environment
PRICES = {
    "ANALYTICS__CURRENCY": "EUR",
    "ANALYTICS__PRICE_MONTHLY": "4.99",
    "ANALYTICS__PRICE_YEARLY": "49.99",
}


@pytest.fixture(scope="module")
def demo_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's world: three syncs a month apart, prices set."""
    return _demo(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def day_apart_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's world after two syncs a day apart: what a new user sees on day two."""
    return _demo(tmp_path_factory.mktemp("day-apart"), "--syncs", "2", "--advance-days", "1")


@pytest.fixture(scope="module")
def first_sync_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's world after its first sync only: what a new user sees on day one."""
    return _demo(tmp_path_factory.mktemp("first-sync"), "--syncs", "1")


def _open(
    browser: Browser, warehouse: Path, tmp_path: Path, name: str, width: int = 1280
) -> tuple[Page, list[dict[str, Any]]]:
    """The report's page of WAREHOUSE in the browser, WIDTH CSS pixels wide, its screenshot
    saved as NAME.png in `screenshots()`, and what the browser made of its images."""
    path = write_html(warehouse, tmp_path / f"{name}.html")
    browser.resize(width)
    page = browser.open(path.as_uri())
    shot = page.screenshot(screenshots() / f"{name}.png")
    assert shot.startswith(b"\x89PNG\r\n\x1a\n")
    return page, images(page)


def _drawn_and_noted(page: Page) -> tuple[list[str], dict[str, str]]:
    """The charts drawn on PAGE (their titles, in order) and those said in one line instead
    ({title: the line})."""
    drawn = [image["alt"] for image in images(page)]
    noted = page.evaluate(
        "Object.fromEntries(Array.from(document.querySelectorAll('p.chart'), (p) => "
        "[p.querySelector('strong').innerText, p.innerText]))"
    )
    return drawn, noted


def test_every_chart_of_the_report_renders_in_chromium(
    browser: Browser, story_warehouse: Path, tmp_path: Path
) -> None:
    """The known-answer story (no prices): every chart with data is drawn, rendered, not blank
    and with data in its plot area; the money charts say how to set prices instead."""
    page, seen = _open(browser, story_warehouse, tmp_path, "story")
    drawn, noted = _drawn_and_noted(page)
    money = [TITLES["mrr_over_time"], TITLES["mrr_movements"]]
    assert drawn == [TITLES[name] for name in PAGE if TITLES[name] not in money]
    assert set(noted) == set(money)
    assert all(charts.PRICES_HINT in line for line in noted.values())
    assert {image["alt"]: unrendered(image) for image in seen} == dict.fromkeys(drawn)
    # drawn at the size matplotlib rendered them (8 inches at 110 dpi), nothing cut off
    assert all(image["naturalWidth"] == 880 for image in seen)
    text = page.evaluate("document.body.innerText")
    assert "Renewals and retention" in text
    assert "median lifetime" in text


def test_the_demo_dashboard_renders_in_chromium(
    browser: Browser, demo_warehouse: Path, tmp_path: Path
) -> None:
    """The demo with prices: the four tiles lead with their changes against the month before,
    then every chart of the page drawn (the money charts first), each rendered with data in
    its plot area."""
    page, seen = _open(browser, demo_warehouse, tmp_path, "demo")
    drawn, noted = _drawn_and_noted(page)
    assert drawn == [TITLES[name] for name in PAGE], noted
    assert {image["alt"]: unrendered(image) for image in seen} == dict.fromkeys(drawn)
    tiles = page.evaluate(
        "Array.from(document.querySelectorAll('div.tiles:not(.minor) div.tile'), (t) => "
        "[t.querySelector('.name').innerText, t.querySelector('.value').innerText, "
        "t.querySelector('.change').innerText])"
    )
    names = [name.split(",")[0].split(" (")[0] for name, _, _ in tiles]
    assert names == ["MRR", "Usable subscribers", "Churn", "Renewal rate"]
    mrr, usable = tiles[0][1], tiles[1][1]
    assert re.fullmatch(r"EUR \d{1,3}(,\d{3})*", mrr), mrr  # thousands separated, no cents
    assert re.fullmatch(r"\d{1,3}(,\d{3})*", usable), usable
    assert " vs end of " in tiles[0][2] and " vs end of " in tiles[1][2]


def test_the_first_sync_dashboard_renders_in_chromium(
    browser: Browser, first_sync_warehouse: Path, tmp_path: Path
) -> None:
    """Day one: every chart that needs history is one line saying what it needs, never an
    empty plot; the charts drawn render with data in their plot areas; the tiles that need
    history say so instead of a 0."""
    page, seen = _open(browser, first_sync_warehouse, tmp_path, "first-sync")
    drawn, noted = _drawn_and_noted(page)
    needing = ["mrr_over_time", "mrr_movements", "usable_over_time", "cohort_retention",
               "survival_curve"]  # fmt: skip
    assert set(noted) == {TITLES[name] for name in needing}
    assert drawn == [TITLES[name] for name in PAGE if name not in needing]
    assert {image["alt"]: unrendered(image) for image in seen} == dict.fromkeys(drawn)
    assert "one day so far (EUR " in noted[TITLES["mrr_over_time"]]
    assert "not measurable yet (needs a second sync" in noted[TITLES["mrr_movements"]]
    values = page.evaluate(
        "Array.from(document.querySelectorAll('div.tile .value'), (v) => v.innerText)"
    )
    assert values[2:4] == ["not measurable yet", "not measurable yet"]  # churn, renewal rate
    text = page.evaluate("document.body.innerText")
    assert "renewed\t0" not in text and "new subscriptions\t0" not in text


# The three worlds an owner meets first (day one, day two, a month of history), each read on a
# desktop and a phone: (screenshot name, fixture).
WORLDS = {
    "one-sync": "first_sync_warehouse",
    "two-syncs-a-day-apart": "day_apart_warehouse",
    "demo-syncs-30-days-apart": "demo_warehouse",
}
WIDTHS = (1400, 420)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("world", list(WORLDS))
def test_the_page_fits_a_desktop_and_a_phone(
    browser: Browser, request: pytest.FixtureRequest, tmp_path: Path, world: str, width: int
) -> None:
    """Each world's page at 1400 px (a desktop) and 420 px (a phone): nothing wider than the
    viewport (no sideways scroll, no tile, chart or table cut off, no tile's text spilling),
    every chart drawn with data in its plot area, every chart that cannot show anything yet
    one line of text (never an empty frame), every chart on the page one or the other. The
    screenshot is `screenshots()/page-<world>-<width>.png`, for a person to open."""
    warehouse = request.getfixturevalue(WORLDS[world])
    name = f"page-{world}-{width}"
    page, seen = _open(browser, warehouse, tmp_path, name, width)
    print(f"screenshot: {screenshots() / name}.png")
    placed = layout(page)
    assert placed["viewport"] == width
    assert cut(placed) == []
    # every chart readable: never shrunk below CHART_MIN_PX (its labels 9 px or more); on a
    # phone its figure scrolls sideways, said under it, and the page does not
    assert too_small(placed, CHART_MIN_PX) == []
    charts_shown = [block for block in placed["blocks"] if block["tag"].startswith("img")]
    swipe = page.evaluate(
        "Array.from(document.querySelectorAll('figcaption.swipe'), (c) => c.offsetHeight > 0)"
    )
    if width < CHART_MIN_PX:
        assert charts_shown and all(block["inScroller"] for block in charts_shown)
        assert swipe and all(swipe)
    else:
        assert not any(swipe)
    drawn, noted = _drawn_and_noted(page)
    assert sorted([*drawn, *noted]) == sorted(TITLES[name] for name in PAGE)
    assert {image["alt"]: unrendered(image) for image in seen} == dict.fromkeys(drawn)
    # a line instead of a chart is one line of text, not a paragraph
    assert all(len(line) < 260 for line in noted.values()), noted
    tiles = page.evaluate("Array.from(document.querySelectorAll('div.tile'), (t) => t.innerText)")
    assert tiles and all(tile.strip() for tile in tiles)


def _png_of(draw: str) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    if draw == "line":
        fig.add_subplot().plot([0, 1, 0])
    return base64.b64encode(charts.png_bytes(fig)).decode()


def _empty_plot() -> str:
    """The chart a one-sync warehouse used to get: a stacked area of one day draws nothing,
    and the frame around it spans years, with its axes, ticks and legend."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 3.4), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("Usable subscribers over time")
    ax.stackplot(
        [datetime(2026, 11, 24)],
        [13535.0],
        [807.0],
        labels=["active", "canceled, usable until expiry"],
        colors=[ACTIVE_COLOR, CANCELED_COLOR],
    )
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower left", frameon=False)
    fig.autofmt_xdate()
    return base64.b64encode(charts.png_bytes(fig)).decode()


def _framed_message() -> str:
    """A frame that holds only a message ("no data yet"): no data in its plot area."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 3.4), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("Subscription survival")
    ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])
    return base64.b64encode(charts.png_bytes(fig)).decode()


def test_the_check_catches_charts_that_do_not_render(browser: Browser, tmp_path: Path) -> None:
    """The check is not a formality: a chart's PNG passes, a truncated one, an empty (white)
    one, an unreadable one, a missing file, an empty plot (axes, ticks and a legend around no
    data) and a frame around a message are each reported."""
    line = _png_of("line")
    sources = {
        "a chart": f"data:image/png;base64,{line}",
        "truncated": f"data:image/png;base64,{line[:400]}",
        "white": f"data:image/png;base64,{_png_of('white')}",
        "not a png": "data:image/png;base64,bm90IGEgcG5n",
        "missing": "no-such-file.png",
        "empty plot": f"data:image/png;base64,{_empty_plot()}",
        "framed message": f"data:image/png;base64,{_framed_message()}",
    }
    page_path = tmp_path / "page.html"
    page_path.write_text(
        "<!doctype html><html><body>"
        + "".join(f'<img alt="{alt}" src="{src}">' for alt, src in sources.items())
        + "</body></html>",
        encoding="utf-8",
    )
    seen = {image["alt"]: unrendered(image) for image in images(browser.open(page_path.as_uri()))}
    assert seen["a chart"] is None
    assert seen["truncated"] is not None and seen["truncated"].startswith("is blank")
    assert seen["white"] is not None and seen["white"].startswith("is blank")
    assert seen["not a png"] is not None and seen["not a png"].startswith("did not decode")
    assert seen["missing"] is not None and seen["missing"].startswith("did not decode")
    assert seen["empty plot"] is not None
    assert seen["empty plot"].startswith("has an empty plot area")
    assert seen["framed message"] is not None
    assert seen["framed message"].startswith("has an empty plot area")


def test_the_check_catches_charts_shrunk_to_a_phone(browser: Browser, tmp_path: Path) -> None:
    """The legibility check is not a formality: a chart drawn 880 px wide and shrunk to fit a
    420 px phone (`max-width: 100%` alone, as the page once did) is reported; the same chart
    kept at its minimum width in a figure that scrolls sideways is not, and the page around it
    does not scroll."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 3.4))
    fig.add_subplot().plot([0, 1, 0])
    src = f"data:image/png;base64,{base64.b64encode(charts.png_bytes(fig)).decode()}"
    shrunk = f'<figure style="margin:0"><img alt="shrunk" style="max-width:100%" src="{src}">'
    page_path = tmp_path / "shrunk.html"
    page_path.write_text(
        '<!doctype html><html><head><meta name="viewport" content="width=device-width">'
        f"</head><body>{shrunk}</figure></body></html>",
        encoding="utf-8",
    )
    browser.resize(420)
    placed = layout(browser.open(page_path.as_uri()))
    [problem] = too_small(placed, CHART_MIN_PX)
    assert problem.startswith("'shrunk' is ") and "(drawn 880 px)" in problem
    kept = format_html(_a_report(), [("kept", charts.png_bytes(fig))])
    page_path.write_text(kept, encoding="utf-8")
    placed = layout(browser.open(page_path.as_uri()))
    assert too_small(placed, CHART_MIN_PX) == [] and cut(placed) == []


def _a_report() -> Any:
    """The figures of an empty warehouse's report, for a page around a chart."""
    from devportal.reporting.report.figures import _KINDS, report_from_row

    row: dict[str, Any] = dict.fromkeys(_KINDS)
    row |= {"as_of": datetime(2026, 3, 5), "has_verified_sweep": True, "usable_subscribers": 0}
    return report_from_row(row)


def test_no_chromium_fails_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(pytest.fail.Exception, match=r"make test.*apt-get install chromium"):
        find_chromium()


def test_no_chromedriver_fails_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROMEDRIVER", "/nonexistent/chromedriver")
    with pytest.raises(
        pytest.fail.Exception,
        match=r"no CHROMEDRIVER=/nonexistent/chromedriver.*make test.*chromium-driver",
    ):
        find_chromedriver()
