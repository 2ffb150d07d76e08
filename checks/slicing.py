"""Subsets of rows and per-subset metric kernels.

A feature is cut into subsets once on the reference: a categorical feature into its most frequent
values, a numeric feature into right-closed bins at the reference quantiles (as `pd.qcut` does, with
the outer edges opened to -inf/inf so every batch value lands in a bin). Applying the cut to a batch
gives one integer code per row; the kernels below then compute a metric for every subset at once with
`np.bincount` and one sort, never a Python loop over rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from driftline.checks.errors import CheckInputError
from driftline.checks.evidence import NULL_DRAWS, auc_standard_error, bootstrap_standard_error

MISSING = "(missing)"
OTHER = "(other)"


# --- building subsets ------------------------------------------------------------------------------


def fit_slices(values: pd.Series, *, bins: int, max_categories: int, numeric: bool) -> dict[str, Any]:
    """The subset definition of one reference feature (a small, picklable dict)."""
    if numeric:
        return _fit_numeric(values, bins)
    return _fit_categorical(values, max_categories)


def _fit_numeric(values: pd.Series, bins: int) -> dict[str, Any]:
    if not pd.api.types.is_numeric_dtype(values):
        raise CheckInputError(
            f"feature {values.name!r} is not numeric in the reference (dtype {values.dtype})"
        )
    x = values.to_numpy(dtype=float, na_value=np.nan)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        raise CheckInputError(f"feature {values.name!r} has no finite value in the reference")
    edges = np.unique(np.quantile(x, np.linspace(0.0, 1.0, bins + 1)))[1:-1]
    bounds = [-np.inf, *edges.tolist(), np.inf]
    labels = [f"({lo:.6g}, {hi:.6g}]" for lo, hi in itertools.pairwise(bounds)]
    labels[-1] = labels[-1].replace("]", ")")
    return {"kind": "numeric", "edges": edges.tolist(), "labels": [*labels, MISSING]}


def _fit_categorical(values: pd.Series, max_categories: int) -> dict[str, Any]:
    counts = values.value_counts(dropna=True, sort=True)
    if len(counts) == 0:
        raise CheckInputError(f"feature {values.name!r} has no value in the reference")
    categories = counts.index[:max_categories].tolist()
    labels = [str(c) for c in categories]
    return {"kind": "categorical", "categories": categories, "labels": [*labels, OTHER, MISSING]}


def apply_slices(values: pd.Series, slices: dict[str, Any]) -> np.ndarray:
    """Subset code of every batch row (an index into `slices["labels"]`)."""
    missing_code = len(slices["labels"]) - 1
    if slices["kind"] == "numeric":
        if not pd.api.types.is_numeric_dtype(values):
            raise CheckInputError(
                f"feature {values.name!r} is numeric in the reference but {values.dtype} in the batch"
            )
        x = values.to_numpy(dtype=float, na_value=np.nan)
        codes = _bin_codes(x, np.asarray(slices["edges"], dtype=float))
        codes[np.isnan(x)] = missing_code
        return codes
    row_codes, uniques = pd.factorize(values, use_na_sentinel=True)
    if len(uniques) == 0:  # every value is missing
        return np.full(len(values), missing_code, dtype=np.intp)
    known = pd.Index(slices["categories"]).get_indexer(pd.Index(uniques, dtype=object))
    lookup = np.where(known >= 0, known, missing_code - 1)  # unseen values -> OTHER
    return np.where(row_codes >= 0, lookup[row_codes], missing_code).astype(np.intp, copy=False)


def _bin_codes(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Index of the right-closed bin of each value: the number of edges strictly below it.

    A few edges are cheaper to count with vectorised comparisons than with a binary search per value.
    """
    if len(edges) > 16:
        return np.searchsorted(edges, x, side="left").astype(np.intp, copy=False)
    codes = np.zeros(len(x), dtype=np.intp)
    for edge in edges:
        codes += x > edge
    return codes


# --- grouped kernels -------------------------------------------------------------------------------


def _small_int(codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Codes in the narrowest integer type, so that a stable sort on them is a radix sort."""
    return codes.astype(np.min_scalar_type(max(n_groups - 1, 0)), copy=False)


def group_sum(codes: np.ndarray, n_groups: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Per-group sum of `weights` (row count when None), as float."""
    return np.bincount(codes, weights=weights, minlength=n_groups).astype(float)


def group_counts(codes: np.ndarray, n_groups: int, cells: np.ndarray, n_cells: int) -> np.ndarray:
    """Per-group histogram of integer `cells` in [0, n_cells): shape (n_groups, n_cells)."""
    flat = np.bincount(codes * n_cells + cells, minlength=n_groups * n_cells)
    return flat.reshape(n_groups, n_cells)


def divide(num: ArrayLike, den: ArrayLike) -> np.ndarray:
    """num / den with NaN where den is 0 (an undefined metric, not a warning)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def sort_within_groups(
    values: np.ndarray, codes: np.ndarray, n_groups: int, order: np.ndarray | None = None
) -> np.ndarray:
    """Permutation ordering rows by (group, value); pass `order = argsort(values)` to reuse a sort."""
    if order is None:
        order = np.argsort(values, kind="stable")
    return order[np.argsort(_small_int(codes[order], n_groups), kind="stable")]


def run_bounds(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start positions and lengths of the runs of equal keys in a sorted, non-empty array."""
    boundary = np.empty(len(sorted_keys), dtype=bool)
    boundary[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=boundary[1:])
    starts = np.flatnonzero(boundary)
    return starts, np.diff(starts, append=len(sorted_keys))


def tie_runs(sorted_codes: np.ndarray, sorted_values: np.ndarray) -> np.ndarray:
    """Run id of each position in a (group, value)-sorted array; equal (group, value) share a run."""
    new = np.empty(len(sorted_codes), dtype=bool)
    new[:1] = True
    new[1:] = (sorted_codes[1:] != sorted_codes[:-1]) | (sorted_values[1:] != sorted_values[:-1])
    return np.cumsum(new) - 1


def within_group_ranks(
    values: np.ndarray, codes: np.ndarray, n_groups: int, order: np.ndarray | None = None
) -> np.ndarray:
    """1-based rank of each row's value within its group, ties given their average rank."""
    perm = sort_within_groups(values, codes, n_groups, order)
    sorted_codes = codes[perm]
    runs = tie_runs(sorted_codes, values[perm])
    position = np.arange(len(perm), dtype=float)
    run_middle = np.bincount(runs, weights=position) / np.bincount(runs)
    group_start = np.concatenate(([0], np.cumsum(np.bincount(codes, minlength=n_groups))[:-1]))
    ranks = np.empty(len(perm))
    ranks[perm] = run_middle[runs] - group_start[sorted_codes] + 1.0
    return ranks


def grouped_auc(
    score: np.ndarray, positive: np.ndarray, codes: np.ndarray, n_groups: int, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC AUC per group (Mann-Whitney U with ties counted 1/2), with positive and negative counts.

    AUC = (sum of positive ranks - n_pos (n_pos + 1) / 2) / (n_pos n_neg); NaN for a one-class group.
    """
    ranks = within_group_ranks(score, codes, n_groups, order)
    n_pos = group_sum(codes[positive], n_groups)
    n_neg = group_sum(codes, n_groups) - n_pos
    rank_sum = group_sum(codes[positive], n_groups, ranks[positive])
    return divide(rank_sum - n_pos * (n_pos + 1) / 2, n_pos * n_neg), n_pos, n_neg


def hanley_mcneil_se(auc: np.ndarray, n_pos: np.ndarray, n_neg: np.ndarray) -> np.ndarray:
    """Hanley–McNeil standard error of every group's AUC (`checks.evidence.auc_standard_error`);
    NaN where the AUC is undefined."""
    return np.array(
        [
            auc_standard_error(float(a), int(p), int(n)) if math.isfinite(a) else math.nan
            for a, p, n in zip(auc, n_pos, n_neg, strict=True)
        ]
    )


def grouped_moments(x: np.ndarray, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, ...]:
    """Per-group size, mean, population variance (ddof=0) and fourth central moment."""
    size = group_sum(codes, n_groups)
    mean = divide(group_sum(codes, n_groups, x), size)
    dev2 = (x - mean[codes]) ** 2
    var = divide(group_sum(codes, n_groups, dev2), size)
    m4 = divide(group_sum(codes, n_groups, dev2**2), size)
    return size, mean, var, m4


def mean_se(var: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Standard error of a mean from the population variance of its terms: sqrt(var / (n - 1)).

    Equal to the sample standard deviation over sqrt(n); NaN for fewer than two terms.
    """
    return np.sqrt(np.clip(divide(var, size - 1), 0.0, None))


def bootstrap_se(
    counts: np.ndarray, metric: Callable[[np.ndarray], np.ndarray], draws: int = NULL_DRAWS
) -> np.ndarray:
    """Seeded bootstrap standard error of a metric of every group's cell counts, shape (n_groups,
    n_cells) (`checks.evidence.bootstrap_standard_error`); NaN for an empty group."""
    return np.array(
        [bootstrap_standard_error(metric, row, draws) if row.sum() > 0 else math.nan for row in counts]
    )
