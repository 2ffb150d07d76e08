"""Text-span rubrics: `match_spans` for one document and `TextSpanMatches` over Arrow datasets.

Matching follows SemEval-2013 task 9.1 (criteria exact, partial, strict, type) with MUC-5 results. By
default every overlapping (prediction, truth) pair is a record (`matching="overlap"`); `"one_to_one"`
counts as nervaluate does. The rules are in `driftline.checks.rubrics.matching`. Span indices in the
records are 0-based positions in the document's spans sorted by start (then end, then input order).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from driftline.checks.rubrics.base import Rubric
from driftline.checks.rubrics.enums import CRITERIA, MatchingMode, parse_matching
from driftline.checks.rubrics.matching import match_all
from driftline.checks.rubrics.records import MATCH_SCHEMA, match_batch
from driftline.checks.rubrics.spans import from_arrow, from_python
from driftline.checks.rubrics.streams import INDEX, REPLICATION, TruthBuffer, batches, column


def match_spans(
    predictions: Sequence[Any], truths: Sequence[Any], matching: MatchingMode | str = MatchingMode.overlap
) -> list[dict[str, Any]]:
    """Match records of one document's predicted and true spans, for every criterion.

    Spans are dicts `{start, end, tag}` (or `(start, end[, tag])` tuples), half-open and 0-based, in
    any order. Each record has `MatchCriterion`, `prediction` and `truth` (span indices in start order,
    None where absent) and one True flag among `MatchResult.correct` ... `MatchResult.spurious`: one
    record per overlapping pair by default, one per span with `matching="one_to_one"`.
    """
    mode = parse_matching(matching, "match_spans")
    pred = from_python([list(predictions)], "predictions")
    truth = from_python([list(truths)], "truths")
    if len(pred) == 0 and len(truth) == 0:
        return []
    batch = match_batch(match_all(pred, truth, CRITERIA, mode), pred, truth, np.zeros(1, dtype=np.int64))
    rows = batch.drop_columns([INDEX, REPLICATION]).to_pylist()
    return rows


class TextSpanMatches(Rubric):
    """Per-item span matches under every MatchCriterion, as Arrow record batches (`schema`).

    `task_data` holds `_index_` and the true spans (column `truth_column`); `predictions` holds
    `_index_`, optionally `_replication_`, and the predicted spans (`prediction_column`). Spans are
    list<struct<start, end, tag>> columns. One batch is yielded per prediction batch; an item with
    neither predicted nor true spans yields no row. `matching` is `"overlap"` (a row per overlapping
    pair, the default) or `"one_to_one"` (nervaluate's counting).
    """

    def __init__(
        self,
        truth_column: str = "spans",
        prediction_column: str = "spans",
        matching: MatchingMode | str = MatchingMode.overlap,
    ) -> None:
        self.truth_column = truth_column
        self.prediction_column = prediction_column
        self.matching = parse_matching(matching, self.name)

    @property
    def name(self) -> str:
        return "text.TextSpanMatches"

    @property
    def schema(self) -> pa.Schema:
        """`_index_` int64, `_replication_` string, `MatchCriterion` string, `prediction` and `truth`
        int32 span indices (null where absent), then one bool column per MatchResult."""
        return MATCH_SCHEMA

    def apply(self, task_data: Any, predictions: Any) -> Iterator[pa.RecordBatch]:
        truths = TruthBuffer(task_data, self.truth_column)
        for batch in batches(predictions, "predictions"):
            if batch.num_rows == 0:
                continue
            index = column(batch, INDEX, "predictions").to_numpy(zero_copy_only=False).astype(np.int64)
            pred = from_arrow(column(batch, self.prediction_column, "predictions"), "predicted spans")
            truth = from_arrow(truths.lookup(index), "true spans")
            replication = batch.column(REPLICATION) if REPLICATION in batch.schema.names else None
            if replication is not None and not pa.types.is_string(replication.type):
                replication = replication.cast(pa.string())
            yield match_batch(
                match_all(pred, truth, CRITERIA, self.matching), pred, truth, index, replication
            )
