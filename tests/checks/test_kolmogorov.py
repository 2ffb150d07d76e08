"""The tests that replaced scipy.stats on a run's path give scipy.stats' numbers to the bit: the
Kolmogorov SF of a small sample's KS test, the t-test of subset trees and the Fisher z-test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from driftline.checks.binning import KS_EXACT_LIMIT, ks_pvalue
from driftline.checks.drift_relations import fisher_z_pvalue
from driftline.checks.kolmogorov import kolmogorov_sf
from driftline.checks.segmentation import two_sample_ttest


def statistics(n: int, rng: np.random.Generator) -> np.ndarray:
    """KS statistics for a sample of n: uniform on [0, 1], crowded where D_n lives (about 1 / sqrt n),
    and on each boundary between the algorithms (Ruben-Gambino ends, n d^2 cut-offs, 1/2, 1)."""
    root = math.sqrt(n)
    boundaries = [1 / (2 * n), 1 / n, (n - 1) / n, 0.5, 0.0, 1.0, -0.1, 1.5]
    boundaries += [math.sqrt(c / n) for c in (0.754693, 2.2, 4.0, 18.0, 370.0)] + [(1.4 / n) ** (2 / 3)]
    near = [b * f for b in boundaries for f in (1 - 1e-12, 1 + 1e-12)]
    return np.r_[rng.uniform(0, 1, 8), rng.uniform(0, 3 / root, 12), boundaries, near]


SIZES = [*range(1, 160), 200, 1_000, 3_750, 9_999, KS_EXACT_LIMIT]  # ks_pvalue asks up to the limit


@pytest.mark.parametrize("chunk", range(4))
def test_kolmogorov_sf_is_scipys_kstwo_sf_to_the_bit(chunk: int):
    rng = np.random.default_rng(chunk)
    sizes = SIZES[chunk::4] + [int(n) for n in rng.integers(141, KS_EXACT_LIMIT, 8)]
    for n in sizes:
        for d in statistics(n, rng):
            expected = float(stats.kstwo.sf(d, n))
            assert kolmogorov_sf(float(d), n) == expected, (n, d)


def test_kolmogorov_sf_is_nan_where_scipys_is():
    with np.errstate(divide="ignore"):
        assert math.isnan(kolmogorov_sf(0.3, 0)) and math.isnan(float(stats.kstwo.sf(0.3, 0)))
    assert math.isnan(kolmogorov_sf(math.nan, 5)) and math.isnan(float(stats.kstwo.sf(math.nan, 5)))


@pytest.mark.parametrize(("m", "n"), [(10_000, 6_000), (10_000, 1_000), (300, 40), (7, 5), (2, 1)])
def test_small_sample_ks_pvalue_is_ks_2samp_asymptotic(m: int, n: int):
    rng = np.random.default_rng(m + n)
    reference, current = rng.normal(size=m), rng.normal(0.1, 1.1, size=n)
    expected = stats.ks_2samp(reference, current, method="asymp")
    assert ks_pvalue(expected.statistic, m, n) == float(expected.pvalue)


@pytest.mark.parametrize("equal_var", [True, False])
def test_subset_ttest_is_scipys_ttest_ind_from_stats_to_the_bit(equal_var: bool):
    rng = np.random.default_rng(5)
    n1, n2 = rng.integers(1, 60, 3000).astype(float), rng.integers(1, 60, 3000).astype(float)
    mean1, mean2 = rng.normal(size=3000), rng.normal(size=3000)
    var1, var2 = rng.exponential(size=3000), rng.exponential(size=3000)
    var1[:40], var2[20:60] = 0.0, 0.0  # one side or both constant
    t, p = two_sample_ttest(n1, mean1, var1, n2, mean2, var2, equal_var)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = stats.ttest_ind_from_stats(
            mean1, np.sqrt(var1), n1, mean2, np.sqrt(var2), n2, equal_var=equal_var
        )
    testable = (n1 >= 2) & (n2 >= 2) & ~((var1 == 0) & (var2 == 0))
    assert np.array_equal(t[testable], expected.statistic[testable])
    assert np.array_equal(p[testable], expected.pvalue[testable])


def test_fisher_z_pvalue_is_the_normal_sf():
    rng = np.random.default_rng(11)
    n1, n2 = 50, 2_000
    for r1, r2 in rng.uniform(-1, 1, (200, 2)):
        z = np.arctanh([r1, r2])
        expected = 2.0 * stats.norm.sf(abs(z[1] - z[0]) / np.sqrt(1 / (n1 - 3) + 1 / (n2 - 3)))
        assert fisher_z_pvalue(r1, n1, r2, n2) == float(expected)
