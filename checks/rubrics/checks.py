"""Catalog checks of the audit rubrics: top-k accuracy and SemEval/MUC-5 span scores of a batch.

Span checks read the true spans from the label column and the predicted spans from the prediction
column (list-of-struct `{start, end, tag}` columns from Parquet/Arrow, Python lists, or JSON text); a
label or prediction column of numbers does not hold spans and the checks skip it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa

from driftline.checks.base import Check, Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.rubrics.classification import ranked_from_scores, top_k_hits
from driftline.checks.rubrics.enums import parse_matching
from driftline.checks.rubrics.frames import parse_criteria, row_counts
from driftline.checks.rubrics.metrics import scores_from_counts


def _span_scores(counts: np.ndarray) -> dict[str, float]:
    """Counts, possible, actual, precision, recall and f1 of summed counts (MatchResult order)."""
    s = scores_from_counts(counts)
    names = ("correct", "incorrect", "partial", "missing", "spurious")
    out: dict[str, float] = {n: float(v) for n, v in zip(names, counts, strict=True)}
    out.update({k: float(v) for k, v in s.items()})
    return out


@dataclass(kw_only=True)
class _SpanCheck(Check):
    """Shared parts of the span checks: criteria and matching parameters, per-criterion summed counts.

    `matching` is `overlap` (a count per overlapping pair, the audit-rubric definition) or `one_to_one`
    (each span counted once, as nervaluate); see `driftline.checks.rubrics.matching`.
    """

    family: ClassVar[str] = "rubric"
    role: ClassVar[str] = "behaviour"
    needs: ClassVar[frozenset[str]] = frozenset({"label", "prediction"})

    criteria: list[str] | None = None
    matching: str = "overlap"

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_criteria(self.criteria, self.name)
        parse_matching(self.matching, self.name)

    def totals(self, frame: pd.DataFrame, columns: Columns) -> tuple[dict[str, dict[str, float]], int]:
        """Per criterion the summed scores of `frame`, and the number of rows used."""
        criteria = parse_criteria(self.criteria, self.name)
        counts = row_counts(frame, columns, criteria, parse_matching(self.matching, self.name))
        return {c.value: _span_scores(m.sum(axis=0)) for c, m in counts.counts.items()}, counts.rows


@register
@dataclass(kw_only=True)
class TextSpanMatchesCheck(_SpanCheck):
    """Span matching against the reference: SemEval precision, recall and F1 per criterion, graded by F1 drop.

    One result per criterion (exact, partial, strict, type) with the batch's precision, recall and F1,
    the reference F1 and `f1_drop` = reference F1 - batch F1 (graded). Counts, possible and actual are
    in the details. A batch or reference with no span on either side is skipped (F1 is undefined).
    """

    name: ClassVar[str] = "rubric.text_span_matches"
    declared_metrics: ClassVar[dict[str, Metric]] = {"f1_drop": Metric((0.02, 0.05, 0.1))}

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """Reference scores per criterion; an unusable reference is recorded, and reported by `evaluate`."""
        try:
            totals, rows = self.totals(reference, columns)
        except NotApplicable as exc:
            return {"skipped": f"reference: {exc}"}
        except CheckInputError as exc:
            return {"error": f"reference: {exc}"}
        return {"reference": totals, "reference_rows": rows}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        totals, rows = self.totals(current, columns)
        if "skipped" in profile:
            raise NotApplicable(profile["skipped"])
        if "error" in profile:
            raise CheckInputError(profile["error"])
        results = []
        for criterion, s in totals.items():
            ref = profile["reference"].get(criterion)
            if ref is None or ref["possible"] + ref["actual"] == 0 or s["possible"] + s["actual"] == 0:
                side = "batch" if s["possible"] + s["actual"] == 0 else "reference"
                reason = f"the {side} has no predicted or true span: F1 is undefined"
                results.append(CheckResult.skipped(self.name, criterion, reason, rows=len(current)))
                continue
            metrics = {
                "precision": s["precision"],
                "recall": s["recall"],
                "f1": s["f1"],
                "reference_f1": ref["f1"],
                "f1_drop": ref["f1"] - s["f1"],
            }
            details = {
                "counts": {k: int(s[k]) for k in ("correct", "incorrect", "partial", "missing", "spurious")},
                "possible": int(s["possible"]),
                "actual": int(s["actual"]),
                "documents": rows,
                "dropped_rows": len(current) - rows,
                "reference_documents": profile["reference_rows"],
            }
            results.append(self.result(criterion, metrics, rows=len(current), details=details))
        return results


@register
@dataclass(kw_only=True)
class ExtendedPrecisionRecallCheck(_SpanCheck):
    """Extended precision/recall of the batch's spans: MUC-5 counts, possible, actual, P, R, F1 per criterion.

    One result per criterion; precision = (correct + partial/2) / actual, recall = (correct +
    partial/2) / possible (0 for a zero denominator, as nervaluate). Graded by F1 against absolute
    floors (lower is worse); needs no reference.
    """

    name: ClassVar[str] = "rubric.extended_precision_recall"
    declared_metrics: ClassVar[dict[str, Metric]] = {"f1": Metric((0.8, 0.6, 0.4), higher_is_worse=False)}

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        return {}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        totals, rows = self.totals(current, columns)
        results = []
        for criterion, s in totals.items():
            metrics = {k: s[k] for k in ("precision", "recall", "f1")}
            details = {k: int(s[k]) for k in ("correct", "incorrect", "partial", "missing", "spurious")}
            details.update(possible=int(s["possible"]), actual=int(s["actual"]), documents=rows)
            details["dropped_rows"] = len(current) - rows
            results.append(self.result(criterion, metrics, rows=len(current), details=details))
        return results


@register
@dataclass(kw_only=True)
class TopKAccuracyCheck(Check):
    """Top-k accuracy against the reference: share of rows whose label is among the k best-scored classes.

    The ranking is the class score columns (`columns.class_scores`, one per class in `classes`, by
    default the sorted reference labels; ties go to the class listed first) or, without them, a
    prediction column holding lists of labels in descending score order (a single label counts for
    every k). One result per k with the reference and batch accuracy and `degradation` (graded).
    """

    name: ClassVar[str] = "rubric.top_k_accuracy"
    family: ClassVar[str] = "rubric"
    role: ClassVar[str] = "behaviour"
    needs: ClassVar[frozenset[str]] = frozenset({"label"})
    declared_metrics: ClassVar[dict[str, Metric]] = {"degradation": Metric((0.02, 0.05, 0.1))}

    ks: list[int] = field(default_factory=lambda: [1, 5])
    classes: list[Any] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.ks or any(not isinstance(k, int) or k < 1 for k in self.ks):
            raise CheckInputError(f"{self.name}: ks must be whole numbers >= 1, got {self.ks}")

    def _hits(self, frame: pd.DataFrame, columns: Columns, classes: list[Any] | None) -> tuple[dict, int]:
        label = frame[columns.label]
        present = label.notna().to_numpy().copy()
        if columns.class_scores:
            names = list(columns.class_scores)
            if classes is None or len(classes) != len(names):
                raise CheckInputError(
                    f"{len(names)} class score columns {names} but classes {classes}; set `classes`"
                )
            scores = np.column_stack([_numeric(frame, c) for c in names])
            ranked = ranked_from_scores(scores, classes, max(self.ks))
            present &= np.isfinite(scores).all(axis=1)
        elif columns.prediction:
            ranked = _label_lists(frame[columns.prediction])
            present &= np.asarray(ranked.is_valid(), dtype=bool)
        else:
            raise NotApplicable("no class_scores or prediction column to rank classes")
        if not present.any():
            raise CheckInputError(f"no row has both a label in {columns.label!r} and a ranking")
        rows = np.flatnonzero(present)
        truth = pa.array(label.to_numpy(dtype=object)[rows].tolist())
        hits = top_k_hits(ranked.take(pa.array(rows)), truth, self.ks)
        return {k: float(v.mean()) for k, v in hits.items()}, len(rows)

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        classes = self.classes
        if classes is None and columns.class_scores:
            try:
                classes = sorted(pd.unique(reference[columns.label].dropna()).tolist())
            except TypeError as exc:
                raise CheckInputError(
                    f"label values cannot be sorted into classes ({exc}); set `classes`"
                ) from None
        accuracy, rows = self._hits(reference, columns, classes)
        return {"classes": classes, "reference": accuracy, "reference_rows": rows}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        accuracy, rows = self._hits(current, columns, profile["classes"])
        results = []
        for k in self.ks:
            ref, cur = profile["reference"][k], accuracy[k]
            metrics = {"reference": ref, "current": cur, "degradation": ref - cur}
            details = {"k": k, "used_rows": rows, "dropped_rows": len(current) - rows}
            details["reference_rows"] = profile["reference_rows"]
            results.append(self.result(f"top{k}", metrics, rows=len(current), details=details))
        return results


def _numeric(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = frame[column]
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        raise CheckInputError(f"class score column {column!r} is not numeric (dtype {values.dtype})")
    return values.to_numpy(dtype=float, na_value=math.nan)


def _label_lists(values: pd.Series) -> pa.Array:
    """A prediction column as Arrow: lists of labels stay lists, single labels stay scalars."""
    items = [list(v) if isinstance(v, (np.ndarray, tuple)) else v for v in values.tolist()]
    items = [None if isinstance(v, float) and math.isnan(v) else v for v in items]
    try:
        return pa.array(items)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CheckInputError(f"prediction column {values.name!r}: labels of mixed types ({exc})") from None
