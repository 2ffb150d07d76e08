"""Infinite values are reported: counted by `abnormal.nulls` (features and model outputs), out of range
for the range checks, and kept in the outer bins of the drift checks."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check

COLUMNS = Columns(
    label="label", prediction="prediction", score="score", numeric=("f1", "f2", "f3"), task="binary"
)
POS_INF = slice(0, 300)  # f1
NEG_INF = slice(300, 400)  # f2
INF_SCORE = slice(400, 500)  # score


def frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    f1, f2, f3 = rng.normal(size=(3, n))
    score = 1 / (1 + np.exp(-(f1 + f2 + rng.normal(size=n))))
    label = (rng.random(n) < score).astype(np.int64)
    return pd.DataFrame(
        {
            "f1": f1,
            "f2": f2,
            "f3": f3,
            "score": score,
            "prediction": (score >= 0.5).astype(int),
            "label": label,
        }
    )


REFERENCE = frame(2000, 0)


def batch() -> pd.DataFrame:
    current = frame(1000, 1)
    current.loc[current.index[POS_INF], "f1"] = np.inf
    current.loc[current.index[NEG_INF], "f2"] = -np.inf
    current.loc[current.index[INF_SCORE], "score"] = np.inf
    return current


def results(name: str) -> dict:
    found = run_check(registry.create(name), batch(), COLUMNS, reference=REFERENCE, strict=True)
    return {r.target: r for r in found}


def rows(where: slice, n: int = 1000) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[where] = True
    return mask


def impact(current: pd.DataFrame, failing: np.ndarray) -> float:
    """Accuracy on passing rows minus accuracy on failing rows, from the prediction column."""
    wrong = (current["prediction"] != current["label"]).to_numpy()
    return float(wrong[failing].mean() - wrong[~failing].mean())


def outer_bin_psi(reference: np.ndarray, current: np.ndarray, bins: int = 10) -> float:
    """Add-one PSI on inverted-CDF decile bins whose outer bins are open (so ±inf fall in them)."""
    edges = np.unique(np.quantile(reference, np.arange(1, bins) / bins, method="inverted_cdf"))

    def counts(x: np.ndarray) -> np.ndarray:
        inner = [np.sum((x > lo) & (x <= hi)) for lo, hi in itertools.pairwise(edges)]
        return np.array([np.sum(x <= edges[0]), *inner, np.sum(x > edges[-1])], dtype=float) + 1.0

    p, q = counts(reference) / counts(reference).sum(), counts(current) / counts(current).sum()
    return float(sum((qi - pi) * math.log(qi / pi) for pi, qi in zip(p, q, strict=True)))


def test_nulls_reports_infinite_values_of_features_and_of_the_score() -> None:
    found, current = results("abnormal.nulls"), batch()
    for target, where in (("f1", POS_INF), ("f2", NEG_INF), ("score", INF_SCORE)):
        result = found[target]
        count = where.stop - where.start
        assert result.failing_rows == count and result.rows == 1000
        assert result.metrics["inf_rate_increase"] == pytest.approx(count / 1000, rel=1e-12)
        assert result.details["inf_rows"] == count and result.details["null_rows"] == 0
        assert result.model_impact == pytest.approx(impact(current, rows(where)), rel=1e-12)
        assert result.severity == "high"
        assert result.details["failing_ids_total"] == count
    assert found["f3"].failing_rows == 0 and found["f3"].severity == "none"
    assert found["prediction"].failing_rows == 0


def test_infinite_values_are_out_of_range() -> None:
    current = batch()
    for name in ("abnormal.out_of_range", "abnormal.numeric_outliers"):
        found = results(name)
        for target, where in (("f1", POS_INF), ("f2", NEG_INF)):
            result = found[target]
            assert result.rows == 1000 and result.details["dropped_rows"] == 0
            assert result.details["inf_rows"] == where.stop - where.start
            lower, upper = result.details["lower"], result.details["upper"]
            x = current[target].to_numpy()
            assert result.failing_rows == int(np.sum((x < lower) | (x > upper)))
            assert ((x < lower) | (x > upper))[rows(where)].all()
            assert result.severity == "high"
    ref = REFERENCE["f1"].to_numpy()
    assert results("abnormal.out_of_range")["f1"].details["upper"] == ref.max()


def test_drift_counts_infinite_values_in_the_outer_bins() -> None:
    current = batch()
    found = results("drift.numeric")
    for target, where in (("f1", POS_INF), ("f2", NEG_INF)):
        result = found[target]
        expected = outer_bin_psi(REFERENCE[target].to_numpy(), current[target].to_numpy())
        assert result.metrics["psi"] == pytest.approx(expected, rel=1e-12)
        ks = stats.ks_2samp(REFERENCE[target], current[target])
        assert result.metrics["ks_statistic"] == pytest.approx(ks.statistic, rel=1e-12)
        assert result.details["inf_rows"] == where.stop - where.start
        assert result.details["dropped_rows"] == 0
    assert found["f1"].severity == "high"
    assert found["f1"].details["current_shares"][-1] >= 0.3


def test_prediction_drift_keeps_infinite_scores() -> None:
    current = batch()
    (result,) = results("drift.prediction").values()
    expected = outer_bin_psi(REFERENCE["score"].to_numpy(), current["score"].to_numpy())
    assert result.metrics["psi"] == pytest.approx(expected, rel=1e-12)
    inf_rows = INF_SCORE.stop - INF_SCORE.start
    assert result.details["inf_rows"] == inf_rows and result.details["dropped_rows"] == 0


def test_wasserstein_is_over_the_finite_values() -> None:
    current = batch()
    check = registry.create("drift.numeric", {"tests": ["wasserstein"]})
    found = {r.target: r for r in run_check(check, current, COLUMNS, reference=REFERENCE, strict=True)}
    x = current["f1"].to_numpy()
    expected = stats.wasserstein_distance(REFERENCE["f1"], x[np.isfinite(x)])
    assert found["f1"].metrics["wasserstein"] == pytest.approx(expected, rel=1e-9)
