"""Match records as Arrow: the TextSpanMatches schema and the batch builder shared by the rubric API."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from driftline.checks.rubrics.enums import CRITERIA, RESULT_COLUMNS, MatchCriterion
from driftline.checks.rubrics.matching import MISSING, Matching
from driftline.checks.rubrics.spans import FlatSpans

MATCH_SCHEMA = pa.schema(
    [
        pa.field("_index_", pa.int64(), nullable=False),
        pa.field("_replication_", pa.string()),
        pa.field("MatchCriterion", pa.string(), nullable=False),
        pa.field("prediction", pa.int32()),
        pa.field("truth", pa.int32()),
        *(pa.field(name, pa.bool_(), nullable=False) for name in RESULT_COLUMNS),
    ]
)


def _rank(doc: np.ndarray, per_doc: np.ndarray) -> np.ndarray:
    """Position of each item inside its document, for items sorted by document."""
    first = np.concatenate(([0], np.cumsum(per_doc)[:-1]))
    return np.arange(len(doc)) - first[doc]


def match_batch(
    matchings: dict[MatchCriterion, Matching],
    pred: FlatSpans,
    truth: FlatSpans,
    index: np.ndarray,
    replication: pa.Array | None = None,
) -> pa.RecordBatch:
    """The match records of every criterion as a RecordBatch.

    Rows are ordered by document, then criterion (exact, partial, strict, type), then the rows naming
    a prediction in prediction order, then the missing true spans. `index` and `replication` give each
    document's `_index_` and `_replication_` (documents are positions 0..n_docs-1).
    """
    p_local = pred.local_index().astype(np.int32)
    t_local = truth.local_index().astype(np.int32)
    used = [(code, matchings[c]) for code, c in enumerate(CRITERIA) if c in matchings]
    n_docs, n_crit = pred.n_docs, len(used)
    row_doc = [pred.doc[m.pred] for _, m in used]
    r_count = np.stack([np.bincount(d, minlength=n_docs) for d in row_doc], axis=1)
    m_count = np.stack([np.bincount(truth.doc[m.missing], minlength=n_docs) for _, m in used], axis=1)
    sizes = (r_count + m_count).ravel()  # rows of (doc, criterion), doc-major
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    total = int(sizes.sum())
    doc = np.empty(total, dtype=np.int64)
    crit = np.empty(total, dtype=np.int32)
    p_idx = np.full(total, -1, dtype=np.int32)
    t_idx = np.full(total, -1, dtype=np.int32)
    result = np.empty(total, dtype=np.int8)
    for k, ((code, m), d) in enumerate(zip(used, row_doc, strict=True)):
        at = offsets[d * n_crit + k] + _rank(d, r_count[:, k])
        doc[at], crit[at], p_idx[at], result[at] = d, code, p_local[m.pred], m.result
        paired = m.truth >= 0
        t_idx[at[paired]] = t_local[m.truth[paired]]
        m_doc = truth.doc[m.missing]
        at = offsets[m_doc * n_crit + k] + r_count[m_doc, k] + _rank(m_doc, m_count[:, k])
        doc[at], crit[at], t_idx[at], result[at] = m_doc, code, t_local[m.missing], MISSING
    names = pa.array([c.value for c in CRITERIA], pa.string())
    columns = [
        pa.array(np.asarray(index, dtype=np.int64)[doc], pa.int64()),
        pa.nulls(len(doc), pa.string()) if replication is None else replication.take(pa.array(doc)),
        names.take(pa.array(crit)),
        pa.array(p_idx, pa.int32(), mask=p_idx < 0),
        pa.array(t_idx, pa.int32(), mask=t_idx < 0),
        *(pa.array(result == r, pa.bool_()) for r in range(len(RESULT_COLUMNS))),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=MATCH_SCHEMA)
