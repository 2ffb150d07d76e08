"""Overall metrics degradation and calibration comparison, pinned to golden cases and scikit-learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.performance import CalibrationBins
from driftline.checks.runner import run_check
from tests.golden import golden_cases

RNG_SEED = 5
BINARY = Columns(label="label", score="score", task="binary")


def by_target(results):
    return {r.target: r for r in results}


def run(name, current, columns, reference, **params):
    return by_target(
        run_check(registry.create(name, params), current, columns, reference=reference, strict=True)
    )


def golden(case_id: str) -> dict:
    return next(
        c for c in golden_cases("subset_binary_metric", "subset_regression_metric") if c["id"] == case_id
    )


def fitted(name, frame, columns, **params):
    """The metric values the check computes on `frame` (its reference values: golden cases are too
    small for a verdict on a batch)."""
    return registry.create(name, params).fit(frame, columns).reference


def test_overall_binary_metrics_reproduce_the_golden_overall_values():
    case = golden("subset_auc_overall")["inputs"]
    frame = pd.DataFrame({"label": case["labels"], "score": case["preds"]})
    values = fitted("performance.overall", frame, BINARY)
    for metric, case_id in [("auc", "subset_auc_overall"), ("accuracy", "subset_accuracy_overall")]:
        expected = golden(case_id)
        assert values[metric] == pytest.approx(expected["expected"], abs=expected["tolerance"])
    f1_case = golden("subset_f1_overall")
    assert values["f1"] == pytest.approx(f1_case["expected"], abs=f1_case["tolerance"])


def test_overall_auc_with_ties_golden():
    [case] = golden_cases("auc")
    frame = pd.DataFrame({"label": case["inputs"]["labels"], "score": case["inputs"]["scores"]})
    values = fitted("performance.overall", frame, BINARY)
    assert values["auc"] == pytest.approx(case["expected"], abs=case["tolerance"])


def test_overall_regression_golden():
    case = golden("subset_mae_overall")["inputs"]
    frame = pd.DataFrame({"label": case["labels"], "prediction": case["preds"]})
    columns = Columns(label="label", prediction="prediction", task="regression")
    values = fitted("performance.overall", frame, columns)
    assert set(values) == {"mae", "rmse"}
    assert values["mae"] == pytest.approx(golden("subset_mae_overall")["expected"])
    assert values["rmse"] == pytest.approx(golden("subset_rmse_overall")["expected"])


def test_overall_multiclass_macro_f1_golden_literal():
    [case] = [c for c in golden_cases("multiclass_metric") if c["id"] == "multiclass_macro_f1_literal"]
    names = case["inputs"]["class_names"]
    probs = np.array(case["inputs"]["probs"])
    truth = np.array(names)[np.argmax(case["inputs"]["labels_onehot"], axis=1)]
    frame = pd.DataFrame({"label": truth, **{f"p_{n}": probs[:, k] for k, n in enumerate(names)}})
    columns = Columns(label="label", class_scores=tuple(f"p_{n}" for n in names), task="multiclass")
    values = fitted("performance.overall", frame, columns, classes=names)
    # macro (unweighted) F1 is 0.556; the document's 0.78 is the support-weighted average
    assert values["f1"] == pytest.approx(case["expected"], abs=case["tolerance"])


def binary_frames(n: int = 3000):
    rng = np.random.default_rng(RNG_SEED)

    def frame(noise: float) -> pd.DataFrame:
        label = rng.integers(0, 2, n)
        score = np.clip(0.5 + (label - 0.5) * 0.4 + rng.normal(0, noise, n), 0, 1).round(2)  # ties
        return pd.DataFrame({"label": label, "score": score, "prediction": (score >= 0.4).astype(int)})

    return frame(0.2), frame(0.45)


def test_overall_binary_matches_sklearn_and_degradation_sign():
    reference, current = binary_frames()
    columns = Columns(label="label", score="score", prediction="prediction", task="binary")
    results = run("performance.overall", current, columns, reference)
    y, s, p = current["label"], current["score"], current["prediction"]
    expected = {
        "accuracy": skm.accuracy_score(y, p),
        "f1": skm.f1_score(y, p),
        "auc": skm.roc_auc_score(y, s),
        "log_loss": skm.log_loss(y, s),
    }
    for name, value in expected.items():
        assert results[name].metrics["current"] == pytest.approx(value, rel=1e-10), name
    # noisier scores: every metric got worse, so every degradation is positive
    for name, result in results.items():
        assert result.metrics["degradation"] > 0, name
        ref, cur = result.metrics["reference"], result.metrics["current"]
        assert result.metrics["relative_degradation"] == pytest.approx(
            result.metrics["degradation"] / abs(ref)
        )
        assert result.metrics["degradation"] == pytest.approx(cur - ref if name == "log_loss" else ref - cur)


def test_overall_document_example_auc_drop_is_high():
    check = registry.create("performance.overall")
    assert check.grade({"degradation": 0.85 - 0.5}) == "high"


def test_overall_thresholded_score_without_prediction_column():
    reference, current = binary_frames()
    results = run("performance.overall", current, BINARY, reference, threshold=0.6)
    assert results["accuracy"].metrics["current"] == pytest.approx(
        skm.accuracy_score(current["label"], current["score"] >= 0.6)
    )


def test_overall_multiclass_matches_sklearn():
    rng = np.random.default_rng(RNG_SEED)
    n, classes = 2000, ["a", "b", "c"]
    raw = rng.random((n, 3))
    probs = raw / raw.sum(axis=1, keepdims=True)
    truth = np.array(classes)[np.where(rng.random(n) < 0.6, probs.argmax(axis=1), rng.integers(0, 3, n))]
    frame = pd.DataFrame({"label": truth, "pa": probs[:, 0], "pb": probs[:, 1], "pc": probs[:, 2]})
    columns = Columns(label="label", class_scores=("pa", "pb", "pc"), task="multiclass")
    results = run("performance.overall", frame, columns, frame)
    predicted = np.array(classes)[probs.argmax(axis=1)]
    assert results["accuracy"].metrics["current"] == pytest.approx(skm.accuracy_score(truth, predicted))
    assert results["f1"].metrics["current"] == pytest.approx(skm.f1_score(truth, predicted, average="macro"))
    assert results["auc"].metrics["current"] == pytest.approx(
        skm.roc_auc_score(truth, probs, multi_class="ovr", average="macro", labels=classes)
    )
    assert results["log_loss"].metrics["current"] == pytest.approx(skm.log_loss(truth, probs, labels=classes))


def test_overall_regression_matches_sklearn_and_drops_nan_rows():
    rng = np.random.default_rng(RNG_SEED)
    y = rng.normal(size=500)
    reference = pd.DataFrame({"label": y, "prediction": y + rng.normal(0, 0.1, 500)})
    current = pd.DataFrame({"label": y, "prediction": y + rng.normal(0, 0.3, 500)})
    current.loc[:4, "prediction"] = np.nan
    current.loc[5, "label"] = np.inf
    columns = Columns(label="label", prediction="prediction", task="regression")
    results = run("performance.overall", current, columns, reference)
    kept = current.iloc[6:]
    assert results["mae"].metrics["current"] == pytest.approx(
        skm.mean_absolute_error(kept.label, kept.prediction)
    )
    assert results["rmse"].metrics["current"] == pytest.approx(
        skm.root_mean_squared_error(kept.label, kept.prediction)
    )
    assert results["rmse"].details["dropped_rows"] == 6
    assert results["rmse"].severity == "high"


def test_overall_single_class_batch_skips_auc_only():
    reference, current = binary_frames()
    results = run("performance.overall", current.assign(label=1), BINARY, reference)
    assert results["auc"].status == "skipped"
    assert results["accuracy"].status == "ok"


# --- calibration --------------------------------------------------------------------------------------------


def calibration_frames(n: int = 5000):
    rng = np.random.default_rng(RNG_SEED)
    score_ref, score_cur = rng.random(n), rng.random(n)
    reference = pd.DataFrame({"score": score_ref, "label": (rng.random(n) < score_ref).astype(int)})
    current = pd.DataFrame({"score": score_cur, "label": (rng.random(n) < score_cur**2).astype(int)})
    return reference, current


def test_calibration_mse_matches_sklearn_curves():
    reference, current = calibration_frames()
    [result] = run_check(
        registry.create("performance.calibration"), current, BINARY, reference=reference, strict=True
    )
    ref_true, _ = calibration_curve(reference["label"], reference["score"], n_bins=10)
    cur_true, _ = calibration_curve(current["label"], current["score"], n_bins=10)
    assert result.metrics["calibration_mse"] == pytest.approx(np.mean((ref_true - cur_true) ** 2))
    assert result.details["bins_compared"] == 10
    assert result.severity != "none"


def test_calibration_document_example_base_rate_shift_fails():
    rng = np.random.default_rng(RNG_SEED)
    score = rng.random(20_000) * 0.1
    reference = pd.DataFrame({"score": score, "label": (rng.random(20_000) < 0.01).astype(int)})
    current = pd.DataFrame({"score": score, "label": (rng.random(20_000) < 0.5).astype(int)})
    [result] = run_check(
        registry.create("performance.calibration"), current, BINARY, reference=reference, strict=True
    )
    assert result.severity == "high"


def test_calibration_bins_merge_and_edge_placement():
    score = np.array([0.1, 0.2, 0.35, 0.9, 1.0])
    truth = np.array([0, 1, 1, 0, 1])
    whole = CalibrationBins.from_arrays(truth, score, 10)
    merged = CalibrationBins.from_arrays(truth[:2], score[:2], 10).merge(
        CalibrationBins.from_arrays(truth[2:], score[2:], 10)
    )
    np.testing.assert_array_equal(whole.total, merged.total)
    np.testing.assert_array_equal(whole.positives, merged.positives)
    prob_true, _ = calibration_curve(truth, score, n_bins=10)
    frac = whole.fraction_positive()
    np.testing.assert_allclose(frac[~np.isnan(frac)], prob_true)


def test_calibration_rejects_scores_outside_unit_interval():
    reference, current = calibration_frames()
    [result] = run_check(
        registry.create("performance.calibration"),
        current.assign(score=current.score * 2),
        BINARY,
        reference=reference,
    )
    assert result.status == "error" and "outside [0, 1]" in result.reason


def test_log_loss_with_an_all_zero_score_row_stays_finite() -> None:
    from sklearn.metrics import log_loss as sk_log_loss

    from driftline.checks.performance import log_loss

    scores = np.array([[0.2, 0.8], [0.0, 0.0], [0.9, 0.1]])
    truth = np.array([1, 0, 0])
    eps = np.finfo(float).eps
    expected = -np.mean(np.log([0.8, eps, 0.9]))
    assert log_loss(truth, scores) == pytest.approx(expected)
    assert log_loss(truth[[0, 2]], scores[[0, 2]]) == pytest.approx(
        sk_log_loss(truth[[0, 2]], scores[[0, 2]], labels=[0, 1])
    )


def test_minus_one_zero_labels_take_the_larger_as_positive() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    score = rng.random(400)
    label = np.where(rng.random(400) < score, 0, -1)
    frame = pd.DataFrame({"label": label, "score": score, "x": score})
    columns = Columns(label="label", score="score", numeric=("x",), task="binary")
    results = run_check(registry.create("performance.overall"), frame, columns, reference=frame)
    [auc] = [r for r in results if r.target == "auc"]
    assert auc.metrics["current"] == pytest.approx(roc_auc_score(label == 0, score))
