"""Extended precision and recall (MUC-5 counts under the SemEval criteria) from span match records.

With C correct, I incorrect, P partial, M missing and S spurious:

    possible  = C + I + P + M         (the true spans, under one_to_one matching)
    actual    = C + I + P + S         (the predictions, under one_to_one matching)
    precision = (C + P / 2) / actual
    recall    = (C + P / 2) / possible
    f1        = 2 precision recall / (precision + recall)

The half credit for partial matches is the SemEval rule for the `partial` and `type` criteria; under
`exact` and `strict` P is always 0 and under `type` it is also 0 (a type match is correct or
incorrect), so the formula is the same for every criterion. A zero denominator gives `zero_division`
(0.0 by default, which is what nervaluate reports; f1 is then 0 as well): nothing predicted gives
precision 0, nothing true gives recall 0, and both empty give 0, 0, 0. Under the default overlap
matching the counts are of overlapping pairs, so a span that overlaps two others counts twice.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from driftline.checks.rubrics.base import Metric
from driftline.checks.rubrics.enums import CRITERIA, RESULT_COLUMNS
from driftline.checks.rubrics.matching import CORRECT, INCORRECT, MISSING, PARTIAL, SPURIOUS

PR_SCHEMA = pa.schema(
    [
        pa.field("MatchCriterion", pa.string()),
        *(pa.field(name, pa.int32()) for name in RESULT_COLUMNS),
        pa.field("possible", pa.int32()),
        pa.field("actual", pa.int32()),
        pa.field("precision", pa.float64()),
        pa.field("recall", pa.float64()),
        pa.field("f1_score", pa.float64()),
    ]
)


def _ratio(num: np.ndarray, den: np.ndarray, zero_division: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), zero_division)


def scores_from_counts(counts: np.ndarray, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """possible, actual, precision, recall, f1 from counts (..., 5) in MatchResult order."""
    counts = np.asarray(counts, dtype=np.int64)
    c, i, p = counts[..., CORRECT], counts[..., INCORRECT], counts[..., PARTIAL]
    possible = c + i + p + counts[..., MISSING]
    actual = c + i + p + counts[..., SPURIOUS]
    credit = c + 0.5 * p
    precision = _ratio(credit, actual, zero_division)
    recall = _ratio(credit, possible, zero_division)
    total = precision + recall
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(total > 0, 2 * precision * recall / np.where(total > 0, total, 1), zero_division)
    f1 = np.where(np.isnan(precision) | np.isnan(recall), np.nan, f1)
    return {"possible": possible, "actual": actual, "precision": precision, "recall": recall, "f1": f1}


def f1_score(df: pd.DataFrame) -> pd.Series:
    """Harmonic mean of the `precision` and `recall` columns (0 where both are 0)."""
    p, r = df["precision"].to_numpy(float), df["recall"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
    return pd.Series(f1, index=df.index, name="f1_score")


class ExtendedPrecisionRecall(Metric):
    """Per-criterion MUC-5 counts, possible, actual, precision, recall and F1 of span match records.

    The input is the output of `TextSpanMatches` (a DataFrame or an Arrow table, possibly
    concatenated over batches); one row per criterion, in MatchCriterion order, is returned.
    """

    def __init__(self, zero_division: float = 0.0) -> None:
        self.zero_division = zero_division

    @property
    def name(self) -> str:
        return "text.ExtendedPrecisionRecall"

    @property
    def schema(self) -> pa.Schema:
        """`MatchCriterion`, the five `MatchResult.*` counts, `possible`, `actual` (int32) and
        `precision`, `recall`, `f1_score` (double)."""
        return PR_SCHEMA

    def __call__(self, text_span_matches: pd.DataFrame | pa.Table) -> pd.DataFrame:
        frame = text_span_matches
        if isinstance(frame, (pa.Table, pa.RecordBatch)):
            frame = frame.to_pandas()
        missing = [c for c in ("MatchCriterion", *RESULT_COLUMNS) if c not in frame.columns]
        if missing:
            raise ValueError(f"text_span_matches has no column(s) {missing}")
        flags = frame[list(RESULT_COLUMNS)].astype(bool).astype(np.int64)
        grouped = flags.groupby(frame["MatchCriterion"].astype(str)).sum()
        names = [c.value for c in CRITERIA]
        counts = grouped.reindex(names, fill_value=0).to_numpy()
        return table_from_counts(dict(zip(names, counts, strict=True)), self.zero_division)


def table_from_counts(counts: dict[str, np.ndarray], zero_division: float = 0.0) -> pd.DataFrame:
    """The ExtendedPrecisionRecall table from per-criterion count vectors (MatchResult order)."""
    names = list(counts)
    matrix = np.array([counts[n] for n in names], dtype=np.int64).reshape(len(names), 5)
    s = scores_from_counts(matrix, zero_division)
    out = pd.DataFrame({"MatchCriterion": names})
    for k, column in enumerate(RESULT_COLUMNS):
        out[column] = matrix[:, k].astype(np.int32)
    out["possible"] = s["possible"].astype(np.int32)
    out["actual"] = s["actual"].astype(np.int32)
    out["precision"] = s["precision"].astype(float)
    out["recall"] = s["recall"].astype(float)
    out["f1_score"] = s["f1"].astype(float)
    return out
