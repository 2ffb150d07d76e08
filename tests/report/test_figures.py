"""The numbers the report's pictures show, pinned against independent computations (numpy, pandas,
scikit-learn) on the same data."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import roc_auc_score

from driftline.checks import registry
from driftline.checks.base import FIGURES, Metric
from driftline.checks.columns import Columns
from driftline.checks.registry import create
from driftline.tasks.history.trend import MAD_NORMAL_SCALE
from driftline.tasks.report.figures import (
    RESULT_PICTURES,
    calibration_data,
    category_data,
    check_pictures,
    declared_figures,
    drift_histogram_svg,
    explaining_picture,
    histogram_data,
    sparkline_svg,
    subset_bars_svg,
    subset_data,
)
from driftline.tasks.report.trends import band_floors, baseline_bands, key_metric
from driftline.tasks.views.attribution_plots import FIGURES as ATTRIBUTION_FIGURES
from tests.report.conftest import make_frame

COLUMNS = Columns(id="id", label="label", score="score", numeric=("x",), categorical=("c",))


def _results(name: str, reference: pd.DataFrame, batch: pd.DataFrame, **params) -> list[dict]:
    check = create(name, params)
    return [r.to_dict() for r in check.evaluate(batch, check.fit(reference, COLUMNS), COLUMNS)]


def right_closed_counts(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts in (e_i, e_i+1] (the first bin closed on the left too), via numpy on negated values."""
    return np.histogram(-values, bins=-edges[::-1])[0][::-1]


def test_histogram_counts_equal_numpys_on_the_same_data() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    batch.loc[:9, "x"] = np.nan  # dropped rows are not counted
    (result,) = _results("drift.numeric", reference, batch)
    hist = histogram_data(result["details"], result["rows"])
    ref_x, cur_x = reference["x"].to_numpy(), batch["x"].dropna().to_numpy()
    assert hist.edges[0] == pytest.approx(min(ref_x.min(), cur_x.min()))
    assert hist.edges[-1] == pytest.approx(max(ref_x.max(), cur_x.max()))
    np.testing.assert_array_equal(hist.reference_counts, right_closed_counts(ref_x, hist.edges))
    np.testing.assert_array_equal(hist.current_counts, right_closed_counts(cur_x, hist.edges))
    assert hist.current_counts.sum() == len(batch) - 10
    for counts in (hist.reference_counts, hist.current_counts):
        assert np.sum(hist.density(counts) * hist.widths) == pytest.approx(1.0)
    assert result["details"]["reference_range"] == [ref_x.min(), ref_x.max()]
    assert drift_histogram_svg(result).startswith("data:image/svg+xml;base64,")


def test_histogram_without_ranges_and_with_bad_shares() -> None:
    details = {"edges": [1.0, 2.0, 4.0], "reference_shares": [0.25] * 4, "current_shares": [0.25] * 4}
    hist = histogram_data({**details, "reference_rows": 8}, 4)
    np.testing.assert_allclose(hist.edges, [0.0, 1.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(hist.reference_counts, [2, 2, 2, 2])
    with pytest.raises(ValueError, match="3 edges need 4 shares"):
        histogram_data({**details, "current_shares": [0.5, 0.5]}, 4)


def test_category_bars_show_pandas_shares_of_the_largest_changes() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    (result,) = _results("drift.categorical", reference, batch)
    rows = category_data(result["details"])
    ref_share = reference["c"].value_counts(normalize=True)
    cur_share = batch["c"].value_counts(normalize=True)
    for name, ref, cur in rows:
        assert ref == pytest.approx(ref_share[name]) and cur == pytest.approx(cur_share[name])
    moves = [abs(cur - ref) for _, ref, cur in rows]
    assert moves == sorted(moves, reverse=True) and rows[0][0] == "d"


def test_subset_bars_show_each_subset_against_itself_in_the_reference_worst_first() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    (result,) = _results("subset.auc", reference, batch, features=["c"])
    subsets, overall, higher = subset_data(result)
    assert higher and overall is None
    for subset in subsets:
        rows, ref_rows = batch[batch["c"] == subset["subset"]], reference[reference["c"] == subset["subset"]]
        assert subset["value"] == pytest.approx(roc_auc_score(rows["label"], rows["score"]))
        assert subset["reference_value"] == pytest.approx(roc_auc_score(ref_rows["label"], ref_rows["score"]))
    drops = [s["reference_value"] - s["value"] for s in subsets]
    assert drops == sorted(drops, reverse=True)
    uri = subset_bars_svg(result)
    assert ET.fromstring(base64.b64decode(uri.split(",", 1)[1])).tag.endswith("svg")


def _svg_text(uri: str) -> str:
    """The text of an SVG data URI (the report keeps text as text)."""
    return base64.b64decode(uri.split(",", 1)[1]).decode()


def _tied(result: dict) -> dict:
    """The result with every subset at the same value and change: nothing in the numbers says which
    way is better."""
    details = result["details"]
    graded = "difference" if details["compare_to"] == "batch" else "change"
    subsets = [{**s, "value": 0.5, graded: 0.0} for s in details["subsets"]]
    return {**result, "details": {**details, "subsets": subsets}}


def test_audit_subset_bars_keep_the_whole_batch_line_and_the_declared_direction() -> None:
    """subset.fpr declares lower values better: its worst subsets are its highest, also when tied."""
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    (auc,) = _results("subset.auc", reference, batch, features=["c"], compare_to="batch")
    subsets, overall, higher = subset_data(auc)
    assert higher and overall == pytest.approx(roc_auc_score(batch["label"], batch["score"]))
    assert [s["value"] for s in subsets] == sorted(s["value"] for s in subsets)
    (fpr,) = _results("subset.fpr", reference, batch, features=["c"], compare_to="batch")
    subsets, _, higher = subset_data(fpr)
    assert higher is False
    assert [s["value"] for s in subsets] == sorted((s["value"] for s in subsets), reverse=True)


@pytest.mark.parametrize("compare_to", ["batch", "reference"])
def test_a_tied_subset_fpr_is_drawn_lower_is_better(compare_to: str) -> None:
    """The direction drawn is the one subset.fpr declares, even when every subset has the same value."""
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    (fpr,) = _results("subset.fpr", reference, batch, features=["c"], compare_to=compare_to)
    (auc,) = _results("subset.auc", reference, batch, features=["c"], compare_to=compare_to)
    tied_fpr, tied_auc = _tied(fpr), _tied(auc)
    assert subset_data(tied_fpr)[2] is False and subset_data(tied_auc)[2] is True
    fpr_text, auc_text = _svg_text(subset_bars_svg(tied_fpr)), _svg_text(subset_bars_svg(tied_auc))
    assert "lower is better" in fpr_text and "higher is better" not in fpr_text
    assert "higher is better" in auc_text and "lower is better" not in auc_text
    picture = explaining_picture(tied_fpr)
    assert picture is not None and "lower is better" in _svg_text(picture.uri)


SUBSET_CHECKS = [
    "accuracy",
    "auc",
    "f1",
    "fpr",
    "macro_f1",
    "macro_precision",
    "macro_recall",
    "mae",
    "mrr",
    "multiclass_auc",
    "ndcg",
    "ner_precision",
    "ner_recall",
    "precision",
    "rank_correlation",
    "recall",
    "rmse",
    "variance",
    "variance_negative",
    "variance_positive",
]
DISTRIBUTION_CHECKS = [
    "bigrams",
    "categorical",
    "label",
    "label_psi",
    "numeric",
    "predicted_label",
    "prediction",
    "unigrams",
]
# The checks whose results the report draws, and what it draws for them.
DRAWN = {
    **{f"subset.{name}": ["subsets"] for name in SUBSET_CHECKS},
    **{f"drift.{name}": ["distribution"] for name in DISTRIBUTION_CHECKS},
    "performance.calibration": ["calibration"],
    "attribution.auc": ["tree"],
    "attribution.compare": ["tree"],
    "attribution.pairs": ["matrix"],
}


def test_the_checks_the_report_draws_declare_their_figure_and_no_other_check_does() -> None:
    registry.load_catalog()
    declared = {name: declared_figures(name) for name in registry.names()}
    assert {name: kinds for name, kinds in declared.items() if kinds} == DRAWN


def test_every_figure_a_metric_may_declare_is_drawn_and_no_other() -> None:
    assert set(RESULT_PICTURES) | set(ATTRIBUTION_FIGURES) == set(FIGURES)
    assert not set(RESULT_PICTURES) & set(ATTRIBUTION_FIGURES)
    with pytest.raises(ValueError, match="'pie' is not one the report draws"):
        Metric((0.1,), figure="pie")


def test_the_picture_is_the_one_the_check_declares_whatever_its_details_hold() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    (result,) = _results("subset.auc", reference, batch, features=["c"])
    picture = explaining_picture(result)
    assert picture is not None and picture.caption == "subsets against the same subsets in the reference"
    assert explaining_picture({**result, "check": "fairness.tpr"}) is None  # declares no figure
    assert explaining_picture({**result, "check": "retired.check"}) is None  # not in the catalog


def test_attribution_pictures_are_the_svg_figures_of_each_ok_result() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    auc = _results("attribution.auc", reference, batch, max_depth=2)
    pairs = _results("attribution.pairs", reference, batch, features=["c"])
    failed = {**auc[0], "status": "error"}
    pictures = {
        check: check_pictures(check, [*auc, *pairs, failed])
        for check in ("attribution.auc", "attribution.pairs")
    }
    assert {check: [p.caption for p in found] for check, found in pictures.items()} == {
        "attribution.auc": ["slices of the AUC attribution"],
        "attribution.pairs": ["AUC per cross of slices"],
    }
    trees, matrices = pictures["attribution.auc"], pictures["attribution.pairs"]
    for picture, kind, count in (
        (trees[0], "node", len(auc[0]["details"]["tree"]["nodes"])),
        (matrices[0], "cell", 16),
    ):
        prefix, encoded = picture.uri.split(",", 1)
        assert prefix == "data:image/svg+xml;base64"
        root = ET.fromstring(base64.b64decode(encoded))
        assert sum(g.get("class") == kind for g in root.iter("{http://www.w3.org/2000/svg}g")) == count


def test_calibration_curves_match_sklearn() -> None:
    reference, batch = make_frame(3000, 0.0, 1), make_frame(2000, 1.0, 2)
    (result,) = _results("performance.calibration", reference, batch)
    centres, ref, cur = calibration_data(result["details"])
    np.testing.assert_allclose(centres, np.arange(0.05, 1.0, 0.1))
    prob_true, _ = calibration_curve(batch["label"], batch["score"], n_bins=10, strategy="uniform")
    np.testing.assert_allclose(cur[~np.isnan(cur)], prob_true)
    prob_true, _ = calibration_curve(reference["label"], reference["score"], n_bins=10, strategy="uniform")
    np.testing.assert_allclose(ref[~np.isnan(ref)], prob_true)


def psi_series(values: list[float]) -> pd.DataFrame:
    n = len(values)
    return pd.DataFrame(
        {
            "batch_id": [f"b{i:02d}" for i in range(n)],
            "batch_time": pd.date_range("2024-01-01", periods=n, freq="D", tz="UTC"),
            "check": "drift.numeric",
            "target": "x",
            "metric": "psi",
            "value": values,
            "severity": "none",
            "status": "ok",
        }
    )


def test_baseline_band_is_median_plus_minus_three_scaled_mads_of_the_previous_runs() -> None:
    rng = np.random.default_rng(5)
    values = [*rng.normal(0.1, 0.02, 14), 0.5]
    trend = baseline_bands(psi_series(values), window=10, k=3.0)[("drift.numeric", "x", "psi")]
    previous = np.array(values[-11:-1])
    median = np.median(previous)
    sd = np.median(np.abs(previous - median)) / MAD_NORMAL_SCALE
    assert trend.lower[-1] == pytest.approx(median - 3 * sd)
    assert trend.upper[-1] == pytest.approx(median + 3 * sd)
    assert np.isnan(trend.lower[:3]).all() and not np.isnan(trend.lower[3])
    assert trend.latest_outside
    assert not baseline_bands(psi_series(values[:-1]))[("drift.numeric", "x", "psi")].latest_outside


def test_sparkline_is_well_formed_svg_without_ids() -> None:
    trend = baseline_bands(psi_series([0.1, 0.12, 0.11, 0.1, 0.4]))[("drift.numeric", "x", "psi")]
    svg = sparkline_svg(trend)
    root = ET.fromstring(svg)
    assert root.tag == "svg" and " id=" not in svg
    assert root.find("polyline") is not None and root.find("rect") is not None


def test_a_band_is_never_narrower_than_its_floor_and_the_key_metric_decides() -> None:
    """Eight runs at exactly 0 then 0.002: the plain MAD band has no width, so the last value would be
    "outside"; floored at a tenth of psi's smallest threshold step (0.01) it is not."""
    values = [0.0] * 8 + [0.002]
    key = ("drift.numeric", "x", "psi")
    assert baseline_bands(psi_series(values))[key].latest_outside
    floored = baseline_bands(psi_series(values), floors={key: 0.01})[key]
    assert not floored.latest_outside
    assert floored.upper[-1] == pytest.approx(3 * 0.01) and floored.lower[-1] == pytest.approx(-3 * 0.01)
    result = {
        "check": "performance.overall",
        "target": "f1",
        "metrics": {"degradation": 0.09, "degradation_bound": 0.06, "relative_degradation": 0.1},
        "thresholds": {"relative_degradation": [0.5], "degradation": [0.01, 0.02, 0.05]},
    }
    assert key_metric(result) == "degradation"  # its bound reaches high: it decides the severity
    assert band_floors([result])[("performance.overall", "f1", "degradation")] == pytest.approx(0.001)
