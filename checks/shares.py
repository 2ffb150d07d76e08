"""Each category's share of a batch against the reference's, as a signed score: the evidence the
sustained layer (`checks.sequential`) accumulates for targets made of counts (a categorical feature,
a class label, predicted classes), sharper than the one-sided p-value of their PSI or largest share
change.

A category's score is the signed root of the likelihood-ratio (G) statistic of its 2 × 2 table (its
rows and the others', in the batch and in the reference): about N(0, 1) with nothing changed, and
positive when its share rose, so that a window sums changes in one direction instead of two-sided
scores that sit below zero near no change. Batches compared with one reference share its sampling
error: their scores correlate by n / (n + m), as the p-value scores do.

Only categories holding at least `MIN_SHARE_ROWS` reference rows, and expected at least that often in
the batch, both they and the other rows, are scored, at most `MAX_SHARE_CATEGORIES`, the most
frequent in the reference: a count expected 20 times has scores of mean −0.03 and tails within 15%
of the normal law's at 2.5 and 3 (a fall of a category expected 6 times is two to three times
likelier than the normal law says). A target of two bins gets one score, its less frequent bin's
(a binary label's rarer class, usually the one that matters), the other's being its negative.
Which categories are scored depends on the reference and the batch's size only, never on its
values, so their number can split a false-alarm budget.

Each scored category is stored as [score, reference share, batch share]: the shares let the
sustained layer require that a window's mean change matters (`psi_share_change` turns a PSI into the
share change that reaches it), since certainty alone is not worth a page.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import special

MIN_SHARE_ROWS = 20
MAX_SHARE_CATEGORIES = 32
# The details key a result stores its scores under, {category: score}.
SHARE_SCORES = "share_scores"


def signed_root_g(
    hits: np.ndarray, rows: float, reference_hits: np.ndarray, reference_rows: float
) -> np.ndarray:
    """sign(batch share − reference share) · √G of each category's 2 × 2 table against the reference,
    G = 2 Σ O ln(O / E) over the table's four cells, E from its margins."""
    hits, reference_hits = np.broadcast_arrays(
        np.asarray(hits, dtype=float), np.asarray(reference_hits, dtype=float)
    )
    observed = np.stack([hits, rows - hits, reference_hits, reference_rows - reference_hits])
    pooled = (hits + reference_hits) / (rows + reference_rows)
    expected = np.stack(
        [rows * pooled, rows * (1 - pooled), reference_rows * pooled, reference_rows * (1 - pooled)]
    )
    ratio = np.divide(observed, expected, out=np.ones_like(observed), where=expected > 0)
    g = 2.0 * special.xlogy(observed, ratio).sum(axis=0)
    return np.sign(hits / rows - reference_hits / reference_rows) * np.sqrt(np.maximum(g, 0.0))


def scored_categories(reference: np.ndarray, rows: float) -> np.ndarray:
    """Indices of the categories scored for a batch of `rows` rows (see the module docstring), the
    most frequent in the reference first; of two bins, only the less frequent."""
    reference = np.asarray(reference, dtype=float)
    total = reference.sum()
    if not total > 0 or not rows > 0:
        return np.array([], dtype=int)
    fewer = np.minimum(reference, total - reference)
    enough = (fewer >= MIN_SHARE_ROWS) & (rows * fewer / total >= MIN_SHARE_ROWS)
    order = np.argsort(-reference, kind="stable")
    picked = order[enough[order]][:MAX_SHARE_CATEGORIES]
    return picked[1:] if len(reference) == 2 else picked


def share_scores(
    reference: Sequence[float] | np.ndarray, current: Sequence[float] | np.ndarray, names: Sequence[str]
) -> dict[str, list[float]]:
    """{category: [signed score, reference share, batch share]} of the scored categories of a batch's
    counts against the reference's (both over the same bins, named `names`)."""
    ref, cur = np.asarray(reference, dtype=float), np.asarray(current, dtype=float)
    rows = float(cur.sum())
    picked = scored_categories(ref, rows)
    if not len(picked):
        return {}
    z = signed_root_g(cur[picked], rows, ref[picked], float(ref.sum()))
    shares = np.stack([z, ref[picked] / ref.sum(), cur[picked] / rows], axis=1)
    return {str(names[i]): [round(float(v), 6) for v in row] for i, row in zip(picked, shares, strict=True)}


def two_bin_psi(reference_share: float, share: float) -> float:
    """PSI of one category against all the other rows: (q − p) ln(q / p) + (p − q) ln((1 − q) / (1 − p))."""
    p, q = reference_share, share
    return float((q - p) * np.log(q / p) + (p - q) * np.log((1 - q) / (1 - p)))


def psi_share_change(reference_share: float, psi: float, side: int) -> float:
    """How far a category's share must move from `reference_share`, up (`side` 1) or down (−1), for its
    `two_bin_psi` to reach `psi`: a PSI threshold in share units (the PSI grows without bound towards
    a share of 0 or 1, so there is always such a change)."""
    from scipy.optimize import brentq

    p = reference_share
    if not psi > 0:
        return 0.0
    end = 1.0 - 1e-12 if side > 0 else 1e-12
    share = brentq(lambda q: two_bin_psi(p, q) - psi, p, end, xtol=1e-12)
    return abs(float(share) - p)
