"""Correlation and mutual-information drift: golden threshold cases, pandas/scikit-learn cross-checks."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import mutual_info_score

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.drift_relations import fisher_z_pvalue, pairwise_correlation
from driftline.checks.runner import run_check
from tests.golden import golden_cases

RNG_SEED = 11


def by_target(results):
    return {r.target: r for r in results}


@pytest.mark.parametrize("name", ["drift.correlation", "drift.mutual_info_features"])
@pytest.mark.parametrize("case", golden_cases("drift_diff_fail"), ids=lambda c: c["id"])
def test_golden_difference_threshold_with_tolerance(case, name):
    """The threshold is reached with rounding tolerance (the p-value gate gave way to the bound)."""
    i = case["inputs"]
    assert 0.7 - 0.5 < 0.2  # the float trap the tolerance exists for
    check = registry.create(name, {"thresholds": {"abs_diff": [i["diff_threshold"]]}})
    assert (check.grade({"abs_diff": abs(i["eval"] - i["ref"])}) != "none") is case["expected"]


def exact_pair(r: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two columns whose sample Pearson correlation is exactly `r` (up to rounding)."""
    rng = np.random.default_rng(seed)
    x, e = rng.normal(size=n), rng.normal(size=n)
    x = (x - x.mean()) / np.linalg.norm(x - x.mean())
    e = e - e.mean()
    e = e - (e @ x) * x
    e /= np.linalg.norm(e)
    return x, r * x + math.sqrt(1 - r * r) * e


def correlation_result(r_ref: float, r_cur: float, n: int):
    reference = pd.DataFrame(dict(zip(("country", "state"), exact_pair(r_ref, n, 1), strict=True)))
    current = pd.DataFrame(dict(zip(("country", "state"), exact_pair(r_cur, n, 2), strict=True)))
    columns = Columns(numeric=("country", "state"))
    [result] = run_check(
        registry.create("drift.correlation"), current, columns, reference=reference, strict=True
    )
    return result


def test_correlation_worked_example_is_graded_on_its_bound():
    result = correlation_result(0.5, 0.7, 400)
    assert result.target == "country ~ state"
    assert result.metrics["reference"] == pytest.approx(0.5, abs=1e-12)
    assert result.metrics["current"] == pytest.approx(0.7, abs=1e-12)
    # hand computation of the Fisher z-test (reported)
    z = (math.atanh(0.7) - math.atanh(0.5)) / math.sqrt(2 / 397)
    assert result.metrics["p_value"] == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-9)
    # the change is exactly 0.2 and noise could account for part of it: not known to reach 0.2
    se = math.sqrt((1 - 0.5**2) ** 2 / 397 + (1 - 0.7**2) ** 2 / 397)
    assert result.metrics["abs_diff_bound"] == pytest.approx(0.2 - stats.norm.ppf(0.99) * se, rel=1e-9)
    assert result.metrics["abs_diff"] == pytest.approx(0.2) and result.severity == "none"
    clear = correlation_result(0.5, 0.8, 2000)
    assert clear.severity == "high"


def test_correlation_bound_covers_simulated_correlations():
    """The delta-method error of Fisher's z against the spread of correlations of simulated normal
    pairs: the 99% one-sided bound of |r_batch - r_ref| is below the true change in about 99% of draws."""
    rng = np.random.default_rng(RNG_SEED)
    n_ref, n_cur, rho_ref, rho_cur = 2000, 300, 0.5, 0.75

    def sample_r(rho: float, n: int) -> np.ndarray:
        x, e = rng.normal(size=(2, 2000, n))
        y = rho * x + math.sqrt(1 - rho * rho) * e
        return np.array([np.corrcoef(a, b)[0, 1] for a, b in zip(x, y, strict=True)])

    r_ref, r_cur = sample_r(rho_ref, n_ref), sample_r(rho_cur, n_cur)
    se = np.sqrt((1 - r_ref**2) ** 2 / (n_ref - 3) + (1 - r_cur**2) ** 2 / (n_cur - 3))
    bound = np.abs(r_cur - r_ref) - stats.norm.ppf(0.99) * se
    missed = np.mean(bound > rho_cur - rho_ref)
    assert missed <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / 2000)
    assert missed > 0.001  # not so wide that it never comes near the truth


def test_correlation_change_without_significance_passes():
    reference = pd.DataFrame(dict(zip(("a", "b"), exact_pair(0.2, 12, 1), strict=True)))
    current = pd.DataFrame(dict(zip(("a", "b"), exact_pair(0.6, 12, 2), strict=True)))
    [result] = run_check(
        registry.create("drift.correlation"),
        current,
        Columns(numeric=("a", "b")),
        reference=reference,
        strict=True,
    )
    assert result.metrics["abs_diff"] == pytest.approx(0.4)
    assert result.metrics["p_value"] > 0.05
    assert result.metrics["abs_diff_bound"] < 0 and result.severity == "none"


def test_pairwise_correlation_matches_pandas_with_missing_values():
    rng = np.random.default_rng(RNG_SEED)
    frame = pd.DataFrame(rng.normal(size=(500, 4)) @ rng.normal(size=(4, 4)) + 50, columns=list("abcd"))
    frame = frame.mask(rng.random(frame.shape) < 0.1)
    corr, count = pairwise_correlation(frame.to_numpy(), np.zeros(4))
    np.testing.assert_allclose(corr, frame.corr().to_numpy(), atol=1e-10)
    np.testing.assert_array_equal(count, frame.notna().astype(int).T @ frame.notna().astype(int))


def test_correlation_includes_numeric_label_and_reports_constant_columns():
    rng = np.random.default_rng(RNG_SEED)
    reference = pd.DataFrame(
        {"a": rng.normal(size=200), "b": rng.normal(size=200), "y": rng.normal(size=200)}
    )
    current = reference.assign(b=1.0)
    columns = Columns(numeric=("a", "b"), label="y", task="regression")
    results = by_target(
        run_check(registry.create("drift.correlation"), current, columns, reference=reference)
    )
    assert set(results) == {"a ~ b", "a ~ y", "b ~ y"}
    assert results["a ~ b"].status == "skipped" and "constant in the batch" in results["a ~ b"].reason
    assert results["a ~ y"].metrics["current"] == pytest.approx(
        np.corrcoef(reference["a"], reference["y"])[0, 1]
    )


def test_correlation_max_pairs_keeps_the_strongest_reference_pairs():
    rng = np.random.default_rng(RNG_SEED)
    base = rng.normal(size=300)
    reference = pd.DataFrame(
        {
            "a": base,
            "b": base + 0.1 * rng.normal(size=300),
            "c": rng.normal(size=300),
            "d": rng.normal(size=300),
        }
    )
    check = registry.create("drift.correlation", {"max_pairs": 1})
    results = run_check(check, reference, Columns(numeric=tuple("abcd")), reference=reference, strict=True)
    assert [r.target for r in results] == ["a ~ b"]


def test_fisher_pvalue_hand_computation():
    z = (math.atanh(0.3) - math.atanh(0.1)) / math.sqrt(1 / 97 + 1 / 197)
    assert fisher_z_pvalue(0.1, 100, 0.3, 200) == pytest.approx(math.erfc(z / math.sqrt(2)))


# --- mutual information ---------------------------------------------------------------------------------


def mi_frames():
    rng = np.random.default_rng(RNG_SEED)
    n = 2000
    x = rng.normal(size=n)
    reference = pd.DataFrame(
        {
            "x": x,
            "z": rng.normal(size=n),
            "c": rng.choice(list("pqr"), n),
            "label": (rng.random(n) < 0.5).astype(int),
        }
    )
    x2 = rng.normal(size=n)
    current = pd.DataFrame(
        {
            "x": x2,
            "z": x2 + 0.05 * rng.normal(size=n),  # z now follows x
            "c": np.where(x2 > 0, "p", "q"),
            "label": (x2 > 0).astype(int),
        }
    )
    return reference, current


def quantile_codes(reference: pd.Series, values: pd.Series, bins: int = 10) -> np.ndarray:
    """Reference-decile codes computed with np.digitize, independent of the check's coder."""
    edges = np.unique(np.quantile(reference, np.arange(1, bins) / bins, method="inverted_cdf"))
    return np.digitize(values, edges, right=True)


def run_mutual_info(name: str) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The `mi_frames` pair and the results of the mutual-information check `name` on them, by target."""
    reference, current = mi_frames()
    columns = Columns(numeric=("x", "z"), categorical=("c",), label="label", task="binary")
    results = run_check(registry.create(name), current, columns, reference=reference, strict=True)
    return reference, current, by_target(results)


def test_mutual_info_features_matches_sklearn_and_flags_new_dependence():
    reference, current, results = run_mutual_info("drift.mutual_info_features")
    assert set(results) == {"x ~ z", "x ~ c", "z ~ c"}
    xz = results["x ~ z"]
    ref_mi = mutual_info_score(
        quantile_codes(reference["x"], reference["x"]), quantile_codes(reference["z"], reference["z"])
    )
    cur_mi = mutual_info_score(
        quantile_codes(reference["x"], current["x"]), quantile_codes(reference["z"], current["z"])
    )
    assert xz.metrics["reference"] == pytest.approx(ref_mi)
    assert xz.metrics["current"] == pytest.approx(cur_mi)
    assert xz.severity == "high"
    xc = results["x ~ c"]
    assert xc.metrics["current"] == pytest.approx(
        mutual_info_score(quantile_codes(reference["x"], current["x"]), current["c"])
    )


def test_mutual_info_label_per_feature():
    reference, current, results = run_mutual_info("drift.mutual_info_label")
    assert set(results) == {"x ~ label", "z ~ label", "c ~ label"}
    expected = mutual_info_score(quantile_codes(reference["x"], current["x"]), current["label"])
    assert results["x ~ label"].metrics["current"] == pytest.approx(expected)
    assert results["x ~ label"].severity == "high"


def test_mutual_info_worked_example_threshold():
    check = registry.create("drift.mutual_info_features")
    assert check.grade({"abs_diff": abs(0.7 - 0.5)}) == "high"
    assert check.grade({"abs_diff": 0.19}) == "none"


def test_mutual_info_categories_beyond_the_cap_share_one_code():
    rng = np.random.default_rng(RNG_SEED)
    n = 1000
    reference = pd.DataFrame({"c": rng.choice(list("abcdef"), n), "d": rng.choice(list("uv"), n)})
    current = reference.assign(c=np.where(reference["c"].isin(["e", "f"]), "new", reference["c"]))
    columns = Columns(categorical=("c", "d"))
    check = registry.create("drift.mutual_info_features", {"max_categories": 4})
    [result] = run_check(check, current, columns, reference=reference, strict=True)
    top4 = reference["c"].value_counts().index[:4]
    coded = current["c"].where(current["c"].isin(top4), "other")
    assert result.metrics["current"] == pytest.approx(mutual_info_score(coded, current["d"]))


def test_mutual_info_max_pairs_caps_the_pairs():
    reference, current = mi_frames()
    columns = Columns(numeric=("x", "z"), categorical=("c",))
    results = run_check(
        registry.create("drift.mutual_info_features", {"max_pairs": 2}), current, columns, reference=reference
    )
    assert len(results) == 2
