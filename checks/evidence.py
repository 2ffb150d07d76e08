"""How sure a change against the reference is, and the severity that certainty earns.

A severity is the highest threshold that a metric's change is known to cross: each graded metric
carries `Evidence` (its estimate and a noise model), and is graded on its one-sided confidence bound
on the worse side, not on the estimate. A run tests many targets, so the bound of each is taken at
the Bonferroni level `1 - (1 - confidence) / m`, m being the number of graded metrics in the run: a
clean batch then reaches any severity with probability at most `1 - confidence`, while large batches
keep the effect-size meaning of the thresholds (the bound never exceeds the estimate).

Noise models (all from `scipy.special`, so checks stay quick to import):

- `normal`: estimate ± z · standard error (proportions, AUC, bootstrap standard errors, differences);
- `scaled_chi2`: a divergence whose no-change distribution is `scale · χ²(df)` (PSI, Jensen–Shannon),
  matched to resamples under no change by `divergence_evidence`; the bound subtracts that noise;
- `kolmogorov`: a Kolmogorov–Smirnov distance, whose no-change noise is `K / sqrt(n_eff)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from driftline.checks.result import SEVERITIES, CheckResult, format_number, severity_for, worst_severity

DEFAULT_CONFIDENCE = 0.99
NOISES = ("normal", "scaled_chi2", "kolmogorov")
NULL_DRAWS = 400
# `best_of`: its bounds hold at per-test levels from this one up (every run at the default confidence
# grades at or above it), and its p-values are exact up to this largest value.
BEST_OF_LEVEL = DEFAULT_CONFIDENCE
BEST_OF_MAX_P = 0.4
# `split_evidence` draws at most this many cells at a time (draws x cells), about 16 MB a count array.
SPLIT_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class Evidence:
    """One metric's estimate and the noise that bounds it (see the module docstring)."""

    estimate: float
    noise: str
    scale: float
    df: float = 1.0
    higher_is_worse: bool = True
    # The p-value when the check computes it over the whole range itself: a best-of estimate's
    # Bonferroni p (`best_of`), which its widened normal scale reports only up to BEST_OF_MAX_P.
    p: float | None = None

    def __post_init__(self) -> None:
        if self.noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {self.noise!r}")

    def margin(self, confidence: float) -> float:
        """How far noise alone moves the estimate towards worse, with probability `1 - confidence`."""
        if not self.scale > 0 or not math.isfinite(self.scale):
            return 0.0 if self.scale == 0 else math.inf
        alpha = 1.0 - confidence
        if self.noise == "normal":
            return self.scale * float(special.ndtri(confidence))
        if self.noise == "scaled_chi2":
            return self.scale * float(special.chdtri(self.df, alpha))
        return self.scale * float(special.kolmogi(alpha))

    def bound(self, confidence: float) -> float:
        """The one-sided confidence bound on the worse side (lower bound when higher is worse)."""
        margin = self.margin(confidence)
        return self.estimate - margin if self.higher_is_worse else self.estimate + margin

    def p_value(self) -> float:
        """Chance that noise alone moves a batch with no change at least this far towards worse."""
        if self.p is not None:
            return self.p
        worse = self.estimate if self.higher_is_worse else -self.estimate
        if not self.scale > 0:
            return 0.0 if worse > 0 else 1.0
        if self.noise == "normal":
            return float(special.ndtr(-worse / self.scale))
        if worse <= 0:
            return 1.0
        if self.noise == "scaled_chi2":
            return float(special.chdtrc(self.df, worse / self.scale))
        return float(special.kolmogorov(worse / self.scale))

    def to_dict(self) -> dict[str, float | str | bool]:
        """Plain-JSON form (stored with the result); `p` only where the check set it."""
        data = asdict(self)
        if data["p"] is None:
            del data["p"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Evidence:
        """Inverse of `to_dict`."""
        return cls(**dict(data))  # type: ignore[arg-type]


# --- noise models --------------------------------------------------------------------------------


def normal(estimate: float, standard_error: float, higher_is_worse: bool = True) -> Evidence:
    """Evidence of an estimate with an approximately normal sampling error."""
    return Evidence(float(estimate), "normal", float(standard_error), higher_is_worse=higher_is_worse)


def kolmogorov(statistic: float, n_current: int, n_reference: int) -> Evidence:
    """Evidence of a two-sample Kolmogorov–Smirnov distance (no-change noise K / sqrt(n m / (n + m)))."""
    n_eff = n_current * n_reference / (n_current + n_reference)
    return Evidence(float(statistic), "kolmogorov", 1.0 / math.sqrt(n_eff))


def divergence_evidence(
    statistic: Callable[[np.ndarray, np.ndarray], np.ndarray],
    reference_counts: ArrayLike,
    current_counts: ArrayLike,
    observed: float,
    draws: int = NULL_DRAWS,
    seed: int = 0,
) -> Evidence:
    """Evidence of a divergence between two count vectors: its no-change distribution is simulated by
    drawing both samples, at their sizes, from the pooled shares, then matched by its mean and variance
    to `scale · χ²(df)` (Satterthwaite), whose far tail gives the margin. `statistic` maps two
    (draws × bins) count arrays to one value per row. Seeded: the same counts give the same evidence."""
    ref = np.asarray(reference_counts, dtype=float)
    cur = np.asarray(current_counts, dtype=float)
    n_ref, n_cur = round(float(ref.sum())), round(float(cur.sum()))
    pooled = (ref + cur) / (ref.sum() + cur.sum())
    rng = np.random.default_rng(seed)
    null = statistic(rng.multinomial(n_ref, pooled, size=draws), rng.multinomial(n_cur, pooled, size=draws))
    mean, variance = float(np.mean(null)), float(np.var(null, ddof=1))
    if not mean > 0 or not variance > 0:
        return normal(observed, 0.0)
    return Evidence(float(observed), "scaled_chi2", variance / (2 * mean), 2 * mean * mean / variance)


def split_evidence(
    statistic: Callable[[np.ndarray, np.ndarray], np.ndarray],
    counts: tuple[ArrayLike, ArrayLike],
    observed: float,
    *,
    draws: int = NULL_DRAWS,
    seed: int = 0,
) -> Evidence:
    """Evidence of a divergence whose bins the statistic itself chooses from the reference's counts
    (categories frequent in the reference): its no-change distribution is simulated by splitting each
    cell's pooled count between the two samples at random, binomially in proportion to their sizes
    (the rows of both samples exchanged, as a permutation test does), so that whatever the statistic
    reads off the reference is drawn again with it; then matched to `scale · χ²(df)` by mean and
    variance. `counts` are the reference's and the batch's per cell; `statistic` maps two
    (draws × cells) count arrays to one value per row. Seeded.

    Such a statistic can be exactly 0 on many draws (no category frequent enough for a bin of its
    own): only the positive draws are matched, whose tail bounds the whole null's from above, and
    with fewer than two of them the estimate is taken as its own noise (normal, standard error equal
    to the estimate), which grades nothing."""
    ref = np.asarray(counts[0], dtype=np.int64)
    pooled = ref + np.asarray(counts[1], dtype=np.int64)
    rng = np.random.default_rng(seed)
    share, chunk = ref.sum() / pooled.sum(), max(1, SPLIT_CHUNK_CELLS // len(pooled))
    parts = []
    for start in range(0, draws, chunk):  # a few draws at a time: memory stays flat over many cells
        drawn = rng.binomial(pooled, share, size=(min(chunk, draws - start), len(pooled)))
        parts.append(statistic(drawn, pooled - drawn))
    null = np.concatenate(parts)
    positive = null[null > 0]
    if len(positive) < 2:
        return normal(observed, abs(observed))
    return fitted_noise(observed, positive)


def fitted_noise(observed: float, null: np.ndarray) -> Evidence:
    """Evidence of `observed` against simulated no-change values: `scale · χ²(df)` matched to their
    mean and variance (Satterthwaite); no noise at all when they do not vary."""
    mean, variance = float(np.mean(null)), float(np.var(null, ddof=1))
    if not mean > 0 or not variance > 0:
        return normal(observed, 0.0)
    return Evidence(float(observed), "scaled_chi2", variance / (2 * mean), 2 * mean * mean / variance)


def proportion_change(
    hits: float, rows: int, reference_hits: float, reference_rows: int, higher_is_worse: bool = True
) -> Evidence:
    """Evidence of a rate's change from the reference (batch rate − reference rate), with the
    Agresti–Caffo standard error (one success and one failure added to each side), never zero."""
    rate, ref_rate = hits / rows, reference_hits / reference_rows
    adj, ref_adj = (hits + 1) / (rows + 2), (reference_hits + 1) / (reference_rows + 2)
    se = math.sqrt(adj * (1 - adj) / (rows + 2) + ref_adj * (1 - ref_adj) / (reference_rows + 2))
    return normal(rate - ref_rate, se, higher_is_worse)


def rate_change(
    hits: float, rows: int, reference_hits: float, reference_rows: int, higher_is_worse: bool = True
) -> Evidence:
    """`proportion_change` made safe on few rows. Its standard error is never below the no-change one
    (the two rates pooled): a batch rate far from the reference's (27 of 30 against 0.5) otherwise
    gets the small standard error of its own extreme rate, and noise reads as a change. And it holds
    Yates's continuity correction, half a row on each side (1/(2n) + 1/(2m)), spread over the standard
    error at the 99% normal quantile, so that a margin at 99% or beyond is at least the correction
    plus the normal one: a count moves in whole rows, which the normal tail otherwise undercounts."""
    evidence = proportion_change(hits, rows, reference_hits, reference_rows, higher_is_worse)
    pooled = (hits + reference_hits + 1) / (rows + reference_rows + 2)
    no_change = math.sqrt(pooled * (1 - pooled) * (1 / (rows + 2) + 1 / (reference_rows + 2)))
    continuity = (1 / rows + 1 / reference_rows) / 2 / float(special.ndtri(DEFAULT_CONFIDENCE))
    return normal(evidence.estimate, max(evidence.scale, no_change) + continuity, higher_is_worse)


def best_of(estimate: float, standard_error: float, tests: int) -> Evidence:
    """Evidence of the largest of `tests` one-sided normal estimates, graded as one test (a two-sided
    change is the best of its two sides, a feature's worst subset the best of its subsets).

    The scale is widened so that the bound never claims more than the Bonferroni bound over the
    `tests` at any per-test level of `BEST_OF_LEVEL` or above (the widening that holds at that level
    holds above it), and so that the p-value is the Bonferroni one, `tests` times the chosen
    estimate's (the scale up to `BEST_OF_MAX_P`, `p` over the whole range, so that it is uniform or
    conservative under no change, as evidence accumulated over batches needs): the family a run
    counts stays right."""
    if tests <= 1 or not (standard_error > 0 and math.isfinite(standard_error)):
        return normal(estimate, standard_error)
    alpha = 1.0 - BEST_OF_LEVEL
    scale = standard_error * float(special.ndtri(1 - alpha / tests) / special.ndtri(1 - alpha))
    bonferroni = min(tests * float(special.ndtr(-estimate / standard_error)), 1.0)
    if estimate > 0:
        corrected = min(bonferroni, BEST_OF_MAX_P)
        scale = max(scale, estimate / float(special.ndtri(1 - corrected)))
    return Evidence(float(estimate), "normal", float(scale), p=bonferroni)


def estimated_rate_change(
    hits: float, rows: int, expected_rate: float, expected_variance: float, higher_is_worse: bool = True
) -> Evidence:
    """Evidence of a batch rate's change from a rate a clean batch is expected to show, estimated from
    the reference with a known variance (a Good–Turing or leave-one-out estimate, whose variance is
    not binomial): the batch side has the Agresti–Caffo standard error, the two variances add up."""
    adj = (hits + 1) / (rows + 2)
    se = math.sqrt(adj * (1 - adj) / (rows + 2) + max(expected_variance, 0.0))
    return normal(hits / rows - expected_rate, se, higher_is_worse)


def auc_standard_error(auc: float, positives: int, negatives: int) -> float:
    """Hanley–McNeil (1982) standard error of an AUC from the class sizes."""
    if positives < 1 or negatives < 1:
        return math.inf
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    var = (auc * (1 - auc) + (positives - 1) * (q1 - auc**2) + (negatives - 1) * (q2 - auc**2)) / (
        positives * negatives
    )
    return math.sqrt(max(var, 0.0))


def bootstrap_standard_error(
    statistic: Callable[[np.ndarray], np.ndarray],
    counts: ArrayLike,
    draws: int = NULL_DRAWS,
    seed: int = 0,
) -> float:
    """Standard error of a statistic of cell counts (a confusion matrix, a histogram) by a seeded
    multinomial bootstrap; `statistic` maps (draws × cells) counts to one value per row (NaN ignored)."""
    cells = np.asarray(counts, dtype=float)
    total = round(float(cells.sum()))
    if total < 2:
        return math.inf
    sample = np.random.default_rng(seed).multinomial(total, cells / cells.sum(), size=draws)
    values = np.asarray(statistic(sample), dtype=float)
    values = values[np.isfinite(values)]
    return float(np.std(values, ddof=1)) if len(values) > 1 else math.inf


# --- grading -------------------------------------------------------------------------------------


def per_test_confidence(confidence: float, tests: int) -> float:
    """Bonferroni: the confidence each of `tests` bounds needs for the family to hold `confidence`."""
    return 1.0 - (1.0 - confidence) / max(tests, 1)


def graded_metrics(result: CheckResult) -> int:
    """How many of the result's metrics are graded on evidence (its share of the run's tests)."""
    return sum(1 for m in result.evidence if m in result.thresholds) if result.status == "ok" else 0


def grade_results(
    results: Iterable[CheckResult], confidence: float = DEFAULT_CONFIDENCE
) -> list[CheckResult]:
    """Grade every result that carries evidence at the family-wise `confidence` over all of them
    (in place; results without evidence keep their severity) and return the list. A result with
    evidence is graded on the metrics that have it: a check gives evidence for every metric it grades."""
    results = list(results)
    tests = sum(graded_metrics(r) for r in results)
    level = per_test_confidence(confidence, tests)
    for result in results:
        if graded_metrics(result):
            grade_result(result, level, confidence, tests)
    return results


def grade_result(result: CheckResult, level: float, confidence: float, tests: int) -> None:
    """Severity, bounds, p-values and the reason of one result at per-test confidence `level`."""
    severities: dict[str, str] = {}
    for metric, data in result.evidence.items():
        thresholds = result.thresholds.get(metric)
        if thresholds is None:
            continue
        evidence = Evidence.from_dict(data)
        bound = evidence.bound(level)
        result.metrics[f"{metric}_bound"] = bound
        result.metrics[f"{metric}_p"] = evidence.p_value()
        severities[metric] = severity_for(bound, thresholds, lower_is_worse=not evidence.higher_is_worse)
    result.severity = worst_severity(severities.values())
    result.reason = grade_reason(result, severities, level, confidence, tests)


def grade_reason(
    result: CheckResult, severities: Mapping[str, str], level: float, confidence: float, tests: int
) -> str:
    """The grade in words: the deciding metric, its bound, the level it was taken at, the threshold."""
    deciding = max(severities, key=lambda m: SEVERITIES.index(severities[m]))
    evidence = Evidence.from_dict(result.evidence[deciding])
    bound = result.metrics[f"{deciding}_bound"]
    side = "lower" if evidence.higher_is_worse else "upper"
    at = f"{side} bound {format_number(bound)} at {format_percent(level)}"
    if tests > 1:
        at += f" ({format_percent(confidence)} over {tests} tests)"
    head = f"{deciding} {format_number(evidence.estimate)}, {at}"
    severity = severities[deciding]
    thresholds = result.thresholds[deciding]
    if severity == "none":
        first = thresholds[0]
        return f"{head} does not reach {first:g}"
    crossed = thresholds[SEVERITIES.index(severity) - (len(SEVERITIES) - len(thresholds))]
    sign = "≥" if evidence.higher_is_worse else "≤"
    return f"{head} {sign} {severity} threshold {crossed:g}"


def format_percent(level: float) -> str:
    """A confidence level as a short percentage that still shows how close to 100% it is."""
    digits = max(2, math.ceil(-math.log10(max(1 - level, 1e-12))) + 1)
    return f"{100 * level:.{digits}g}%"
