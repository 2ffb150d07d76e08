"""Top-k accuracy: `top_k` for one item, vectorised hits for many, and the `TopKAccuracy` rubric."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from driftline.checks.errors import CheckInputError
from driftline.checks.rubrics.base import Rubric
from driftline.checks.rubrics.streams import INDEX, REPLICATION, TruthBuffer, batches, column

TOP_K_SCHEMA = pa.schema(
    [
        pa.field("_index_", pa.int64(), nullable=False),
        pa.field("_replication_", pa.string()),
        pa.field("top1", pa.bool_(), nullable=False),
        pa.field("top5", pa.bool_(), nullable=False),
    ]
)


def top_k(prediction: Any | Sequence[Any], truth: Any, *, k: int) -> int:
    """1 when one of the first `k` predicted labels equals `truth`, else 0.

    `prediction` is a list of labels in descending order of score, or one label (then every k counts
    as k = 1). A string is one label, not a list of characters.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if isinstance(prediction, (str, bytes)) or not isinstance(prediction, Sequence | np.ndarray):
        return int(prediction == truth)
    return int(any(p == truth for p in list(prediction)[:k]))


def top_k_hits(predictions: pa.Array, truth: pa.Array, ks: Sequence[int]) -> dict[int, np.ndarray]:
    """For each k, whether each row's truth is among its first k predicted labels (vectorised).

    `predictions` is a list array (labels in descending score order) or a plain array of labels; a
    null prediction or truth is a miss.
    """
    n = len(truth)
    if pa.types.is_list(predictions.type) or pa.types.is_large_list(predictions.type):
        parent = pc.list_parent_indices(predictions).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = pc.list_flatten(predictions)
        first = np.concatenate(([0], np.cumsum(np.bincount(parent, minlength=n))[:-1]))
        position = np.arange(len(parent)) - first[parent] if len(parent) else parent
    else:
        parent, flat, position = np.arange(n), predictions, np.zeros(n, dtype=np.int64)
    expected = truth.take(pa.array(parent, pa.int64()))
    equal = _equal(flat, expected)
    return {k: np.bincount(parent[equal & (position < k)], minlength=n).astype(bool) for k in ks}


def _equal(left: pa.Array, right: pa.Array) -> np.ndarray:
    """Element-wise equality of two label arrays (nulls are unequal), casting across label types."""
    try:
        if left.type != right.type:
            right = right.cast(left.type)
        out = pc.equal(left, right)
        return pc.fill_null(out, False).to_numpy(zero_copy_only=False).astype(bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        a, b = left.to_pylist(), right.to_pylist()
        return np.array([x is not None and x == y for x, y in zip(a, b, strict=True)], dtype=bool)


class TopKAccuracy(Rubric):
    """Top-1 and top-5 hits per item (one row per prediction row), as Arrow record batches.

    `task_data` holds `_index_` and the true label (`truth_column`); `predictions` holds `_index_`,
    optionally `_replication_`, and `prediction_column`: a list of labels in descending score order
    or a single label.
    """

    def __init__(self, truth_column: str = "label", prediction_column: str = "prediction") -> None:
        self.truth_column = truth_column
        self.prediction_column = prediction_column

    @property
    def name(self) -> str:
        return "classification.TopKAccuracy"

    @property
    def schema(self) -> pa.Schema:
        """`_index_` int64, `_replication_` string, `top1` and `top5` bool."""
        return TOP_K_SCHEMA

    def apply(self, task_data: Any, predictions: Any) -> Iterator[pa.RecordBatch]:
        truths = TruthBuffer(task_data, self.truth_column)
        for batch in batches(predictions, "predictions"):
            if batch.num_rows == 0:
                continue
            index = column(batch, INDEX, "predictions").to_numpy(zero_copy_only=False).astype(np.int64)
            hits = top_k_hits(
                column(batch, self.prediction_column, "predictions"), truths.lookup(index), (1, 5)
            )
            replication = (
                batch.column(REPLICATION).cast(pa.string())
                if REPLICATION in batch.schema.names
                else pa.nulls(batch.num_rows, pa.string())
            )
            yield pa.RecordBatch.from_arrays(
                [pa.array(index, pa.int64()), replication, pa.array(hits[1]), pa.array(hits[5])],
                schema=TOP_K_SCHEMA,
            )


def ranked_from_scores(scores: np.ndarray, classes: Sequence[Any], k: int) -> pa.Array:
    """The k highest-scoring classes of each row of an (n, C) score matrix as a list array; ties go
    to the class listed first, and rows with a non-finite score get a null list."""
    if scores.ndim != 2 or scores.shape[1] != len(classes):
        raise CheckInputError(f"{scores.shape[1]} score columns for {len(classes)} classes")
    k = min(k, len(classes))
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    labels = pd.Series(np.asarray(classes, dtype=object)).to_numpy(dtype=object)[order]
    finite = np.isfinite(scores).all(axis=1)
    offsets = np.arange(0, (len(scores) + 1) * k, k, dtype=np.int32) if len(scores) else np.zeros(1, np.int32)
    values = pa.array(labels.ravel().tolist())
    array = pa.ListArray.from_arrays(pa.array(offsets), values, mask=pa.array(~finite))
    return array
