"""The site in a real headless Chromium, opened from file://: no console error, every SVG drawn with a
size, hover titles on the marks, and the links to pages and copied reports resolve. Skipped when
Chromium is not installed, except under CI=true, where it fails."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from driftline.tasks.history.db import open_store
from driftline.tasks.site import SiteWritten, write_site
from driftline.tasks.config.spec import load_spec
from tests.report.browser import chromium_or_skip, open_report
from tests.report.conftest import SyntheticRun, synthetic_run  # noqa: F401  (the five real runs)
from tests.site.conftest import fill

pytestmark = pytest.mark.e2e

# Links of the page that point at other files of the site, resolved by the browser.
LINKS_JS = """
return Array.from(document.querySelectorAll('a[href]'))
  .map(function (a) { return new URL(a.getAttribute('href'), document.baseURI).href; })
  .filter(function (h) { return h.indexOf('file:') === 0; });
"""
TITLED_MARKS_JS = "return document.querySelectorAll('svg rect > title, svg circle > title').length;"


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module."""
    with chromium_or_skip() as driver:
        yield driver


@pytest.fixture(scope="module")
def site(synthetic_run: SyntheticRun, tmp_path_factory: pytest.TempPathFactory) -> SiteWritten:  # noqa: F811
    """The site of the synthetic monitor's five runs (with their reports) and the hand-made monitors."""
    engine = open_store(synthetic_run.database_url)
    try:
        fill(engine)
        spec = load_spec(synthetic_run.spec_path)
        return write_site(engine, tmp_path_factory.mktemp("site"), report_roots=[spec.state_dir / "reports"])
    finally:
        engine.dispose()


def test_every_page_opens_without_console_errors_and_draws_its_svg(browser, site: SiteWritten) -> None:
    assert site.reports == 5
    for page in [site.index, *site.pages.values()]:
        opened = open_report(browser, page)
        assert opened["console"] == [], (page, opened["console"])
        svgs = [p for p in opened["plots"] if p["tag"] == "svg"]
        assert svgs, page
        assert all(p["width"] > 0 and p["height"] > 0 for p in svgs), (page, svgs)
        assert browser.execute_script(TITLED_MARKS_JS) > 0
        for link in browser.execute_script(LINKS_JS):
            assert Path(unquote(urlsplit(link).path)).is_file(), link
    synthetic = open_report(browser, site.pages["synthetic"])
    assert synthetic["title"].startswith("synthetic · 2024-05")


def test_a_copied_report_opens_from_the_monitor_page(browser, site: SiteWritten) -> None:
    open_report(browser, site.pages["synthetic"])
    reports = [link for link in browser.execute_script(LINKS_JS) if "/reports/" in link]
    assert len(reports) == 5 + 5  # the runs table and the heat map's batch labels
    browser.get(reports[0])
    assert browser.title.startswith("synthetic · ")
    assert browser.get_log("browser") == []


def test_screenshots_are_written(browser, site: SiteWritten, tmp_path: Path) -> None:
    for page in (site.index, site.pages["alpha"]):
        browser.get(page.resolve().as_uri())
        shot = tmp_path / f"{page.stem}.png"
        browser.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
