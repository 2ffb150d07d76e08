"""Vectorised computations behind the fairness checks and the `driftline.checks.fairness` functions.

Rows are grouped once into subgroups (one per observed combination of protected-attribute values).
Every model metric is a function of the per-subgroup confusion counts, so one `np.bincount` gives
everything; "the rest of the population" of a subgroup is the column totals minus the subgroup.

Two ways to compare subgroups:

- ``rest`` (the documented semantics): each subgroup against every row outside it;
- ``pairwise``: each unordered pair of observed subgroups (what the widely used implementation does,
  there over ordered pairs, which gives the same mean and max because every distance is symmetric).

Distances: ``diff`` = |a - b|; ``ratio`` = max(a, b) / min(a, b), with 0/0 -> 1 and x/0 -> inf.
An undefined rate (empty denominator) gives NaN, which the mean and max reductions skip.

Every computation from counts accepts leading axes (e.g. bootstrap draws × subgroups × cells), so that
a statistic and its resamples are computed by the same code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import numpy as np
import pandas as pd

from driftline.checks.errors import CheckInputError

T = TypeVar("T")
DISTANCES = ("diff", "ratio")
REDUCTIONS = ("mean", "max", None)
COMPARISONS = ("rest", "pairwise")
MAX_SUBGROUPS_QUADRATIC = 2000

# Column order of the confusion counts: code = 2 * label + prediction.
TN, FP, FN, TP = range(4)
ALL = (TN, FP, FN, TP)

# rate name -> (numerator cells, denominator cells) of the confusion counts.
RATES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "statistical_parity": ((FP, TP), ALL),
    "tpr": ((TP,), (TP, FN)),
    "fpr": ((FP,), (FP, TN)),
    "fnr": ((FN,), (FN, TP)),
    "for": ((FN,), (FN, TN)),
    "fdr": ((FP,), (FP, TP)),
    "error_rate": ((FP, FN), ALL),
    "base_rate": ((FN, TP), ALL),
}
MODEL_METRICS = (*[r for r in RATES if r != "base_rate"], "equalized_odds", "theil_index")


@dataclass(frozen=True)
class Subgroups:
    """Rows grouped by their combination of protected values."""

    attributes: tuple[str, ...]
    codes: np.ndarray  # subgroup index of each row, 0 .. n_groups - 1
    values: list[tuple[Any, ...]]  # the protected values of each subgroup, sorted
    level_codes: np.ndarray  # (n_groups, n_attributes) code of each attribute's value

    @property
    def n_groups(self) -> int:
        return len(self.values)

    def sizes(self) -> np.ndarray:
        return np.bincount(self.codes, minlength=self.n_groups)

    def key(self, group: int) -> Any:
        """A subgroup's key: the value itself for one attribute, else the tuple of values."""
        values = self.values[group]
        return values[0] if len(values) == 1 else values

    def records(self, group: int) -> dict[str, Any]:
        return dict(zip(self.attributes, self.values[group], strict=True))


def _factorize(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Codes and uniques of one column, sorted when its values are mutually comparable."""
    try:
        return pd.factorize(column, sort=True)
    except TypeError:
        return pd.factorize(column, sort=False)


def encode_subgroups(frame: pd.DataFrame) -> Subgroups:
    """Group the rows of `frame` (the protected columns, no missing values) by their combination of
    values; subgroups are numbered in sorted order of their values where the values are comparable."""
    if frame.shape[1] == 0:
        raise CheckInputError("no protected attributes given")
    per_column = [_factorize(frame[c]) for c in frame.columns]
    if any((codes < 0).any() for codes, _ in per_column):
        raise CheckInputError("protected attributes have missing values; drop those rows first")
    combined = np.zeros(len(frame), dtype=np.int64)
    n_groups = 1
    for codes, uniques in per_column:
        # Mixed-radix code, compacted after every column so that it never overflows.
        combined, n_groups = _compact(combined * len(uniques) + codes, n_groups * len(uniques))
    # Any row of a subgroup carries the subgroup's values: take whichever the assignment keeps.
    representative = np.empty(n_groups, dtype=np.int64)
    representative[combined] = np.arange(len(combined))
    level_codes = np.stack([codes[representative] for codes, _ in per_column], axis=1)
    values = [
        tuple(_plain(uniques[level]) for (_, uniques), level in zip(per_column, row, strict=True))
        for row in level_codes
    ]
    return Subgroups(tuple(map(str, frame.columns)), combined, values, level_codes)


def _compact(codes: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """Renumber codes in [0, bound) to 0 .. k - 1 keeping their order; k is the number used."""
    if bound <= 4 * len(codes) + 1024:
        used = np.bincount(codes, minlength=bound) > 0
        return (np.cumsum(used) - 1)[codes], int(used.sum())
    compact, uniques = pd.factorize(codes, sort=True)
    return compact, len(uniques)


def _plain(value: Any) -> Any:
    """numpy scalars as Python scalars, so keys print and compare like the user's values."""
    return value.item() if isinstance(value, np.generic) else value


def confusion_counts(groups: Subgroups, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """(n_groups, 4) counts of TN, FP, FN, TP per subgroup (boolean label and prediction per kept row)."""
    cell = 2 * y_true.astype(np.int64) + y_pred.astype(np.int64)
    return np.bincount(groups.codes * 4 + cell, minlength=4 * groups.n_groups).reshape(-1, 4)


def rate(counts: np.ndarray, name: str, smoothing: float = 0.0) -> np.ndarray:
    """A rate from confusion counts (last axis); NaN where its denominator is 0. With `smoothing` s
    the rate is (numerator + s/2) / (denominator + s), which keeps ratios of rates finite."""
    numerator, denominator = RATES[name]
    num = counts[..., list(numerator)].sum(axis=-1).astype(float) + smoothing / 2
    den = counts[..., list(denominator)].sum(axis=-1).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den + smoothing, 1.0), np.nan)


def rate_names(metric: str) -> tuple[str, ...]:
    """The rates a model metric compares (both for equalized odds; none for the Theil index)."""
    return ("tpr", "fpr") if metric == "equalized_odds" else tuple(n for n in (metric,) if n in RATES)


def denominator_rows(counts: np.ndarray, metric: str) -> np.ndarray:
    """Rows behind a metric's rate per subgroup (last axis: the four cells): the rate's denominator,
    the smaller of the two for equalized odds, every row for the other metrics."""
    cells = [RATES[n][1] for n in rate_names(metric)] or [ALL]
    return np.min([counts[..., list(c)].sum(axis=-1) for c in cells], axis=0)


def distance(a: np.ndarray, b: np.ndarray, measure: str) -> np.ndarray:
    """|a - b| for `diff`; max/min for `ratio` (0/0 -> 1, x/0 -> inf); NaN if either side is NaN."""
    if measure == "diff":
        return np.abs(a - b)
    high, low = np.maximum(a, b), np.minimum(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = high / low
    return np.where(low == 0, np.where(high == 0, 1.0, np.inf), ratio)


def between_group_theil(sizes: np.ndarray, benefit_sums: np.ndarray) -> np.ndarray:
    """Between-group Theil index of two groups per comparison (last axis: the two groups).

    Each row's benefit b = 1 + prediction - label is replaced by its group's mean mu_j; with overall
    mean mu the index is sum_j (n_j / n) (mu_j / mu) ln(mu_j / mu) = sum_j (S_j / S) ln(mu_j / mu),
    S_j being the group's benefit sum. A group with zero benefit contributes 0; S = 0 gives NaN.
    """
    sizes = sizes.astype(float)
    sums = benefit_sums.astype(float)
    total = sums.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = total / sizes.sum(axis=-1, keepdims=True)
        mu_j = sums / sizes
        terms = np.where(sums > 0, (sums / total) * np.log(mu_j / mu), 0.0)
    return np.where(total[..., 0] > 0, terms.sum(axis=-1), np.nan)


@dataclass(frozen=True)
class Comparisons:
    """Which sides are compared: `left[i]` is a subgroup, `right[i]` another one or -1 for the rest."""

    kind: str
    left: np.ndarray
    right: np.ndarray

    @classmethod
    def build(cls, kind: str, n_groups: int) -> Comparisons:
        check_choice("comparison", kind, COMPARISONS)
        if kind == "rest":
            return cls(kind, np.arange(n_groups), np.full(n_groups, -1))
        check_quadratic(n_groups, "the pairwise comparison")
        left, right = np.triu_indices(n_groups, k=1)
        return cls(kind, left, right)

    def sides(self, per_group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-comparison values of additive per-group quantities (..., groups, cells): subgroup,
        other side."""
        if self.kind == "rest":
            rest = per_group.sum(axis=-2, keepdims=True) - per_group
            return per_group[..., self.left, :], rest[..., self.left, :]
        return per_group[..., self.left, :], per_group[..., self.right, :]

    def keys(self, groups: Subgroups) -> list[Any]:
        if self.kind == "rest":
            return [groups.key(g) for g in self.left]
        return [(groups.key(a), groups.key(b)) for a, b in zip(self.left, self.right, strict=True)]


@dataclass(frozen=True)
class Disparity:
    """Per-comparison disparities plus the values of each side that produced them."""

    comparisons: Comparisons
    values: np.ndarray
    sides: dict[str, tuple[np.ndarray, np.ndarray]]


def model_disparity(
    metric: str,
    counts: np.ndarray,
    comparisons: Comparisons,
    distance_measure: str | None,
    smoothing: float = 0.0,
) -> Disparity:
    """Disparity of one model (or dataset) metric for every comparison, from per-subgroup counts
    (..., groups, 4); `smoothing` is passed to `rate`."""
    left, right = comparisons.sides(counts)
    if metric == "theil_index":
        if distance_measure is not None:
            raise CheckInputError("theil_index takes no distance_measure (it compares the groups itself)")
        size = np.stack([left.sum(-1), right.sum(-1)], axis=-1)
        benefit = size + np.stack([left[..., FP] - left[..., FN], right[..., FP] - right[..., FN]], axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            means = benefit / size
        values = between_group_theil(size, benefit)
        return Disparity(comparisons, values, {"mean_benefit": (means[..., 0], means[..., 1])})
    measure = check_choice("distance_measure", distance_measure, DISTANCES)
    sides = {name: (rate(left, name, smoothing), rate(right, name, smoothing)) for name in rate_names(metric)}
    per_rate = [distance(a, b, measure) for a, b in sides.values()]
    values = per_rate[0] if len(per_rate) == 1 else np.maximum(*per_rate)
    return Disparity(comparisons, values, sides)


@overload
def reduce(values: np.ndarray, keys: Sequence[Any], reduction: str) -> float: ...


@overload
def reduce(values: np.ndarray, keys: Sequence[Any], reduction: None) -> dict[Any, float]: ...


@overload
def reduce(values: np.ndarray, keys: Sequence[Any], reduction: str | None) -> float | dict[Any, float]: ...


def reduce(values: np.ndarray, keys: Sequence[Any], reduction: str | None) -> float | dict[Any, float]:
    """Mean or max over the comparisons, skipping NaN (NaN when none is defined); None: a dict."""
    check_choice("reduction", reduction, REDUCTIONS)
    if reduction is None:
        return {k: float(v) for k, v in zip(keys, values, strict=True)}
    defined = values[~np.isnan(values)]
    if len(defined) == 0:
        return float("nan")
    return float(defined.mean() if reduction == "mean" else defined.max())


def positives_per_group(groups: Subgroups, y_true: np.ndarray) -> np.ndarray:
    return np.bincount(groups.codes, weights=y_true.astype(float), minlength=groups.n_groups)


def smoothed_rates(sizes: np.ndarray, positives: np.ndarray, concentration: float) -> np.ndarray:
    """Dirichlet-smoothed share of positive labels per subgroup: (pos + c/2) / (n + c), two outcomes."""
    if not concentration > 0:
        raise CheckInputError(f"concentration must be > 0, got {concentration}")
    return (np.asarray(positives, dtype=float) + concentration / 2.0) / (sizes + concentration)


def differential_fairness(rates: np.ndarray) -> np.ndarray:
    """Per subgroup (last axis), the largest |ln r_g - ln r_h| over the other subgroups h, for the
    positive and for the negative outcome rates (1 - r); the maximum over subgroups is the empirical
    differential fairness of Foulds et al. NaN with fewer than two subgroups."""
    if rates.shape[-1] < 2:
        return np.full(rates.shape, np.nan)

    def spread(r: np.ndarray) -> np.ndarray:
        high, low = r.max(axis=-1, keepdims=True), r.min(axis=-1, keepdims=True)
        return np.maximum(np.log(high / r), np.log(r / low))

    return np.maximum(spread(rates), spread(1 - rates))


def neighbour_label_means(
    level_codes: np.ndarray, sizes: np.ndarray, positives: np.ndarray, n_neighbors: int
) -> np.ndarray:
    """Expected share of positive labels among a row's `n_neighbors` nearest other rows.

    Neighbours are found among the one-hot encoded protected attributes, where the distance between
    two rows grows with the number of attributes they differ in: a row's nearest rows are the others
    of its subgroup, then the subgroups differing in one attribute, and so on. Every such level is a block
    of equally near rows, so when a level has more rows than free neighbour slots the choice among
    them is a tie; the expectation over those ties (uniform choice) is used, which makes the result
    independent of row order. `sizes` and `positives` are per subgroup (leading axes allowed, e.g.
    resamples); returns (..., n_groups, 2): for rows labelled 0 and labelled 1.
    """
    if not (isinstance(n_neighbors, (int, np.integer)) and n_neighbors >= 1):
        raise CheckInputError(f"n_neighbors must be an integer >= 1, got {n_neighbors!r}")
    check_quadratic(len(level_codes), "consistency")
    sizes, positives = np.asarray(sizes, dtype=float), np.asarray(positives, dtype=float)
    hamming = sum(
        (level_codes[:, None, a] != level_codes[None, :, a]).astype(np.int32)
        for a in range(level_codes.shape[1])
    )
    levels = [(hamming == level).astype(float) for level in range(level_codes.shape[1] + 1)]
    level_rows = np.stack([sizes @ same for same in levels], axis=-1)  # (..., group, level)
    level_positives = np.stack([positives @ same for same in levels], axis=-1)
    means = []
    for own_label in (0, 1):
        rows = level_rows.copy()
        pos = level_positives.copy()
        rows[..., 0] -= 1.0  # a row is not its own neighbour
        pos[..., 0] -= own_label
        before = np.cumsum(rows, axis=-1) - rows
        taken = np.clip(n_neighbors - before, 0.0, np.maximum(rows, 0.0))
        safe_rows = np.where(rows > 0, rows, 1.0)
        expected = np.where(rows > 0, taken * pos / safe_rows, 0.0).sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            means.append(expected / taken.sum(axis=-1))
    return np.stack(means, axis=-1)


def group_inconsistency(
    level_codes: np.ndarray, sizes: np.ndarray, positives: np.ndarray, n_neighbors: int
) -> np.ndarray:
    """Per subgroup, the mean over its rows of |label - share of positive labels among the neighbours|
    (exact for binary labels: the neighbour share never crosses the row's own label); NaN for an
    empty subgroup. Leading axes of `sizes` and `positives` are kept."""
    sizes, positives = np.asarray(sizes, dtype=float), np.asarray(positives, dtype=float)
    means = neighbour_label_means(level_codes, sizes, positives, n_neighbors)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = (sizes - positives) * np.nan_to_num(means[..., 0]) + positives * (
            1.0 - np.nan_to_num(means[..., 1])
        )
        return np.where(sizes > 0, total / sizes, np.nan)


def check_quadratic(n_groups: int, what: str) -> None:
    """Refuse work quadratic in the number of subgroups when there are implausibly many of them."""
    if n_groups > MAX_SUBGROUPS_QUADRATIC:
        raise CheckInputError(
            f"{what} is quadratic in the number of subgroups and there are {n_groups} "
            f"(at most {MAX_SUBGROUPS_QUADRATIC}); is a continuous column marked protected?"
        )


def check_choice(name: str, value: object, allowed: Sequence[T]) -> T:
    """`value` when it is one of `allowed` (so typed as they are); else an error naming the setting."""
    if value not in allowed:
        raise CheckInputError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return allowed[allowed.index(value)]


def binary(values: Any, name: str, positive_label: Any = 1) -> np.ndarray:
    """A label or prediction array as booleans (value == `positive_label`); more than two values, or
    two values of which none is the positive label, is an error naming the input."""
    array = pd.Series(values).to_numpy()
    distinct = pd.unique(array)
    if len(distinct) > 2:
        raise CheckInputError(
            f"{name} must be binary; it has {len(distinct)} distinct values (e.g. {list(distinct[:5])})"
        )
    positive = array == positive_label
    if len(distinct) == 2 and not positive.any():
        raise CheckInputError(f"{name}: positive label {positive_label!r} is not among {list(distinct)}")
    return positive
