"""Headless Chromium (Debian's chromium + chromium-driver) driven by selenium, for the report's browser
tests and for the README screenshot (`python -m tests.report.browser REPORT.html docs/report.png`)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver", "chromium-driver")


def chromium_paths() -> tuple[str, str] | None:
    """(browser, driver) executables when both are installed, else None."""
    browser = next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)
    driver = next((p for p in map(shutil.which, DRIVER_NAMES) if p), None)
    return (browser, driver) if browser and driver else None


@contextmanager
def headless_chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A selenium WebDriver on a fresh profile directory, with the browser console log enabled."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    paths = chromium_paths()
    if paths is None:
        raise RuntimeError(
            "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"
        )
    browser, driver_path = paths
    with tempfile.TemporaryDirectory(prefix="driftline-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={profile}")
        options.add_argument(f"--window-size={width},{height}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
        try:
            yield driver
        finally:
            driver.quit()


# Rendered size of every plot element (img and svg) on the page.
PLOT_SIZES_JS = """
return Array.from(document.querySelectorAll('img, svg')).map(function (e) {
  var r = e.getBoundingClientRect();
  return {tag: e.tagName.toLowerCase(), width: r.width, height: r.height,
          complete: e.tagName.toLowerCase() !== 'img' || (e.complete && e.naturalWidth > 0)};
});
"""


@contextmanager
def chromium_or_skip() -> Iterator[Any]:
    """`headless_chromium()` for a test module's fixture: the tests are skipped when Chromium is not
    installed, and fail instead in CI, which installs it."""
    import pytest

    if chromium_paths() is None:
        message = "chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    with headless_chromium() as driver:
        yield driver


def open_report(driver: Any, path: Path) -> dict[str, Any]:
    """Load a report file; its console messages, plot sizes and title."""
    driver.get(path.resolve().as_uri())
    plots = driver.execute_script(PLOT_SIZES_JS)
    return {"console": driver.get_log("browser"), "plots": plots, "title": driver.title}


def screenshot(report: Path, output: Path, width: int = 1280, height: int = 1700) -> None:
    """A PNG of the top `height` pixels of the report page."""
    with headless_chromium(width, height) as driver:
        driver.get(report.resolve().as_uri())
        driver.set_window_size(width, height)
        driver.save_screenshot(str(output))


if __name__ == "__main__":
    screenshot(Path(sys.argv[1]), Path(sys.argv[2]), *(int(a) for a in sys.argv[3:5]))
