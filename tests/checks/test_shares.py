"""Signed category share scores (`checks.shares`), the sustained layer's evidence for targets made of
counts: pinned against scipy's likelihood-ratio test, their null law against the standard normal, the
shared reference's correlation, the false-claim rate of clean sequences against the budget, and how
much earlier than the per-batch p-values a rising label rate is claimed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driftline.checks import sequential as sq
from driftline.checks.columns import Columns
from driftline.checks.drift import CategoricalDrift, LabelDrift
from driftline.checks.evidence import best_of, rate_change
from driftline.checks.shares import (
    MAX_SHARE_CATEGORIES,
    MIN_SHARE_ROWS,
    SHARE_SCORES,
    psi_share_change,
    scored_categories,
    share_scores,
    signed_root_g,
)

N, M = 1000, 6000


def scipy_score(hits: int, rows: int, reference_hits: int, reference_rows: int) -> float:
    """The signed root of scipy's G test (log-likelihood ratio, no continuity correction) of the 2 × 2
    table of one category against the others in the batch and the reference."""
    table = [[hits, rows - hits], [reference_hits, reference_rows - reference_hits]]
    g = stats.chi2_contingency(table, correction=False, lambda_="log-likelihood")[0]
    return math.copysign(math.sqrt(g), hits / rows - reference_hits / reference_rows)


@pytest.mark.parametrize(
    ("hits", "rows", "reference_hits", "reference_rows"),
    [(250, 1000, 1080, 6000), (120, 1000, 1080, 6000), (0, 300, 40, 6000), (31, 30_000, 12, 5000)],
)
def test_the_score_is_the_signed_root_of_scipys_likelihood_ratio_test(
    hits: int, rows: int, reference_hits: int, reference_rows: int
) -> None:
    score = signed_root_g(np.array([hits]), rows, np.array([reference_hits]), reference_rows)[0]
    assert score == pytest.approx(scipy_score(hits, rows, reference_hits, reference_rows), rel=1e-9)


def test_which_categories_are_scored() -> None:
    """Only categories with 20 reference rows, expected 20 times in the batch, their complement too;
    the most frequent first, at most 32; the rarer of two bins; never the unseen bin (no reference rows)."""
    reference = np.array([3000, 2950, 60, 19, 21, 0])
    assert list(scored_categories(reference, 1000)) == [0, 1]
    assert list(scored_categories(reference, 10_000)) == [0, 1, 2, 4]
    assert list(scored_categories(np.array([5980, 20]), 100_000)) == [1]
    assert list(scored_categories(np.array([5981, 19]), 100_000)) == []
    assert len(scored_categories(np.full(100, 60), 10_000)) == MAX_SHARE_CATEGORIES
    names = [f"c{i}" for i in range(6)]
    scores = share_scores(reference, np.array([400, 500, 50, 0, 10, 40]), names)
    assert list(scores) == ["c0", "c1"]
    assert scores["c0"] == pytest.approx([scipy_score(400, 1000, 3000, 6050), 3000 / 6050, 0.4], abs=1e-6)
    assert MIN_SHARE_ROWS == 20


@pytest.mark.parametrize("share", [0.45, 0.18, 0.02])
def test_clean_scores_are_standard_normal_into_the_tail(share: float) -> None:
    """A batch and a reference drawn from one population: the score's mean, SD and upper and lower
    tails at 2.5 and 3 agree with scipy's standard normal, down to a category expected 20 times a
    batch, the fewest scored (the signed root leans below zero by about 1 / (6 √20) there)."""
    rng = np.random.default_rng(int(share * 100))
    draws = 400_000
    hits, reference_hits = rng.binomial(N, share, draws), rng.binomial(M, share, draws)
    z = signed_root_g(hits, N, reference_hits, M)
    normal = stats.norm()
    assert abs(z.mean() - normal.mean()) < 0.04
    assert z.std() == pytest.approx(normal.std(), abs=0.01)
    for at in (2.5, 3.0):
        assert np.mean(z >= at) == pytest.approx(normal.sf(at), rel=0.15)
        assert np.mean(z <= -at) == pytest.approx(normal.cdf(-at), rel=0.15)


def shared_reference_scores(
    rng: np.random.Generator,
    shares: np.ndarray,
    sequences: int,
    batches: int,
    drift: np.ndarray | None = None,
) -> np.ndarray:
    """(sequences × batches × categories) scores of clean batches of N rows against one reference of M
    rows per sequence, every category of `shares` scored; `drift` adds to the first category's share
    at each batch (taken from the others in proportion)."""
    reference = rng.multinomial(M, shares, size=sequences)
    out = np.empty((sequences, batches, len(shares)))
    for t in range(batches):
        p = shares.copy()
        if drift is not None:
            p[0] += drift[t]
            p[1:] *= (1 - p[0]) / shares[1:].sum()
        batch = rng.multinomial(N, p, size=sequences)
        out[:, t, :] = signed_root_g(batch.T, N, reference.T, M).T
    return out


def test_the_shared_reference_correlates_scores_as_the_window_variance_says() -> None:
    """Var(S_w) = w(1 − ρ) + w²ρ, ρ = n / (n + m), for the scores of batches against one reference."""
    z = shared_reference_scores(np.random.default_rng(2), np.array([0.18, 0.5, 0.32]), 20_000, 16)
    rho = sq.shared_correlation(N, M)
    for window in sq.WINDOWS:
        sums = z[:, -window:, 0].sum(axis=1)
        assert sums.var() == pytest.approx(sq.window_variance(window, 1.0, rho), rel=0.06)


def test_clean_sequences_stay_within_the_false_claim_budget() -> None:
    """Budget 0.02 a run over one column of 8 categories (two of them expected about 20 times a batch),
    each tested both ways in 4 windows: at most 2% of 2,000 clean runs of 17 batches claim a change
    (plus three simulation standard errors); tested one way only at the same level, the falls would
    go unbudgeted, and ignoring the shared reference breaks the budget."""
    shares = np.array([0.3, 0.2, 0.15, 0.12, 0.1, 0.09, 0.02, 0.02])
    z = shared_reference_scores(np.random.default_rng(8), shares, 2000, 17)
    tests = 2 * len(shares)
    level = sq.sustained_level(50, 1.0, tests=tests)
    assert level == pytest.approx(stats.norm.isf(0.02 / 4 / tests))
    rho, flat = sq.shared_correlation(N, M), np.zeros(17)

    def rate(rho: float) -> float:
        fired = [
            any(
                sq.strongest_signed_claim(run[:, k], flat, rho=rho, level=level, min_change=(0.0, 0.0))
                for k in range(len(shares))
            )
            for run in z
        ]
        return float(np.mean(fired))

    assert rate(rho) <= 0.02 + 3 * math.sqrt(0.02 * 0.98 / 2000)
    assert rate(0.0) > 0.04


def first_claims(z: np.ndarray, level: float, signed: bool) -> list[int]:
    """The batch (from 1) of each sequence's first claim, 99 for none."""
    rho, firsts = sq.shared_correlation(N, M), []
    for row in z:
        claims = (
            sq.strongest_signed_claim(row[: t + 1], np.zeros(t + 1), rho=rho, level=level, min_change=(0, 0))
            if signed
            else sq.strongest_claim(row[: t + 1], np.zeros(t + 1), rho=rho, level=level, min_excess=0.0)
            for t in range(len(row))
        )
        firsts.append(next((t + 1 for t, c in enumerate(claims) if c is not None), 99))
    return firsts


def test_a_rising_label_rate_is_claimed_earlier_on_share_scores_than_on_p_values() -> None:
    """The label rate rising half a point a batch from 0.45 (one of 9 model-level metrics at 1 false
    page per 1,000 runs): on the per-batch p-values of the largest share change (the best of its two
    sides) the first claim comes around batch 14, on the signed share score (two tests) two batches
    sooner in median, and no later in at least 98% of 200 sequences."""
    rng = np.random.default_rng(14)
    drift = 0.005 * np.arange(30)
    share = sq.budget_shares(9, 147)[0]
    reference = rng.binomial(M, 0.45, 200)
    hits = rng.binomial(N, 0.45 + drift, (200, 30))
    signed = signed_root_g(hits.T, N, reference, M).T
    p_values = np.array(
        [
            [best_of((e := rate_change(h, N, r, M)).estimate, e.scale, 2).p_value() for h in row]
            for row, r in zip(hits, reference, strict=True)
        ]
    )
    before = first_claims(sq.scores(p_values), sq.sustained_level(1000, share), signed=False)
    after = first_claims(signed, sq.sustained_level(1000, share, tests=2), signed=True)
    assert 13 <= np.median(before) <= 15
    assert np.median(after) <= np.median(before) - 2
    assert np.mean(np.array(after) <= np.array(before)) >= 0.98


def test_drift_results_carry_the_share_scores_of_their_bins() -> None:
    """`drift.categorical` scores its own bins (the rare categories pooled), `drift.label` one class of
    a binary label; each score is scipy's signed likelihood-ratio root."""
    rng = np.random.default_rng(0)
    reference = pd.DataFrame(
        {"c": rng.choice(["a", "b", "c"], M, p=[0.6, 0.3, 0.1]), "y": rng.binomial(1, 0.4, M)}
    )
    batch = pd.DataFrame(
        {"c": rng.choice(["a", "b", "c"], N, p=[0.5, 0.35, 0.15]), "y": rng.binomial(1, 0.5, N)}
    )
    columns = Columns(categorical=("c",), label="y")
    (categorical,) = CategoricalDrift().run(reference, batch, columns)
    scores = categorical.details[SHARE_SCORES]
    assert list(scores) == ["a", "b", "c"]
    for name, (score, reference_share, share) in scores.items():
        hits, ref_hits = int((batch.c == name).sum()), int((reference.c == name).sum())
        assert score == pytest.approx(scipy_score(hits, N, ref_hits, M), abs=1e-6)
        assert (reference_share, share) == pytest.approx((ref_hits / M, hits / N), abs=1e-6)
    (label,) = LabelDrift().run(reference, batch, columns)
    ((name, (score, _, _)),) = label.details[SHARE_SCORES].items()
    hits, ref_hits = int((batch.y.astype(str) == name).sum()), int((reference.y.astype(str) == name).sum())
    assert score == pytest.approx(scipy_score(hits, N, ref_hits, M), abs=1e-6)


@pytest.mark.parametrize(("reference_share", "psi"), [(0.18, 0.025), (0.5, 0.1), (0.03, 0.025)])
def test_a_psi_threshold_in_share_units_reaches_that_psi_both_ways(
    reference_share: float, psi: float
) -> None:
    """The share change that takes a category's PSI against the other rows to `psi`, up and down: its
    two-bin PSI, computed here from scipy's relative entropies (PSI = KL(q‖p) + KL(p‖q)), is `psi`."""
    for side in (1, -1):
        share = reference_share + side * psi_share_change(reference_share, psi, side)
        p, q = [reference_share, 1 - reference_share], [share, 1 - share]
        assert stats.entropy(q, p) + stats.entropy(p, q) == pytest.approx(psi, rel=1e-9)
    assert psi_share_change(reference_share, 0.0, 1) == 0.0
