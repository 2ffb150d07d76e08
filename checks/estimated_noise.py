"""The two noises of a label-free classification estimate (`performance.estimated`).

- The band: NannyML's CBPE sampling error, from components measured once on the labelled reference
  (the spread of an observation-level version of each metric and the share of rows it rests on),
  divided by √(n · share) on a batch of n rows. Shown as `sampling_error`, `lower` and `upper`.
- The grade's noise: the spread of the realised metric on a batch like this one, simulated from the
  batch's own rows: rows resampled with replacement, each labelled positive with its calibrated
  probability, the metric computed on every draw (seeded). It holds the rows' noise and the labels'
  at the batch's size, so a 30-row batch with a rare class is as uncertain as it really is.
"""

from __future__ import annotations

import math

import numpy as np

METRICS = ("accuracy", "precision", "recall", "f1", "auc")
SIMULATION_DRAWS = 400
# The simulation runs at most this many rows a draw; a larger batch's spread is scaled by √(rows / n).
SIMULATION_ROWS = 2000
# A metric whose simulated draws are undefined (no positive, no predicted positive) more often than
# this share of the time has no finite spread: it is not graded.
MAX_UNDEFINED_SHARE = 0.5
SEED = 0


# --- NannyML's band --------------------------------------------------------------------------------------


def _spread(values: np.ndarray) -> float:
    """Population standard deviation of observation-level values (NaN when there are none)."""
    return float(np.std(values)) if len(values) else float("nan")


def auc_components(truth: np.ndarray, score: np.ndarray) -> tuple[float, float]:
    """NannyML's AUC components: with the minority class as positive, each positive's share of the
    negatives ranked below it (rows ordered by score, ties by position), its spread and the positives'
    share."""
    truth = np.asarray(truth, dtype=bool)
    score = np.asarray(score, dtype=float)
    if truth.mean() > 0.5:
        truth, score = ~truth, 1.0 - score
    ordered = truth[np.argsort(score)]
    negatives = len(ordered) - int(ordered.sum())
    if not negatives or not ordered.any():
        return float("nan"), 0.0
    # NannyML keeps the non-zero ranks of positives (a positive ranked first is left out) and counts
    # the negatives below the i-th of them as its rank minus i
    ranks = np.flatnonzero(ordered)
    ranks = ranks[ranks > 0]
    placements = ranks - np.arange(len(ranks))
    return float(np.std(placements / negatives)), float(ordered.mean())


def band_components(
    truth: np.ndarray, predicted: np.ndarray, score: np.ndarray
) -> dict[str, tuple[float, float]]:
    """NannyML's sampling-error components of every metric on the labelled reference: (spread, share)."""
    truth = np.asarray(truth, dtype=bool)
    predicted = np.asarray(predicted, dtype=bool)
    rows = len(truth)
    tp = int(np.count_nonzero(truth & predicted))
    fp = int(np.count_nonzero(~truth & predicted))
    fn = int(np.count_nonzero(truth & ~predicted))
    hits, fp_rows, fn_rows = np.ones(tp), np.zeros(fp), np.zeros(fn)
    f1_rows = tp + fp + fn
    correction = f1_rows / ((fn + fp) * 0.5 + tp) if f1_rows else 0.0
    return {
        "accuracy": (float(np.std(truth == predicted)), 1.0),
        "precision": (_spread(np.r_[hits, fp_rows]), (tp + fp) / rows),
        "recall": (_spread(np.r_[hits, fn_rows]), (tp + fn) / rows),
        "f1": (_spread(np.r_[hits, fn_rows, fp_rows] * correction), f1_rows / rows),
        "auc": auc_components(truth, score),
    }


def band_error(components: tuple[float, float], rows: int) -> float:
    """NannyML's sampling error on `rows` rows: spread / √(rows · share); infinite when undefined."""
    spread, share = components
    if not share > 0 or not math.isfinite(spread) or rows < 1:
        return math.inf
    return spread / math.sqrt(rows * share)


# --- the realised metric's simulated spread -----------------------------------------------------------------


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), np.nan)


def simulated_auc(labels: np.ndarray, levels: np.ndarray, count: int) -> np.ndarray:
    """The AUC of each row of `labels` (draws × rows), rows ranked by their score's level (0 to
    `count` - 1, ties sharing a level count half): Mann–Whitney from per-level label counts."""
    draws = labels.shape[0]
    flat = (np.arange(draws)[:, None] * count + levels).ravel()
    positives = np.bincount(flat, weights=labels.ravel(), minlength=draws * count).reshape(draws, count)
    negatives = np.bincount(flat, minlength=draws * count).reshape(draws, count) - positives
    below = np.cumsum(negatives, axis=1) - negatives
    pairs = positives.sum(axis=1) * negatives.sum(axis=1)
    return _ratio((positives * (below + 0.5 * negatives)).sum(axis=1), pairs)


def simulated_metrics(
    labels: np.ndarray, predicted: np.ndarray, levels: np.ndarray, count: int
) -> dict[str, np.ndarray]:
    """Every metric of each row of `labels` (draws × rows) against `predicted`, the AUC ranking rows
    by their score's level (`simulated_auc`); NaN where a draw leaves a metric undefined."""
    tp = np.count_nonzero(labels & predicted, axis=1).astype(float)
    fp = np.count_nonzero(~labels & predicted, axis=1).astype(float)
    fn = np.count_nonzero(labels & ~predicted, axis=1).astype(float)
    rows = labels.shape[1]
    return {
        "accuracy": (rows - fp - fn) / rows,
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "auc": simulated_auc(labels, levels, count),
    }


def realised_spread(
    p: np.ndarray, predicted: np.ndarray, score: np.ndarray, rows: int | None = None, seed: int = SEED
) -> dict[str, float]:
    """Standard deviation of each realised metric on `rows` rows (the given rows' count by default)
    like these: rows drawn with replacement (at most `SIMULATION_ROWS` a draw, the spread then scaled
    by √(drawn / rows)), labels drawn positive with probability p. Infinite for a metric undefined on
    more than `MAX_UNDEFINED_SHARE` of the draws."""
    # rows in an order fixed by their values, so that the draws do not depend on the batch's order
    order = np.lexsort((np.asarray(predicted), np.asarray(p), np.asarray(score)))
    p, predicted, score = (np.asarray(a)[order] for a in (p, predicted, score))
    p = p.astype(float)
    rows = len(p) if rows is None else rows
    drawn = min(rows, SIMULATION_ROWS)
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, len(p), size=(SIMULATION_DRAWS, drawn))
    labels = rng.random(picked.shape) < p[picked]
    levels, codes = np.unique(np.asarray(score, dtype=float), return_inverse=True)
    values = simulated_metrics(labels, np.asarray(predicted, dtype=bool)[picked], codes[picked], len(levels))
    spread = {}
    for metric, draws in values.items():
        finite = draws[np.isfinite(draws)]
        if len(finite) < max(2, (1 - MAX_UNDEFINED_SHARE) * SIMULATION_DRAWS):
            spread[metric] = math.inf
        else:
            spread[metric] = float(np.std(finite, ddof=1) * math.sqrt(drawn / rows))
    return spread
