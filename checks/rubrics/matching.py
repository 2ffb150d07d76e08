"""Vectorised one-to-one matching of predicted and true spans under the four SemEval criteria.

Two spans overlap when `p.start < t.end and t.start < p.end` (half-open: spans that only touch do not
overlap). Every prediction is paired with at most one true span and every true span with at most one
prediction, greedily, predictions taken in order of start: each takes, among the true spans of its
document that overlap it and are still free,

- `exact` and `partial`: the first with identical bounds, else the first overlapping one;
- `strict`: the first with identical bounds and tag, else the first overlapping one;
- `type`: the one with the same tag and the closest bounds (|dstart| + |dend|, first on ties), else
  the first overlapping one with another tag.

A paired prediction scores correct, incorrect or partial by its criterion; an unpaired prediction is
spurious (also when the true spans it overlaps were all taken by earlier predictions); an unpaired
true span is missing. So each prediction is counted once in `actual` and each true span once in
`possible`, however the spans nest or overlap. This is the assignment `nervaluate` 1.2.1 makes when
it is given the spans in the same order (it reads `end` as inclusive: pass `end - 1`), except that
nervaluate also requires the overlap to cover at least 1% of the true span (it never differs for
true spans shorter than 100 characters).

The greedy pass loops over the rank of a prediction inside its document (at most the largest number
of predictions of one document), each step vectorised over all documents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driftline.checks.rubrics.enums import CRITERIA, MatchCriterion
from driftline.checks.rubrics.spans import FlatSpans, joint_tag_codes

# Result codes (positions in MatchResult): correct, incorrect, partial, missing, spurious.
CORRECT, INCORRECT, PARTIAL, MISSING, SPURIOUS = range(5)


@dataclass(frozen=True)
class Matching:
    """The outcome of one criterion: for every prediction its paired truth (-1 for none) and result
    code; for every true span whether it was paired."""

    criterion: MatchCriterion
    pred_truth: np.ndarray
    pred_result: np.ndarray
    truth_paired: np.ndarray


@dataclass(frozen=True)
class _Pairs:
    """Overlapping (prediction, truth) pairs with the facts the criteria need."""

    pred: np.ndarray
    truth: np.ndarray
    same_bounds: np.ndarray
    same_tag: np.ndarray
    distance: np.ndarray


def overlapping_pairs(pred: FlatSpans, truth: FlatSpans, p_tag: np.ndarray, t_tag: np.ndarray) -> _Pairs:
    """Every (prediction, truth) pair of the same document whose spans overlap.

    Truths are sorted by (doc, start); the candidates of a prediction lie between the first truth whose
    running maximum end passes the prediction's start and the last truth starting before its end.
    """
    if len(pred) == 0 or len(truth) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Pairs(empty, empty, empty.astype(bool), empty.astype(bool), empty)
    width = int(max(pred.end.max(), truth.end.max())) + 1
    t_key_start = truth.doc * width + truth.start
    t_key_end = truth.doc * width + truth.end
    running_end = np.maximum.accumulate(t_key_end)
    lo = np.searchsorted(running_end, pred.doc * width + pred.start, side="right")
    hi = np.searchsorted(t_key_start, pred.doc * width + pred.end, side="left")
    n = np.maximum(hi - lo, 0)
    p_idx = np.repeat(np.arange(len(pred)), n)
    offsets = np.concatenate(([0], np.cumsum(n)[:-1]))
    t_idx = lo[p_idx] + (np.arange(int(n.sum())) - offsets[p_idx])
    keep = truth.end[t_idx] > pred.start[p_idx]
    p_idx, t_idx = p_idx[keep], t_idx[keep]
    ds = np.abs(pred.start[p_idx] - truth.start[t_idx])
    de = np.abs(pred.end[p_idx] - truth.end[t_idx])
    return _Pairs(p_idx, t_idx, (ds == 0) & (de == 0), p_tag[p_idx] == t_tag[t_idx], ds + de)


def _greedy(pred: FlatSpans, truth: FlatSpans, pairs: _Pairs, priority: np.ndarray) -> np.ndarray:
    """The truth each prediction takes (-1 for none): predictions in rank order inside their document,
    each the free candidate with the lowest (priority, truth index)."""
    assigned = np.full(len(pred), -1, dtype=np.int64)
    if len(pairs.pred) == 0:
        return assigned
    rank = pred.local_index()
    order = np.lexsort((pairs.truth, priority, pairs.pred, rank[pairs.pred]))
    p, t = pairs.pred[order], pairs.truth[order]
    pair_rank = rank[p]
    # Pairs of truths no other prediction can take need no greedy step: resolve them in one go.
    contested = np.bincount(t, minlength=len(truth)) > 1
    pred_contested = np.zeros(len(pred), dtype=bool)
    pred_contested[p[contested[t]]] = True
    free_pairs = ~pred_contested[p]
    first = np.r_[True, p[1:] != p[:-1]]
    pick = free_pairs & first
    assigned[p[pick]] = t[pick]
    taken = np.zeros(len(truth), dtype=bool)
    taken[t[pick]] = True
    busy = ~free_pairs
    p, t, pair_rank = p[busy], t[busy], pair_rank[busy]
    bounds = np.searchsorted(pair_rank, np.arange(int(pair_rank.max(initial=-1)) + 2))
    for r in range(len(bounds) - 1):
        a, b = bounds[r], bounds[r + 1]
        if a == b:
            continue
        sp, st = p[a:b], t[a:b]
        free = ~taken[st]
        sp, st = sp[free], st[free]
        if len(sp) == 0:
            continue
        head = np.r_[True, sp[1:] != sp[:-1]]
        assigned[sp[head]] = st[head]
        taken[st[head]] = True
    return assigned


def match_criterion(
    pred: FlatSpans,
    truth: FlatSpans,
    criterion: MatchCriterion,
    pairs: _Pairs,
    tags: tuple[np.ndarray, np.ndarray],
) -> Matching:
    """Pair and score predictions and truths under one criterion (see the module docstring)."""
    if criterion in (MatchCriterion.exact, MatchCriterion.partial):
        priority = (~pairs.same_bounds).astype(np.int64)
    elif criterion is MatchCriterion.strict:
        priority = (~(pairs.same_bounds & pairs.same_tag)).astype(np.int64)
    else:
        # Same tag first, closest bounds among them; other tags after, in truth order.
        priority = np.where(pairs.same_tag, pairs.distance, np.iinfo(np.int64).max)
    assigned = _greedy(pred, truth, pairs, priority)
    result = np.full(len(pred), SPURIOUS, dtype=np.int8)
    paired = assigned >= 0
    a = assigned[paired]
    same_bounds = (pred.start[paired] == truth.start[a]) & (pred.end[paired] == truth.end[a])
    p_tag, t_tag = tags
    same_tag = p_tag[paired] == t_tag[a]
    if criterion is MatchCriterion.exact:
        good, other = same_bounds, INCORRECT
    elif criterion is MatchCriterion.partial:
        good, other = same_bounds, PARTIAL
    elif criterion is MatchCriterion.strict:
        good, other = same_bounds & same_tag, INCORRECT
    else:
        good, other = same_tag, INCORRECT
    result[paired] = np.where(good, CORRECT, other)
    truth_paired = np.zeros(len(truth), dtype=bool)
    truth_paired[a] = True
    return Matching(criterion, assigned, result, truth_paired)


def match_all(
    pred: FlatSpans, truth: FlatSpans, criteria: tuple[MatchCriterion, ...] = CRITERIA
) -> dict[MatchCriterion, Matching]:
    """Every criterion's matching of the same spans (the overlap search is shared)."""
    if pred.n_docs != truth.n_docs:
        raise ValueError(f"{pred.n_docs} documents of predictions but {truth.n_docs} of truths")
    tags = joint_tag_codes(pred, truth)
    pairs = overlapping_pairs(pred, truth, *tags)
    out: dict[MatchCriterion, Matching] = {}
    for criterion in criteria:
        if criterion is MatchCriterion.partial and MatchCriterion.exact in out:
            # Same pairing as exact; only the label of a non-identical pair differs.
            exact = out[MatchCriterion.exact]
            result = np.where(exact.pred_result == INCORRECT, PARTIAL, exact.pred_result).astype(np.int8)
            out[criterion] = Matching(criterion, exact.pred_truth, result, exact.truth_paired)
        else:
            out[criterion] = match_criterion(pred, truth, criterion, pairs, tags)
    return out


def doc_counts(matching: Matching, pred: FlatSpans, truth: FlatSpans) -> np.ndarray:
    """Per document counts, shape (n_docs, 5): correct, incorrect, partial, missing, spurious."""
    n = pred.n_docs
    counts = np.zeros((n, 5), dtype=np.int64)
    cells = pred.doc * 5 + matching.pred_result
    counts += np.bincount(cells, minlength=n * 5).reshape(n, 5)
    counts[:, MISSING] = np.bincount(truth.doc[~matching.truth_paired], minlength=n)
    return counts
