"""Evidence that accumulates: one metric's per-batch p-values of no change, summed over the recent
batches graded against the same reference, so a change too small for one batch is proven by several.

Each batch's one-sided p-value becomes a score z = Φ⁻¹(1 − p) (clipped to ±`Z_CLIP`, so one wild
batch, which the per-batch grade already judges, cannot carry a window alone). A window of the last
w scores sums to S_w, whose no-change variance is φ²·Σ(1 − ρ_i) + (Σ√ρ_i)²: every batch is compared
with the same reference, so the scores share its sampling error (batch i's score loads √ρ_i on it,
ρ_i = n_i / (n_i + m); w·φ²·(1 − ρ) + w²·ρ when the batches are the same size), and real batches vary
more than sampling noise (overdispersion φ² ≥ 1, estimated from first differences, in which the
shared term and a slow trend cancel). A window claims a sustained change when
Z_w = S_w / sd(S_w) reaches the level of its metric's share of the monitor's false-alarm budget (the
metrics that describe the model share half of it, the features the other half: `budget_shares`) and
the window's mean excess effect is large enough to matter. A target made of counts gives sharper
evidence than its p-value: each frequent category's signed share score (`checks.shares`), summed in
windows the same way and tested both ways, each category's rise and fall one test of the metric's
share (`strongest_signed_claim`). Pure numpy and scipy: no history store here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from driftline.checks.evidence import Evidence

WINDOWS: tuple[int, ...] = (2, 4, 8, 16)
Z_CLIP = 4.0
P_CLIP = 1e-12
# Earlier batches needed before any window is tested, and before φ is estimated rather than 1.
MIN_EARLIER = 2
MIN_EARLIER_FOR_PHI = 8
MAD_NORMAL = 1.4826
# Mean of the Kolmogorov distribution: the no-change mean of a KS distance is this times its scale.
KOLMOGOROV_MEAN = math.sqrt(math.pi / 2) * math.log(2)
# The share of the false-alarm budget the metrics that describe the model (its outputs, labels and
# performance: checks whose `role` is in `checks.base.MODEL_ROLES`) split among themselves; the other
# metrics split the rest.
MODEL_SHARE = 0.5
# One ρ for every batch of a window, or each batch's, aligned with the scores.
Rho = float | Sequence[float] | np.ndarray


@dataclass(frozen=True)
class Claim:
    """A window that proves a sustained change: its length, Z_w and the level it reached, the mean
    excess effect over it, and the φ and ρ its variance used."""

    window: int
    z: float
    level: float
    mean_excess: float
    phi: float
    rho: float


def scores(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """z = Φ⁻¹(1 − p) of each p-value, p clipped into [1e-12, 1 − 1e-12] and z into ±`Z_CLIP`."""
    p = np.clip(np.asarray(p_values, dtype=float), P_CLIP, 1.0 - P_CLIP)
    return np.clip(-special.ndtri(p), -Z_CLIP, Z_CLIP)


def shared_correlation(rows: float, reference_rows: float) -> float:
    """ρ = n / (n + m): the correlation of two batches' scores through the reference they share."""
    if not rows > 0 or not reference_rows > 0:
        return 0.0
    return float(rows / (rows + reference_rows))


def overdispersion(earlier: Sequence[float] | np.ndarray, rho: float) -> float:
    """φ ≥ 1 from the scores of the earlier batches (oldest first): the robust variance of their first
    differences (MAD around the median difference, so a linear trend and one jump do not count) is
    2·φ²·(1 − ρ), the shared reference term cancelling. 1 with fewer than 8 earlier scores."""
    z = np.asarray(earlier, dtype=float)
    if len(z) < MIN_EARLIER_FOR_PHI:
        return 1.0
    diffs = np.diff(z)
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    batch_variance = (MAD_NORMAL * mad) ** 2 / 2
    return math.sqrt(max(1.0, batch_variance / max(1.0 - rho, 1e-12)))


def window_rhos(window: int, rho: Rho) -> np.ndarray:
    """The ρ_i of the last `window` batches: the last `window` of a sequence, or one ρ for all."""
    rhos = np.asarray(rho, dtype=float)
    return np.full(window, float(rhos)) if rhos.ndim == 0 else rhos[-window:]


def window_variance(window: int, phi: float, rho: Rho) -> float:
    """No-change variance of the sum of the last `window` scores: φ²·Σ(1 − ρ_i) + (Σ√ρ_i)², each
    batch's score loading √ρ_i on the reference's shared error (w·φ²·(1 − ρ) + w²·ρ for one ρ)."""
    rhos = window_rhos(window, rho)
    return float(phi * phi * np.sum(1.0 - rhos) + np.sum(np.sqrt(rhos)) ** 2)


def window_statistic(z: Sequence[float] | np.ndarray, window: int, phi: float, rho: Rho) -> float:
    """Z_w of the last `window` scores: their sum over its no-change standard deviation (`rho` one ρ
    for every batch, or each batch's, aligned with `z`)."""
    recent = np.asarray(z, dtype=float)[-window:]
    return float(recent.sum() / math.sqrt(window_variance(window, phi, rho)))


def strongest_signed_claim(
    z: Sequence[float] | np.ndarray,
    changes: Sequence[float] | np.ndarray,
    *,
    rho: Rho,
    level: float,
    min_change: tuple[float, float],
) -> tuple[Claim, int] | None:
    """`strongest_claim` of signed scores (a category's share score, positive when it rose), tested
    both ways, clipped to ±`Z_CLIP` as p-value scores are: the stronger firing claim and its side (+1
    the scores rose, −1 they fell), or None. `changes` are the matching signed changes (a share's),
    whose window mean must reach `min_change[0]` for a rise and fall by `min_change[1]`. Each side is
    one test of the budget."""
    signed = np.clip(np.asarray(z, dtype=float), -Z_CLIP, Z_CLIP)
    changes = np.asarray(changes, dtype=float)
    best: tuple[Claim, int] | None = None
    for side, least in zip((1, -1), min_change, strict=True):
        claim = strongest_claim(side * signed, side * changes, rho=rho, level=level, min_excess=least)
        if claim is not None and (best is None or claim.z > best[0].z):
            best = (claim, side)
    return best


def budget_shares(model: int, other: int) -> tuple[float, float]:
    """The share of the false-alarm budget of one metric that describes the model and of one other,
    given how many of each a run grades: the `model` ones split `MODEL_SHARE` equally, the `other`
    ones the rest; when either kind is absent the other takes the whole budget. The shares sum to 1
    over the run's metrics and are fixed before any data is seen, so the union bound holds as with
    equal shares (a weighted Bonferroni)."""
    if model == 0 or other == 0:
        equal = 1.0 / max(model + other, 1)
        return equal, equal
    return MODEL_SHARE / model, (1.0 - MODEL_SHARE) / other


def sustained_level(
    expected_run_length: float, share: float, windows: int = len(WINDOWS), tests: int = 1
) -> float:
    """The Z_w a window of a metric must reach: Φ⁻¹(1 − α · share / (windows · tests)) with α = 1 /
    expected_run_length, `share` the metric's share of it (`budget_shares`) and `tests` the series the
    metric is tested on (one p-value, or each scored category's rise and fall), so that by the union
    bound a clean run claims anything with probability at most α."""
    alpha = 1.0 / expected_run_length
    return float(-special.ndtri(alpha * share / (windows * max(tests, 1))))


def no_change_mean(evidence: Evidence) -> float:
    """What the estimate averages when nothing changed: 0 (normal), scale·df (scaled χ²), or the
    Kolmogorov mean times the scale."""
    if evidence.noise == "scaled_chi2":
        return evidence.scale * evidence.df
    if evidence.noise == "kolmogorov":
        return KOLMOGOROV_MEAN * evidence.scale
    return 0.0


def excess(evidence: Evidence) -> float:
    """The estimate minus its no-change mean, signed so that positive is worse."""
    if not math.isfinite(evidence.scale):
        return math.nan
    beyond = evidence.estimate - no_change_mean(evidence)
    return beyond if evidence.higher_is_worse else -beyond


def strongest_claim(
    z: Sequence[float] | np.ndarray,
    excesses: Sequence[float] | np.ndarray,
    *,
    rho: Rho,
    level: float,
    min_excess: float,
    windows: Sequence[int] = WINDOWS,
) -> Claim | None:
    """The firing window with the largest Z_w, or None. `z` holds clipped scores oldest first, this
    batch last; `excesses` the matching excess effects (NaN where unknown, left out of the mean);
    `rho` one ρ for every batch or each batch's, aligned with `z`. A window fires when it is full,
    Z_w ≥ `level` and its mean excess reaches `min_excess`; none is tested before `MIN_EARLIER`
    earlier batches exist. The claim records this batch's ρ."""
    z = np.asarray(z, dtype=float)
    excesses = np.asarray(excesses, dtype=float)
    if len(z) < MIN_EARLIER + 1:
        return None
    rhos = window_rhos(len(z), rho)
    phi = overdispersion(z[:-1], float(rhos[:-1].mean()))
    best: Claim | None = None
    for window in windows:
        if window > len(z):
            continue
        statistic = window_statistic(z, window, phi, rhos)
        known = excesses[-window:][np.isfinite(excesses[-window:])]
        mean_excess = float(known.mean()) if len(known) else math.nan
        if statistic >= level and mean_excess >= min_excess and (best is None or statistic > best.z):
            best = Claim(window, statistic, level, mean_excess, phi, float(rhos[-1]))
    return best
