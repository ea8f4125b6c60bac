"""The report's HTML page as a person sees it: opened in a real headless Chromium (Debian's
`chromium`, driven by selenium through Debian's `chromedriver`, tests/models/browser.py), every
chart on it must have loaded, decoded to a non-empty picture and be laid out on the page.

No Chromium or no chromedriver is a failure naming the fix, never a skip: `make test` installs
both (Makefile, target `chromium`).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from devportal import charts, report
from tests.models.browser import Browser, find_chromedriver, find_chromium, images, unrendered


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser(find_chromium()) as started:
        yield started


def test_every_chart_of_the_report_renders_in_chromium(
    browser: Browser, story_warehouse: Path, tmp_path: Path
) -> None:
    path = report.write_html(story_warehouse, tmp_path / "report.html")
    page = browser.open(path.as_uri())
    seen = images(page)
    assert [image["alt"] for image in seen] == [charts.TITLES[name] for name in charts.PAGE]
    assert {image["alt"]: unrendered(image) for image in seen} == {
        image["alt"]: None for image in seen
    }
    # drawn at the size matplotlib rendered them (8 inches at 110 dpi), nothing cut off
    assert all(image["naturalWidth"] == 880 for image in seen)
    text = page.evaluate("document.body.innerText")
    assert "Renewals and retention" in text
    assert "median lifetime" in text
    shot = page.screenshot(tmp_path / "report.png")
    assert shot.startswith(b"\x89PNG\r\n\x1a\n")


def _png_of(draw: str) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    if draw == "line":
        fig.add_subplot().plot([0, 1, 0])
    return base64.b64encode(charts.png_bytes(fig)).decode()


def test_the_check_catches_charts_that_do_not_render(browser: Browser, tmp_path: Path) -> None:
    """The check is not a formality: a chart's PNG passes, a truncated one, an empty (white)
    one, an unreadable one and a missing file are each reported."""
    line = _png_of("line")
    sources = {
        "a chart": f"data:image/png;base64,{line}",
        "truncated": f"data:image/png;base64,{line[:400]}",
        "white": f"data:image/png;base64,{_png_of('white')}",
        "not a png": "data:image/png;base64,bm90IGEgcG5n",
        "missing": "no-such-file.png",
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
