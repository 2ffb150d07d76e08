"""Distribution drift checks: PSI definition, KS/Wasserstein against scipy, categories, labels, predictions,
and the bad-input battery of every drift and performance check."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driftline.checks import registry
from driftline.checks.binning import CategoryCounts, NumericSketch, bin_codes, psi
from driftline.checks.columns import Columns, infer_columns
from driftline.checks.errors import CheckInputError
from driftline.checks.runner import run_check
from tests.golden import golden_cases

RNG_SEED = 7


def by_target(results):
    return {r.target: r for r in results}


def only_result(check, current, columns, reference):
    """The single result of a check (or a registered name) run strictly on `current` against `reference`."""
    if isinstance(check, str):
        check = registry.create(check)
    [result] = run_check(check, current, columns, reference=reference, strict=True)
    return result


def counts_frame(counts: list[int], column: str = "flag", labels=("no", "yes")) -> pd.DataFrame:
    """A one-column frame with `counts[i]` rows of `labels[i]`."""
    return pd.DataFrame({column: np.repeat(np.array(labels, dtype=object), counts)})


def plain_psi(p: np.ndarray, q: np.ndarray) -> float:
    """Textbook PSI on proportions, written independently of the project's helper."""
    return float(sum((qi - pi) * math.log(qi / pi) for pi, qi in zip(p, q, strict=True)))


# --- PSI definition ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", golden_cases("psi"), ids=lambda c: c["id"])
def test_psi_golden_counts(case):
    inputs = case["inputs"]
    value = psi(inputs["ref_counts"], inputs["eval_counts"], smoothing=inputs["smoothing_alpha"])
    assert value == pytest.approx(case["expected"], abs=case["tolerance"])


def test_psi_default_reproduces_document_and_plain_is_reachable():
    assert round(psi([100, 200], [25, 150]), 3) == 0.201
    assert psi([100, 200], [25, 150], smoothing=0) == pytest.approx(
        plain_psi(np.array([1 / 3, 2 / 3]), np.array([1 / 7, 6 / 7]))
    )


def test_psi_empty_bins_stay_finite():
    # add-one: p = (11/12, 1/12), q = (1/12, 11/12) -> 2 * (10/12) * ln 11
    assert psi([10, 0], [0, 10]) == pytest.approx(2 * (10 / 12) * math.log(11))
    plain = psi([10, 0], [0, 10], smoothing=0)
    assert math.isfinite(plain) and plain > 10


def test_psi_rejects_bad_counts():
    with pytest.raises(CheckInputError):
        psi([1, 2], [1, 2, 3])
    with pytest.raises(CheckInputError):
        psi([0, 0], [1, 2])
    with pytest.raises(CheckInputError):
        psi([1, 2], [1, 2], smoothing=-1)


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("drift.categorical", {"categorical": ["flag"]}),
        ("drift.label_psi", {"label": "flag", "task": "binary"}),
        ("drift.predicted_label", {"prediction": "flag"}),
    ],
)
@pytest.mark.parametrize(("smoothing", "expected"), [(1.0, 0.20085988042888558), (0.0, 0.20925948355583046)])
def test_psi_worked_example_through_checks(name, columns, smoothing, expected):
    reference, current = counts_frame([100, 200]), counts_frame([25, 150])
    check = registry.create(name, {"smoothing": smoothing})
    result = only_result(check, current, Columns(**columns), reference)
    assert result.metrics["psi"] == pytest.approx(expected, abs=1e-9)
    # the document: "If our PSI threshold was 0.1 then the test would fail"; its estimate is medium
    assert check.grade(result.metrics) == "medium"
    assert registry.create(name, {"thresholds": {"psi": [0.1]}}).grade(result.metrics) == "high"
    # on 175 rows the PSI is known to exceed 0.1, not 0.2; twenty times the rows make it medium
    assert result.severity == "low" and result.metrics["psi_bound"] < 0.2 <= result.metrics["psi"]
    larger = only_result(check, counts_frame([500, 3000]), Columns(**columns), counts_frame([2000, 4000]))
    assert larger.severity == "medium"


def test_psi_severity_and_threshold_golden():
    [severity_case] = golden_cases("psi_severity")
    [fail_case] = golden_cases("threshold_fail")
    check = registry.create("drift.prediction")
    assert check.grade({"psi": severity_case["inputs"]["psi"]}) == severity_case["expected"]
    single = registry.create("drift.prediction", {"thresholds": {"psi": [fail_case["inputs"]["threshold"]]}})
    assert (single.grade({"psi": fail_case["inputs"]["value"]}) != "none") is fail_case["expected"]


# --- numeric drift ----------------------------------------------------------------------------------------


def numeric_frames(n_ref: int = 3000, n_cur: int = 2000, shift: float = 0.3, decimals: int | None = None):
    rng = np.random.default_rng(RNG_SEED)
    ref, cur = rng.normal(0, 1, n_ref), rng.normal(shift, 1.2, n_cur)
    if decimals is not None:
        ref, cur = ref.round(decimals), cur.round(decimals)
    return pd.DataFrame({"x": ref}), pd.DataFrame({"x": cur})


def reference_psi(ref: np.ndarray, cur: np.ndarray, bins: int, smoothing: float) -> float:
    """PSI on inverted-CDF reference quantile bins with pd.cut, independent of the project's binning."""
    probs = np.arange(1, bins) / bins
    edges = np.unique(np.quantile(ref, probs, method="inverted_cdf"))
    cut = [-np.inf, *edges, np.inf]
    r = pd.Series(pd.cut(ref, cut, right=True)).value_counts(sort=False).to_numpy(dtype=float)
    c = pd.Series(pd.cut(cur, cut, right=True)).value_counts(sort=False).to_numpy(dtype=float)
    k = len(r)
    return plain_psi((r + smoothing) / (r.sum() + k * smoothing), (c + smoothing) / (c.sum() + k * smoothing))


@pytest.mark.parametrize("decimals", [None, 1])
def test_numeric_psi_and_ks_match_independent_computations(decimals):
    reference, current = numeric_frames(decimals=decimals)
    check = registry.create("drift.numeric", {"tests": ["ks", "wasserstein"]})
    result = only_result(check, current, Columns(numeric=("x",)), reference)
    ref, cur = reference["x"].to_numpy(), current["x"].to_numpy()
    assert result.metrics["psi"] == pytest.approx(reference_psi(ref, cur, 10, 1.0), rel=1e-12)
    expected = stats.ks_2samp(ref, cur, method="asymp")
    assert result.metrics["ks_statistic"] == pytest.approx(expected.statistic, abs=1e-12)
    assert result.metrics["ks_pvalue"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert result.metrics["wasserstein"] == pytest.approx(stats.wasserstein_distance(ref, cur), rel=1e-9)
    assert result.details["ks_exact"] is True
    assert result.severity != "none"


def test_numeric_ks_sketch_is_within_its_bound():
    reference, current = numeric_frames(n_ref=20_000, n_cur=5_000, shift=0.05)
    sketch_size = 50
    check = registry.create("drift.numeric", {"sketch_size": sketch_size})
    result = only_result(check, current, Columns(numeric=("x",)), reference)
    exact = stats.ks_2samp(reference["x"], current["x"]).statistic
    assert result.details["ks_exact"] is False
    assert abs(result.metrics["ks_statistic"] - exact) <= 1 / sketch_size + 1 / len(reference)


def test_ks_pvalue_for_large_samples_uses_the_limit_distribution():
    reference, current = numeric_frames(n_ref=30_000, n_cur=30_000, shift=0.0)
    current["x"] = current["x"] / 1.2 + 0.02
    result = only_result("drift.numeric", current, Columns(numeric=("x",)), reference)
    expected = stats.ks_2samp(reference["x"], current["x"], method="asymp")
    assert result.metrics["ks_statistic"] == pytest.approx(expected.statistic)
    assert 1e-6 < expected.pvalue < 0.5
    assert result.metrics["ks_pvalue"] == pytest.approx(expected.pvalue, rel=0.05)


def test_numeric_ties_merge_edges_and_out_of_range_goes_to_outer_bins():
    reference = pd.DataFrame({"x": np.repeat([0.0, 1.0], [70, 30])})
    current = pd.DataFrame({"x": np.repeat([0.0, 1.0, 5.0], [50, 40, 10])})
    result = only_result("drift.numeric", current, Columns(numeric=("x",)), reference)
    # deciles of 70 zeros and 30 ones: edges {0, 1}, bins (-inf, 0], (0, 1], (1, inf)
    assert result.details["bins"] == 3
    assert result.details["edges"] == [0.0, 1.0]
    assert result.details["out_of_range_share"] == pytest.approx(0.10)
    p = np.array([71, 31, 1]) / 103
    q = np.array([51, 41, 11]) / 103
    assert result.metrics["psi"] == pytest.approx(plain_psi(p, q))


def test_numeric_drops_nan_and_keeps_inf_in_the_outer_bins():
    reference, current = numeric_frames()
    current.loc[:9, "x"] = np.nan
    current.loc[10:14, "x"] = np.inf
    current.loc[15:16, "x"] = -np.inf
    result = only_result("drift.numeric", current, Columns(numeric=("x",)), reference)
    assert result.details["dropped_rows"] == 10 and result.details["inf_rows"] == 7
    kept = current["x"].to_numpy()[10:]
    finite = kept[np.isfinite(kept)]
    assert result.details["current_range"] == [finite.min(), finite.max()]
    assert result.metrics["ks_statistic"] == pytest.approx(stats.ks_2samp(reference["x"], kept).statistic)
    edges = np.quantile(reference["x"], np.arange(1, 10) / 10, method="inverted_cdf")
    assert result.details["current_shares"][0] == pytest.approx(np.mean(kept <= edges[0]))
    assert result.details["current_shares"][-1] == pytest.approx(np.mean(kept > edges[-1]))


def test_numeric_model_impact_on_drifted_rows():
    n = 400
    reference = pd.DataFrame({"x": np.linspace(0, 1, n), "label": 1, "prediction": 1})
    x = np.r_[np.linspace(0, 1, n // 2), np.full(n // 2, 2.0)]
    wrong = np.r_[np.zeros(n // 2, dtype=int), np.ones(n // 2, dtype=int)]
    current = pd.DataFrame({"x": x, "label": 1, "prediction": 1 - wrong})
    columns = Columns(numeric=("x",), label="label", prediction="prediction", task="binary")
    result = only_result("drift.numeric", current, columns, reference)
    # only the last (open) bin grew: it holds the 200 out-of-range rows plus the top ~10% of the rest
    in_last_bin = x > np.quantile(reference["x"], 0.9, method="inverted_cdf")
    assert result.failing_rows == int(in_last_bin.sum())
    expected = wrong[in_last_bin].mean() - wrong[~in_last_bin].mean()
    assert result.model_impact == pytest.approx(expected)


@pytest.mark.parametrize("bins", [10, 100])  # edges compared one by one, and by binary search
def test_numeric_model_impact_without_labels_is_the_change_in_mean_score(bins: int) -> None:
    n = 400
    reference = pd.DataFrame({"x": np.linspace(0, 1, n), "score": 0.5})
    x = np.r_[np.linspace(0, 1, n // 2), np.full(n // 2, 2.0)]
    score = np.random.default_rng(RNG_SEED).random(n)
    score[::7] = np.nan
    current = pd.DataFrame({"x": x, "score": score})
    check = registry.create("drift.numeric", {"bins": bins})
    result = only_result(check, current, Columns(numeric=("x",), score="score"), reference)
    # only the last (open) bin grew: the 200 out-of-range rows plus the top 1 / bins of the rest
    last_edge = np.sort(reference["x"])[(bins - 1) * n // bins - 1]
    in_last_bin = x > last_edge
    assert result.failing_rows == int(in_last_bin.sum())
    expected = abs(np.nanmean(score[in_last_bin]) - np.nanmean(score[~in_last_bin]))
    assert result.model_impact == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("edges", [3, 200])
def test_bin_codes_are_right_closed_bins(edges: int) -> None:
    rng = np.random.default_rng(edges)
    cuts = np.unique(rng.normal(size=edges))
    values = np.r_[rng.normal(size=2000), cuts, -np.inf, np.inf]
    assert np.array_equal(bin_codes(values, cuts), np.digitize(values, cuts, right=True))


def test_numeric_sketch_is_small_and_picklable():
    import pickle

    values = np.random.default_rng(RNG_SEED).normal(size=200_000)
    sketch = NumericSketch.from_values(values, bins=10, sketch_size=1000)
    assert len(sketch.points) <= 1001
    assert len(pickle.dumps(sketch)) < 40_000


# --- categorical drift --------------------------------------------------------------------------------------


def test_categorical_unseen_pooled_and_chi_square_matches_scipy():
    reference = pd.DataFrame({"c": ["a"] * 50 + ["b"] * 30 + ["c"] * 20})
    current = pd.DataFrame({"c": ["a"] * 20 + ["b"] * 30 + ["d"] * 5 + ["e"] * 5 + [None] * 3})
    result = only_result("drift.categorical", current, Columns(categorical=("c",)), reference)
    both = pd.concat([reference.assign(side="ref"), current.dropna().assign(side="cur")])
    table = pd.crosstab(both["side"], both["c"].where(both["c"].isin(["a", "b", "c"]), "unseen"))
    expected = stats.chi2_contingency(table.to_numpy(), correction=False)
    assert result.metrics["chi2_statistic"] == pytest.approx(expected.statistic)
    assert result.metrics["chi2_pvalue"] == pytest.approx(expected.pvalue)
    # bins a, b, c, <unseen>: reference 50/30/20/0, batch 20/30/0/10, add-one smoothing over 4 bins
    p = (np.array([50, 30, 20, 0]) + 1) / 104
    q = (np.array([20, 30, 0, 10]) + 1) / 64
    assert result.metrics["psi"] == pytest.approx(plain_psi(p, q))
    assert result.details["unseen_share"] == pytest.approx(10 / 60)
    assert sorted(result.details["unseen_examples"]) == ["d", "e"]
    assert result.details["dropped_rows"] == 3


def test_category_counts_merge_equals_whole():
    values = pd.Series([*"aabbbcdd", None])
    whole = CategoryCounts.from_series(values)
    merged = CategoryCounts.from_series(values[:4]).merge(CategoryCounts.from_series(values[4:]))
    assert dict(zip(merged.categories, merged.counts, strict=True)) == dict(
        zip(whole.categories, whole.counts, strict=True)
    )
    assert dict(zip(whole.categories, whole.counts, strict=True)) == {"a": 2, "b": 3, "c": 1, "d": 2}


def test_categorical_reads_category_and_string_dtypes_alike():
    reference = pd.DataFrame({"c": pd.Categorical(["x", "y", "y", "z"] * 10)})
    current = pd.DataFrame({"c": pd.array(["x", "x", "y", "z"] * 10, dtype="str")})
    result = only_result("drift.categorical", current, Columns(categorical=("c",)), reference)
    assert result.details["unseen_share"] == 0
    p, q = np.array([11, 21, 11]) / 43, np.array([21, 11, 11]) / 43
    assert result.metrics["psi"] == pytest.approx(plain_psi(p, q))


# --- label, prediction, predicted label ---------------------------------------------------------------


def label_frames():
    rng = np.random.default_rng(RNG_SEED)
    reference = pd.DataFrame({"label": (rng.random(4000) < 0.3).astype(int), "score": rng.random(4000)})
    current = pd.DataFrame({"label": (rng.random(3000) < 0.5).astype(int), "score": rng.random(3000) ** 0.7})
    return reference, current


def test_label_drift_share_change_of_a_binary_label_and_reports_psi():
    reference, current = label_frames()
    columns = Columns(label="label", score="score", task="binary")
    result = only_result("drift.label", current, columns, reference)
    # a 0/1 label's largest share change is its rate's change, the KS distance of the two samples
    expected = stats.ks_2samp(reference["label"], current["label"]).statistic
    assert result.metrics["share_change"] == pytest.approx(expected, abs=1e-12)
    assert result.details["current_share"] - result.details["reference_share"] == pytest.approx(
        current["label"].mean() - reference["label"].mean()
    )
    r = reference["label"].value_counts().sort_index().to_numpy()
    c = current["label"].value_counts().sort_index().to_numpy()
    assert result.metrics["psi"] == pytest.approx(plain_psi((r + 1) / (r.sum() + 2), (c + 1) / (c.sum() + 2)))
    assert set(result.evidence) == {"share_change"}  # PSI is reported, not graded, by drift.label
    assert result.severity == "high"  # the rate moves from 0.3 to 0.5 on 3,000 rows


def test_label_drift_ks_of_a_numeric_label_on_its_kolmogorov_bound():
    rng = np.random.default_rng(RNG_SEED)
    reference = pd.DataFrame({"y": rng.normal(0, 1, 4000)})
    current = pd.DataFrame({"y": rng.normal(0.6, 1, 1500)})
    result = only_result("drift.label", current, Columns(label="y", task="regression"), reference)
    expected = stats.ks_2samp(reference["y"], current["y"], method="asymp")
    assert result.metrics["ks_statistic"] == pytest.approx(expected.statistic, abs=1e-12)
    assert result.metrics["ks_pvalue"] == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-300)
    # Four graded metrics (KS, the mean's, median's and 90th percentile's changes): each at 1 - 0.01 / 4.
    bound = expected.statistic - stats.kstwobign.ppf(1 - 0.01 / 4) / math.sqrt(4000 * 1500 / 5500)
    assert result.metrics["ks_statistic_bound"] == pytest.approx(bound, rel=1e-9)
    assert set(result.evidence) == {"ks_statistic", "mean_change", "median_change", "p90_change"}
    # D about 0.24 is medium; the mean moved by 0.6 standard deviations, surely more than 0.5: high.
    assert result.metrics["ks_statistic_bound"] < 0.2 and result.severity == "high"


def test_label_drift_text_and_float_labels_are_classes():
    reference = pd.DataFrame({"label": ["a", "b", "c", "c"] * 500})
    current = pd.DataFrame({"label": ["a", "c", "c", "c"] * 300})
    result = only_result("drift.label", current, Columns(label="label"), reference)
    assert result.details["changed_class"] == "c"
    assert result.metrics["share_change"] == pytest.approx(0.75 - 0.5)
    ints = pd.DataFrame({"label": [0, 1, 1, 1] * 200})
    floats = ints.astype(float)
    result = only_result("drift.label", floats, Columns(label="label", task="binary"), ints)
    assert result.details["unseen_share"] == 0 and result.metrics["share_change"] == 0


def test_prediction_drift_psi_on_score_quantile_bins():
    reference, current = label_frames()
    columns = Columns(label="label", score="score", task="binary")
    result = only_result("drift.prediction", current, columns, reference)
    assert result.target == "score"
    expected = reference_psi(reference["score"].to_numpy(), current["score"].to_numpy(), 10, 1.0)
    assert result.metrics["psi"] == pytest.approx(expected)


def test_predicted_label_from_thresholded_score():
    reference, current = label_frames()
    columns = Columns(label="label", score="score", task="binary")
    check = registry.create("drift.predicted_label", {"threshold": 0.6})
    result = only_result(check, current, columns, reference)
    r = np.bincount(reference["score"] >= 0.6, minlength=2)
    c = np.bincount(current["score"] >= 0.6, minlength=2)
    assert result.metrics["psi"] == pytest.approx(plain_psi((r + 1) / (r.sum() + 2), (c + 1) / (c.sum() + 2)))


def test_predicted_label_from_class_scores_argmax():
    reference = pd.DataFrame({"p_a": [0.9, 0.2, 0.1, 0.6] * 5, "p_b": [0.1, 0.8, 0.9, 0.4] * 5})
    current = pd.DataFrame({"p_a": [0.9, 0.7, 0.8, 0.6] * 5, "p_b": [0.1, 0.3, 0.2, 0.4] * 5})
    columns = Columns(class_scores=("p_a", "p_b"))
    [result] = run_check(registry.create("drift.predicted_label"), current, columns, reference=reference)
    p, q = np.array([11, 11]) / 22, np.array([21, 1]) / 22
    assert result.metrics["psi"] == pytest.approx(plain_psi(p, q))


# --- bad input battery (every drift and performance check) -------------------------------------------------

OUR_CHECKS = [
    "drift.numeric",
    "drift.categorical",
    "drift.label",
    "drift.label_psi",
    "drift.prediction",
    "drift.predicted_label",
    "drift.correlation",
    "drift.mutual_info_features",
    "drift.mutual_info_label",
    "performance.overall",
    "performance.calibration",
]


def battery_reference() -> pd.DataFrame:
    rng = np.random.default_rng(RNG_SEED)
    n = 300
    score = rng.random(n)
    return pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "c": rng.choice(["x", "y", "z"], n),
            "label": (rng.random(n) < score).astype(int),
            "score": score,
            "prediction": (score >= 0.5).astype(int),
        }
    )


def _bad_batches() -> dict[str, pd.DataFrame]:
    good = battery_reference().iloc[:100].reset_index(drop=True)
    return {
        "empty": good.iloc[:0],
        "one_row": good.iloc[:1],
        "missing_column": good.drop(columns=["a", "label"]),
        "all_nan": good.assign(a=np.nan, c=None, score=np.nan),
        "inf_values": good.assign(a=np.where(np.arange(100) % 2, np.inf, good["a"]), score=np.inf),
        "single_class": good.assign(label=1, prediction=1),
        "mismatched_dtypes": good.assign(a="text", label="yes", score="high", c=1.5),
        "nan_labels": good.assign(label=np.nan),
    }


BAD_BATCHES = _bad_batches()


@pytest.mark.parametrize("batch_name", sorted(BAD_BATCHES))
@pytest.mark.parametrize("name", OUR_CHECKS)
def test_bad_batches_never_raise(name, batch_name):
    reference = battery_reference()
    columns = infer_columns(reference)
    results = run_check(
        registry.create(name), BAD_BATCHES[batch_name], columns, reference=reference, strict=True
    )
    assert results
    for result in results:
        assert result.status in ("ok", "skipped", "error")
        if result.status != "ok":
            assert result.reason
        result.to_dict()


@pytest.mark.parametrize(
    "name", ["drift.numeric", "drift.correlation", "drift.mutual_info_features", "drift.mutual_info_label"]
)
def test_unusable_reference_column_fails_only_its_targets(name):
    reference = battery_reference().assign(a=np.nan)
    columns = infer_columns(battery_reference())
    results = run_check(registry.create(name), battery_reference(), columns, reference=reference, strict=True)
    involving_a = [
        r for r in results if r.target == "a" or r.target.startswith("a ~ ") or r.target.endswith(" ~ a")
    ]
    assert involving_a and all(r.status != "ok" and "'a'" in r.reason for r in involving_a)
    assert any(r.status == "ok" for r in results if r not in involving_a)


def test_bad_parameters_are_clear_errors():
    with pytest.raises(CheckInputError, match="unknown test"):
        registry.create("drift.numeric", {"tests": ["anderson"]})
    with pytest.raises(CheckInputError, match="bins"):
        registry.create("drift.numeric", {"bins": 1})
    with pytest.raises(CheckInputError, match="smoothing"):
        registry.create("drift.categorical", {"smoothing": -0.5})


@pytest.mark.parametrize("seed", range(5))
def test_weighted_wasserstein_and_chi_square_equal_scipy(seed: int) -> None:
    """The numpy forms used to keep scipy.stats off the import path agree with scipy.stats."""
    from driftline.checks.binning import chi_square, ks_pvalue, wasserstein_1d

    rng = np.random.default_rng(seed)
    points, values = rng.normal(size=40).round(1), rng.normal(0.4, size=70).round(1)
    weights = rng.integers(1, 6, size=40).astype(float)
    assert wasserstein_1d(points, weights, values) == pytest.approx(
        stats.wasserstein_distance(points, values, u_weights=weights), rel=1e-12
    )
    reference, current = rng.integers(1, 60, size=7), rng.integers(1, 60, size=7)
    expected = stats.chi2_contingency(np.vstack([reference, current]), correction=False)
    assert chi_square(reference, current) == pytest.approx((expected.statistic, expected.pvalue), rel=1e-12)
    assert ks_pvalue(0.02, 200_000, 100_000) == pytest.approx(
        stats.kstwobign.sf(0.02 * np.sqrt(66_667)), rel=1e-12
    )
