"""The report's hand-drawn SVG pictures show the numbers they claim: bar heights and widths, points and
bands are read back from the SVG and compared with numpy, pandas and scikit-learn on the same data."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import calibration_curve

from driftline.checks.columns import Columns
from driftline.checks.registry import create
from driftline.tasks.history.trend import MAD_NORMAL_SCALE
from driftline.tasks.report.figures import (
    BAND_COLOUR,
    BATCH_COLOUR,
    REFERENCE_COLOUR,
    THRESHOLD_COLOURS,
    calibration_svg,
    category_bars_svg,
    drift_histogram_svg,
    subset_bars_svg,
    trend_svg,
)
from driftline.tasks.report.trends import baseline_bands
from driftline.tasks.tools.drawing import nice_ticks
from tests.report.conftest import make_frame
from tests.report.test_figures import psi_series

SVG = "{http://www.w3.org/2000/svg}"
COLUMNS = Columns(id="id", label="label", score="score", numeric=("x",), categorical=("c",))


def _result(name: str, reference: pd.DataFrame, batch: pd.DataFrame, **params) -> dict:
    check = create(name, params)
    (result,) = [r.to_dict() for r in check.evaluate(batch, check.fit(reference, COLUMNS), COLUMNS)]
    return result


def _svg(uri: str) -> ET.Element:
    assert uri.startswith("data:image/svg+xml;base64,")
    return ET.fromstring(base64.b64decode(uri.split(",", 1)[1]))


def _rects(root: ET.Element, colour: str) -> list[dict[str, float]]:
    return [
        {k: float(r.get(k)) for k in ("x", "y", "width", "height")}
        for r in root.iter(f"{SVG}rect")
        if r.get("fill") == colour
    ]


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_histogram_bars_are_numpys_densities_on_the_checks_bins() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    result = _result("drift.numeric", reference, batch)
    root = _svg(drift_histogram_svg(result))
    bars = sorted(_rects(root, REFERENCE_COLOUR)[:-1], key=lambda r: r["x"])  # the last is the legend's
    interior = np.asarray(result["details"]["edges"], dtype=float)
    edges = np.r_[
        min(reference["x"].min(), batch["x"].min()), interior, max(reference["x"].max(), batch["x"].max())
    ]
    counts = np.histogram(-reference["x"].to_numpy(), bins=-edges[::-1])[0][::-1]  # right-closed bins
    density = counts / (counts.sum() * np.diff(edges))
    heights = np.array([b["height"] for b in bars])
    widths = np.array([b["width"] for b in bars])
    assert len(bars) == len(density)
    np.testing.assert_allclose(heights / heights.max(), density / density.max(), atol=0.02)
    np.testing.assert_allclose(widths / widths.sum(), np.diff(edges) / np.ptp(edges), atol=0.01)
    assert "reference (3,000 rows)" in _texts(root) and "batch (2,000 rows)" in _texts(root)


def test_category_bars_are_pandas_shares() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    root = _svg(category_bars_svg(_result("drift.categorical", reference, batch)))
    ticks = [t.text for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    labels = [t for t in ticks if t in {"a", "b", "c", "d"}]  # top to bottom
    batch_bars = sorted(_rects(root, BATCH_COLOUR)[:-1], key=lambda r: r["y"])  # the legend's last
    shares = batch["c"].value_counts(normalize=True)[labels].to_numpy()
    widths = np.array([b["width"] for b in batch_bars])
    np.testing.assert_allclose(widths / widths.max(), shares / shares.max(), atol=0.01)
    assert "share of rows" in _texts(root)


def test_calibration_points_are_sklearns_curve() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    root = _svg(calibration_svg(_result("performance.calibration", reference, batch)))
    dots = [c for c in root.iter(f"{SVG}circle") if c.get("fill") == BATCH_COLOUR][:-1]  # the legend's last
    prob_true, prob_pred = calibration_curve(batch["label"], batch["score"], n_bins=10, strategy="uniform")
    ys = np.array([float(d.get("cy")) for d in dots])
    xs = np.array([float(d.get("cx")) for d in dots])
    assert len(dots) == len(prob_true)
    # pixels are a linear image of (bin centre, positive rate): fit on the ends, check every point
    slope = (ys[-1] - ys[0]) / (prob_true[-1] - prob_true[0])
    np.testing.assert_allclose(ys, ys[0] + slope * (prob_true - prob_true[0]), atol=0.15)
    centres = (np.floor(prob_pred * 10) + 0.5) / 10
    np.testing.assert_allclose(
        np.diff(xs) / np.diff(centres), (xs[-1] - xs[0]) / (centres[-1] - centres[0]), rtol=0.01
    )


def test_trend_band_and_thresholds_are_where_the_numbers_say() -> None:
    rng = np.random.default_rng(5)
    values = [*rng.normal(0.1, 0.02, 14), 0.5]
    n = len(values)
    trend = baseline_bands(psi_series(values))[("drift.numeric", "x", "psi")]
    root = _svg(trend_svg(trend, [0.1, 0.2, 0.3]))
    band = _rects(root, BAND_COLOUR)
    assert len(band) == n - 3  # no band before three earlier values
    previous = np.array(values[-11:-1])
    spread = 3 * np.median(np.abs(previous - np.median(previous))) / MAD_NORMAL_SCALE
    lines = {p.get("stroke"): p.get("points") for p in root.iter(f"{SVG}polyline")}
    y_of = {
        t: float(lines[c].split()[0].split(",")[1])
        for t, c in zip((0.1, 0.2, 0.3), THRESHOLD_COLOURS, strict=True)
    }
    pixels_per_unit = (y_of[0.1] - y_of[0.3]) / 0.2
    assert y_of[0.2] == pytest.approx((y_of[0.1] + y_of[0.3]) / 2, abs=0.1)
    assert band[-1]["height"] / pixels_per_unit == pytest.approx(2 * spread, abs=0.002)
    dots = list(root.iter(f"{SVG}circle"))
    assert len(dots) == n and float(dots[-1].get("cy")) < y_of[0.3]  # the last value, 0.5, is above 0.3


def test_data_text_is_escaped_and_subset_direction_is_stated() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    result = _result("subset.auc", reference, batch, features=["c"])
    hostile = {**result, "target": '<script>alert("x")</script>'}
    uri = subset_bars_svg(hostile)
    text = base64.b64decode(uri.split(",", 1)[1]).decode()
    assert "<script" not in text and "&lt;script&gt;" in text
    assert "higher is better" in " ".join(_texts(_svg(uri)))


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.0, 95.0, [0, 20, 40, 60, 80]),
        (0.0, 1.0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (-0.03, 0.07, [-0.02, 0, 0.02, 0.04, 0.06]),
    ],
)
def test_ticks_are_round_steps_inside_the_range(low: float, high: float, expected: list[float]) -> None:
    assert nice_ticks(low, high) == pytest.approx(expected)
