"""Vectorised matching of predicted and true spans under the four SemEval criteria, in two modes.

Two spans overlap when `p.start < t.end and t.start < p.end` (half-open: spans that only touch do not
overlap). A scored (prediction, truth) pair is, by criterion:

- `exact`: correct when the bounds are identical, otherwise incorrect;
- `partial`: correct when the bounds are identical, otherwise partial;
- `strict`: correct when the bounds and the tag are identical, otherwise incorrect;
- `type`: correct when the tag is the same, otherwise incorrect.

`MatchingMode.overlap` (the default; the audit-rubric definition) scores every overlapping pair: a
prediction over two true spans gives two rows, and so does a true span under two predictions. A
prediction that overlaps no true span is spurious, a true span that no prediction overlaps is missing.
Counts are of rows, so `actual` and `possible` can exceed the numbers of predictions and true spans.

`MatchingMode.one_to_one` (nervaluate's counting) pairs every prediction with at most one true span
and every true span with at most one prediction, greedily, predictions taken in order of start: each
takes, among the true spans of its document that overlap it and are still free,

- `exact` and `partial`: the first with identical bounds, else the first overlapping one;
- `strict`: the first with identical bounds and tag, else the first overlapping one;
- `type`: the one with the same tag and the closest bounds (|dstart| + |dend|, first on ties), else
  the first overlapping one with another tag.

An unpaired prediction is spurious (also when the true spans it overlaps were all taken by earlier
predictions) and an unpaired true span is missing, so each prediction counts once in `actual` and each
true span once in `possible`. This is the assignment nervaluate 1.2.1 makes when given the spans in the
same order (it reads `end` as inclusive: pass `end - 1`), except that nervaluate also requires the
overlap to cover at least 1% of the true span (it never differs for true spans shorter than 100
characters). The greedy pass loops over the rank of a prediction inside its document, each step
vectorised over all documents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driftline.checks.rubrics.enums import CRITERIA, MatchCriterion, MatchingMode
from driftline.checks.rubrics.spans import FlatSpans, joint_tag_codes

# Result codes (positions in MatchResult): correct, incorrect, partial, missing, spurious.
CORRECT, INCORRECT, PARTIAL, MISSING, SPURIOUS = range(5)


@dataclass(frozen=True)
class Matching:
    """The rows of one criterion: the rows naming a prediction (`pred`, its `truth` or -1, `result`),
    in prediction order, and `missing`, the true spans that get a row of their own."""

    criterion: MatchCriterion
    pred: np.ndarray
    truth: np.ndarray
    result: np.ndarray
    missing: np.ndarray


@dataclass(frozen=True)
class _Pairs:
    """Overlapping (prediction, truth) pairs, sorted by (prediction, truth), with the facts the
    criteria need."""

    pred: np.ndarray
    truth: np.ndarray
    same_bounds: np.ndarray
    same_tag: np.ndarray
    distance: np.ndarray


@dataclass(frozen=True)
class _Rows:
    """A pairing shared by criteria: the pair (-1 for none) of every prediction-side row, and the
    true spans left without a row."""

    pred: np.ndarray
    pair: np.ndarray
    missing: np.ndarray


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
    """The pair each prediction takes (-1 for none): predictions in rank order inside their document,
    each the pair of its free candidate with the lowest (priority, truth index)."""
    chosen = np.full(len(pred), -1, dtype=np.int64)
    if len(pairs.pred) == 0:
        return chosen
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
    chosen[p[pick]] = order[pick]
    taken = np.zeros(len(truth), dtype=bool)
    taken[t[pick]] = True
    busy = ~free_pairs
    p, t, q, pair_rank = p[busy], t[busy], order[busy], pair_rank[busy]
    bounds = np.searchsorted(pair_rank, np.arange(int(pair_rank.max(initial=-1)) + 2))
    for r in range(len(bounds) - 1):
        a, b = bounds[r], bounds[r + 1]
        if a == b:
            continue
        free = ~taken[t[a:b]]
        sp, st, sq = p[a:b][free], t[a:b][free], q[a:b][free]
        if len(sp) == 0:
            continue
        head = np.r_[True, sp[1:] != sp[:-1]]
        chosen[sp[head]] = sq[head]
        taken[st[head]] = True
    return chosen


def _priority(criterion: MatchCriterion, pairs: _Pairs) -> np.ndarray:
    """Order of preference among a prediction's candidates under one_to_one (lower first)."""
    if criterion in (MatchCriterion.exact, MatchCriterion.partial):
        return (~pairs.same_bounds).astype(np.int64)
    if criterion is MatchCriterion.strict:
        return (~(pairs.same_bounds & pairs.same_tag)).astype(np.int64)
    # Same tag first, closest bounds among them; other tags after, in truth order.
    return np.where(pairs.same_tag, pairs.distance, np.iinfo(np.int64).max)


def _one_to_one_rows(pred: FlatSpans, truth: FlatSpans, pairs: _Pairs, criterion: MatchCriterion) -> _Rows:
    """One row per prediction with the pair it takes; the true spans no prediction took are missing."""
    chosen = _greedy(pred, truth, pairs, _priority(criterion, pairs))
    missing = np.ones(len(truth), dtype=bool)
    missing[pairs.truth[chosen[chosen >= 0]]] = False
    return _Rows(np.arange(len(pred)), chosen, missing)


def _overlap_rows(pred: FlatSpans, truth: FlatSpans, pairs: _Pairs) -> _Rows:
    """One row per overlapping pair and one per prediction overlapping nothing, in prediction order;
    the true spans no prediction overlaps are missing."""
    per_pred = np.bincount(pairs.pred, minlength=len(pred))
    size = np.maximum(per_pred, 1)
    row_start = np.concatenate(([0], np.cumsum(size)[:-1]))
    pair_start = np.concatenate(([0], np.cumsum(per_pred)[:-1]))
    rows = np.full(int(size.sum()), -1, dtype=np.int64)
    at = row_start[pairs.pred] + np.arange(len(pairs.pred)) - pair_start[pairs.pred]
    rows[at] = np.arange(len(pairs.pred))
    missing = np.bincount(pairs.truth, minlength=len(truth)) == 0
    return _Rows(np.repeat(np.arange(len(pred)), size), rows, missing)


def _score(criterion: MatchCriterion, rows: _Rows, pairs: _Pairs) -> Matching:
    """Result of every row under `criterion` (the rules of the module docstring); no pair is spurious."""
    has = rows.pair >= 0
    pair = rows.pair[has]
    same_bounds, same_tag = pairs.same_bounds[pair], pairs.same_tag[pair]
    if criterion is MatchCriterion.exact:
        good, other = same_bounds, INCORRECT
    elif criterion is MatchCriterion.partial:
        good, other = same_bounds, PARTIAL
    elif criterion is MatchCriterion.strict:
        good, other = same_bounds & same_tag, INCORRECT
    else:
        good, other = same_tag, INCORRECT
    result = np.full(len(rows.pair), SPURIOUS, dtype=np.int8)
    result[has] = np.where(good, CORRECT, other)
    truth = np.full(len(rows.pair), -1, dtype=np.int64)
    truth[has] = pairs.truth[pair]
    return Matching(criterion, rows.pred, truth, result, rows.missing)


def _pairing_criterion(criterion: MatchCriterion) -> MatchCriterion:
    """The criterion whose one_to_one pairing `criterion` uses (partial pairs as exact)."""
    return MatchCriterion.exact if criterion is MatchCriterion.partial else criterion


def match_all(
    pred: FlatSpans,
    truth: FlatSpans,
    criteria: tuple[MatchCriterion, ...] = CRITERIA,
    mode: MatchingMode = MatchingMode.overlap,
) -> dict[MatchCriterion, Matching]:
    """Every criterion's matching of the same spans (the overlap search, and pairings, are shared)."""
    if pred.n_docs != truth.n_docs:
        raise ValueError(f"{pred.n_docs} documents of predictions but {truth.n_docs} of truths")
    pairs = overlapping_pairs(pred, truth, *joint_tag_codes(pred, truth))
    pairings: dict[MatchCriterion | None, _Rows] = {}
    out: dict[MatchCriterion, Matching] = {}
    for criterion in criteria:
        # Overlap scores the same rows under every criterion; one_to_one pairs partial as exact.
        key = None if mode is MatchingMode.overlap else _pairing_criterion(criterion)
        if key not in pairings:
            pairings[key] = (
                _overlap_rows(pred, truth, pairs)
                if key is None
                else _one_to_one_rows(pred, truth, pairs, key)
            )
        out[criterion] = _score(criterion, pairings[key], pairs)
    return out


def doc_counts(matching: Matching, pred: FlatSpans, truth: FlatSpans) -> np.ndarray:
    """Per document counts, shape (n_docs, 5): correct, incorrect, partial, missing, spurious."""
    n = pred.n_docs
    cells = pred.doc[matching.pred] * 5 + matching.result
    counts = np.bincount(cells, minlength=n * 5).reshape(n, 5)
    counts[:, MISSING] = np.bincount(truth.doc[matching.missing], minlength=n)
    return counts
