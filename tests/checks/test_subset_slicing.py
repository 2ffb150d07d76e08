"""Subsets and grouped kernels pinned against pandas, scipy and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score

from driftline.checks.errors import CheckInputError
from driftline.checks.slicing import (
    MISSING,
    OTHER,
    apply_slices,
    bootstrap_se,
    fit_slices,
    grouped_auc,
    grouped_moments,
    hanley_mcneil_se,
    mean_se,
    within_group_ranks,
)


def test_numeric_bins_match_pandas_qcut_edges_and_right_closed_membership() -> None:
    rng = np.random.default_rng(3)
    reference = pd.Series(rng.normal(size=500).round(1), name="x")
    batch = pd.Series(np.r_[rng.normal(size=300).round(1), [-50.0, 50.0, np.nan]], name="x")
    slices = fit_slices(reference, bins=4, max_categories=20, numeric=True)
    _, qcut_edges = pd.qcut(reference, 4, retbins=True, duplicates="drop")
    np.testing.assert_allclose(slices["edges"], qcut_edges[1:-1])
    expected = pd.cut(batch, [-np.inf, *qcut_edges[1:-1], np.inf], right=True, labels=False)
    codes = apply_slices(batch, slices)
    np.testing.assert_array_equal(codes[batch.notna()], expected[batch.notna()].astype(int))
    assert slices["labels"][codes[-1]] == MISSING
    assert codes[-3] == 0 and codes[-2] == len(qcut_edges) - 2  # out-of-range values land in outer bins


def test_document_interval_is_left_open() -> None:
    # The regression example's subset "(0.0, 0.5]" holds 0.4 and 0.5 but not 0.6 (quartile bins).
    feature = pd.Series([0.4, 0.5, 0.7, 0.6, 0.8], name="a")
    slices = fit_slices(feature, bins=4, max_categories=20, numeric=True)
    codes = apply_slices(feature, slices)
    assert slices["labels"][0] == "(-inf, 0.5]"
    np.testing.assert_array_equal(codes == 0, [True, True, False, False, False])


def test_constant_numeric_feature_is_one_subset() -> None:
    slices = fit_slices(pd.Series([2.0, 2.0, 2.0], name="h"), bins=4, max_categories=20, numeric=True)
    assert slices["labels"] == ["(-inf, inf)", MISSING]


def test_categorical_keeps_most_frequent_values_and_buckets_the_rest() -> None:
    reference = pd.Series(["a"] * 5 + ["b"] * 3 + ["c"] * 2 + [None], name="c", dtype="str")
    slices = fit_slices(reference, bins=4, max_categories=2, numeric=False)
    assert slices["labels"] == ["a", "b", OTHER, MISSING]
    batch = pd.Series(pd.Categorical(["b", "c", "zzz", None, "a"]), name="c")
    labels = [slices["labels"][c] for c in apply_slices(batch, slices)]
    assert labels == ["b", OTHER, OTHER, MISSING, "a"]


def test_a_categorical_feature_gone_null_puts_every_row_in_the_missing_subset() -> None:
    slices = fit_slices(
        pd.Series(["a", "b", "a"], name="c", dtype="str"), bins=4, max_categories=2, numeric=False
    )
    for batch in (
        pd.Series([None] * 4, name="c", dtype="str"),
        pd.Series([None] * 4, name="c", dtype=object),
    ):
        assert [slices["labels"][c] for c in apply_slices(batch, slices)] == [MISSING] * 4


def test_fit_and_apply_reject_unusable_columns() -> None:
    with pytest.raises(CheckInputError, match="'x'"):
        fit_slices(pd.Series([np.nan, np.inf], name="x"), bins=4, max_categories=5, numeric=True)
    with pytest.raises(CheckInputError, match="not numeric"):
        fit_slices(pd.Series(["a"], name="x"), bins=4, max_categories=5, numeric=True)
    slices = fit_slices(pd.Series([1.0, 2.0], name="x"), bins=4, max_categories=5, numeric=True)
    with pytest.raises(CheckInputError, match="numeric in the reference"):
        apply_slices(pd.Series(["1.0"], name="x", dtype="str"), slices)


@pytest.fixture
def grouped_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    n = 3000
    codes = rng.integers(0, 6, size=n)
    score = rng.random(n).round(2)  # many ties
    positive = rng.random(n) < score
    positive[codes == 5] = True  # one single-class group
    return codes, score, positive


def test_within_group_ranks_match_scipy_rankdata(grouped_data) -> None:
    codes, score, _ = grouped_data
    ranks = within_group_ranks(score, codes, 6)
    for g in range(6):
        np.testing.assert_allclose(ranks[codes == g], rankdata(score[codes == g]))


def test_grouped_auc_matches_sklearn_and_reuses_a_sort(grouped_data) -> None:
    codes, score, positive = grouped_data
    auc, n_pos, n_neg = grouped_auc(score, positive, codes, 6, order=np.argsort(score, kind="stable"))
    for g in range(5):
        rows = codes == g
        assert auc[g] == pytest.approx(roc_auc_score(positive[rows], score[rows]), abs=1e-12)
        assert (n_pos[g], n_neg[g]) == (positive[rows].sum(), (~positive[rows]).sum())
    assert math.isnan(auc[5])


def test_grouped_moments_match_numpy(grouped_data) -> None:
    codes, score, _ = grouped_data
    size, mean, var, m4 = grouped_moments(score, codes, 6)
    for g in range(6):
        x = score[codes == g]
        assert size[g] == len(x)
        assert mean[g] == pytest.approx(x.mean())
        assert var[g] == pytest.approx(np.var(x, ddof=0))
        assert m4[g] == pytest.approx(np.mean((x - x.mean()) ** 4))
    assert mean_se(var, size)[0] == pytest.approx(np.std(score[codes == 0], ddof=1) / math.sqrt(size[0]))


def test_hanley_mcneil_formula_by_hand() -> None:
    a, n1, n2 = 0.8, 40, 60
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    by_hand = math.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n2 - 1) * (q2 - a * a)) / (n1 * n2))
    assert hanley_mcneil_se(np.array([a]), np.array([n1]), np.array([n2]))[0] == pytest.approx(by_hand)


def test_bootstrap_se_of_a_proportion_matches_the_binomial_formula() -> None:
    counts = np.array([[300, 700], [90, 10], [0, 0]])  # (wrong, right) per group; the last one is empty
    se = bootstrap_se(counts, lambda c: c[..., 1] / c.sum(axis=-1), draws=4000)
    for g, (wrong, right) in enumerate(counts[:2]):
        p, n = right / (wrong + right), wrong + right
        assert se[g] == pytest.approx(math.sqrt(p * (1 - p) / n), rel=0.05)
    assert math.isnan(se[2])
