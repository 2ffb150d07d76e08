"""Subset performance checks: the document's worked examples, then every metric against scikit-learn."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    f1_score,
    mean_absolute_error,
    precision_score,
    recall_score,
    roc_auc_score,
    root_mean_squared_error,
)

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError
from driftline.checks.result import CheckResult
from driftline.checks.runner import run_check
from tests.golden import golden_cases

BINARY_NAMES = {
    "auc": "subset.auc",
    "accuracy": "subset.accuracy",
    "f1": "subset.f1",
    "precision": "subset.precision",
    "recall": "subset.recall",
    "fpr": "subset.fpr",
}
VARIANCE_NAMES = {None: "subset.variance", 1: "subset.variance_positive", 0: "subset.variance_negative"}
MULTICLASS_NAMES = {
    "ovo_auc": "subset.multiclass_auc",
    "precision": "subset.macro_precision",
    "recall": "subset.macro_recall",
    "f1": "subset.macro_f1",
}


def run(name: str, frame: pd.DataFrame, columns: Columns, reference: pd.DataFrame | None = None, **params):
    """Results of one check by target (fitted on `reference`, the frame itself by default)."""
    check = registry.create(name, params)
    results = run_check(
        check, frame, columns, reference=frame if reference is None else reference, strict=True
    )
    return {r.target: r for r in results}


def subset_values(result: CheckResult) -> dict[str, float]:
    return {s["subset"]: s["value"] for s in result.details["subsets"]}


# --- worked examples of the document ---------------------------------------------------------------


def _cat_dog_frame(case: dict) -> tuple[pd.DataFrame, Columns]:
    inputs = case["inputs"]
    features = inputs["features"]
    frame = pd.DataFrame({"animal": [f[0] for f in features], "x": [f[1] for f in features]})
    frame["score"] = inputs["preds"]
    roles = {"score": "score", "categorical": ("animal",), "task": "binary"}
    if inputs["labels"] is not None:
        frame["label"] = inputs["labels"]
        roles["label"] = "label"
    return frame, Columns(**roles)


@pytest.mark.parametrize(
    "case", golden_cases("subset_binary_metric", "subset_variance"), ids=lambda c: c["id"]
)
def test_cat_dog_examples(case: dict) -> None:
    frame, columns = _cat_dog_frame(case)
    inputs = case["inputs"]
    if "metric" in inputs:
        name = BINARY_NAMES[inputs["metric"]]
        assert inputs["round_threshold"] == 0.5  # the checks' default threshold
    else:
        name = VARIANCE_NAMES[inputs["label_filter"]]
    result = run(name, frame, columns)["animal"]
    got = (
        result.metrics["batch_value"] if inputs["subset"] is None else subset_values(result)[inputs["subset"]]
    )
    assert got == pytest.approx(case["expected"], abs=case["tolerance"])
    assert got == pytest.approx(case["seed_value"], abs=case["seed_tolerance"])


@pytest.mark.parametrize("case", golden_cases("subset_regression_metric"), ids=lambda c: c["id"])
def test_regression_examples(case: dict) -> None:
    inputs = case["inputs"]
    features = np.array(inputs["features"])
    frame = pd.DataFrame({"a": features[:, 0], "b": features[:, 1]})
    frame["prediction"], frame["label"] = inputs["preds"], inputs["labels"]
    columns = Columns(label="label", prediction="prediction", numeric=("a", "b"), task="regression")
    result = run(f"subset.{inputs['metric']}", frame, columns)["a"]
    if inputs["interval"] is None:
        got = result.metrics["batch_value"]
    else:
        lo, hi = inputs["interval"]
        (subset,) = [s for s in result.details["subsets"] if s["subset"].endswith(f", {hi}]")]
        assert subset["rows"] == int(((frame["a"] > lo) & (frame["a"] <= hi)).sum()) == 2
        got = subset["value"]
    assert got == pytest.approx(case["expected"], abs=case["tolerance"])
    assert got == pytest.approx(case["seed_value"], abs=case["seed_tolerance"])


def _three_class_frame(case: dict) -> tuple[pd.DataFrame, Columns]:
    inputs = case["inputs"]
    names = inputs["class_names"]
    probs = np.array(inputs["probs"])
    frame = pd.DataFrame({f"p_{c}": probs[:, i] for i, c in enumerate(names)})
    frame["label"] = [names[int(np.argmax(row))] for row in inputs["labels_onehot"]]
    frame["height"] = 2
    columns = Columns(
        label="label", class_scores=tuple(frame.columns[:3]), numeric=("height",), task="multiclass"
    )
    return frame, columns


@pytest.mark.parametrize("case", golden_cases("multiclass_metric"), ids=lambda c: c["id"])
def test_three_class_examples(case: dict) -> None:
    """Literal macro averages give 0.5 (recall) and 0.556 (F1) where the document prints 0.67 and 0.78;
    `average="weighted"` (support-weighted) reproduces the document's numbers."""
    frame, columns = _three_class_frame(case)
    inputs = case["inputs"]
    params = {"classes": inputs["class_names"]}
    if "average" in inputs:
        params["average"] = inputs["average"]
    result = run(MULTICLASS_NAMES[inputs["metric"]], frame, columns, **params)["height"]
    assert result.metrics["batch_value"] == pytest.approx(case["expected"], abs=case["tolerance"])
    assert subset_values(result)["(-inf, inf)"] == pytest.approx(case["expected"], abs=case["tolerance"])
    if case["agreement"] == "disagree":
        assert abs(case["expected"] - case["seed_value"]) > 0.1


def test_weighted_macro_precision_is_one_on_the_three_class_example() -> None:
    (case,) = [c for c in golden_cases("multiclass_metric") if c["id"] == "multiclass_macro_precision"]
    frame, columns = _three_class_frame(case)
    result = run("subset.macro_precision", frame, columns, classes=["cat", "bear", "dog"], average="weighted")
    assert result["height"].metrics["batch_value"] == pytest.approx(1.0)  # sklearn average="weighted"


def test_document_gaps_raise_a_warning_with_default_thresholds() -> None:
    # "Overall 0.9 and subset 0.75 (AUC), 0.78 (macro F1), 0.67 (macro precision/recall) raise a warning."
    for name, subset in [
        ("subset.multiclass_auc", 0.75),
        ("subset.macro_f1", 0.78),
        ("subset.macro_recall", 0.67),
    ]:
        check = registry.create(name)
        assert check.grade({"difference": 0.9 - subset}) != "none"
        assert check.grade({"difference": 0.04}) == "none"


# --- random data against scikit-learn --------------------------------------------------------------


def _expected_groups(reference: pd.DataFrame, batch: pd.DataFrame, feature: str, bins: int) -> pd.Series:
    """Subset label of each batch row, computed with pandas only."""
    if pd.api.types.is_numeric_dtype(reference[feature]):
        _, edges = pd.qcut(reference[feature], bins, retbins=True, duplicates="drop")
        codes = pd.cut(batch[feature], [-np.inf, *edges[1:-1], np.inf], right=True, labels=False)
        return codes.map(lambda c: "(missing)" if pd.isna(c) else f"bin{int(c)}")
    return batch[feature].astype(object).where(batch[feature].notna(), "(missing)").astype(str)


def _by_label(result: CheckResult, slices: dict) -> dict[str, dict]:
    """The result's subsets keyed like `_expected_groups` (bins by position, categories by value)."""
    out = {}
    for s in result.details["subsets"]:
        position = slices["labels"].index(s["subset"])
        numeric = slices["kind"] == "numeric" and s["subset"] != "(missing)"
        out[f"bin{position}" if numeric else s["subset"]] = s
    return out


@pytest.fixture(scope="module")
def binary_frames() -> tuple[pd.DataFrame, pd.DataFrame, Columns]:
    def make(n: int, seed: int) -> pd.DataFrame:
        rng = np.random.default_rng(seed)
        x = rng.normal(size=n)
        score = (1 / (1 + np.exp(-(x + rng.normal(size=n))))).round(2)  # ties
        frame = pd.DataFrame(
            {
                "x": np.where(rng.random(n) < 0.03, np.nan, x),
                "k": pd.Series(rng.choice(["a", "b", "c", "d"], size=n, p=[0.4, 0.3, 0.2, 0.1]), dtype="str"),
                "label": (rng.random(n) < score).astype(float),
                "score": score,
            }
        )
        frame.loc[rng.random(n) < 0.02, "label"] = np.nan
        frame.loc[rng.random(n) < 0.02, "score"] = np.nan
        return frame

    columns = Columns(label="label", score="score", numeric=("x",), categorical=("k",), task="binary")
    return make(3000, 0), make(2000, 1), columns


def _fpr(y: np.ndarray, p: np.ndarray) -> float:
    tn, fp, _, _ = confusion_matrix(y, p, labels=[0, 1]).ravel()
    return fp / (fp + tn) if fp + tn else math.nan


SKLEARN_BINARY = {
    "subset.auc": lambda y, s: roc_auc_score(y, s) if len(set(y)) == 2 else math.nan,
    "subset.accuracy": lambda y, s: accuracy_score(y, s >= 0.5),
    "subset.f1": lambda y, s: f1_score(y, s >= 0.5, zero_division=np.nan),
    "subset.precision": lambda y, s: precision_score(y, s >= 0.5, zero_division=np.nan),
    "subset.recall": lambda y, s: recall_score(y, s >= 0.5, zero_division=np.nan),
    "subset.fpr": lambda y, s: _fpr(y, (s >= 0.5).astype(int)),
    "subset.variance": lambda y, s: np.var(s),
    "subset.variance_positive": lambda y, s: np.var(s),
    "subset.variance_negative": lambda y, s: np.var(s),
}
CLASS_ROWS = {"subset.variance_positive": 1.0, "subset.variance_negative": 0.0}


@pytest.mark.parametrize("name", list(SKLEARN_BINARY))
def test_binary_metrics_match_sklearn_per_subset(name: str, binary_frames) -> None:
    reference, batch, columns = binary_frames
    check = registry.create(name, {"bins": 5})
    profile = check.fit(reference, columns)
    results = {r.target: r for r in check.evaluate(batch, profile, columns)}
    used = batch["score"].notna() & (batch["label"].notna() if name != "subset.variance" else True)
    kept = _kept_rows(name, batch)  # the variance of one class leaves the other rows in, not dropped
    metric = SKLEARN_BINARY[name]
    y, s = kept["label"].to_numpy(), kept["score"].to_numpy()
    assert results["x"].metrics["batch_value"] == pytest.approx(metric(y, s), abs=1e-12)
    assert results["x"].details["dropped_rows"] == int((~used).sum())
    ref_kept = _kept_rows(name, reference)
    for feature in ("x", "k"):
        got = _by_label(results[feature], profile["slices"][feature])
        groups = _expected_groups(reference, kept, feature, bins=5)
        expected_sizes = groups.value_counts()
        assert {k: v["rows"] for k, v in got.items() if v["rows"]} == expected_sizes.to_dict()
        for label, rows in kept.groupby(groups):
            _assert_same(got[label]["value"], metric(rows["label"].to_numpy(), rows["score"].to_numpy()))
        ref_groups = _expected_groups(reference, ref_kept, feature, bins=5)
        for label, rows in ref_kept.groupby(ref_groups):
            want = metric(rows["label"].to_numpy(), rows["score"].to_numpy())
            _assert_same(got[label]["reference_value"], want)
            assert got[label]["reference_rows"] == len(rows)


def _kept_rows(name: str, frame: pd.DataFrame) -> pd.DataFrame:
    """The rows a binary check uses: a score, a label (but for the plain variance), the right class."""
    kept = frame[frame["score"].notna() & (frame["label"].notna() if name != "subset.variance" else True)]
    return kept[kept["label"] == CLASS_ROWS[name]] if name in CLASS_ROWS else kept


def _assert_same(value: float, want: float) -> None:
    assert (math.isnan(value) and math.isnan(want)) or value == pytest.approx(want, abs=1e-12)


def test_prediction_column_is_used_for_label_metrics(binary_frames) -> None:
    """The prediction column serves both sides; a reference without it has no values to compare."""
    reference, batch, _ = binary_frames
    batch = batch.assign(prediction=(batch["score"] >= 0.7).astype(float))  # differs from score >= 0.5
    reference = reference.assign(prediction=(reference["score"] >= 0.7).astype(float))
    columns = Columns(
        label="label", score="score", prediction="prediction", categorical=("k",), task="binary"
    )
    result = run("subset.recall", batch, columns, reference=reference)["k"]
    kept = batch.dropna(subset=["label", "prediction"])
    assert result.metrics["batch_value"] == pytest.approx(recall_score(kept["label"], kept["prediction"]))
    unscored = run("subset.recall", batch, columns, reference=reference.drop(columns="prediction"))["*"]
    assert unscored.status == "error" and "reference has no column 'prediction'" in unscored.reason


@pytest.fixture(scope="module")
def multiclass_frame() -> tuple[pd.DataFrame, Columns]:
    rng = np.random.default_rng(5)
    n = 2400
    truth = rng.integers(0, 3, size=n)
    logits = rng.normal(size=(n, 3)) + 1.2 * np.eye(3)[truth]
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    frame = pd.DataFrame(probs.round(2), columns=["p_a", "p_b", "p_c"])
    frame[["p_a", "p_b", "p_c"]] = frame[["p_a", "p_b", "p_c"]].div(frame.sum(axis=1), axis=0)
    frame["label"] = np.array(["a", "b", "c"])[truth]
    frame["g"] = rng.choice(["u", "v", "w"], size=n)
    frame.loc[rng.random(n) < 0.02, "label"] = None
    columns = Columns(
        label="label", class_scores=("p_a", "p_b", "p_c"), categorical=("g",), task="multiclass"
    )
    return frame, columns


MULTICLASS_CASES = [("subset.multiclass_auc", "macro")] + [
    (name, average)
    for name in ("subset.macro_f1", "subset.macro_precision", "subset.macro_recall")
    for average in ("macro", "weighted")
]


@pytest.mark.parametrize(("name", "average"), MULTICLASS_CASES)
def test_multiclass_metrics_match_sklearn(name: str, average: str, multiclass_frame) -> None:
    frame, columns = multiclass_frame
    params = {} if name == "subset.multiclass_auc" else {"average": average}
    result = run(name, frame, columns, **params)["g"]
    kept = frame.dropna(subset=["label"])
    probs = kept[["p_a", "p_b", "p_c"]].to_numpy()
    predicted = np.array(["a", "b", "c"])[probs.argmax(axis=1)]

    def metric(rows: pd.Index) -> float:
        y = kept.loc[rows, "label"].to_numpy()
        if name == "subset.multiclass_auc":
            return roc_auc_score(
                y, probs[kept.index.get_indexer(rows)], multi_class="ovo", labels=["a", "b", "c"]
            )
        p = predicted[kept.index.get_indexer(rows)]
        fn = {"subset.macro_f1": f1_score, "subset.macro_precision": precision_score}.get(name, recall_score)
        return fn(y, p, average=average, zero_division=0)

    assert result.metrics["batch_value"] == pytest.approx(metric(kept.index), abs=1e-12)
    values = subset_values(result)
    for label, rows in kept.groupby("g"):
        assert values[label] == pytest.approx(metric(rows.index), abs=1e-12)


def test_regression_metrics_match_sklearn() -> None:
    rng = np.random.default_rng(11)
    n = 6000
    frame = pd.DataFrame({"x": rng.normal(size=n), "label": rng.normal(size=n)})
    frame["prediction"] = frame["label"] + rng.normal(scale=0.2 + 2 * np.abs(frame["x"]), size=n)
    frame.loc[::37, "prediction"] = np.inf
    frame.loc[::41, "label"] = np.nan
    columns = Columns(label="label", prediction="prediction", numeric=("x",), task="regression")
    kept = frame[np.isfinite(frame["prediction"]) & frame["label"].notna()]
    groups = _expected_groups(frame, kept, "x", bins=4)
    for name, metric in [("subset.mae", mean_absolute_error), ("subset.rmse", root_mean_squared_error)]:
        check = registry.create(name, {"compare_to": "batch"})
        profile = check.fit(frame, columns)
        (result,) = check.evaluate(frame, profile, columns)
        assert result.details["dropped_rows"] == len(frame) - len(kept)
        assert result.metrics["overall_value"] == pytest.approx(metric(kept["label"], kept["prediction"]))
        got = _by_label(result, profile["slices"]["x"])
        for label, rows in kept.groupby(groups):
            assert got[label]["value"] == pytest.approx(metric(rows["label"], rows["prediction"]))
        # errors grow with |x|: the audit finds an outer bin worse than the whole batch, surely so
        assert result.details["subset"] in (
            profile["slices"]["x"]["labels"][0],
            profile["slices"]["x"]["labels"][3],
        )
        assert result.metrics["relative_difference_bound"] > 0 and result.severity != "none"


# --- the result: the subset that changed, its sign, grading ----------------------------------------


def _planted(n: int, bad_share: float, seed: int = 0, bad_accuracy: float = 0.5) -> pd.DataFrame:
    """A batch where the model is right 90% of the time except on group "bad" (`bad_accuracy`)."""
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < bad_share, "bad", rng.choice(["g1", "g2", "g3"], size=n))
    label = rng.integers(0, 2, size=n)
    correct = rng.random(n) < np.where(group == "bad", bad_accuracy, 0.9)
    prediction = np.where(correct, label, 1 - label)
    return pd.DataFrame({"group": group, "label": label, "prediction": prediction})


COLUMNS_PLANTED = Columns(label="label", prediction="prediction", categorical=("group",), task="binary")


def test_a_subset_that_got_worse_is_found_and_graded() -> None:
    reference, frame = _planted(20000, 0.1, seed=1, bad_accuracy=0.9), _planted(20000, 0.1)
    result = run("subset.accuracy", frame, COLUMNS_PLANTED, reference=reference)["group"]
    bad, ref_bad = frame[frame["group"] == "bad"], reference[reference["group"] == "bad"]
    subset = accuracy_score(bad["label"], bad["prediction"])
    ref_subset = accuracy_score(ref_bad["label"], ref_bad["prediction"])
    assert result.details["subset"] == "bad" and result.details["compare_to"] == "reference"
    assert result.metrics["subset_value"] == pytest.approx(subset)
    assert result.metrics["reference_value"] == pytest.approx(ref_subset)
    assert result.metrics["change"] == pytest.approx(ref_subset - subset)  # larger = worse
    assert result.metrics["change_p"] < 1e-6
    assert result.severity == "high"  # a drop of ~0.4 is surely above the 0.15 threshold
    assert result.failing_rows == len(bad)
    passing = frame[frame["group"] != "bad"]
    impact = (bad["label"] != bad["prediction"]).mean() - (passing["label"] != passing["prediction"]).mean()
    assert result.model_impact == pytest.approx(impact)


def test_the_audit_compares_each_subset_with_the_whole_batch() -> None:
    frame = _planted(20000, 0.1)
    result = run("subset.accuracy", frame, COLUMNS_PLANTED, compare_to="batch")["group"]
    bad = frame[frame["group"] == "bad"]
    overall = accuracy_score(frame["label"], frame["prediction"])
    assert result.details["subset"] == "bad" and result.details["compare_to"] == "batch"
    assert result.metrics["difference"] == pytest.approx(
        overall - accuracy_score(bad["label"], bad["prediction"])
    )
    assert result.severity == "high"
    same = run("subset.accuracy", frame, COLUMNS_PLANTED)["group"]  # against itself: no change
    assert same.metrics["change"] == pytest.approx(0.0) and same.severity == "none"


def test_error_rate_difference_is_subset_minus_overall() -> None:
    frame = _planted(20000, 0.1)
    result = run("subset.fpr", frame, COLUMNS_PLANTED, compare_to="batch")["group"]
    negatives = frame[frame["label"] == 0]
    overall = (negatives["prediction"] == 1).mean()
    bad = negatives[negatives["group"] == "bad"]
    assert result.details["subset"] == "bad"
    assert result.metrics["difference"] == pytest.approx((bad["prediction"] == 1).mean() - overall)


def test_a_small_subset_is_not_graded_and_the_details_say_why() -> None:
    reference = _planted(20000, 0.1, seed=3, bad_accuracy=0.9)
    frame = _planted(2000, 0.01, seed=2)  # about 20 rows in "bad", below min_subset_size=30
    result = run("subset.accuracy", frame, COLUMNS_PLANTED, reference=reference)["group"]
    (bad,) = [s for s in result.details["subsets"] if s["subset"] == "bad"]
    assert bad["rows"] < 30 and bad["change"] > 0.15
    assert "min_subset_size=30" in bad["not_graded"] and "batch" in bad["not_graded"]
    assert "bad" in result.details["not_graded"] and result.details["subset"] != "bad"
    assert result.severity == "none" and result.failing_rows == 0 and result.model_impact is None
    lowered = run("subset.accuracy", frame, COLUMNS_PLANTED, reference=reference, min_subset_size=10)
    # Graded now, and surely worse; 23 rows, as the best of four subsets, cannot show it exceeds 0.05.
    assert lowered["group"].details["subset"] == "bad" and not lowered["group"].details["not_graded"]
    assert lowered["group"].metrics["change_p"] < 0.01 and lowered["group"].metrics["change_bound"] > 0


def test_no_subset_graded_gives_no_severity_and_a_reason() -> None:
    frame = _planted(40, 0.5, seed=4)
    result = run("subset.accuracy", frame, COLUMNS_PLANTED, reference=_planted(40, 0.5, seed=5))["group"]
    assert result.status == "ok" and result.severity == "none"
    assert result.reason.startswith("not graded: no subset of 'group' has 30")
    assert "change_bound" not in result.metrics


def test_no_false_alarm_on_noise() -> None:
    def noise(seed: int) -> pd.DataFrame:
        rng = np.random.default_rng(seed)
        n = 5000
        frame = pd.DataFrame({f"c{i}": rng.choice(list("abcdefgh"), size=n) for i in range(10)})
        frame["label"] = rng.integers(0, 2, size=n)
        frame["prediction"] = np.where(rng.random(n) < 0.8, frame["label"], 1 - frame["label"])
        return frame

    frame = noise(4)
    columns = Columns(label="label", prediction="prediction", categorical=tuple(frame.columns[:10]))
    results = run("subset.accuracy", frame, columns, reference=noise(5))
    assert len(results) == 10
    assert all(r.severity == "none" and r.details["graded_subsets"] == 8 for r in results.values())


def test_features_parameter_and_json_and_pickle(binary_frames) -> None:
    reference, batch, columns = binary_frames
    check = registry.create("subset.auc", {"features": ["k"]})
    profile = check.fit(reference, columns)
    assert set(profile["slices"]) == {"k"}
    pickle.loads(pickle.dumps(profile))
    (result,) = check.evaluate(batch, profile, columns)
    assert result.target == "k" and result.details["kind"] == "categorical"
    json.dumps(result.to_dict(), allow_nan=False)


# --- bad input ---------------------------------------------------------------------------------------


def test_unseen_categories_and_out_of_range_values_get_subsets(binary_frames) -> None:
    reference, batch, columns = binary_frames
    batch = batch.assign(k=batch["k"].replace({"d": "new"}), x=batch["x"] * 100)
    results = run("subset.accuracy", batch, columns, reference=reference)
    assert "(other)" in subset_values(results["k"])
    labels = [s["subset"] for s in results["x"].details["subsets"]]
    assert labels[0].startswith("(-inf,") and labels[-2].endswith("inf)") and labels[-1] == "(missing)"


def test_a_broken_feature_errors_alone(binary_frames) -> None:
    reference, batch, columns = binary_frames
    results = run("subset.f1", batch.assign(x=batch["x"].astype(str)), columns, reference=reference)
    assert results["x"].status == "error" and "'x'" in results["x"].reason
    assert results["k"].status == "ok"
    missing = run("subset.f1", batch.drop(columns="k"), columns, reference=reference)
    assert missing["k"].status == "error" and "'k'" in missing["k"].reason


def test_binary_checks_skip_multiclass_labels(multiclass_frame) -> None:
    frame, _ = multiclass_frame
    columns = Columns(label="label", score="p_a", categorical=("g",))
    (result,) = run("subset.auc", frame, columns).values()
    assert result.status == "skipped" and "3 classes" in result.reason


def test_positive_label_must_be_a_label_value() -> None:
    frame = pd.DataFrame({"g": ["a", "b"] * 20, "label": ["yes", "yes", "no", "no"] * 10})
    frame["score"] = np.linspace(0, 1, 40)
    columns = Columns(label="label", score="score", categorical=("g",))
    (result,) = run("subset.auc", frame, columns).values()
    assert result.status == "error" and "positive_label" in result.reason
    ok = run("subset.auc", frame, columns, positive_label="yes")["g"]
    assert ok.metrics["batch_value"] == pytest.approx(roc_auc_score(frame["label"] == "yes", frame["score"]))


def test_class_score_columns_must_match_classes(multiclass_frame) -> None:
    frame, columns = multiclass_frame
    (result,) = run("subset.multiclass_auc", frame, columns, classes=["a", "b"]).values()
    assert result.status == "error" and "classes" in result.reason


def test_single_class_batch_is_skipped_with_a_reason() -> None:
    frame = pd.DataFrame({"g": ["a", "b"] * 10, "label": 1, "score": np.linspace(0, 1, 20)})
    columns = Columns(label="label", score="score", categorical=("g",))
    (result,) = run("subset.auc", frame, columns).values()
    assert result.status == "skipped" and "single class" in result.reason


@pytest.mark.parametrize(
    "params",
    [
        {"compare_to": "whole"},
        {"bins": 0},
        {"min_subset_size": 0},
        {"average": "micro"},
        {"thresholds": {"x": [1]}},
    ],
)
def test_bad_parameters_are_rejected(params: dict) -> None:
    with pytest.raises(CheckInputError):
        registry.create("subset.macro_f1", params)


def test_macro_metrics_use_the_prediction_column_without_class_scores(multiclass_frame) -> None:
    frame, _ = multiclass_frame
    rng = np.random.default_rng(8)
    frame = frame.assign(predicted=np.where(rng.random(len(frame)) < 0.7, frame["label"], "b"))
    columns = Columns(label="label", prediction="predicted", categorical=("g",), task="multiclass")
    result = run("subset.macro_recall", frame, columns)["g"]
    kept = frame.dropna(subset=["label"])
    assert result.metrics["batch_value"] == pytest.approx(
        recall_score(kept["label"], kept["predicted"], average="macro")
    )


def test_task_mismatch_is_skipped(binary_frames) -> None:
    reference, batch, columns = binary_frames
    regression = Columns(label="label", score="score", categorical=("k",), task="regression")
    (auc,) = run("subset.auc", batch, regression, reference=reference).values()
    assert auc.status == "skipped" and "regression" in auc.reason
    (mae,) = run("subset.mae", batch, columns, reference=reference).values()
    assert mae.status == "skipped" and "binary" in mae.reason


def test_whole_number_predictions_are_classes_not_scores() -> None:
    from driftline.checks.columns import Columns
    from driftline.checks.subset import predicted_positive

    frame = pd.DataFrame({"pred": [1, 2, 2, 1], "proba": [0.2, 0.7, 0.5, 0.9]})
    positive, present = predicted_positive(frame, Columns(prediction="pred"), positive_label=2, threshold=0.5)
    assert positive.tolist() == [False, True, True, False] and present.all()
    scores, _ = predicted_positive(frame, Columns(prediction="proba"), positive_label=1, threshold=0.5)
    assert scores.tolist() == [False, True, True, True]


# Subset metrics whose higher values are worse (an error rate, errors, spreads of the score); the
# others are scores, better when higher.
HIGHER_IS_WORSE = {
    "subset.fpr",
    "subset.mae",
    "subset.rmse",
    "subset.variance",
    "subset.variance_positive",
    "subset.variance_negative",
}


def test_each_subset_check_declares_its_direction_on_its_subset_value_which_is_not_graded() -> None:
    registry.load_catalog()
    names = [name for name in registry.names() if name.startswith("subset.")]
    assert set(names) > HIGHER_IS_WORSE
    for name in names:
        cls = registry.get(name)
        value = cls.declared_metrics["subset_value"]
        assert value.higher_is_worse == (name in HIGHER_IS_WORSE), name
        assert value.thresholds == () and "subset_value" not in cls.default_thresholds
    with pytest.raises(CheckInputError, match=r"no threshold for metric\(s\) \['subset_value'\]"):
        registry.create("subset.fpr", {"thresholds": {"subset_value": [0.1]}})


def test_a_rising_error_rate_and_a_falling_score_are_both_positive_changes() -> None:
    """The sign of each change follows the declared direction: fpr and accuracy of one subset whose
    predictions are wrong twice as often in the batch as in the reference."""
    rng = np.random.default_rng(3)
    n = 4000
    label = rng.integers(0, 2, n)

    def frame(flip: float) -> pd.DataFrame:
        wrong = rng.random(n) < flip
        return pd.DataFrame({"g": "a", "label": label, "prediction": np.where(wrong, 1 - label, label)})

    reference, batch = frame(0.1), frame(0.2)
    columns = Columns(label="label", prediction="prediction", categorical=("g",), task="binary")
    fpr = run("subset.fpr", batch, columns, reference=reference)["g"]
    accuracy = run("subset.accuracy", batch, columns, reference=reference)["g"]

    def rates(f: pd.DataFrame) -> tuple[float, float]:
        negative = f["label"] == 0
        return float((f["prediction"][negative] == 1).mean()), float((f["prediction"] == f["label"]).mean())

    (fpr_ref, acc_ref), (fpr_batch, acc_batch) = rates(reference), rates(batch)
    assert fpr.metrics["change"] == pytest.approx(fpr_batch - fpr_ref) and fpr.metrics["change"] > 0
    assert accuracy.metrics["change"] == pytest.approx(acc_ref - acc_batch) and accuracy.metrics["change"] > 0
