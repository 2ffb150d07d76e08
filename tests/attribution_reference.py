"""Literal quadratic AUC attributions: every (positive, negative) pair compared, as the paper defines them.

Used by the tests to check the O(n log n) kernels and by the benchmark for scale. Pairs are compared
in blocks of positives so memory stays bounded; the work stays n_pos * n_neg comparisons.
"""

from __future__ import annotations

import numpy as np

BLOCK = 512


def _pair_credit_blocks(positive: np.ndarray, score: np.ndarray):
    """Yield (positive indices, credit matrix) blocks: 1 correct, 1/2 tie, 0 wrong, per pair."""
    pos, neg = np.flatnonzero(positive), np.flatnonzero(~positive)
    for start in range(0, len(pos), BLOCK):
        rows = pos[start : start + BLOCK]
        a, b = score[rows][:, None], score[neg][None, :]
        yield rows, neg, (a > b) + 0.5 * (a == b)


def quadratic_attribution(y_true, y_score, normalized: bool = True) -> np.ndarray:
    """A correct pair gives 1/2 to each member (a tie 1/4): summed, or averaged over the example's pairs."""
    positive = np.asarray(y_true).astype(bool)
    score = np.asarray(y_score, dtype=float)
    total = np.zeros(len(score))
    for rows, neg, credit in _pair_credit_blocks(positive, score):
        total[rows] += credit.sum(axis=1) / 2
        total[neg] += credit.sum(axis=0) / 2
    if not normalized:
        return total
    n_pos = positive.sum()
    return total / np.where(positive, len(score) - n_pos, n_pos)


def quadratic_cross(y_true, y_score, negative_slices, positive_slices) -> dict[tuple[str, str], list[float]]:
    """(negative slice, positive slice) -> [credit, pairs], by a Python loop over every pair."""
    positive = np.asarray(y_true).astype(bool)
    score = np.asarray(y_score, dtype=float)
    cells: dict[tuple[str, str], list[float]] = {}
    for j in np.flatnonzero(~positive):
        for i in np.flatnonzero(positive):
            credit = 1.0 if score[i] > score[j] else 0.5 if score[i] == score[j] else 0.0
            cell = cells.setdefault((str(negative_slices[j]), str(positive_slices[i])), [0.0, 0.0])
            cell[0] += credit
            cell[1] += 1
    return cells
