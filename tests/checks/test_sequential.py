"""Evidence over time (`checks.sequential`), pinned by seeded simulations of batches compared with one
shared reference: the window statistic's null law, the false-claim rate against its budget, the
overdispersion estimate, and how much earlier than the per-batch grade a slow ramp is claimed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from driftline.checks import sequential as sq
from driftline.checks.evidence import kolmogorov, normal, per_test_confidence
from driftline.checks.result import severity_for

# Batches of n rows against a reference of m rows: a standardised mean compared with the reference's.
N, M = 1000, 6000
SE = math.sqrt(1 / N + 1 / M)


def simulated_scores(
    rng: np.random.Generator, series: int, batches: int, tau: float = 0.0, drift: np.ndarray | None = None
) -> np.ndarray:
    """Scores of `series` independent targets over `batches` batches, each batch's mean against one
    reference mean per target (the shared term), with extra batch-to-batch variation `tau` and a
    mean `drift` per batch; the p-values are the normal ones the per-batch grade computes."""
    reference = rng.normal(0, math.sqrt(1 / M), (series, 1))
    means = rng.normal(0, math.sqrt(1 / N + tau**2), (series, batches))
    if drift is not None:
        means = means + drift
    return sq.scores(stats.norm.sf((means - reference) / SE))


def test_scores_are_the_normal_quantile_clipped() -> None:
    p = np.array([0.5, 0.025, 0.9, 1e-20, 1.0, 0.0])
    z = sq.scores(p)
    assert z[:3] == pytest.approx(stats.norm.isf(p[:3]), rel=1e-12)
    assert z[3] == z[5] == sq.Z_CLIP and z[4] == -sq.Z_CLIP


def test_with_independent_scores_the_window_statistic_is_standard_normal() -> None:
    """ρ = 0, φ = 1: Z_w of i.i.d. N(0, 1) scores has mean 0 and SD 1 for every window."""
    z = np.random.default_rng(7).standard_normal((20_000, 16))
    for window in sq.WINDOWS:
        values = np.array([sq.window_statistic(row, window, 1.0, 0.0) for row in z])
        assert abs(values.mean()) < 0.03
        assert values.std() == pytest.approx(1.0, abs=0.03)


def test_the_shared_reference_variance_matches_a_simulation() -> None:
    """Var(S_w) = w(1 − ρ) + w²ρ for scores of batches compared with one reference (φ = 1)."""
    rho = sq.shared_correlation(N, M)
    assert rho == pytest.approx(N / (N + M))
    z = simulated_scores(np.random.default_rng(3), 20_000, 16)
    for window in sq.WINDOWS:
        sums = z[:, -window:].sum(axis=1)
        assert sums.var() == pytest.approx(sq.window_variance(window, 1.0, rho), rel=0.05)


def test_batches_of_different_sizes_share_the_reference_unequally() -> None:
    """Batches of 300 to 3,000 rows against one reference of 6,000: batch i's score loads √ρ_i on the
    reference's error, so Var(S_w) = Σ(1 − ρ_i) + (Σ√ρ_i)², within 5% of 20,000 simulated histories;
    one ρ taken from a last batch of 300 rows understates a window of 16 by more than a third."""
    rng = np.random.default_rng(9)
    sizes = np.resize([3000, 1000, 2000, 500, 3000, 1500, 800, 3000], 16)
    sizes[-1] = 300
    reference = rng.normal(0, math.sqrt(1 / M), (20_000, 1))
    means = rng.normal(0, np.sqrt(1 / sizes), (20_000, 16))
    z = (means - reference) / np.sqrt(1 / sizes + 1 / M)
    rhos = [sq.shared_correlation(n, M) for n in sizes]
    for window in sq.WINDOWS:
        sums = z[:, -window:].sum(axis=1)
        assert sums.var() == pytest.approx(sq.window_variance(window, 1.0, rhos), rel=0.05)
    assert sq.window_variance(16, 1.0, rhos[-1]) < 0.65 * z.sum(axis=1).var()
    assert sq.window_variance(4, 1.3, [0.2] * 4) == pytest.approx(sq.window_variance(4, 1.3, 0.2))


def false_claim_rate(rng: np.random.Generator, runs: int, levels: list[float], rho: float) -> float:
    """Share of clean runs (16 earlier batches and this one per target, target i held to `levels[i]`)
    in which any target claims."""
    fired = 0
    for _ in range(runs):
        z = simulated_scores(rng, len(levels), 17)
        fired += any(
            sq.strongest_claim(row, np.zeros(17), rho=rho, level=level, min_excess=0.0)
            for row, level in zip(z, levels, strict=True)
        )
    return fired / runs


def test_clean_runs_stay_within_the_false_claim_budget() -> None:
    """Per-run budget 0.01 over 20 targets × 4 windows, split as a run splits it: 4 targets that
    describe the model share half (0.0125 each), 16 features the other half (0.03125 each, where an
    equal split gives everyone 0.05). At most 1.5% of 3,000 clean runs claim a change (the union
    bound allows 1%); ignoring the shared reference (ρ = 0) breaks it."""
    model_share, feature_share = sq.budget_shares(4, 16)
    assert (model_share, feature_share) == pytest.approx((0.5 / 4, 0.5 / 16))
    assert 4 * model_share + 16 * feature_share == pytest.approx(1.0)
    levels = [sq.sustained_level(100, model_share)] * 4 + [sq.sustained_level(100, feature_share)] * 16
    assert levels[0] == pytest.approx(stats.norm.isf(0.01 * 0.5 / 4 / 4))
    assert levels[-1] == pytest.approx(stats.norm.isf(0.01 * 0.5 / 16 / 4))
    rng = np.random.default_rng(11)
    rho = sq.shared_correlation(N, M)
    assert false_claim_rate(rng, 3000, levels, rho) <= 0.015
    assert false_claim_rate(rng, 200, levels, 0.0) > 0.1


def test_one_kind_of_metric_alone_takes_the_whole_budget() -> None:
    assert sq.budget_shares(0, 20) == (0.05, 0.05)
    assert sq.budget_shares(5, 0) == (0.2, 0.2)
    assert sq.budget_shares(0, 0) == (1.0, 1.0)


def test_overdispersion_recovers_the_extra_batch_variation() -> None:
    """Batch means varying by an extra N(0, τ²) give φ = sqrt(1 + τ² / σ²), σ² = 1/n the sampling
    variance; the median estimate over 400 histories of 16 batches is within 15%."""
    rho = sq.shared_correlation(N, M)
    tau = math.sqrt(1.25 / N)
    truth = math.sqrt(1 + tau**2 * N)
    z = simulated_scores(np.random.default_rng(5), 400, 16, tau=tau)
    estimates = [sq.overdispersion(row, rho) for row in z]
    assert np.median(estimates) == pytest.approx(truth, rel=0.15)


def test_a_slow_ramp_does_not_inflate_its_own_noise() -> None:
    """First differences centred on their median cancel a linear trend: φ stays 1 on a clean ramp."""
    drift = 0.007 * np.arange(1, 17)
    z = simulated_scores(np.random.default_rng(6), 400, 16, drift=drift)
    assert np.median([sq.overdispersion(row, sq.shared_correlation(N, M)) for row in z]) < 1.1


def test_fewer_than_eight_earlier_scores_keep_phi_at_one() -> None:
    assert sq.overdispersion(np.array([4.0, -4.0, 4.0, -4.0, 4.0, -4.0, 4.0]), 0.1) == 1.0
    assert sq.overdispersion(np.array([0.0, 2, -1, 3, -2, 1, -3, 2]), 0.0) == pytest.approx(
        1.4826 * 3 / math.sqrt(2)
    )


def test_a_linear_ramp_is_claimed_earlier_than_the_per_batch_grade_reaches_low() -> None:
    """A mean growing by 0.007 SD a batch (thresholds 0.05, 0.1, 0.15), one of 30 graded metrics:
    at confidence 0.99 one batch first reaches `low` around batch 21 (and pages, at `medium`, after
    30); the sustained layer at 1 false page per 1,000 runs claims it around batch 15 with an equal
    share of the budget, and a batch earlier in median (earlier in about half the sequences, never
    later) as one of 5 metrics that describe the model, which share half of it."""
    rng = np.random.default_rng(21)
    rho, thresholds = sq.shared_correlation(N, M), (0.05, 0.1, 0.15)
    levels = {
        "equal": sq.sustained_level(1000, 1 / 30),
        "model": sq.sustained_level(1000, sq.budget_shares(5, 25)[0]),
    }
    per_batch = per_test_confidence(0.99, 30)
    drift = 0.007 * np.arange(1, 41)
    sustained: dict[str, list[int]] = {name: [] for name in levels}
    graded = []
    for _ in range(300):
        reference = rng.normal(0, math.sqrt(1 / M))
        change = rng.normal(drift, math.sqrt(1 / N)) - reference
        z = sq.scores(stats.norm.sf(change / SE))
        for name, level in levels.items():
            claims = (
                sq.strongest_claim(z[: t + 1], change[: t + 1], rho=rho, level=level, min_excess=0.25 * 0.05)
                for t in range(40)
            )
            sustained[name].append(next((t + 1 for t, c in enumerate(claims) if c is not None), 99))
        bounds = [normal(c, SE).bound(per_batch) for c in change]
        graded.append(
            next((t + 1 for t, b in enumerate(bounds) if severity_for(b, thresholds) != "none"), 99)
        )
    equal, model = np.array(sustained["equal"]), np.array(sustained["model"])
    assert 19 <= np.median(graded) <= 23
    assert 14 <= np.median(equal) <= 16
    assert np.median(model) <= np.median(equal) - 1
    assert np.all(model <= equal) and np.mean(model < equal) > 0.4
    assert np.mean(model < np.array(graded)) > 0.9


def test_the_effect_gate_holds_back_a_tiny_but_certain_change() -> None:
    """Z far above the level, but a mean excess below min_excess: no claim."""
    z = np.full(16, 3.5)
    assert sq.strongest_claim(z, np.full(16, 0.001), rho=0.1, level=4.0, min_excess=0.01) is None
    claim = sq.strongest_claim(z, np.full(16, 0.02), rho=0.1, level=4.0, min_excess=0.01)
    assert claim is not None and claim.mean_excess == pytest.approx(0.02)
    assert claim.z == pytest.approx(
        3.5 * claim.window / math.sqrt(sq.window_variance(claim.window, 1.0, 0.1))
    )


def test_two_earlier_batches_are_needed_and_one_wild_batch_does_not_claim() -> None:
    assert sq.strongest_claim([4.0, 4.0], [1.0, 1.0], rho=0.0, level=1.0, min_excess=0.0) is None
    one_wild = sq.scores([0.5, 0.5, 0.5, 1e-30])
    assert sq.strongest_claim(one_wild, np.ones(4), rho=0.0, level=3.0, min_excess=0.0) is None


def test_excess_subtracts_each_noise_models_no_change_mean() -> None:
    """Checked against the noise laws: E[scale·χ²(df)] = scale·df, E[K] = sqrt(π/2)·ln 2."""
    draws = stats.kstwobign.rvs(size=200_000, random_state=np.random.default_rng(4))
    assert draws.mean() == pytest.approx(sq.KOLMOGOROV_MEAN, rel=0.01)
    ks = kolmogorov(0.1, 1000, 6000)
    assert sq.excess(ks) == pytest.approx(0.1 - stats.kstwobign.mean() * ks.scale)
    assert sq.excess(normal(-0.03, 0.01, higher_is_worse=False)) == pytest.approx(0.03)
    chi2 = sq.Evidence(0.05, "scaled_chi2", 0.001, 9.0)
    assert sq.excess(chi2) == pytest.approx(0.05 - stats.chi2(9.0, scale=0.001).mean())


@pytest.mark.parametrize("tests", [2, 10])
def test_best_of_p_values_give_scores_that_do_not_lean_towards_change(tests: int) -> None:
    """A best-of estimate (a two-sided change is the best of its two sides, a feature's worst subset
    the best of its subsets) reports its Bonferroni p over the whole range, so the scores its clean
    batches add to a window average at most zero; capped at 0.4 they averaged about +0.5, and a
    window of 16 clean batches summed to about two standard deviations."""
    from driftline.checks.evidence import Evidence, best_of

    rng = np.random.default_rng(tests)
    noise = rng.standard_normal((20_000, tests))
    # a change's two sides are x and -x; subsets are independent
    best = np.abs(noise[:, 0]) if tests == 2 else noise.max(axis=1)
    evidence = [best_of(b, 1.0, tests) for b in best]
    z = sq.scores([e.p_value() for e in evidence])
    if tests == 2:  # the best of a change's two sides is its absolute value: the p-value is uniform
        assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    assert z.mean() < 0.03
    stored = evidence[0].to_dict()
    assert Evidence.from_dict(stored).p_value() == evidence[0].p_value() and "p" in stored
    assert "p" not in Evidence(0.1, "normal", 0.05).to_dict()
