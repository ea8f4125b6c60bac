"""A real headless Chromium for the tests, driven through WebDriver by selenium.

The browser is Debian's `chromium` and the driver Debian's `chromium-driver` (`chromedriver`):
built from one source, their versions always match. `make test` installs both (the Makefile's
`chromium` target). Selenium is handed the driver's path, so its Selenium Manager never runs and
nothing is downloaded.

The browser is `$CHROMIUM` if set, else `chromium` on PATH; the driver `$CHROMEDRIVER` if set,
else `chromedriver` on PATH. When either is missing, `find_chromium`/`find_chromedriver` fail
the test with the reason and the fix: the browser tests are never skipped silently.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service

# Headless, no sandbox (the tests run as root in CI), nothing that reaches the network on its
# own (updates, sync, field trials, QUIC), one window size at one device pixel per CSS pixel.
# chromedriver adds its own (a fresh profile, the debugging port).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--metrics-recording-only",
    "--hide-scrollbars",
    "--mute-audio",
    "--window-size=1280,900",
    "--force-device-scale-factor=1",
)

TIMEOUT_S = 30.0
INSTALL = "apt-get install chromium chromium-driver"


class BrowserError(RuntimeError):
    """The browser did not start, answer or load the page in time, or a script failed."""


def _find(variable: str, default: str) -> str:
    named = os.environ.get(variable)
    found = shutil.which(named) if named else shutil.which(default)
    if found is None:
        wanted = f"{variable}={named}" if named else f"`{default}` on PATH"
        pytest.fail(
            f"the browser tests drive Chromium through chromedriver and found no {wanted}: run "
            "them with `make test`, which installs Debian's chromium and chromium-driver "
            f"packages as root, or `{INSTALL}`",
            pytrace=False,
        )
    return found


def find_chromium() -> str:
    """The Chromium executable; fails the calling test (never skips) when there is none."""
    return _find("CHROMIUM", "chromium")


def find_chromedriver() -> str:
    """The chromedriver executable; fails the calling test (never skips) when there is none."""
    return _find("CHROMEDRIVER", "chromedriver")


def _first_line(err: WebDriverException) -> str:
    """What went wrong, without the session details chromedriver appends on further lines."""
    lines = (err.msg or type(err).__name__).strip().splitlines()
    return lines[0] if lines else type(err).__name__


class Browser:
    """One headless Chromium under its chromedriver, with a fresh profile; a context manager.

    `open(url)` shows URL in the browser's one tab and gives a `Page` once its load event
    fired (a later `open` replaces it); `close()` ends the browser, its driver and every
    process they started (the driver's own process group)."""

    def __init__(
        self, executable: str, driver: str | None = None, timeout_s: float = TIMEOUT_S
    ) -> None:
        self.timeout_s = timeout_s
        driver = driver or find_chromedriver()
        self._logs = tempfile.TemporaryDirectory(prefix="devportal-chromedriver-")
        self._log = Path(self._logs.name) / "chromedriver.log"
        options = webdriver.ChromeOptions()
        options.binary_location = executable
        for flag in FLAGS:
            options.add_argument(flag)
        # an explicit driver path: Selenium Manager is skipped, nothing is looked up or fetched
        self._service = Service(
            executable_path=driver,
            log_output=str(self._log),
            popen_kw={"start_new_session": True},  # the browser and its helpers end with it
        )
        try:
            self.driver = webdriver.Chrome(options=options, service=self._service)
        except WebDriverException as err:
            self._end_process_group()
            self._logs.cleanup()
            reason = _first_line(err)
            raise BrowserError(
                f"chromedriver {driver} could not start {executable} ({reason}): check that both "
                f"run and are of one version, e.g. both Debian's: {INSTALL}"
            ) from err
        self.driver.set_page_load_timeout(timeout_s)
        self.driver.set_script_timeout(timeout_s)
        self.version = str(self.driver.capabilities.get("browserVersion", ""))

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self, url: str) -> Page:
        """The tab showing URL, once its load event fired (every image of the page loaded or
        failed by then)."""
        try:
            self.driver.get(url)
        except WebDriverException as err:
            raise BrowserError(f"Chromium could not open {url}: {_first_line(err)}") from err
        page = Page(self)
        # the document is URL, loaded (not an error page standing in for it)
        shown = page.evaluate("document.readyState + ' ' + document.URL")
        if shown != f"complete {url}":
            raise BrowserError(f"Chromium did not load {url} (it shows {shown!r})")
        return page

    def resize(self, width: int, height: int = 900) -> None:
        """Make the tab's viewport WIDTH x HEIGHT CSS pixels (the window's size less whatever
        frame the browser draws around it), as a screen that wide shows the page."""
        driver = self.driver
        driver.set_window_size(width, height)
        inner = driver.execute_script("return [window.innerWidth, window.innerHeight];")
        if inner != [width, height]:
            driver.set_window_size(2 * width - inner[0], 2 * height - inner[1])
            inner = driver.execute_script("return [window.innerWidth, window.innerHeight];")
        if inner[0] != width:
            raise BrowserError(f"Chromium's viewport is {inner[0]} px wide, not {width}")

    def close(self) -> None:
        """End the browser and its driver, then any process of theirs still left; remove the
        driver's log."""
        try:
            self.driver.quit()
        finally:
            self._end_process_group()
            self._logs.cleanup()

    def _end_process_group(self) -> None:
        process = getattr(self._service, "process", None)
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # leftovers of this browser only
            process.wait()


class Page:
    """What the Browser's tab shows."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript EXPRESSION in the page (a promise is awaited); a thrown
        exception is a BrowserError with its text."""
        try:
            return self.browser.driver.execute_script(f"return (\n{expression}\n);")
        except WebDriverException as err:
            raise BrowserError(f"the page's JavaScript failed: {_first_line(err)}") from err

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page (beyond the window), written to PATH; its bytes."""
        shot = self.browser.driver.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
        )
        png = base64.b64decode(shot["data"])
        path.write_bytes(png)
        return png


# What the browser made of every <img> of a page: whether it loaded and decoded, its size as
# decoded and as laid out, and its pixels read back through a canvas (how many distinct colours
# in a sample, which share of them is not white): a blank or one-colour image shows there.
#
# And its plot area, found in the pixels: matplotlib frames it with dark spines, so its edges
# are the outermost rows and columns holding a dark run across at least 35% of the picture (a
# twin axis or a colour bar shares or extends the frame). `dataInk` is the share of the area
# inside the frame (a few pixels in from the spines and their ticks) that is coloured: every
# data mark of the charts is drawn in a colour (`charts.SERIES_COLORS`, the heat map's blues),
# while axes, ticks, text and a "no data" message are black or grey. An empty plot keeps only
# a legend's small swatches in there: `unrendered` calls a plot area with less than
# EMPTY_PLOT_INK of colour empty. `plotArea` is null when the picture has no frame (a picture
# that is not a chart).
IMAGES_JS = """
(async () => Promise.all(Array.from(document.images, async (img) => {
    const seen = {alt: img.alt, complete: img.complete, decoded: true, error: null,
                  naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
                  shownWidth: 0, shownHeight: 0, colors: 0, inked: 0,
                  plotArea: null, dataInk: 0};
    try { await img.decode(); } catch (err) { seen.decoded = false; seen.error = String(err); }
    seen.naturalWidth = img.naturalWidth;
    seen.naturalHeight = img.naturalHeight;
    const box = img.getBoundingClientRect();
    seen.shownWidth = box.width;
    seen.shownHeight = box.height;
    if (seen.decoded && img.naturalWidth > 0 && img.naturalHeight > 0) {
        const canvas = document.createElement("canvas");
        const [w, h] = [img.naturalWidth, img.naturalHeight];
        canvas.width = w;
        canvas.height = h;
        const context = canvas.getContext("2d");
        context.drawImage(img, 0, 0);
        const data = context.getImageData(0, 0, w, h).data;
        const colors = new Set();
        let inked = 0;
        for (let i = 0; i < data.length; i += 4) {
            const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
            if (a > 0 && (r < 240 || g < 240 || b < 240)) inked += 1;
            if (colors.size < 4096) colors.add((r << 16) | (g << 8) | b);
        }
        seen.colors = colors.size;
        seen.inked = inked / (w * h);
        const dark = (x, y) => {
            const i = (y * w + x) * 4;
            return data[i + 3] > 0 && data[i] < 110 && data[i + 1] < 110 && data[i + 2] < 110;
        };
        const longest = (count, length, at) => {
            let run = 0, best = 0;
            for (let k = 0; k < length; k++) {
                run = at(k) ? run + 1 : 0;
                best = Math.max(best, run);
            }
            return best;
        };
        const rows = [], columns = [];
        for (let y = 0; y < h; y++) if (longest(0, w, (x) => dark(x, y)) >= 0.35 * w) rows.push(y);
        for (let x = 0; x < w; x++) if (longest(0, h, (y) => dark(x, y)) >= 0.35 * h) columns.push(x);
        if (rows.length >= 2 && columns.length >= 2) {
            const inset = 4;
            const area = {top: rows[0] + inset, bottom: rows[rows.length - 1] - inset,
                          left: columns[0] + inset, right: columns[columns.length - 1] - inset};
            let coloured = 0, pixels = 0;
            for (let y = area.top; y <= area.bottom; y++) {
                for (let x = area.left; x <= area.right; x++) {
                    const i = (y * w + x) * 4;
                    const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
                    pixels += 1;
                    if (a > 0 && Math.max(r, g, b) - Math.min(r, g, b) > 24) coloured += 1;
                }
            }
            seen.plotArea = area;
            seen.dataInk = pixels > 0 ? coloured / pixels : 0;
        }
    }
    return seen;
})))()
"""

# Below this share of colour inside its frame, a plot area is empty (see IMAGES_JS): an empty
# frame with a legend of two swatches has about 0.3%, the thinnest real chart (a step line)
# over 1%.
EMPTY_PLOT_INK = 0.006


def images(page: Page) -> list[dict[str, Any]]:
    """What the browser made of each <img> of PAGE (see IMAGES_JS), in document order."""
    seen: list[dict[str, Any]] = page.evaluate(IMAGES_JS)
    return seen


def unrendered(image: dict[str, Any]) -> str | None:
    """Why IMAGE (one of `images`) did not render as a chart, or None when it did: it decoded
    to a non-empty size, is laid out visible, has a chart's ink (several colours, not blank)
    and its plot area holds data (not an empty frame)."""
    if not image["complete"] or not image["decoded"]:
        return f"did not decode ({image['error']})"
    if image["naturalWidth"] <= 0 or image["naturalHeight"] <= 0:
        return f"decoded to {image['naturalWidth']}x{image['naturalHeight']} pixels"
    if image["shownWidth"] <= 0 or image["shownHeight"] <= 0:
        return "is not laid out (zero size on the page)"
    if image["colors"] < 8 or image["inked"] < 0.005:
        return f"is blank ({image['colors']} colours, {image['inked']:.2%} inked)"
    if image["plotArea"] is None:
        return "has no plot area (no framed axes found)"
    if image["dataInk"] < EMPTY_PLOT_INK:
        return f"has an empty plot area ({image['dataInk']:.2%} of it coloured)"
    return None


# Where each block of a page sits against the viewport: the page's scroll width (wider than the
# viewport: a reader scrolls sideways, or a phone shrinks everything), and every tile, chart,
# chart's line and table: its box, and whether its own content is wider than its box (text cut
# or spilling over a neighbour).
LAYOUT_JS = """
(() => {
    const viewport = document.documentElement.clientWidth;
    const blocks = Array.from(
        document.querySelectorAll("div.tile, figure, figure img, p.chart, table, h1, p.basis"),
        (element) => {
            const box = element.getBoundingClientRect();
            const name = element.querySelector(".name, strong");
            return {tag: element.tagName.toLowerCase() + "." + element.className,
                    text: (element.alt || (name ? name.innerText : element.innerText) || "")
                        .slice(0, 60),
                    left: box.left, right: box.right, width: box.width, height: box.height,
                    scrollWidth: element.scrollWidth, clientWidth: element.clientWidth,
                    scrolls: ["auto", "scroll"].includes(getComputedStyle(element).overflowX),
                    inScroller: Boolean(element.parentElement && ["auto", "scroll"].includes(
                        getComputedStyle(element.parentElement).overflowX)),
                    naturalWidth: element.naturalWidth || null};
        });
    return {viewport: viewport, innerWidth: window.innerWidth,
            scrollWidth: document.documentElement.scrollWidth, blocks: blocks};
})()
"""


def layout(page: Page) -> dict[str, Any]:
    """Where the blocks of PAGE sit against its viewport (see LAYOUT_JS)."""
    seen: dict[str, Any] = page.evaluate(LAYOUT_JS)
    return seen


def cut(seen: dict[str, Any]) -> list[str]:
    """What of a page's `layout` does not fit its viewport: the page scrolling sideways, a
    block out of the viewport or of no size, a block whose content is wider than itself (a
    tile's text cut or spilling); empty when everything fits. A block that scrolls sideways
    on purpose (a chart's figure on a phone) may hold wider content, and what it holds may
    reach past the viewport: the reader scrolls it, not the page."""
    viewport = seen["viewport"]
    problems = []
    if seen["scrollWidth"] > viewport:
        problems.append(f"the page is {seen['scrollWidth']} px wide in a {viewport} px viewport")
    for block in seen["blocks"]:
        what = f"{block['tag']} {block['text']!r}"
        if block["width"] <= 0 or block["height"] <= 0:
            problems.append(f"{what} has no size ({block['width']}x{block['height']})")
        elif block["inScroller"] and block["left"] >= -0.5:
            continue  # its container's scroll shows the rest
        elif block["left"] < -0.5 or block["right"] > viewport + 0.5:
            problems.append(
                f"{what} spans {block['left']:.0f}..{block['right']:.0f} px of {viewport}"
            )
        elif (
            block["scrollWidth"] > block["clientWidth"] + 1
            and block["clientWidth"] > 0
            and not block["scrolls"]
        ):
            problems.append(
                f"{what} holds {block['scrollWidth']} px of content in {block['clientWidth']} px"
            )
    return problems


def too_small(seen: dict[str, Any], min_width: float) -> list[str]:
    """The charts of a page's `layout` shown narrower than MIN_WIDTH CSS px (a chart drawn
    880 px wide and shrunk to a phone's 400 px has labels of 5 to 7 px: unreadable), each with
    the width it has; empty when every chart is at least that wide (scrolled, if need be)."""
    return [
        f"{block['text']!r} is {block['width']:.0f} px wide (drawn {block['naturalWidth']} px)"
        for block in seen["blocks"]
        if block["tag"].startswith("img") and block["width"] < min_width - 0.5
    ]
