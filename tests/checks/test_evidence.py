"""Confidence bounds and grading of `checks.evidence`, pinned against scipy.stats and simulations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from driftline.checks import evidence as ev
from driftline.checks.binning import psi
from driftline.checks.result import CheckResult


def _psi_rows(ref: np.ndarray, cur: np.ndarray) -> np.ndarray:
    return np.array([psi(r, c) for r, c in zip(ref, cur, strict=True)])


@pytest.mark.parametrize("confidence", [0.9, 0.99, 0.9999])
def test_normal_bound_is_the_one_sided_normal_quantile(confidence: float) -> None:
    e = ev.normal(0.3, 0.05)
    assert e.bound(confidence) == pytest.approx(0.3 - 0.05 * stats.norm.ppf(confidence), rel=1e-12)
    lower_worse = ev.normal(0.8, 0.05, higher_is_worse=False)
    assert lower_worse.bound(confidence) == pytest.approx(0.8 + 0.05 * stats.norm.ppf(confidence), rel=1e-12)


def test_p_values_match_scipy_tails() -> None:
    assert ev.normal(0.1, 0.04).p_value() == pytest.approx(stats.norm.sf(2.5), rel=1e-10)
    assert ev.normal(-0.1, 0.04, higher_is_worse=False).p_value() == pytest.approx(stats.norm.sf(2.5))
    chi = ev.Evidence(0.05, "scaled_chi2", 0.002, 9.0)
    assert chi.p_value() == pytest.approx(stats.chi2.sf(0.05 / 0.002, 9.0), rel=1e-10)
    ks = ev.kolmogorov(0.06, 1000, 4000)
    assert ks.p_value() == pytest.approx(stats.kstwobign.sf(0.06 * math.sqrt(800)), rel=1e-10)


def test_chi2_and_kolmogorov_margins_are_their_quantiles() -> None:
    chi = ev.Evidence(0.2, "scaled_chi2", 0.003, 12.5)
    assert chi.bound(0.999) == pytest.approx(0.2 - 0.003 * stats.chi2.ppf(0.999, 12.5), rel=1e-10)
    ks = ev.kolmogorov(0.2, 500, 500)
    assert ks.bound(0.99) == pytest.approx(0.2 - stats.kstwobign.ppf(0.99) / math.sqrt(250), rel=1e-10)


@pytest.mark.parametrize(("shares", "n_ref", "n_cur"), [(np.full(10, 0.1), 20_000, 100), (None, 5_000, 300)])
def test_divergence_evidence_tail_matches_a_direct_simulation(shares, n_ref: int, n_cur: int) -> None:
    """The fitted scaled chi-square's 99th percentile is within 15% of the PSI's simulated one."""
    rng = np.random.default_rng(7)
    if shares is None:  # 87 categories of very uneven size, as a real categorical column has
        shares = rng.dirichlet(np.full(87, 0.3))
    ref = rng.multinomial(n_ref, shares)
    cur = rng.multinomial(n_cur, shares)
    e = ev.divergence_evidence(_psi_rows, ref, cur, psi(ref, cur))
    # Independent: PSI of fresh samples from the population itself, many more draws than the fit uses.
    truth = _psi_rows(rng.multinomial(n_ref, shares, size=4000), rng.multinomial(n_cur, shares, size=4000))
    assert e.margin(0.99) == pytest.approx(np.quantile(truth, 0.99), rel=0.15)


def test_divergence_evidence_is_seeded() -> None:
    ref, cur = [500, 300, 200], [40, 35, 25]
    first = ev.divergence_evidence(_psi_rows, ref, cur, 0.1)
    assert ev.divergence_evidence(_psi_rows, ref, cur, 0.1) == first


def test_proportion_change_is_agresti_caffo() -> None:
    e = ev.proportion_change(60, 200, 2190, 10_000)
    p1, p0 = 61 / 202, 2191 / 10_002
    se = math.sqrt(p1 * (1 - p1) / 202 + p0 * (1 - p0) / 10_002)
    assert e.estimate == pytest.approx(0.3 - 0.219)
    assert e.scale == pytest.approx(se, rel=1e-12)


def test_proportion_change_bound_covers_on_simulated_clean_rates() -> None:
    """With no change, the 99% lower bound exceeds zero in about 1% of draws (never far more)."""
    rng = np.random.default_rng(3)
    exceed = sum(
        ev.proportion_change(rng.binomial(300, 0.2), 300, rng.binomial(5000, 0.2), 5000).bound(0.99) > 0
        for _ in range(3000)
    )
    assert exceed / 3000 <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / 3000)


def test_hanley_mcneil_standard_error_matches_simulated_auc_spread() -> None:
    rng = np.random.default_rng(11)
    aucs = []
    for _ in range(600):
        pos, neg = rng.normal(1.0, 1.0, 150), rng.normal(0.0, 1.0, 450)
        aucs.append(np.mean(pos[:, None] > neg[None, :]))
    auc = stats.norm.cdf(1 / math.sqrt(2))
    assert ev.auc_standard_error(auc, 150, 450) == pytest.approx(np.std(aucs), rel=0.12)


def test_bootstrap_standard_error_of_accuracy_is_the_binomial_one() -> None:
    counts = [420, 80, 60, 440]  # tp, fp, fn, tn of 1,000 rows: accuracy 0.86

    def accuracy(c: np.ndarray) -> np.ndarray:
        return (c[:, 0] + c[:, 3]) / c.sum(axis=1)

    assert ev.bootstrap_standard_error(accuracy, counts, draws=4000) == pytest.approx(
        math.sqrt(0.86 * 0.14 / 1000), rel=0.05
    )


def _result(estimate: float, se: float, thresholds: list[float]) -> CheckResult:
    return CheckResult(
        check="drift.numeric",
        target="x",
        metrics={"psi": estimate},
        thresholds={"psi": thresholds},
        evidence={"psi": ev.normal(estimate, se).to_dict()},
    )


def test_grade_uses_the_bound_not_the_estimate() -> None:
    """The estimate 0.24 reaches medium (0.2); its 99% lower bound 0.193 reaches only low (0.1)."""
    (graded,) = ev.grade_results([_result(0.24, 0.02, [0.1, 0.2, 0.3])], confidence=0.99)
    bound = 0.24 - 0.02 * stats.norm.ppf(0.99)
    assert graded.metrics["psi_bound"] == pytest.approx(bound)
    assert graded.metrics["psi_p"] == pytest.approx(stats.norm.sf(0.24 / 0.02))
    assert graded.severity == "low"
    assert "lower bound" in graded.reason and "low threshold 0.1" in graded.reason


def test_bonferroni_over_every_graded_metric_of_the_run() -> None:
    results = [_result(0.25, 0.02, [0.1, 0.2, 0.3]) for _ in range(50)]
    ev.grade_results(results, confidence=0.99)
    level = 1 - 0.01 / 50
    assert results[0].metrics["psi_bound"] == pytest.approx(0.25 - 0.02 * stats.norm.ppf(level))
    assert "over 50 tests" in results[0].reason


def test_results_without_evidence_keep_their_severity() -> None:
    plain = CheckResult(check="rubric.x", target="*", severity="high", metrics={"f1": 0.2})
    (graded,) = ev.grade_results([plain])
    assert graded.severity == "high" and graded.reason is None


def test_family_wise_false_alarms_stay_under_one_minus_confidence() -> None:
    """100 clean targets per run, 400 runs: runs with any alert are at most about 1%."""
    rng = np.random.default_rng(5)
    alarms = 0
    for _ in range(400):
        results = [_result(float(v), 0.01, [0.0001]) for v in rng.normal(0.0, 0.01, 100)]
        alarms += any(r.severity != "none" for r in ev.grade_results(results, 0.99))
    assert alarms / 400 <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / 400)


def test_format_percent_shows_the_digits_that_matter() -> None:
    assert ev.format_percent(0.99) == "99%"
    assert ev.format_percent(1 - 0.01 / 84) == "99.988%"
