"""Span columns of a DataFrame batch to per-row MUC-5 counts (shared by the rubric and subset checks)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.rubrics.enums import MatchCriterion, MatchingMode
from driftline.checks.rubrics.matching import doc_counts, match_all
from driftline.checks.rubrics.spans import FlatSpans, NotSpans, from_series


@dataclass(frozen=True)
class RowCounts:
    """Per-row counts (rows, 5) of each criterion over the rows with both span lists (`mask`)."""

    mask: np.ndarray
    counts: dict[MatchCriterion, np.ndarray]

    @property
    def rows(self) -> int:
        return int(self.mask.sum())


def read_spans(frame: pd.DataFrame, column: str | None, role: str) -> FlatSpans:
    """The spans of a role column; a role left unset or a column that cannot hold spans does not apply."""
    if not column:
        raise NotApplicable(f"no {role} column (set columns.{role} to a span column)")
    if column not in frame:
        raise CheckInputError(f"the data has no column {column!r}")
    try:
        return from_series(frame[column], f"{role} column {column!r}")
    except NotSpans as exc:
        raise NotApplicable(f"{exc}; span checks need lists of {{start, end, tag}} or JSON text") from None


def row_counts(
    frame: pd.DataFrame, columns: Columns, criteria: tuple[MatchCriterion, ...], mode: MatchingMode
) -> RowCounts:
    """Match the predicted spans (prediction role) with the true spans (label role) of every row."""
    truth = read_spans(frame, columns.label, "label")
    pred = read_spans(frame, columns.prediction, "prediction")
    mask = truth.present & pred.present
    if not mask.any():
        raise CheckInputError(
            f"no row has both true spans in {columns.label!r} and predicted spans in {columns.prediction!r}"
        )
    rows = np.flatnonzero(mask)
    pred, truth = pred.select(rows), truth.select(rows)
    matchings = match_all(pred, truth, criteria, mode)
    return RowCounts(mask, {c: doc_counts(m, pred, truth) for c, m in matchings.items()})


def parse_criteria(values: list[str] | None, owner: str) -> tuple[MatchCriterion, ...]:
    """Criterion names to enum members (all four when None); an unknown name is an input error."""
    if values is None:
        return tuple(MatchCriterion)
    known = {c.value: c for c in MatchCriterion}
    unknown = [v for v in values if v not in known]
    if unknown or not values:
        raise CheckInputError(f"{owner}: criteria must be among {sorted(known)}, got {values}")
    return tuple(known[v] for v in values)
