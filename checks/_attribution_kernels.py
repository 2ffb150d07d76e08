"""Exact O(n log n) kernels attributing AUC-ROC to examples and to crosses of slices.

AUC is the share of (positive, negative) pairs ordered correctly, a tie counting one half. A pair's
credit (1, 1/2 or 0) can be split between its two members (example attribution) or summed over the
pairs of a cross of a negative slice and a positive slice (pair attribution). Both only need, for
each example, how many examples of the other class score below, level with or above it: one sort of
the scores gives all of these counts, so no pair is ever materialised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks.errors import CheckInputError
from driftline.checks.slicing import run_bounds

MISSING_LABEL = "<missing>"


def binary_labels(y_true: Any, positive_label: Any = None) -> np.ndarray:
    """Boolean positives from labels: `positive_label` when given, else 1/True out of {0, 1}."""
    values = pd.Series(np.asarray(y_true)) if not isinstance(y_true, pd.Series) else y_true
    if positive_label is not None:
        return (values == positive_label).to_numpy(dtype=bool)
    if pd.api.types.is_bool_dtype(values):
        return values.to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(values):
        numbers = values.to_numpy() if values.dtype.kind in "iu" else values.to_numpy(dtype=float)
        positive = numbers == 1
        if (positive | (numbers == 0)).all():
            return positive
    seen = sorted(map(str, pd.unique(values)))[:5]
    raise CheckInputError(f"labels must be 0/1 or boolean (set positive_label); found values {seen}")


def _validated(y_true: Any, y_score: Any) -> tuple[np.ndarray, np.ndarray]:
    positive = binary_labels(y_true)
    score = np.asarray(y_score, dtype=float)
    if score.ndim != 1 or len(score) != len(positive):
        raise CheckInputError(f"{len(positive)} labels but {score.size} scores: they must align one to one")
    if not np.isfinite(score).all():
        raise CheckInputError("scores contain NaN or inf: drop those rows first")
    n_pos = int(positive.sum())
    if n_pos == 0 or n_pos == len(positive):
        raise CheckInputError("AUC needs both classes; the labels hold a single class")
    return positive, score


@dataclass(frozen=True)
class _Ties:
    """The scores sorted once and cut into groups of equal score, in ascending order.

    Per group: its first and one-past-last sorted positions, and the positives before it and up to its
    end. Every count the kernels need follows from these (negatives are positions minus positives).
    """

    order: np.ndarray  # argsort of the scores
    positive_sorted: np.ndarray  # labels in sorted order
    starts: np.ndarray
    ends: np.ndarray
    pos_before: np.ndarray
    pos_through: np.ndarray

    @classmethod
    def of(cls, positive: np.ndarray, score: np.ndarray) -> _Ties:
        order = np.argsort(score)
        positive_sorted = positive[order]
        starts, lengths = run_bounds(score[order])
        ends = starts + lengths
        pos_cum = np.cumsum(positive_sorted.view(np.int8), dtype=np.int64)
        pos_before = pos_cum[starts] - positive_sorted[starts]
        return cls(order, positive_sorted, starts, ends, pos_before, pos_cum[ends - 1])

    @property
    def n_groups(self) -> int:
        return len(self.starts)

    def per_example(self, values: np.ndarray) -> np.ndarray:
        """Spread one value per group over the group's members, in sorted order."""
        if self.n_groups == len(self.order):
            return values
        return np.repeat(values, self.ends - self.starts)

    def group_ids(self) -> np.ndarray:
        """Tie-group index of every example, in the original order."""
        ids = np.empty(len(self.order), dtype=np.int64)
        ids[self.order] = self.per_example(np.arange(self.n_groups))
        return ids


def _pair_credit(ties: _Ties) -> np.ndarray:
    """Per example, the credit of its pairs: other-class examples it beats, plus one half per tie.

    A positive in group [a, b) beats the a - P_a negatives before it and ties the group's negatives,
    so its credit is the mean of the negative counts at both ends, ((a - P_a) + (b - P_b)) / 2; a
    negative's credit is likewise n_pos - (P_a + P_b) / 2.
    """
    ends_sum = (ties.pos_before + ties.pos_through).astype(float)
    as_negative = ties.pos_through[-1] - 0.5 * ends_sum
    as_positive = 0.5 * (ties.starts + ties.ends - ends_sum)
    sorted_credit = np.where(
        ties.positive_sorted, ties.per_example(as_positive), ties.per_example(as_negative)
    )
    credit = np.empty(len(ties.order))
    credit[ties.order] = sorted_credit
    return credit


def example_attribution(y_true: Any, y_score: Any, normalized: bool = True) -> np.ndarray:
    """Each example's share of the AUC credit of the (positive, negative) pairs it belongs to.

    A correctly ordered pair gives 1/2 to each member, a tie 1/4 each, a wrong pair nothing. Summed
    (`normalized=False`), the attributions over all examples divided by n_pos * n_neg equal the AUC.
    Normalised, each sum is divided by the example's number of pairs (n_neg for a positive, n_pos for
    a negative): values lie in [0, 1/2] and their mean over all examples is AUC / 2.
    """
    positive, score = _validated(y_true, y_score)
    attribution = _pair_credit(_Ties.of(positive, score))
    attribution *= 0.5
    if normalized:
        n_pos = int(positive.sum())
        attribution /= np.where(positive, len(positive) - n_pos, n_pos)
    return attribution


def auc(y_true: Any, y_score: Any) -> float:
    """AUC-ROC as the share of correctly ordered (positive, negative) pairs, ties counting one half."""
    return binary_auc(*_validated(y_true, y_score))


def binary_auc(positive: np.ndarray, score: np.ndarray) -> float:
    """AUC-ROC of boolean labels and finite scores (Mann-Whitney U, ties counting one half), without
    input checks; NaN when one class is absent."""
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    credit = _pair_credit(_Ties.of(positive, np.asarray(score, dtype=float)))
    return float(credit[positive].sum() / (n_pos * n_neg))


def slice_codes(slices: Any) -> tuple[np.ndarray, list[str]]:
    """Integer codes and readable labels of per-example slices.

    One column (array or Series) gives its values as labels; a DataFrame of several columns crosses
    them, labelled `col=value, col=value`. Missing values form their own slice, `<missing>`.
    """
    if isinstance(slices, pd.DataFrame):
        if slices.shape[1] == 1:
            return slice_codes(slices.iloc[:, 0])
        parts = [slice_codes(slices[c]) for c in slices.columns]
        cross = np.zeros(len(slices), dtype=np.int64)
        for codes, labels in parts:
            cross = cross * len(labels) + codes
        uniques, codes = np.unique(cross, return_inverse=True)
        labels = []
        for value in uniques:
            names = []
            for column, (_, part_labels) in zip(reversed(slices.columns), reversed(parts), strict=True):
                value, index = divmod(int(value), len(part_labels))
                names.append(f"{column}={part_labels[index]}")
            labels.append(", ".join(reversed(names)))
        return codes.astype(np.int64), labels
    column = slices if isinstance(slices, pd.Series) else pd.Series(np.asarray(slices))
    try:
        codes, uniques = pd.factorize(column, sort=True)
    except TypeError:  # values of mixed types cannot be sorted
        codes, uniques = pd.factorize(column)
    labels = [str(u) for u in uniques]
    if (codes < 0).any():
        codes = np.where(codes < 0, len(labels), codes)
        labels.append(MISSING_LABEL)
    return codes.astype(np.int64), labels


@dataclass(frozen=True)
class CrossMatrix:
    """AUC credit of every cross of a negative slice (rows) and a positive slice (columns).

    `correct[i, j]` is the summed pair attribution (ties one half) of the pairs whose negative lies in
    negative slice i and whose positive lies in positive slice j; `pairs[i, j]` counts those pairs;
    `headroom_se[i, j]` is the standard error of the cell's headroom (DeLong, see `pair_attribution`).
    """

    negative_slices: list[str]
    positive_slices: list[str]
    correct: np.ndarray
    pairs: np.ndarray
    headroom_se: np.ndarray

    @property
    def mean(self) -> np.ndarray:
        """Mean pair attribution per cell: the AUC restricted to that cross (NaN without pairs)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.pairs > 0, self.correct / np.maximum(self.pairs, 1), np.nan)

    @property
    def incorrect(self) -> np.ndarray:
        """Mis-ordered pairs per cell (ties one half): the cell's headroom in pairs."""
        return self.pairs - self.correct

    @property
    def auc(self) -> float:
        """The overall AUC: total credit over total pairs."""
        return float(self.correct.sum() / self.pairs.sum())

    def headroom(self) -> np.ndarray:
        """Each cell's share of 1 - AUC: mis-ordered pairs over all pairs (the cells sum to 1 - AUC)."""
        return self.incorrect / self.pairs.sum()

    def to_frame(self) -> pd.DataFrame:
        """One row per cell: negative and positive slice, pairs, mean attribution, incorrect pairs."""
        neg, pos = np.meshgrid(
            np.arange(len(self.negative_slices)), np.arange(len(self.positive_slices)), indexing="ij"
        )
        return pd.DataFrame(
            {
                "negative_slice": np.asarray(self.negative_slices, dtype=object)[neg.ravel()],
                "positive_slice": np.asarray(self.positive_slices, dtype=object)[pos.ravel()],
                "pairs": self.pairs.ravel(),
                "mean_attribution": self.mean.ravel(),
                "incorrect_pairs": self.incorrect.ravel(),
            }
        )

    def to_details(self) -> dict[str, Any]:
        """Plain lists for a result's details (enough to draw the matrix)."""
        return {
            "negative_slices": list(self.negative_slices),
            "positive_slices": list(self.positive_slices),
            "mean_attribution": self.mean.tolist(),
            "pairs": self.pairs.tolist(),
            "incorrect_pairs": self.incorrect.tolist(),
            "auc": self.auc,
        }


def pair_attribution(y_true: Any, y_score: Any, negative_slices: Any, positive_slices: Any) -> CrossMatrix:
    """Cross matrix of pair attributions: negatives by `negative_slices`, positives by `positive_slices`.

    Both slicings give one value per example (a column, or a DataFrame of two columns whose values are
    crossed); only the negatives' values of `negative_slices` and the positives' values of
    `positive_slices` matter. Costs one sort plus O(n) per slice.

    A cell's headroom (its mis-ordered pairs over all n_pos n_neg pairs) is a two-sample U-statistic;
    its DeLong variance is the variance over positives of each positive's mis-ordered share with the
    cell's negatives, over n_pos, plus the same over negatives, over n_neg (a share is 0 outside the
    cell's slice).
    """
    positive, score = _validated(y_true, y_score)
    neg_codes, neg_labels = _aligned_codes(negative_slices, positive, "negative_slices")
    pos_codes, pos_labels = _aligned_codes(positive_slices, positive, "positive_slices")
    ties = _Ties.of(positive, score)
    groups = ties.group_ids()
    pos_groups, pos_slice = groups[positive], pos_codes[positive]
    neg_groups, neg_slice = groups[~positive], neg_codes[~positive]
    neg_counts = np.bincount(neg_slice, minlength=len(neg_labels))
    pos_counts = np.bincount(pos_slice, minlength=len(pos_labels))
    correct = np.zeros((len(neg_labels), len(pos_labels)))
    var_over_positives = np.zeros_like(correct)
    for row in np.unique(neg_slice):
        credit = _credit_below(neg_groups[neg_slice == row], pos_groups, ties.n_groups)
        correct[row] = np.bincount(pos_slice, weights=credit, minlength=len(pos_labels))
        share = (neg_counts[row] - credit) / len(neg_groups)  # mis-ordered with the row's negatives
        var_over_positives[row] = _cell_variance(share, pos_slice, len(pos_labels))
    var_over_negatives = np.zeros_like(correct)
    for column in np.unique(pos_slice):
        # a negative's mis-ordered pairs with the column's positives: those scored below it, ties 1/2
        share = _credit_below(pos_groups[pos_slice == column], neg_groups, ties.n_groups) / len(pos_groups)
        var_over_negatives[:, column] = _cell_variance(share, neg_slice, len(neg_labels))
    headroom_se = np.sqrt(var_over_positives / len(pos_groups) + var_over_negatives / len(neg_groups))
    keep_neg, keep_pos = neg_counts > 0, pos_counts > 0
    return CrossMatrix(
        _kept(neg_labels, keep_neg),
        _kept(pos_labels, keep_pos),
        correct[keep_neg][:, keep_pos],
        np.outer(neg_counts, pos_counts)[keep_neg][:, keep_pos],
        headroom_se[keep_neg][:, keep_pos],
    )


def _credit_below(others: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """For each example in tie group `groups`, how many of the examples in tie groups `others` score
    below it, a tie counting one half."""
    in_group = np.bincount(others, minlength=n_groups)
    below = np.cumsum(in_group) - in_group
    return below[groups] + 0.5 * in_group[groups]


def _cell_variance(share: np.ndarray, codes: np.ndarray, n_cells: int) -> np.ndarray:
    """Per cell c, the sample variance over all examples of `share` where the example's code is c and
    0 elsewhere."""
    n = len(share)
    if n < 2:
        return np.full(n_cells, np.inf)
    total = np.bincount(codes, weights=share, minlength=n_cells)
    squares = np.bincount(codes, weights=share * share, minlength=n_cells)
    return np.maximum(squares - total * total / n, 0.0) / (n - 1)


def _kept(labels: Sequence[str], keep: np.ndarray) -> list[str]:
    return [label for label, k in zip(labels, keep, strict=True) if k]


def _aligned_codes(slices: Any, positive: np.ndarray, name: str) -> tuple[np.ndarray, list[str]]:
    codes, labels = slice_codes(slices)
    if len(codes) != len(positive):
        raise CheckInputError(f"{name} has {len(codes)} values for {len(positive)} examples")
    return codes, labels
