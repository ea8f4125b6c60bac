"""A real headless Chromium for the tests, driven over the DevTools protocol on a pipe.

Chromium's `--remote-debugging-pipe` speaks the DevTools protocol (CDP) on file descriptors 3
(commands in) and 4 (replies and events out), one JSON message per NUL-terminated record. That
is all a test needs to open a page, wait for it to load, run JavaScript in it and take a
screenshot, so this needs nothing beyond the standard library (no websocket client, no
playwright): the browser is Debian's `chromium` package, which `make test` installs (see the
Makefile's `chromium` target).

The browser is `$CHROMIUM` if set, else `chromium` on PATH. When there is none, `find_chromium`
fails the test with the reason and the fix: the browser tests are never skipped silently.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

# Headless, no sandbox (the tests run as root in CI), nothing that reaches the network on its
# own (updates, sync, field trials, QUIC), a fresh profile per browser.
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
    "--remote-debugging-pipe",
)

TIMEOUT_S = 30.0


class BrowserError(RuntimeError):
    """The browser did not start, answer or load the page in time, or a command failed."""


def find_chromium() -> str:
    """The Chromium executable; fails the calling test (never skips) when there is none."""
    named = os.environ.get("CHROMIUM")
    found = shutil.which(named) if named else shutil.which("chromium")
    if found is None:
        wanted = f"CHROMIUM={named}" if named else "`chromium` on PATH"
        pytest.fail(
            f"the browser tests need Chromium and found no {wanted}: run them with `make test`, "
            "which installs Debian's chromium package as root, or `apt-get install chromium`",
            pytrace=False,
        )
    return found


class Browser:
    """One headless Chromium process with a fresh profile; a context manager.

    `open(url)` gives a `Page` once its load event fired; `close()` ends the browser and
    every process it started (its own process group)."""

    def __init__(self, executable: str, timeout_s: float = TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._profile = tempfile.TemporaryDirectory(prefix="devportal-chromium-")
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def as_fds_3_and_4() -> None:  # in the child, before exec
            # out of the way first (a pipe may itself be fd 3 or 4); dup2 makes them inherited
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        # its log goes to a file: a pipe nobody reads would stall it once full
        self._log = Path(self._profile.name) / "chromium.log"
        log = self._log.open("wb")
        try:
            self.process = subprocess.Popen(
                [executable, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                close_fds=False,  # fds 3 and 4 must reach it; Python's own are not inherited
                preexec_fn=as_fds_3_and_4,
                start_new_session=True,  # its renderers and zygotes end with it (close)
            )
        finally:
            log.close()
            os.close(to_browser_r)
            os.close(from_browser_w)
        try:
            self.version = self.send("Browser.getVersion")["product"]
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the protocol ---------------------------------------------------------------------------

    def send(self, method: str, params: dict[str, Any] | None = None, **where: Any) -> Any:
        """Send one command (to the page of `session_id=` if given); its result."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        message.update({"sessionId": where["session_id"]} if "session_id" in where else {})
        try:
            os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        except OSError as err:
            raise BrowserError(f"Chromium is gone ({err}){self._stderr_tail()}") from None
        reply = self._wait(lambda m: m.get("id") == self._next_id, f"the reply to {method}")
        if "error" in reply:
            raise BrowserError(f"{method} failed: {reply['error'].get('message')}")
        return reply.get("result", {})

    def wait_event(self, method: str, session_id: str | None = None) -> dict[str, Any]:
        """The next event METHOD (of the page SESSION_ID), kept or still to come."""

        def wanted(m: dict[str, Any]) -> bool:
            return m.get("method") == method and m.get("sessionId") == session_id

        for index, event in enumerate(self._events):
            if wanted(event):
                return self._events.pop(index)
        return self._wait(wanted, f"the event {method}")

    def _wait(self, wanted: Any, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while True:
            while b"\0" in self._buffer:
                record, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(record)
                if wanted(message):
                    return message
                if "method" in message:
                    self._events.append(message)
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"Chromium sent no {what} within {self.timeout_s:.0f} s")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise BrowserError(
                        f"Chromium exited before {what} (code {self.process.poll()})"
                        + self._stderr_tail()
                    )
                self._buffer += chunk

    def _stderr_tail(self) -> str:
        """The last line Chromium logged, once it has exited (why it did)."""
        if self.process.poll() is None or not self._log.exists():
            return ""
        lines = self._log.read_text(errors="replace").strip().splitlines()
        return f": {lines[-1]}" if lines else ""

    # -- pages ----------------------------------------------------------------------------------

    def open(self, url: str, width: int = 1280, height: int = 900) -> Page:
        """A new tab showing URL, once its load event fired (every image of the page loaded or
        failed by then)."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        page = Page(self, session)
        page.send("Page.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        navigated = page.send("Page.navigate", {"url": url})
        if navigated.get("errorText"):
            raise BrowserError(f"Chromium could not open {url}: {navigated['errorText']}")
        self.wait_event("Page.loadEventFired", session)
        # that load was this page's, not the blank tab's: the document is URL, loaded
        deadline = time.monotonic() + self.timeout_s
        while page.evaluate("document.readyState + ' ' + document.URL") != f"complete {url}":
            if time.monotonic() > deadline:
                raise BrowserError(f"Chromium did not finish loading {url}")
            time.sleep(0.05)
        return page

    def close(self) -> None:
        """End the browser (politely, then its whole process group) and remove its profile."""
        if self.process.poll() is None:
            try:
                close = {"id": 0, "method": "Browser.close"}
                os.write(self._to_browser, json.dumps(close).encode() + b"\0")
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # leftover helpers of this browser only
        self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._profile.cleanup()


class Page:
    """One tab of a Browser, attached by session."""

    def __init__(self, browser: Browser, session_id: str) -> None:
        self.browser = browser
        self.session_id = session_id

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.browser.send(method, params, session_id=self.session_id)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript EXPRESSION in the page (a promise is awaited); a thrown
        exception is a BrowserError with its text."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"the page's JavaScript failed: {text}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page (beyond the window), written to PATH; its bytes."""
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        png = base64.b64decode(shot["data"])
        path.write_bytes(png)
        return png


# What the browser made of every <img> of a page: whether it loaded and decoded, its size as
# decoded and as laid out, and its pixels read back through a canvas (how many distinct colours
# in a sample, which share of them is not white): a blank or one-colour image shows there.
IMAGES_JS = """
(async () => Promise.all(Array.from(document.images, async (img) => {
    const seen = {alt: img.alt, complete: img.complete, decoded: true, error: null,
                  naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
                  shownWidth: 0, shownHeight: 0, colors: 0, inked: 0};
    try { await img.decode(); } catch (err) { seen.decoded = false; seen.error = String(err); }
    seen.naturalWidth = img.naturalWidth;
    seen.naturalHeight = img.naturalHeight;
    const box = img.getBoundingClientRect();
    seen.shownWidth = box.width;
    seen.shownHeight = box.height;
    if (seen.decoded && img.naturalWidth > 0 && img.naturalHeight > 0) {
        const canvas = document.createElement("canvas");
        canvas.width = img.naturalWidth;
        canvas.height = img.naturalHeight;
        const context = canvas.getContext("2d");
        context.drawImage(img, 0, 0);
        const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
        const colors = new Set();
        let inked = 0;
        for (let i = 0; i < data.length; i += 4) {
            const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
            if (a > 0 && (r < 240 || g < 240 || b < 240)) inked += 1;
            if (colors.size < 4096) colors.add((r << 16) | (g << 8) | b);
        }
        seen.colors = colors.size;
        seen.inked = inked / (canvas.width * canvas.height);
    }
    return seen;
})))()
"""


def images(page: Page) -> list[dict[str, Any]]:
    """What the browser made of each <img> of PAGE (see IMAGES_JS), in document order."""
    seen: list[dict[str, Any]] = page.evaluate(IMAGES_JS)
    return seen


def unrendered(image: dict[str, Any]) -> str | None:
    """Why IMAGE (one of `images`) did not render as a chart, or None when it did: it decoded
    to a non-empty size, is laid out visible, and has a chart's ink (several colours, not
    blank)."""
    if not image["complete"] or not image["decoded"]:
        return f"did not decode ({image['error']})"
    if image["naturalWidth"] <= 0 or image["naturalHeight"] <= 0:
        return f"decoded to {image['naturalWidth']}x{image['naturalHeight']} pixels"
    if image["shownWidth"] <= 0 or image["shownHeight"] <= 0:
        return "is not laid out (zero size on the page)"
    if image["colors"] < 8 or image["inked"] < 0.005:
        return f"is blank ({image['colors']} colours, {image['inked']:.2%} inked)"
    return None
