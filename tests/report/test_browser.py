"""The report in a real headless Chromium: it opens without console errors and every plot renders with
a non-zero size. Skipped when Chromium is not installed, except under CI=true, where it fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.report.browser import chromium_paths, headless_chromium, open_report
from tests.report.conftest import BATCHES, SyntheticRun


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module."""
    if chromium_paths() is None:
        message = "chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    with headless_chromium() as driver:
        yield driver


@pytest.mark.parametrize("batch", [BATCHES[2], BATCHES[-1]])
def test_report_opens_without_console_errors_and_every_plot_has_a_size(
    browser, synthetic_run: SyntheticRun, batch: str
) -> None:
    report = Path(synthetic_run.summaries[BATCHES.index(batch)].report)
    page = open_report(browser, report)
    assert page["title"].startswith(f"synthetic · {batch}")
    assert page["console"] == [], page["console"]
    plots = page["plots"]
    assert plots, "no plot element on the page"
    broken = [p for p in plots if not (p["width"] > 0 and p["height"] > 0 and p["complete"])]
    assert broken == []
    if batch == BATCHES[-1]:
        assert sum(p["tag"] == "img" for p in plots) >= 8  # four failing checks: picture and trend each
