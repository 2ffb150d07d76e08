"""The report in a real headless Chromium: it opens without console errors and every plot renders with
a non-zero size, the attribution figures too. Skipped when Chromium is not installed, except under
CI=true, where it fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from driftline.tasks.report.figures import check_pictures
from tests.report.browser import chromium_or_skip, open_report
from tests.report.conftest import BATCHES, SyntheticRun, make_frame

COLUMNS = Columns(id="id", label="label", score="score", numeric=("x",), categorical=("c",))


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module."""
    with chromium_or_skip() as driver:
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


def test_the_attribution_figures_open_in_the_browser_with_a_size(browser, tmp_path: Path) -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    results = [
        r.to_dict()
        for name, params in (
            ("attribution.auc", {"max_depth": 2}),
            ("attribution.pairs", {"features": ["c"]}),
        )
        for r in run_check(registry.create(name, params), batch, COLUMNS, reference=reference, strict=True)
    ]
    pictures = [
        p for check in ("attribution.auc", "attribution.pairs") for p in check_pictures(check, results)
    ]
    assert len(pictures) == 2
    page = tmp_path / "figures.html"
    page.write_text(
        "<!doctype html><title>figures</title>"
        + "".join(f'<figure><img src="{p.uri}" alt="{p.caption}"></figure>' for p in pictures)
    )
    opened = open_report(browser, page)
    assert opened["console"] == [], opened["console"]
    assert [p["tag"] for p in opened["plots"]] == ["img", "img"]
    assert all(p["width"] > 100 and p["height"] > 100 and p["complete"] for p in opened["plots"])
