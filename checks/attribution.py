"""AUC attribution: AUC-ROC credited to examples and to pairs, sliced by honest decision trees.

Python API: `example_attribution`, `pair_attribution` (a `CrossMatrix`), `auc`, and from
`checks.segmentation` `segment` / `compare_models`. Registered checks: `attribution.auc` (slices of
one model's attributions), `attribution.pairs` (the cross matrix of negative and positive slices)
and `attribution.compare` (slices of the difference between two models' attributions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks._attribution_kernels import (
    CrossMatrix,
    auc,
    binary_labels,
    example_attribution,
    pair_attribution,
    slice_codes,
)
from driftline.checks.base import Check, Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import Evidence, normal
from driftline.checks.impact import model_impact
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.segmentation import (
    ALL_DATA,
    Segmentation,
    Slice,
    TreeSettings,
    compare_models,
    hashed_order,
    segment,
)
from driftline.checks.slicing import apply_slices, fit_slices

__all__ = [
    "AttributionAUC",
    "AttributionCompare",
    "AttributionPairs",
    "CrossMatrix",
    "auc",
    "example_attribution",
    "pair_attribution",
    "slice_codes",
]

ATTRIBUTION_COLUMN = "__attribution__"


@dataclass
class _Batch:
    """The rows usable for AUC: finite scores and a label, with the positives marked."""

    frame: pd.DataFrame
    positive: np.ndarray
    scores: dict[str, np.ndarray]
    dropped: int


def _scores(frame: pd.DataFrame, column: str) -> np.ndarray:
    series = frame[column]
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise CheckInputError(f"score column {column!r} must hold numbers, not dtype {series.dtype}")
    return series.to_numpy(dtype=float, na_value=np.nan)


def _usable_rows(frame: pd.DataFrame, label: str, score_columns: list[str], positive_label: Any) -> _Batch:
    """Drop rows with a missing label or a NaN/inf score; refuse a batch holding a single class."""
    absent = [c for c in [label, *score_columns] if c not in frame.columns]
    if absent:
        raise CheckInputError(f"the data has no column(s) {absent}")
    scores = {c: _scores(frame, c) for c in score_columns}
    keep = frame[label].notna().to_numpy().copy()
    for values in scores.values():
        keep &= np.isfinite(values)
    if not keep.any():
        raise CheckInputError(
            f"no usable row: every row lacks label {label!r} or has a NaN/inf score in {score_columns}"
        )
    kept = frame.loc[keep]
    positive = binary_labels(kept[label], positive_label)
    n_pos = int(positive.sum())
    if n_pos == 0 or n_pos == len(positive):
        raise NotApplicable(
            f"label {label!r} holds a single class in the {len(positive)} usable rows "
            f"({int((~keep).sum())} dropped for a missing label or a NaN/inf score); AUC needs both"
        )
    return _Batch(kept, positive, {c: v[keep] for c, v in scores.items()}, int((~keep).sum()))


@dataclass(kw_only=True)
class _SlicingCheck(Check):
    """Shared parameters and output of the checks that slice attributions with an honest tree."""

    family: ClassVar[str] = "attribution"
    role: ClassVar[str] = "attribution"
    needs: ClassVar[frozenset[str]] = frozenset({"label", "score", "features"})
    worker_imports: ClassVar[tuple[str, ...]] = ("scipy.stats", "sklearn.tree")  # the tree, on every batch

    split_fraction: float = TreeSettings.split_fraction
    min_leaf_size: int = TreeSettings.min_leaf_size
    max_depth: int = TreeSettings.max_depth
    alpha: float = TreeSettings.alpha
    equal_var: bool = TreeSettings.equal_var
    seed: int = TreeSettings.seed
    positive_label: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.settings()

    def settings(self) -> dict[str, Any]:
        """The tree settings as keyword arguments of `segment` (validated)."""
        return asdict(TreeSettings(**{f.name: getattr(self, f.name) for f in fields(TreeSettings)}))

    def row_ids(self, frame: pd.DataFrame, columns: Columns) -> pd.Series | None:
        """What keys the honest split: the id column, else a hash of each whole row (every column)."""
        if columns.id and columns.id in frame.columns:
            return frame[columns.id]
        try:
            return pd.util.hash_pandas_object(frame, index=False)
        except TypeError:  # a column of lists or dicts: the dimension values key the split instead
            return None

    def dimensions(
        self, frame: pd.DataFrame, columns: Columns, exclude: tuple[str, ...] = ()
    ) -> tuple[list[str], list[str]]:
        """The feature columns to slice on that the batch holds, and those it lacks (all lacking: error)."""
        wanted = [c for c in self.feature_columns(columns) if c not in exclude]
        present = [c for c in wanted if c in frame.columns]
        if not present:
            raise CheckInputError(f"none of the slicing dimensions {wanted} is in the data")
        return present, [c for c in wanted if c not in frame.columns]

    def summary_result(
        self,
        seg: Segmentation,
        batch: _Batch,
        metrics: Mapping[str, float | None],
        dims: list[str],
        absent: list[str],
        details: dict[str, Any],
    ) -> CheckResult:
        """The whole-batch result: `metrics`, the tree and the slicing dimensions, plus `details`."""
        return self.result(
            ALL_DATA,
            metrics,
            rows=len(batch.frame),
            details={"tree": seg.to_details(), "dimensions": dims, "absent_dimensions": absent, **details},
        )

    def slice_results(
        self,
        seg: Segmentation,
        batch: _Batch,
        columns: Columns,
        metric: str,
        graded: Callable[[Slice], SliceGrade],
    ) -> list[CheckResult]:
        """One result per slice: target = the rule, `metric` = honest mean, `delta` = mean - overall,
        graded on the evidence `graded` gives for the slice. A slice flagged as a false discovery, or
        without evidence, keeps its numbers but is not graded (severity none, the reason says why)."""
        results = []
        for s in seg.slices:
            grade = graded(s)
            why_not = "the t-test flags it as a false discovery" if s.false_discovery else grade.why_not
            metrics = {metric: s.mean, "delta": s.delta, "p_value": s.p_value, **grade.metrics}
            result = self.result(
                s.rule,
                metrics,
                rows=s.rows,
                model_impact=model_impact(batch.frame, seg.leaves == s.node, columns),
                details={
                    "false_discovery": s.false_discovery,
                    "t": s.t,
                    "fit_rows": s.fit_rows,
                    "estimate_rows": s.estimate_rows,
                    "fit_mean": s.fit_mean,
                    "std_error": s.std_error,
                    "node": s.node,
                },
                evidence=None if why_not else grade.evidence,
                severity="none" if why_not else None,
            )
            if why_not:
                result.reason = f"not graded: {why_not}"
            result.failing_rows = s.rows if result.severity != "none" else 0
            results.append(result)
        return results


@dataclass
class SliceGrade:
    """What grades one slice: extra metrics and the evidence of the graded one, or why there is none."""

    metrics: Mapping[str, float | None]
    evidence: dict[str, Evidence] | None = None
    why_not: str | None = None


@register
@dataclass(kw_only=True)
class AttributionAUC(_SlicingCheck):
    """AUC attribution slices: normalised example attributions sliced by an honest tree on the features.

    An example's normalised attribution is its share of correctly ordered (positive, negative) pairs,
    halved (ties count one half): mean AUC / 2 overall. Slices report the held-out mean, its
    delta from the batch, a t-test false-discovery flag, and the change from the reference's same
    slice, which grades the slice (on its confidence bound: `checks.evidence`); the delta, a standing
    property of the model, is not graded.
    The profile keeps a sample of at most `reference_rows` reference rows for that comparison (drawn
    like the honest split, from each row's hashed id or contents, so it does not depend on row order).
    """

    name: ClassVar[str] = "attribution.auc"
    subject: ClassVar[str | None] = "mean attribution"
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "change": Metric(
            (-0.02, -0.04, -0.08),
            higher_is_worse=False,
            change="the slice's held-out mean attribution in the batch minus the reference's mean "
            "attribution in the same slice (its rule applied to the reference sample)",
            uncertainty="normal bound, the standard errors of both means combined (the spread of the "
            "batch's estimating rows and of the reference rows in the slice)",
            figure="tree",
        )
    }
    # Two slices' worth of rows at the default leaf size: one growing, one estimating part.
    min_verdict_rows: ClassVar[int] = 2 * TreeSettings.min_leaf_size

    reference_rows: int = 20_000

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """The reference's AUC and a sample of its rows with their attributions (None when unusable)."""
        try:
            batch = _usable_rows(
                reference, columns.required("label"), [columns.required("score")], self.positive_label
            )
            dims, _ = self.dimensions(batch.frame, columns)
        except (CheckInputError, NotApplicable) as exc:
            return {"auc": None, "sample": None, "reason": str(exc)}
        attributions = example_attribution(batch.positive, batch.scores[columns.required("score")])
        sample = batch.frame[dims].assign(**{ATTRIBUTION_COLUMN: attributions})
        if len(sample) > self.reference_rows:
            ids = self.row_ids(batch.frame, columns)
            drawn = hashed_order(batch.frame[dims], attributions, ids, self.seed)[: self.reference_rows]
            sample = sample.iloc[np.sort(drawn)]
        return {"auc": 2.0 * float(attributions.mean()), "sample": sample, "reason": None}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        batch = _usable_rows(
            current, columns.required("label"), [columns.required("score")], self.positive_label
        )
        dims, absent = self.dimensions(batch.frame, columns)
        attributions = example_attribution(batch.positive, batch.scores[columns.required("score")])
        seg = segment(batch.frame[dims], attributions, self.row_ids(batch.frame, columns), **self.settings())
        reference_auc = profile.get("auc")
        metrics = {
            "auc": 2.0 * seg.overall,
            "mean_attribution": seg.overall,
            "reference_auc": reference_auc,
            "auc_change": None if reference_auc is None else 2.0 * seg.overall - reference_auc,
        }
        details = {"dropped_rows": batch.dropped, "reference": profile.get("reason") or "ok"}
        summary = self.summary_result(seg, batch, metrics, dims, absent, details)
        graded = partial(_reference_change, seg, profile)
        return [summary, *self.slice_results(seg, batch, columns, "mean_attribution", graded)]


def _reference_change(seg: Segmentation, profile: dict[str, Any], slice_: Slice) -> SliceGrade:
    """The reference's mean attribution in the same slice, the batch's change from it and its evidence
    (both means' standard errors combined); not graded without two reference rows in the slice."""
    sample = profile.get("sample")
    rule = seg.rules[slice_.node]
    empty = {"reference_mean_attribution": None, "change": None}
    if sample is None or any(name not in sample.columns for name in rule.conditions):
        return SliceGrade(empty, why_not=f"no reference sample to compare with ({profile.get('reason')})")
    inside = sample[ATTRIBUTION_COLUMN].to_numpy()[rule.mask(sample)]
    if len(inside) < 2:
        return SliceGrade(empty, why_not=f"{len(inside)} reference row(s) in the slice, fewer than 2")
    reference_mean = float(inside.mean())
    change = slice_.mean - reference_mean
    se = math.hypot(slice_.std_error, float(inside.std(ddof=1)) / math.sqrt(len(inside)))
    metrics = {"reference_mean_attribution": reference_mean, "change": change}
    return SliceGrade(metrics, {"change": normal(change, se, higher_is_worse=False)})


@register
@dataclass(kw_only=True)
class AttributionCompare(_SlicingCheck):
    """Model comparison: the candidate's minus the baseline's normalised attributions, sliced by a tree.

    The baseline is the score column, the candidate the column named by `candidate_score`. Overall the
    mean difference is half the AUC gain; a slice with a negative mean is where the candidate loses.
    """

    name: ClassVar[str] = "attribution.compare"
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "mean_difference": Metric(
            (-0.01, -0.025, -0.05),
            higher_is_worse=False,
            change="audit of two models on the same batch, not a change against the reference: the "
            "slice's held-out mean of candidate minus baseline normalised attribution",
            uncertainty="normal bound on the standard error of that held-out mean",
            figure="tree",
            audit=True,
        )
    }
    min_verdict_rows: ClassVar[int] = 2 * TreeSettings.min_leaf_size

    candidate_score: str | None = None

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """Nothing to learn from the reference: both models are compared on the batch itself."""
        return {"reference_rows": len(reference)}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        if not self.candidate_score:
            raise NotApplicable("set candidate_score to the column holding the second model's scores")
        if self.candidate_score not in current.columns:
            raise CheckInputError(f"candidate_score column {self.candidate_score!r} is not in the batch")
        score_columns = [columns.required("score"), self.candidate_score]
        batch = _usable_rows(current, columns.required("label"), score_columns, self.positive_label)
        dims, absent = self.dimensions(batch.frame, columns, exclude=tuple(score_columns))
        comparison = compare_models(
            batch.positive,
            batch.scores[columns.required("score")],
            batch.scores[self.candidate_score],
            batch.frame[dims],
            self.row_ids(batch.frame, columns),
            **self.settings(),
        )
        seg = comparison.segmentation
        metrics = {
            "baseline_auc": comparison.baseline_auc,
            "candidate_auc": comparison.candidate_auc,
            "auc_gain": comparison.auc_gain,
        }
        details = {
            "baseline": columns.score,
            "candidate": self.candidate_score,
            "dropped_rows": batch.dropped,
        }
        summary = self.summary_result(seg, batch, metrics, dims, absent, details)
        return [summary, *self.slice_results(seg, batch, columns, "mean_difference", _model_difference)]


def _model_difference(slice_: Slice) -> SliceGrade:
    """The slice's held-out mean difference of the two models, with its standard error."""
    return SliceGrade({}, {"mean_difference": normal(slice_.mean, slice_.std_error, higher_is_worse=False)})


@register
@dataclass(kw_only=True)
class AttributionPairs(Check):
    """Pair attribution cross matrix: AUC of every cross of a negative slice and a positive slice.

    Slices come from one or two dimensions (the first categorical feature by default), cut on the
    reference: numbers in reference-quantile bins, categories beyond the `max_slices - 1` most frequent
    merged into `(other)` (`checks.slicing`). A cell's mean pair attribution is the AUC restricted to
    it; its headroom is its mis-ordered pairs (ties one half) over all pairs, so the cells' headrooms
    sum to 1 - AUC. A cell is graded on its headroom's change from the reference's same cell: the
    share of all pairs newly mis-ordered there.
    """

    name: ClassVar[str] = "attribution.pairs"
    family: ClassVar[str] = "attribution"
    role: ClassVar[str] = "attribution"
    needs: ClassVar[frozenset[str]] = frozenset({"label", "score", "features"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "headroom_change": Metric(
            (0.02, 0.05, 0.1),
            change="the cell's headroom (mis-ordered pairs over all pairs) in the batch minus in the "
            "reference, both cut with the reference's slices",
            uncertainty="normal bound; each side's DeLong variance of its headroom (placement values "
            "over positives and over negatives), combined",
            figure="matrix",
        )
    }

    bins: int = 4
    max_slices: int = 8
    positive_label: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bins < 1 or self.max_slices < 2:
            raise CheckInputError(f"{self.name}: bins must be >= 1 and max_slices >= 2")

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """The slices of each dimension, cut on the reference, and the reference's cells (headroom
        and its standard error); without a usable reference, the reason instead of the cells."""
        dims = self._dimensions(reference, columns)
        definitions = {d: self._fit_dimension(reference[d]) for d in dims}
        try:
            batch = _usable_rows(
                reference, columns.required("label"), [columns.required("score")], self.positive_label
            )
        except (CheckInputError, NotApplicable) as exc:
            return {"slices": definitions, "cells": None, "auc": None, "reason": str(exc)}
        matrix = self._matrix(batch, columns, definitions)
        cells = matrix.to_frame().assign(headroom=matrix.headroom().ravel(), se=matrix.headroom_se.ravel())
        by_cell = {
            (row.negative_slice, row.positive_slice): (row.headroom, row.se)
            for row in cells.itertuples(index=False)
        }
        return {"slices": definitions, "cells": by_cell, "auc": matrix.auc, "reason": None}

    def _fit_dimension(self, values: pd.Series) -> dict[str, Any]:
        """One dimension's slices: numbers in quantile bins, else its categories (all of them when at
        most `max_slices`, else the `max_slices - 1` most frequent and `(other)`)."""
        keep = self.max_slices if values.nunique(dropna=True) <= self.max_slices else self.max_slices - 1
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        return fit_slices(values, bins=self.bins, max_categories=keep, numeric=numeric)

    def _dimensions(self, frame: pd.DataFrame, columns: Columns) -> list[str]:
        chosen = (
            list(self.features) if self.features else list(columns.categorical[:1] or columns.numeric[:1])
        )
        if not 1 <= len(chosen) <= 2:
            raise CheckInputError(f"{self.name}: the cross matrix takes one or two dimensions, got {chosen}")
        absent = [c for c in chosen if c not in frame.columns]
        if absent:
            raise CheckInputError(f"the data has no dimension column(s) {absent}")
        return chosen

    def _matrix(self, batch: _Batch, columns: Columns, definitions: dict[str, Any]) -> CrossMatrix:
        """The cross matrix of the usable rows, each dimension labelled with its fitted slices."""
        slices = pd.DataFrame(
            {
                d: np.asarray(slices["labels"], dtype=object)[apply_slices(batch.frame[d], slices)]
                for d, slices in definitions.items()
            }
        )
        return pair_attribution(batch.positive, batch.scores[columns.required("score")], slices, slices)

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        self._dimensions(current, columns)
        batch = _usable_rows(
            current, columns.required("label"), [columns.required("score")], self.positive_label
        )
        matrix = self._matrix(batch, columns, profile["slices"])
        summary = self.result(
            ALL_DATA,
            {"auc": matrix.auc, "reference_auc": profile["auc"]},
            rows=len(batch.frame),
            details={
                "matrix": matrix.to_details(),
                "dimensions": list(profile["slices"]),
                "dropped_rows": batch.dropped,
                "reference": profile["reason"] or "ok",
            },
        )
        return [summary, *self._cell_results(matrix, profile)]

    def _cell_results(self, matrix: CrossMatrix, profile: dict[str, Any]) -> list[CheckResult]:
        cells = matrix.to_frame().assign(headroom=matrix.headroom().ravel(), se=matrix.headroom_se.ravel())
        return [self._cell_result(row, profile) for row in cells.itertuples(index=False)]

    def _cell_result(self, row: Any, profile: dict[str, Any]) -> CheckResult:
        """One cell: its headroom and AUC, graded on the headroom's change from the reference's cell."""
        reference = (profile["cells"] or {}).get((row.negative_slice, row.positive_slice))
        metrics = {
            "headroom": row.headroom,
            "mean_attribution": row.mean_attribution,
            "incorrect_pairs": row.incorrect_pairs,
            "reference_headroom": None if reference is None else reference[0],
            "headroom_change": None if reference is None else row.headroom - reference[0],
        }
        evidence = None
        if reference is not None:
            evidence = {
                "headroom_change": normal(metrics["headroom_change"], math.hypot(row.se, reference[1]))
            }
        result = self.result(
            f"negative: {row.negative_slice} | positive: {row.positive_slice}",
            metrics,
            rows=int(row.pairs),
            details={
                "negative_slice": row.negative_slice,
                "positive_slice": row.positive_slice,
                "headroom_std_error": row.se,
            },
            evidence=evidence,
            severity=None if evidence else "none",
        )
        if evidence is None:
            why = profile["reason"] or "the reference has no pair in this cell"
            result.reason = f"not graded: {why}"
        return result
