"""The registered fairness checks: golden numbers, details, bad input, grading."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError
from driftline.checks.runner import run_check
from tests.golden import golden_cases

NAMES = {
    "fairness.statistical_parity",
    "fairness.tpr",
    "fairness.fpr",
    "fairness.fnr",
    "fairness.for",
    "fairness.fdr",
    "fairness.error_rate",
    "fairness.equalized_odds",
    "fairness.theil_index",
    "fairness.dataset_statistical_parity",
    "fairness.consistency",
    "fairness.smoothed_edf",
}
CHECK_FOR_METRIC = {
    "statistical_parity": "fairness.statistical_parity",
    "TPR": "fairness.tpr",
    "FPR": "fairness.fpr",
    "FNR": "fairness.fnr",
    "FOR": "fairness.for",
    "FDR": "fairness.fdr",
    "error_rate": "fairness.error_rate",
    "equalized_odds": "fairness.equalized_odds",
    "theil_index": "fairness.theil_index",
}
GOLDEN = [c for c in golden_cases("guardian_model_metric_doc") if c["inputs"]["reduction"] is not None]


def _columns(protected, *, prediction: str | None = "prediction", score: str | None = None) -> Columns:
    return Columns(
        label="label", prediction=prediction, score=score, protected=tuple(protected), task="binary"
    )


def _run(name: str, frame: pd.DataFrame, columns: Columns, reference: pd.DataFrame | None = None, **params):
    """One check on a frame of a few rows: every subgroup is graded."""
    params = {"min_group_rows": 1, "min_outcome_rows": 0, **params}
    results = run_check(
        registry.create(name, params),
        frame,
        columns,
        reference=frame if reference is None else reference,
        strict=True,
    )
    assert len(results) == 1
    json.dumps(results[0].to_dict(), allow_nan=False)
    return results[0]


def test_registered_names() -> None:
    assert {n for n in registry.names() if n.startswith("fairness.")} == NAMES


@pytest.mark.parametrize("case", GOLDEN, ids=[c["id"] for c in GOLDEN])
def test_golden_through_the_checks(case: dict) -> None:
    inputs = case["inputs"]
    frame = pd.DataFrame(inputs["subgroups"]).assign(label=inputs["y_true"], prediction=inputs["y_pred"])
    params = {"reduction": inputs["reduction"]}
    if inputs["distance_measure"] is not None:
        params["distance_measure"] = inputs["distance_measure"]
    result = _run(CHECK_FOR_METRIC[inputs["metric"]], frame, _columns(inputs["protected"]), **params)
    assert result.status == "ok"
    assert result.metrics["value"] == pytest.approx(
        case["expected"], abs=case["tolerance"], rel=case["tolerance"]
    )
    assert result.details["subgroups"] == len(frame[inputs["protected"]].drop_duplicates())


def test_score_at_or_above_threshold_is_a_positive_prediction() -> None:
    case = next(c for c in GOLDEN if c["id"] == "guardian_doc_TPR_sex+race_diff_mean")
    inputs = case["inputs"]
    score = np.where(np.array(inputs["y_pred"]) == 1, 0.5, 0.49)
    frame = pd.DataFrame(inputs["subgroups"]).assign(label=inputs["y_true"], score=score)
    result = _run("fairness.tpr", frame, _columns(["sex", "race"], prediction=None, score="score"))
    assert result.metrics["value"] == pytest.approx(case["expected"])
    assert result.details["prediction_from"] == "score >= 0.5"


# Three subgroups by hand: positive-prediction rates a = 2/4, b = 1/4, c = 2/2; against the rest of
# the population (3/6, 4/6, 3/8) the distances are 0, 5/12 and 5/8.
THREE = pd.DataFrame(
    {
        "g": ["a"] * 4 + ["b"] * 4 + ["c"] * 2,
        "label": [1, 0, 1, 0, 1, 1, 0, 0, 1, 0],
        "prediction": [1, 1, 0, 0, 1, 0, 0, 0, 1, 1],
    }
)


def test_details_list_each_subgroup_worst_first() -> None:
    result = _run("fairness.statistical_parity", THREE, _columns(["g"]), compare_to="none")
    assert result.metrics["value"] == pytest.approx((0 + 5 / 12 + 5 / 8) / 3)
    assert result.metrics["disparity"] == result.metrics["value"]  # every subgroup is graded
    records = result.details["records"]
    assert [r["subgroup"] for r in records] == [{"g": "c"}, {"g": "b"}, {"g": "a"}]
    assert [r["rows"] for r in records] == [2, 4, 4]
    assert [r["other_rows"] for r in records] == [8, 6, 6]
    assert [r["statistical_parity"] for r in records] == pytest.approx([1.0, 0.25, 0.5])
    assert [r["other_statistical_parity"] for r in records] == pytest.approx([3 / 8, 4 / 6, 3 / 6])
    assert [r["disparity"] for r in records] == pytest.approx([5 / 8, 5 / 12, 0.0])
    # Subgroups b and c reach the lowest threshold (0.05): their 6 rows fail. Accuracy: a 2/4 right,
    # b and c 4/6 right, so the failing rows do (1 - 4/6) - (1 - 2/4) = -1/6 "worse".
    assert result.failing_rows == 6
    assert result.model_impact == pytest.approx(-1 / 6)


def test_pairwise_comparison_in_a_check() -> None:
    result = _run(
        "fairness.statistical_parity", THREE, _columns(["g"]), comparison="pairwise", reduction="max"
    )
    assert result.metrics["value"] == pytest.approx(0.75)
    first = result.details["records"][0]
    assert (first["subgroup"], first["other"], first["rows"], first["other_rows"]) == (
        {"g": "b"},
        {"g": "c"},
        4,
        2,
    )


def test_dataset_statistical_parity_compares_pairs_of_label_rates() -> None:
    # Label rates a = 2/4, b = 2/4, c = 1/2: all equal.
    result = _run("fairness.dataset_statistical_parity", THREE, _columns(["g"]))
    assert result.metrics["value"] == pytest.approx(0.0)
    assert result.details["settings"]["comparison"] == "pairwise"
    assert len(result.details["records"]) == 3


def test_reference_value_and_change() -> None:
    reference = THREE.assign(prediction=1)  # every rate 1: no disparity, in any batch drawn from it
    result = _run("fairness.statistical_parity", THREE, _columns(["g"]), reference=reference)
    assert result.metrics["reference_value"] == 0.0
    assert result.details["expected_value"] == 0.0
    assert result.metrics["disparity_change"] == pytest.approx((5 / 12 + 5 / 8) / 3)


def test_missing_and_non_finite_rows_are_dropped_and_counted() -> None:
    bad = pd.DataFrame({"g": [None, "a", "b"], "label": [1, np.nan, 0], "score": [0.9, 0.9, np.inf]})
    frame = pd.concat([THREE.assign(score=THREE["prediction"] * 0.8), bad], ignore_index=True)
    columns = _columns(["g"], prediction=None, score="score")
    # Statistical parity does not use the label: the row with a missing label counts (a: 3/5).
    result = _run("fairness.statistical_parity", frame, columns)
    assert result.metrics["value"] == pytest.approx(
        (abs(3 / 5 - 3 / 6) + abs(1 / 4 - 5 / 7) + abs(1 - 4 / 9)) / 3
    )
    assert result.rows == 11
    assert result.details["dropped_rows"] == 2
    assert result.details["missing"] == {"protected": 1, "score": 1}
    # TPR: a 1/2, b 1/2, c 1/1 against the rest 2/3, 2/3, 2/4.
    result = _run("fairness.tpr", frame, columns)
    assert result.metrics["value"] == pytest.approx((1 / 6 + 1 / 6 + 1 / 2) / 3)
    assert result.rows == 10
    assert result.details["dropped_rows"] == 3
    assert result.details["missing"] == {"protected": 1, "label": 1, "score": 1}


def test_infinite_ratio_is_reported_and_graded_on_smoothed_rates() -> None:
    frame = pd.DataFrame({"g": list("aabb"), "label": [0, 1, 0, 1], "prediction": [1, 1, 0, 0]})
    result = _run(
        "fairness.statistical_parity", frame, _columns(["g"]), distance_measure="ratio", compare_to="none"
    )
    assert result.metrics["value"] == math.inf
    assert result.to_dict()["metrics"]["value"] is None  # JSON has no infinity
    # Graded rates (k + 1/2) / (n + 1): 2.5/3 against 0.5/3, a ratio of 5.
    assert result.metrics["disparity_ratio"] == pytest.approx(5.0)


def test_ratio_thresholds() -> None:
    # Rates 0.5 vs 0.4: ratio 1.25; its change is graded in ratio points by default.
    frame = pd.DataFrame(
        {"g": ["a"] * 10 + ["b"] * 10, "label": 0, "prediction": [1] * 5 + [0] * 5 + [1] * 4 + [0] * 6}
    )
    result = _run("fairness.statistical_parity", frame, _columns(["g"]), distance_measure="ratio")
    assert result.metrics["value"] == pytest.approx(1.25)
    assert result.thresholds == {"disparity_ratio_change": [0.1, 0.25, 0.5]}
    audit = _run(
        "fairness.statistical_parity", frame, _columns(["g"]), distance_measure="ratio", compare_to="none"
    )
    assert audit.thresholds == {"disparity_ratio": [1.1, 1.25, 1.5]}


def test_theil_consistency_and_edf_checks() -> None:
    frame = pd.DataFrame(
        {"g": list("AAAABBBB"), "label": [1, 0, 0, 0, 1, 0, 1, 1], "prediction": [1, 0, 1, 1, 1, 0, 0, 0]}
    )
    theil = _run("fairness.theil_index", frame, _columns(["g"]))
    assert theil.metrics["value"] == pytest.approx(0.75 * math.log(1.5) + 0.25 * math.log(0.5))
    assert theil.details["records"][0]["mean_benefit"] in (pytest.approx(1.5), pytest.approx(0.5))

    labels = pd.DataFrame({"g": list("aaabbbb"), "label": [1, 1, 0, 0, 0, 0, 1]})
    consistency = _run("fairness.consistency", labels, _columns(["g"], prediction=None))
    assert consistency.metrics["value"] == pytest.approx(239 / 420)
    by_group = {r["subgroup"]["g"]: r["consistency"] for r in consistency.details["records"]}
    assert by_group == pytest.approx({"a": 37 / 60, "b": (3 * 7 / 15 + 11 / 15) / 4})

    edf = _run("fairness.smoothed_edf", labels, _columns(["g"], prediction=None))
    ra, rb = 2.5 / 4, 1.5 / 5
    assert edf.metrics["value"] == pytest.approx(max(math.log(ra / rb), math.log((1 - rb) / (1 - ra))))
    assert {r["subgroup"]["g"]: r["smoothed_rate"] for r in edf.details["records"]} == pytest.approx(
        {"a": ra, "b": rb}
    )


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("fairness.theil_index", "theil_index"),
        ("fairness.consistency", "consistency"),
        ("fairness.smoothed_edf", "smoothed_edf"),
        ("fairness.tpr", "disparity"),
    ],
)
def test_an_index_is_graded_on_its_change_or_in_an_audit_on_its_level(name: str, index: str) -> None:
    frame = pd.DataFrame(
        {"g": list("AAAABBBB"), "label": [1, 0, 0, 0, 1, 0, 1, 1], "prediction": [1, 0, 1, 1, 1, 0, 0, 0]}
    )
    change = _run(name, frame, _columns(["g"]))
    audit = _run(name, frame, _columns(["g"]), compare_to="none")
    assert list(change.thresholds) == [f"{index}_change"] and list(audit.thresholds) == [index]
    graded = {f"{index}_change", f"{index}_change_bound", f"{index}_change_p"}
    assert set(change.metrics) == {*graded, "value", "reference_value"}
    assert audit.metrics[index] == pytest.approx(audit.metrics["value"])


@pytest.mark.parametrize("name", sorted(NAMES))
def test_one_subgroup_is_skipped(name: str) -> None:
    frame = THREE.assign(g="a")
    result = _run(name, frame, _columns(["g"]))
    assert result.status == "skipped"
    assert "one subgroup" in result.reason


@pytest.mark.parametrize("name", ["fairness.fpr", "fairness.equalized_odds", "fairness.for"])
def test_undefined_rate_is_skipped_with_reason(name: str) -> None:
    result = _run(name, THREE.assign(label=1, prediction=1), _columns(["g"]))
    assert result.status == "skipped"
    assert "negative" in result.reason or "both labels" in result.reason


def test_non_binary_label_is_an_error_naming_the_column() -> None:
    result = _run("fairness.tpr", THREE.assign(label=np.arange(10) % 3), _columns(["g"]))
    assert result.status == "error"
    assert "label column 'label'" in result.reason


def test_missing_prediction_and_score_is_skipped() -> None:
    result = _run("fairness.tpr", THREE.drop(columns="prediction"), _columns(["g"], prediction=None))
    assert result.status == "skipped"
    assert "prediction or score" in result.reason


def test_text_score_is_an_error() -> None:
    frame = THREE.assign(score=THREE["prediction"].astype(str))
    result = _run("fairness.tpr", frame, _columns(["g"], prediction=None, score="score"))
    assert result.status == "error" and "'score' is not numeric" in result.reason


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("fairness.tpr", {"reduction": None}, "reduction"),
        ("fairness.tpr", {"distance_measure": "log"}, "distance_measure"),
        ("fairness.theil_index", {"comparison": "all"}, "comparison"),
    ],
)
def test_bad_parameters(name: str, params: dict, message: str) -> None:
    with pytest.raises(CheckInputError, match=message):
        registry.create(name, params)


def test_theil_index_check_has_no_distance_measure() -> None:
    with pytest.raises(CheckInputError, match=r"unknown parameter\(s\) \['distance_measure'\]"):
        registry.create("fairness.theil_index", {"distance_measure": "diff"})
