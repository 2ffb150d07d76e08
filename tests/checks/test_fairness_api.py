"""The fairness function and scorer API, pinned against the golden cases and hand computations."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.neighbors import NearestNeighbors

from driftline.checks import fairness as fm
from driftline.checks.errors import CheckInputError
from tests.golden import golden_cases

GOLDEN = golden_cases("guardian_model_metric_doc")
FUNCTIONS = {
    "statistical_parity": fm.model_statistical_parity,
    "TPR": fm.true_positive_rate,
    "FPR": fm.false_positive_rate,
    "FNR": fm.false_negative_rate,
    "FOR": fm.false_omission_rate,
    "FDR": fm.false_discovery_rate,
    "error_rate": fm.error_rate,
    "equalized_odds": fm.equalized_odds,
    "theil_index": fm.theil_index,
}
SCORERS = {
    "statistical_parity": fm.ModelStatisticalParityScorer,
    "TPR": fm.TruePositiveRateScorer,
    "FPR": fm.FalsePositiveRateScorer,
    "FNR": fm.FalseNegativeRateScorer,
    "FOR": fm.FalseOmissionRateScorer,
    "FDR": fm.FalseDiscoveryRateScorer,
    "error_rate": fm.ErrorRateScorer,
    "equalized_odds": fm.EqualizedOddsScorer,
    "theil_index": fm.TheilIndexScorer,
}


class FixedModel:
    """A model whose predictions are given in advance."""

    def __init__(self, predictions: list[int]) -> None:
        self.predictions = np.asarray(predictions)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        assert len(X) == len(self.predictions)
        return self.predictions


def _flat_keys(result: dict) -> dict:
    """Golden files key multi-attribute subgroups as "F,a"; the API keys them as ("F", "a")."""
    return {",".join(map(str, k)) if isinstance(k, tuple) else k: v for k, v in result.items()}


def _assert_matches(result, expected, tolerance: float) -> None:
    if isinstance(expected, dict):
        result = _flat_keys(result)
        assert set(result) == set(expected)
        for key, value in expected.items():
            assert result[key] == pytest.approx(value, abs=tolerance, rel=tolerance), key
    else:
        assert result == pytest.approx(expected, abs=tolerance, rel=tolerance)


@pytest.mark.parametrize("case", GOLDEN, ids=[c["id"] for c in GOLDEN])
def test_golden_functions(case: dict) -> None:
    inputs = case["inputs"]
    subgroups = pd.DataFrame(inputs["subgroups"])[inputs["protected"]]
    function = FUNCTIONS[inputs["metric"]]
    result = function(
        inputs["y_true"], inputs["y_pred"], subgroups, inputs["distance_measure"], inputs["reduction"]
    )
    _assert_matches(result, case["expected"], case["tolerance"])


@pytest.mark.parametrize("case", GOLDEN[::5], ids=[c["id"] for c in GOLDEN[::5]])
def test_golden_scorers_with_supplementary_features(case: dict) -> None:
    inputs = case["inputs"]
    frame = pd.DataFrame(inputs["subgroups"]).assign(x=np.arange(len(inputs["y_true"])))
    _, *rest = inputs["protected"]
    X, extra = frame.drop(columns=rest), frame[rest]
    scorer = SCORERS[inputs["metric"]](inputs["protected"], inputs["distance_measure"], inputs["reduction"])
    result = scorer(FixedModel(inputs["y_pred"]), X, inputs["y_true"], supplementary_features=extra)
    _assert_matches(result, case["expected"], case["tolerance"])


# Three subgroups by hand: positive-prediction rates a = 2/4, b = 1/4, c = 2/2.
THREE = pd.DataFrame({"g": ["a"] * 4 + ["b"] * 4 + ["c"] * 2})
THREE_PRED = [1, 1, 0, 0, 1, 0, 0, 0, 1, 1]
# Rest of the population: a vs 3/6, b vs 4/6, c vs 3/8.
REST_DIFF = {"a": 0.0, "b": 5 / 12, "c": 5 / 8}
REST_RATIO = {"a": 1.0, "b": 8 / 3, "c": 8 / 3}
PAIR_DIFF = {("a", "b"): 0.25, ("a", "c"): 0.5, ("b", "c"): 0.75}
PAIR_RATIO = {("a", "b"): 2.0, ("a", "c"): 2.0, ("b", "c"): 4.0}


@pytest.mark.parametrize(
    ("comparison", "distance", "expected"),
    [
        ("rest", "diff", REST_DIFF),
        ("rest", "ratio", REST_RATIO),
        ("pairwise", "diff", PAIR_DIFF),
        ("pairwise", "ratio", PAIR_RATIO),
    ],
)
def test_three_subgroups_by_hand(comparison: str, distance: str, expected: dict) -> None:
    def run(reduction):
        return fm.model_statistical_parity(
            None, THREE_PRED, THREE, distance, reduction, comparison=comparison
        )

    assert run(None) == pytest.approx(expected)
    assert run("mean") == pytest.approx(np.mean(list(expected.values())))
    assert run("max") == pytest.approx(max(expected.values()))


def test_dataset_statistical_parity_compares_pairs_by_default() -> None:
    # Labels as the predictions above: positive-label rates a = 1/2, b = 1/4, c = 1.
    assert fm.dataset_statistical_parity(THREE_PRED, THREE, reduction=None) == pytest.approx(PAIR_DIFF)
    assert fm.dataset_statistical_parity(THREE_PRED, THREE) == pytest.approx(0.5)
    rest = fm.dataset_statistical_parity(THREE_PRED, THREE, "ratio", "max", comparison="rest")
    assert rest == pytest.approx(8 / 3)


def test_rest_and_pairwise_agree_with_two_subgroups() -> None:
    rng = np.random.default_rng(3)
    subgroups = pd.DataFrame({"sex": rng.choice(["F", "M"], 200)})
    y_true, y_pred = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
    for function in FUNCTIONS.values():
        distance = None if function is fm.theil_index else "ratio"
        rest = function(y_true, y_pred, subgroups, distance, "mean")
        pairwise = function(y_true, y_pred, subgroups, distance, "mean", comparison="pairwise")
        assert rest == pytest.approx(pairwise)


def _row_level_theil(benefit: np.ndarray, group: np.ndarray) -> float:
    """Theil index (generalised entropy, alpha = 1) of every row's benefit replaced by its group mean."""
    means = pd.Series(benefit).groupby(group).transform("mean").to_numpy()
    ratio = means / means.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.mean(np.where(ratio > 0, ratio * np.log(ratio), 0.0)))


def test_theil_index_by_hand() -> None:
    # Benefits 1 + pred - label: group A [1, 1, 2, 2] (mean 1.5), group B [1, 1, 0, 0] (mean 0.5).
    y_true = [1, 0, 0, 0, 1, 0, 1, 1]
    y_pred = [1, 0, 1, 1, 1, 0, 0, 0]
    subgroups = pd.DataFrame({"g": list("AAAABBBB")})
    expected = 0.5 * 1.5 * math.log(1.5) + 0.5 * 0.5 * math.log(0.5)
    assert fm.theil_index(y_true, y_pred, subgroups) == pytest.approx(expected, rel=1e-12)
    assert fm.theil_index(y_true, y_pred, subgroups, reduction=None) == pytest.approx(
        {"A": expected, "B": expected}, rel=1e-12
    )


@pytest.mark.parametrize("comparison", ["rest", "pairwise"])
def test_theil_index_against_row_level_formula(comparison: str) -> None:
    rng = np.random.default_rng(7)
    n = 300
    groups = rng.choice(["x", "y", "z"], n, p=[0.5, 0.3, 0.2])
    y_true, y_pred = rng.integers(0, 2, n), (rng.random(n) < 0.4).astype(int)
    benefit = 1.0 + y_pred - y_true
    result = fm.theil_index(
        y_true, y_pred, pd.DataFrame({"g": groups}), reduction=None, comparison=comparison
    )
    for key, value in result.items():
        if comparison == "rest":
            mask, label = np.ones(n, dtype=bool), np.where(groups == key, "in", "out")
        else:
            mask = np.isin(groups, key)
            label = groups
        assert value == pytest.approx(_row_level_theil(benefit[mask], label[mask]), rel=1e-10), key


def test_smoothed_edf_by_hand() -> None:
    # a: 3 positives of 10, b: 15 of 20; smoothed rates (pos + 0.5) / (n + 1).
    y_true = [1] * 3 + [0] * 7 + [1] * 15 + [0] * 5
    subgroups = pd.DataFrame({"g": ["a"] * 10 + ["b"] * 20})
    ra, rb = 3.5 / 11, 15.5 / 21
    expected = max(abs(math.log(ra / rb)), abs(math.log((1 - ra) / (1 - rb))))
    assert fm.smoothed_edf(y_true, subgroups) == pytest.approx(expected, rel=1e-12)


def test_smoothed_edf_is_the_largest_pairwise_log_ratio() -> None:
    rng = np.random.default_rng(11)
    groups = rng.choice(["a", "b", "c", "d"], 400, p=[0.4, 0.3, 0.2, 0.1])
    y_true = (rng.random(400) < np.select([groups == "a", groups == "b"], [0.2, 0.5], 0.7)).astype(int)
    frame = pd.DataFrame({"g": groups, "y": y_true})
    stats = frame.groupby("g")["y"].agg(["sum", "count"])
    rates = ((stats["sum"] + 0.5) / (stats["count"] + 1.0)).to_numpy()
    expected = max(
        max(abs(math.log(p / q)), abs(math.log((1 - p) / (1 - q))))
        for p, q in itertools.permutations(rates, 2)
    )
    assert fm.smoothed_edf(y_true, frame[["g"]]) == pytest.approx(expected, rel=1e-12)
    assert fm.SmoothedEDFScorer("g")(None, frame, y_true) == pytest.approx(expected, rel=1e-12)


def test_consistency_by_hand_with_ties_between_subgroups() -> None:
    # k = 5. A row of `a` has 2 other `a` rows, then 3 of the 4 equally near `b` rows (expected share
    # 3 * 1/4); a row of `b` has 3 other `b` rows, then 2 of the 3 `a` rows (expected 2 * 2/3).
    # |y - share|: a rows 13/20, 13/20, 11/20; b rows labelled 0: 7/15 each; the b row labelled 1: 11/15.
    y_true = [1, 1, 0, 0, 0, 0, 1]
    subgroups = pd.DataFrame({"g": list("aaabbbb")})
    expected = (Fraction(37, 20) + 3 * Fraction(7, 15) + Fraction(11, 15)) / 7
    assert expected == Fraction(239, 420)
    assert fm.consistency(y_true, subgroups) == pytest.approx(float(expected), rel=1e-12)


def test_consistency_matches_nearest_neighbors_when_neighbours_are_unambiguous() -> None:
    # Every subgroup has exactly k + 1 rows, so a row's 5 nearest other rows are its own subgroup.
    rng = np.random.default_rng(5)
    subgroups = pd.DataFrame(
        {"sex": np.repeat(["F", "M"], 18), "race": np.tile(np.repeat(["a", "b", "c"], 6), 2)}
    )
    y_true = rng.integers(0, 2, len(subgroups))
    points = pd.get_dummies(subgroups).to_numpy(dtype=float)
    _, neighbours = NearestNeighbors(n_neighbors=6, algorithm="brute").fit(points).kneighbors(points)
    others = np.array([[j for j in row if j != i][:5] for i, row in enumerate(neighbours)])
    expected = np.mean(np.abs(y_true - y_true[others].mean(axis=1)))
    assert fm.consistency(y_true, subgroups) == pytest.approx(expected, rel=1e-12)
    assert fm.ConsistencyScorer(["sex", "race"])(X=subgroups, y_true=y_true) == pytest.approx(
        expected, rel=1e-12
    )


def test_consistency_does_not_depend_on_row_order() -> None:
    rng = np.random.default_rng(8)
    subgroups = pd.DataFrame({"g": rng.choice(list("abc"), 50), "h": rng.choice(list("xy"), 50)})
    y_true = rng.integers(0, 2, 50)
    order = rng.permutation(50)
    assert fm.consistency(y_true, subgroups) == pytest.approx(
        fm.consistency(y_true[order], subgroups.iloc[order]), rel=1e-12
    )


def test_consistency_is_zero_when_labels_follow_the_subgroups() -> None:
    subgroups = pd.DataFrame({"g": ["a"] * 8 + ["b"] * 8})
    assert fm.consistency([1] * 8 + [0] * 8, subgroups) == 0.0


def test_rows_with_missing_values_are_left_out() -> None:
    subgroups = pd.concat([THREE, pd.DataFrame({"g": [None, "a"]})], ignore_index=True)
    y_pred = [*THREE_PRED, 1, None]
    result = fm.model_statistical_parity(y_pred=y_pred, subgroups=subgroups, reduction=None)
    assert result == pytest.approx(REST_DIFF)


def test_statistical_parity_scorer_without_labels() -> None:
    scorer = fm.ModelStatisticalParityScorer("g", reduction="max")
    assert scorer(FixedModel(THREE_PRED), THREE) == pytest.approx(5 / 8)


def test_positive_label_and_booleans() -> None:
    labels = np.where(np.array(THREE_PRED) == 1, "yes", "no")
    assert fm.dataset_statistical_parity(labels, THREE, positive_label="yes") == pytest.approx(0.5)
    assert fm.dataset_statistical_parity(np.array(THREE_PRED, dtype=bool), THREE) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fm.theil_index([0, 1], [0, 1], pd.DataFrame({"g": ["a", "b"]}), "diff"), "distance_measure"),
        (lambda: fm.TheilIndexScorer("g", "ratio"), "distance_measure"),
        (lambda: fm.true_positive_rate([0, 1], [0, 1], pd.DataFrame({"g": ["a", "b"]}), "log"), "diff"),
        (
            lambda: fm.error_rate([0, 1], [0, 1], pd.DataFrame({"g": ["a", "b"]}), reduction="sum"),
            "reduction",
        ),
        (lambda: fm.TruePositiveRateScorer("g", comparison="all"), "comparison"),
        (lambda: fm.error_rate([0, 1, 1], [0, 1], pd.DataFrame({"g": ["a", "b"]})), "2 rows"),
        (lambda: fm.error_rate([0, 1, 2], [0, 1, 1], pd.DataFrame({"g": list("abc")})), "binary"),
        (
            lambda: fm.dataset_statistical_parity(["n", "y"], pd.DataFrame({"g": ["a", "b"]})),
            "positive label",
        ),
        (lambda: fm.model_statistical_parity(None, None, pd.DataFrame({"g": ["a"]})), "y_pred"),
        (lambda: fm.consistency([0, 1], pd.DataFrame({"g": ["a", "b"]}), n_neighbors=0), "n_neighbors"),
        (lambda: fm.smoothed_edf([0, 1], pd.DataFrame({"g": ["a", "b"]}), concentration=0), "concentration"),
        (lambda: fm.consistency([0, 1], [0, 1]), "DataFrame"),
        (lambda: fm.ConsistencyScorer("g")(None, None, [0, 1]), "X and y_true"),
    ],
)
def test_bad_arguments_are_errors(call, message: str) -> None:
    with pytest.raises(CheckInputError, match=message):
        call()


def test_feature_in_both_x_and_supplementary_features_is_an_error() -> None:
    X = pd.DataFrame({"g": ["a", "b"], "x": [1, 2]})
    with pytest.raises(CheckInputError, match=r"\['g'\] are in both"):
        fm.TruePositiveRateScorer("g")(FixedModel([0, 1]), X, [0, 1], supplementary_features=X[["g"]])
    with pytest.raises(CheckInputError, match="neither X nor"):
        fm.TruePositiveRateScorer("race")(FixedModel([0, 1]), X, [0, 1])


def test_undefined_rates_are_skipped_by_the_reductions() -> None:
    # Subgroup c has no positive label: its TPR is undefined, the others are compared with each other.
    subgroups = pd.DataFrame({"g": list("aabbcc")})
    y_true, y_pred = [1, 1, 1, 1, 0, 0], [1, 0, 1, 1, 0, 1]
    result = fm.true_positive_rate(y_true, y_pred, subgroups, reduction=None, comparison="pairwise")
    assert result[("a", "b")] == pytest.approx(0.5)
    assert math.isnan(result[("a", "c")]) and math.isnan(result[("b", "c")])
    assert fm.true_positive_rate(y_true, y_pred, subgroups, reduction="mean", comparison="pairwise") == 0.5
    ratio = fm.false_positive_rate([0, 0, 0, 0], [1, 1, 0, 0], pd.DataFrame({"g": list("aabb")}), "ratio")
    assert ratio == math.inf


def test_quadratic_work_on_too_many_subgroups_is_refused() -> None:
    subgroups = pd.DataFrame({"id": np.arange(2001)})
    y = np.arange(2001) % 2
    assert isinstance(fm.error_rate(y, y, subgroups), float)  # against the rest: linear, allowed
    with pytest.raises(CheckInputError, match="2001"):
        fm.error_rate(y, y, subgroups, comparison="pairwise")
    with pytest.raises(CheckInputError, match="continuous column"):
        fm.consistency(y, subgroups)


def test_multi_attribute_keys_are_tuples() -> None:
    subgroups = pd.DataFrame({"sex": list("FFMM"), "race": list("abab")})
    result = fm.model_statistical_parity(y_pred=[1, 0, 0, 0], subgroups=subgroups, reduction=None)
    # F,a: 1 vs 0/3; every other subgroup: 0 vs 1/3.
    assert result == pytest.approx({("F", "a"): 1.0, ("F", "b"): 1 / 3, ("M", "a"): 1 / 3, ("M", "b"): 1 / 3})
