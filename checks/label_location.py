"""Where a continuous label lies: its mean, median and 90th percentile against the reference's.

`drift.label` on a regression target grades, beside the Kolmogorov–Smirnov distance, how far the
label's mean, median and 90th percentile moved, in reference standard deviations and either way
(a weekly mean delay going from 5.8 to 38 minutes, or to −8, is a change a model trained on the
reference mispredicts by as much). Each change is graded two-sided on a normal bound: the best of
its two one-sided tests (`checks.evidence.best_of`).

Standard errors: of the mean, Welch's, the batch's variance never taken below the reference's (on
few rows of a skewed label a low mean comes with a small variance, and would read as a change); of
a quantile, the asymptotic sqrt(p (1 − p) (1/n + 1/m)) / f(q), the density f from the reference's
quantiles around q (its sparsity (Q(p + h) − Q(p − h)) / 2h, h widened from 0.05 until the window
spans more than one value, so that a label with ties is not given a zero standard error), the
batch's own density taking over where it is lower (on few rows of a skewed label a high quantile
comes with a low density). Quantiles are those of the mid-distribution function (`mid_quantiles`),
which a label in whole units moves smoothly; ±inf values are left out of all three.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from driftline.checks.base import Metric
from driftline.checks.binning import NumericSketch
from driftline.checks.evidence import Evidence, best_of

# Graded quantiles (their metric is `<name>_change`) and their probabilities.
QUANTILES = {"median": 0.5, "p90": 0.9}
# Half-widths of the window the density at a quantile is read over, narrowest first.
WINDOWS = (0.05, 0.1, 0.2, 0.4)
# In reference standard deviations: a tenth of one, a quarter, a half.
THRESHOLDS = (0.1, 0.25, 0.5)
UNCERTAINTY = "normal, graded two-sided (the best of its two one-sided tests); "


def location_metrics() -> dict[str, Metric]:
    """The declarations of the three graded location changes of a continuous label."""
    mean = Metric(
        THRESHOLDS,
        change="|batch mean − reference mean| of a continuous label, in reference standard deviations",
        uncertainty=UNCERTAINTY + "Welch's standard error, the batch variance never below the reference's",
        figure="distribution",
    )
    quantile = (
        UNCERTAINTY + "asymptotic standard error sqrt(p (1 − p) (1/n + 1/m)) / f(q), the density from "
        "the reference's quantiles around q"
    )
    return {
        "mean_change": mean,
        **{
            f"{name}_change": Metric(
                THRESHOLDS,
                change=f"|batch − reference| {round(100 * p)}th percentile of a continuous label, in "
                "reference standard deviations",
                uncertainty=quantile,
                figure="distribution",
            )
            for name, p in QUANTILES.items()
        },
    }


def mid_quantiles(ordered: np.ndarray, probabilities: np.ndarray | list[float]) -> np.ndarray:
    """Quantiles of sorted values by their mid-distribution function (Parzen): each distinct value
    stands at the share of values below it plus half its own, linearly between. Without ties these
    are the Hazen quantiles; with ties (a label in whole minutes) they move smoothly with the shares
    rather than jump a whole step, so their noise is the asymptotic one."""
    values, counts = np.unique(ordered, return_counts=True)
    mid = (np.cumsum(counts) - counts / 2) / len(ordered)
    return np.interp(probabilities, mid, values)


def batch_window(rows: int, p: float) -> float:
    """The half-width a batch's own density at the p-quantile is read over: n^(-1/3) (Hall and
    Sheather's rate), so that a few rows still span several values, but within half the way to the
    nearer end (the 90th percentile's density is not read off the maximum)."""
    return min(max(WINDOWS[0], rows ** (-1 / 3)), min(p, 1 - p) / 2)


def sparsity(ordered: np.ndarray, p: float, narrowest: float = WINDOWS[0]) -> float:
    """1 / density at the p-quantile of sorted values: the quantiles' spread over the narrowest window
    around p, at least `narrowest` wide, that holds more than one value (0 when all are equal)."""
    for h in (narrowest, *(w for w in WINDOWS if w > narrowest)):
        low, high = mid_quantiles(ordered, [max(p - h, 0.0), min(p + h, 1.0)])
        if high > low:
            return float(high - low) / (min(p + h, 1.0) - max(p - h, 0.0))
    return 0.0


@dataclass(frozen=True)
class LabelSketch(NumericSketch):
    """A continuous label's reference sketch, with its location: the finite values' count, mean and
    standard deviation, and at each graded quantile its value and sparsity."""

    finite: int = 0
    mean: float = 0.0
    std: float = 0.0
    quantiles: tuple[float, ...] = ()
    sparsities: tuple[float, ...] = ()

    @classmethod
    def of(cls, sketch: NumericSketch, values: np.ndarray) -> LabelSketch:
        """`sketch` with the location of the reference `values` (NaN removed, ±inf left out here)."""
        ordered = np.sort(values[np.isfinite(values)])
        base = {f.name: getattr(sketch, f.name) for f in fields(NumericSketch)}
        if len(ordered) < 2:
            return cls(**base, finite=len(ordered))
        probabilities = list(QUANTILES.values())
        return cls(
            **base,
            finite=len(ordered),
            mean=float(ordered.mean()),
            std=float(ordered.std(ddof=1)),
            quantiles=tuple(float(q) for q in mid_quantiles(ordered, probabilities)),
            sparsities=tuple(sparsity(ordered, p) for p in probabilities),
        )

    def location(self, values: np.ndarray) -> tuple[dict[str, float], dict[str, Any], dict[str, Evidence]]:
        """The batch's location changes (metrics), its location beside the reference's with the signed
        shifts and their standard errors (details) and the changes' evidence; nothing when the
        reference has no spread or the batch holds fewer than two finite values."""
        current = values[np.isfinite(values)]
        n = len(current)
        if not self.std > 0 or n < 2:
            return {}, {}, {}
        mean = float(current.mean())
        batch_var = max(float(current.var(ddof=1)), self.std**2)
        mean_se = math.sqrt(batch_var / n + self.std**2 / self.finite) / self.std
        changes = {"mean_change": ((mean - self.mean) / self.std, mean_se)}
        ordered = np.sort(current)
        batch_quantiles = mid_quantiles(ordered, list(QUANTILES.values()))
        for (name, p), q, ref_q, spread in zip(
            QUANTILES.items(), batch_quantiles, self.quantiles, self.sparsities, strict=True
        ):
            batch_spread = max(spread, sparsity(ordered, p, batch_window(n, p)))
            variance = p * (1 - p) * (batch_spread**2 / n + spread**2 / self.finite)
            changes[f"{name}_change"] = ((float(q) - ref_q) / self.std, math.sqrt(variance) / self.std)
        evidence = {name: best_of(abs(shift), se, 2) for name, (shift, se) in changes.items()}
        details = {
            "mean": mean,
            "reference_mean": self.mean,
            "reference_std": self.std,
            "quantiles": dict(zip(QUANTILES, map(float, batch_quantiles), strict=True)),
            "reference_quantiles": dict(zip(QUANTILES, self.quantiles, strict=True)),
            "location_shifts": {name: shift for name, (shift, _) in changes.items()},
            "location_std_errors": {name: se for name, (_, se) in changes.items()},
        }
        return {name: e.estimate for name, e in evidence.items()}, details, evidence
