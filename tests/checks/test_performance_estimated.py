"""performance.estimated (CBPE): the estimator's arithmetic pinned against direct numpy, scikit-learn
and NannyML's numbers, its sampling error against an empirical spread, and its bands against the
realised metrics of the demo's census batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm
from sklearn.isotonic import IsotonicRegression

from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError
from driftline.checks.performance_estimated import (
    EstimatedPerformance,
    IsotonicMap,
    calibration_test,
    estimate,
    expected_calibration_error,
    expected_roc_auc,
)
from driftline.checks.runner import run_check

COLUMNS = Columns(label="label", prediction="prediction", score="score", task="binary")


def synthetic(seed: int, n: int, shift: float) -> pd.DataFrame:
    """Labels drawn from sigmoid(1.5x); the model's score sigmoid(3x) is over-confident (rounded: ties)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(shift, 1.0, n)
    truth = rng.random(n) < 1 / (1 + np.exp(-1.5 * x))
    score = np.round(1 / (1 + np.exp(-3.0 * x)), 3)
    return pd.DataFrame(
        {"label": truth.astype("int64"), "score": score, "prediction": (score >= 0.5).astype("int64")}
    )


def by_target(results):
    return {r.target: r for r in results}


# --- arithmetic ---------------------------------------------------------------------------------------


def test_expected_confusion_metrics_match_a_direct_computation():
    rng = np.random.default_rng(0)
    p = rng.random(50)
    predicted = rng.random(50) < 0.5
    tp = sum(pi for pi, yi in zip(p, predicted, strict=True) if yi)
    fp = sum(1 - pi for pi, yi in zip(p, predicted, strict=True) if yi)
    fn = sum(pi for pi, yi in zip(p, predicted, strict=True) if not yi)
    tn = sum(1 - pi for pi, yi in zip(p, predicted, strict=True) if not yi)
    values = estimate(p, predicted, p)
    assert values["accuracy"] == pytest.approx((tp + tn) / 50, rel=1e-12)
    assert values["precision"] == pytest.approx(tp / (tp + fp), rel=1e-12)
    assert values["recall"] == pytest.approx(tp / (tp + fn), rel=1e-12)
    assert values["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn), rel=1e-12)


def test_expected_accuracy_is_the_mean_realised_accuracy_over_simulated_labels():
    """Accuracy is linear in the labels, so its expectation is exact: compare with 4000 label draws."""
    rng = np.random.default_rng(1)
    p = rng.random(200)
    predicted = rng.random(200) < 0.6
    draws = rng.random((4000, 200)) < p
    realised = (draws == predicted).mean(axis=1)
    assert estimate(p, predicted, p)["accuracy"] == pytest.approx(
        realised.mean(), abs=4 * realised.std() / 63
    )


def test_expected_auc_is_sklearns_weighted_auc_with_each_row_as_a_positive_and_a_negative():
    rng = np.random.default_rng(2)
    score = np.round(rng.random(300), 1)  # many ties
    p = np.clip(score + rng.normal(0, 0.1, 300), 0, 1)
    expected = skm.roc_auc_score(
        np.r_[np.ones(300), np.zeros(300)], np.r_[score, score], sample_weight=np.r_[p, 1 - p]
    )
    assert expected_roc_auc(score, p) == pytest.approx(expected, rel=1e-12)
    assert np.isnan(expected_roc_auc(score, np.zeros(300)))


def test_isotonic_map_reproduces_sklearn_including_scores_out_of_range():
    rng = np.random.default_rng(3)
    score = rng.random(500)
    truth = rng.random(500) < score**2
    model = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(score, truth)
    probe = np.r_[-1.0, 0.0, rng.random(100), 1.0, 2.0]
    np.testing.assert_allclose(IsotonicMap.fit(score, truth)(probe), model.predict(probe), rtol=1e-12)


def test_ece_on_equal_count_bins():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    truth = np.array([0, 1, 0, 1], dtype=bool)
    # two bins {0.1, 0.2} and {0.3, 0.4}: |0.3 - 1| + |0.7 - 1| over 4 rows
    assert expected_calibration_error(p, truth, bins=2) == pytest.approx((0.7 + 0.3) / 4)


def test_calibration_test_keeps_calibrated_scores_and_calibrates_overconfident_ones():
    rng = np.random.default_rng(4)
    score = rng.random(20000)
    truth = rng.random(20000) < score
    assert calibration_test(score, truth)["calibrate"] is False
    overconfident = np.clip((score - 0.5) * 3 + 0.5, 0, 1)
    assert calibration_test(overconfident, truth)["calibrate"] is True
    assert calibration_test(score * 10, truth)["calibrate"] is True


def test_estimates_match_nannyml_cbpe_on_synthetic_data():
    """Values printed by nannyml 0.13.1 (CBPE, isotonic calibration, chunk_number=1) on these frames."""
    nannyml = {
        "accuracy": 0.7414356034492753,
        "precision": 0.7656927937278661,
        "recall": 0.8495504448801923,
        "f1": 0.8054448246613706,
        "auc": 0.8115158480715914,
    }
    check = EstimatedPerformance()
    profile = check.fit(synthetic(3, 3000, 0.0), COLUMNS)
    assert profile.calibration["calibrate"]  # NannyML's needs_calibration said True as well
    results = by_target(check.evaluate(synthetic(4, 2000, 0.5).drop(columns="label"), profile, COLUMNS))
    for metric, value in nannyml.items():
        assert results[metric].metrics["estimated"] == pytest.approx(value, abs=1e-8), metric


# --- sampling error and severity --------------------------------------------------------------------------


def test_sampling_error_matches_the_spread_of_realised_metrics_over_batches():
    """A batch of 1000 rows from the reference's population: the reported standard error should be
    the standard deviation of the realised metric over many such batches (within 25 %)."""
    population = synthetic(5, 200_000, 0.0)
    reference = population.iloc[:20_000]
    check = EstimatedPerformance(calibration="never")
    profile = check.fit(reference, COLUMNS)
    rest = population.iloc[20_000:].to_numpy()
    batches = rest[: 180 * 1000].reshape(180, 1000, 3)
    truth, score, predicted = batches[..., 0] == 1, batches[..., 1], batches[..., 2] == 1
    spread = {
        "accuracy": (truth == predicted).mean(axis=1).std(ddof=1),
        "f1": np.std([skm.f1_score(t, p) for t, p in zip(truth, predicted, strict=True)], ddof=1),
        "auc": np.std([skm.roc_auc_score(t, s) for t, s in zip(truth, score, strict=True)], ddof=1),
    }
    batch = population.iloc[20_000:21_000].drop(columns="label")
    results = by_target(check.evaluate(batch, profile, COLUMNS))
    for metric, observed in spread.items():
        assert results[metric].metrics["sampling_error"] == pytest.approx(observed, rel=0.25), metric


def test_degradation_and_severity_follow_the_estimate():
    reference = synthetic(6, 4000, 0.0)
    check = EstimatedPerformance()
    profile = check.fit(reference, COLUMNS)
    # scores near 0.5: the model is unsure, so the expected accuracy drops
    unsure = synthetic(7, 3000, 0.0).assign(score=lambda f: 0.5 + (f["score"] - 0.5) / 10)
    unsure["prediction"] = (unsure["score"] >= 0.5).astype("int64")
    result = by_target(check.evaluate(unsure.drop(columns="label"), profile, COLUMNS))["accuracy"]
    m = result.metrics
    truth, predicted = reference["label"] == 1, reference["prediction"] == 1
    assert m["reference"] == pytest.approx(skm.accuracy_score(truth, predicted))
    p = profile.probabilities(reference["score"].to_numpy())
    expected_reference = np.mean(np.where(predicted, p, 1 - p))
    assert m["estimated_reference"] == pytest.approx(expected_reference, rel=1e-12)
    assert m["degradation"] == pytest.approx(m["estimated_reference"] - m["estimated"])
    error = m["sampling_error"] * np.sqrt(1 + 3000 / 4000)
    assert m["standard_error"] == pytest.approx(error)
    assert m["degradation"] - 2.9 * error > 0.05 and result.severity == "high"
    assert m["lower"] == pytest.approx(m["estimated"] - 3 * m["sampling_error"])
    same = by_target(check.evaluate(synthetic(8, 3000, 0.0), profile, COLUMNS))["accuracy"]
    assert same.severity == "none"


def test_prediction_column_is_optional_and_threshold_is_used_instead():
    reference, batch = synthetic(9, 3000, 0.0), synthetic(10, 1000, 0.3)
    columns = Columns(label="label", score="score", task="binary")
    check = EstimatedPerformance(threshold=0.5)
    without = by_target(check.run(reference.drop(columns="prediction"), batch, columns))
    with_prediction = by_target(check.run(reference, batch, COLUMNS))
    for metric in ("accuracy", "f1", "auc"):
        assert without[metric].metrics["estimated"] == pytest.approx(
            with_prediction[metric].metrics["estimated"]
        )


# --- bad input ----------------------------------------------------------------------------------------------


def test_bad_input_gives_clear_results():
    reference, batch = synthetic(11, 2000, 0.0), synthetic(12, 500, 0.0)
    multiclass = reference.assign(label=np.arange(len(reference)) % 3)
    [skipped] = run_check(
        EstimatedPerformance(), batch, Columns(label="label", score="score"), reference=multiclass
    )
    assert skipped.status == "skipped" and "binary" in skipped.reason
    regression = Columns(label="label", score="score", task="regression")
    continuous = reference.assign(label=np.linspace(0, 1, len(reference)))
    [other] = run_check(EstimatedPerformance(), batch, regression, reference=continuous)
    assert other.status == "skipped" and "performance.estimated_regression" in other.reason
    [no_label] = run_check(EstimatedPerformance(), batch, Columns(score="score"), reference=reference)
    assert no_label.status == "skipped" and "label" in no_label.reason
    [text] = run_check(EstimatedPerformance(), batch.assign(score="x"), COLUMNS, reference=reference)
    assert text.status == "error" and "'score' is not numeric" in text.reason
    [unseen] = run_check(EstimatedPerformance(), batch.assign(prediction=7), COLUMNS, reference=reference)
    assert unseen.status == "error" and "['7']" in unseen.reason
    [nan] = run_check(EstimatedPerformance(), batch.assign(score=np.nan), COLUMNS, reference=reference)
    assert nan.status == "error" and "finite score" in nan.reason
    logits = reference.assign(score=reference["score"] * 8 - 4)
    [raw] = run_check(EstimatedPerformance(calibration="never"), batch, COLUMNS, reference=logits)
    assert raw.status == "error" and "[0, 1]" in raw.reason
    inf = batch.assign(score=np.where(np.arange(500) % 5 == 0, np.inf, batch["score"]))
    results = run_check(EstimatedPerformance(), inf, COLUMNS, reference=reference)
    assert {r.details["dropped_rows"] for r in results} == {100}
    for params in ({"calibration": "sometimes"}, {"band_sigmas": 0}, {"metrics": ["mcc"]}):
        with pytest.raises(CheckInputError):
            EstimatedPerformance(**params)


# --- the demo's census data ---------------------------------------------------------------------------------

REALISED = {
    "accuracy": lambda y, d: skm.accuracy_score(y, d["prediction"]),
    "f1": lambda y, d: skm.f1_score(y, d["prediction"]),
    "auc": lambda y, d: skm.roc_auc_score(y, d["score"]),
}


def test_bands_hold_the_realised_metric_on_the_demo_batches(demo_data: Path):
    """Labels hidden, estimate, then compare with the realised metric: the band must hold it in at
    least 5 of the 6 batches for accuracy and F1 (and, as measured, for AUC too)."""
    from driftline.data.demo import BATCHES, LABEL

    folder = demo_data.parent / "data"
    columns = Columns(label=LABEL, prediction="prediction", score="score", task="binary")
    check = EstimatedPerformance()
    profile = check.fit(pd.read_parquet(folder / "reference.parquet"), columns)
    inside = dict.fromkeys(REALISED, 0)
    for batch_id, _, _ in BATCHES:
        batch = pd.read_parquet(folder / "batches" / f"{batch_id}.parquet")
        results = by_target(check.evaluate(batch.drop(columns=LABEL), profile, columns))
        for metric, realised in REALISED.items():
            truth = realised(batch[LABEL], batch)
            m = results[metric].metrics
            assert abs(m["estimated"] - truth) < 0.02, (batch_id, metric)
            inside[metric] += m["lower"] <= truth <= m["upper"]
    assert inside["accuracy"] >= 5 and inside["f1"] >= 5, inside
    assert inside["auc"] >= 5, inside
