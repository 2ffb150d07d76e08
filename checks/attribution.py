"""AUC attribution: AUC-ROC credited to examples and to pairs, sliced by honest decision trees.

Python API: `example_attribution`, `pair_attribution` (a `CrossMatrix`), `auc`, and from
`checks.segmentation` `segment` / `compare_models`. Registered checks: `attribution.auc` (slices of
one model's attributions), `attribution.pairs` (the cross matrix of negative and positive slices)
and `attribution.compare` (slices of the difference between two models' attributions).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks._attribution_kernels import (
    MISSING_LABEL,
    CrossMatrix,
    auc,
    binary_labels,
    example_attribution,
    pair_attribution,
    slice_codes,
)
from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.impact import model_impact
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.segmentation import (
    ALL_DATA,
    Segmentation,
    TreeSettings,
    compare_models,
    hashed_order,
    segment,
)

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
OTHER_LABEL = "<other>"


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
    needs: ClassVar[frozenset[str]] = frozenset({"label", "score", "features"})

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
        metrics: dict[str, float | None],
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
        extra: dict[int, dict[str, float | None]] | None = None,
    ) -> list[CheckResult]:
        """One result per slice: target = the rule, `metric` = honest mean, `delta` = mean - overall.

        A slice flagged as a false discovery keeps its numbers but grades as severity none.
        """
        results = []
        for s in seg.slices:
            metrics = {
                metric: s.mean,
                "delta": s.delta,
                "p_value": s.p_value,
                **(extra or {}).get(s.node, {}),
            }
            severity = "none" if s.false_discovery else None
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
                    "node": s.node,
                },
                severity=severity,
            )
            result.failing_rows = s.rows if result.severity != "none" else 0
            results.append(result)
        return results


@register
@dataclass(kw_only=True)
class AttributionAUC(_SlicingCheck):
    """AUC attribution slices: normalised example attributions sliced by an honest tree on the features.

    An example's normalised attribution is its share of correctly ordered (positive, negative) pairs,
    halved (ties count one half): mean AUC / 2 overall. Slices report the held-out mean, its
    delta from the batch, a t-test false-discovery flag, and the change from the reference's same slice.
    The profile keeps a sample of at most `reference_rows` reference rows for that comparison (drawn
    like the honest split, from each row's hashed id or contents, so it does not depend on row order).
    """

    name: ClassVar[str] = "attribution.auc"
    default_thresholds: ClassVar[dict[str, tuple[float, ...]]] = {
        "delta": (-0.03, -0.05, -0.1),
        "change": (-0.02, -0.04, -0.08),
    }
    lower_is_worse: ClassVar[frozenset[str]] = frozenset({"delta", "change"})

    reference_rows: int = 20_000

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """The reference's AUC and a sample of its rows with their attributions (None when unusable)."""
        try:
            batch = _usable_rows(reference, columns.label, [columns.score], self.positive_label)
            dims, _ = self.dimensions(batch.frame, columns)
        except (CheckInputError, NotApplicable) as exc:
            return {"auc": None, "sample": None, "reason": str(exc)}
        attributions = example_attribution(batch.positive, batch.scores[columns.score])
        sample = batch.frame[dims].assign(**{ATTRIBUTION_COLUMN: attributions})
        if len(sample) > self.reference_rows:
            ids = self.row_ids(batch.frame, columns)
            drawn = hashed_order(batch.frame[dims], attributions, ids, self.seed)[: self.reference_rows]
            sample = sample.iloc[np.sort(drawn)]
        return {"auc": 2.0 * float(attributions.mean()), "sample": sample, "reason": None}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        batch = _usable_rows(current, columns.label, [columns.score], self.positive_label)
        dims, absent = self.dimensions(batch.frame, columns)
        attributions = example_attribution(batch.positive, batch.scores[columns.score])
        seg = segment(batch.frame[dims], attributions, self.row_ids(batch.frame, columns), **self.settings())
        changes = {s.node: _reference_change(seg, s.node, s.mean, profile) for s in seg.slices}
        reference_auc = profile.get("auc")
        metrics = {
            "auc": 2.0 * seg.overall,
            "mean_attribution": seg.overall,
            "reference_auc": reference_auc,
            "auc_change": None if reference_auc is None else 2.0 * seg.overall - reference_auc,
        }
        details = {"dropped_rows": batch.dropped, "reference": profile.get("reason") or "ok"}
        summary = self.summary_result(seg, batch, metrics, dims, absent, details)
        return [summary, *self.slice_results(seg, batch, columns, "mean_attribution", changes)]


def _reference_change(seg: Segmentation, node: int, mean: float, profile: dict[str, Any]) -> dict[str, Any]:
    """The reference's mean attribution in the same slice, and the batch's change from it."""
    sample = profile.get("sample")
    rule = seg.rules[node]
    if sample is None or any(name not in sample.columns for name in rule.conditions):
        return {"reference_mean_attribution": None, "change": None}
    inside = rule.mask(sample)
    if not inside.any():
        return {"reference_mean_attribution": None, "change": None}
    reference_mean = float(sample[ATTRIBUTION_COLUMN].to_numpy()[inside].mean())
    return {"reference_mean_attribution": reference_mean, "change": mean - reference_mean}


@register
@dataclass(kw_only=True)
class AttributionCompare(_SlicingCheck):
    """Model comparison: the candidate's minus the baseline's normalised attributions, sliced by a tree.

    The baseline is the score column, the candidate the column named by `candidate_score`. Overall the
    mean difference is half the AUC gain; a slice with a negative mean is where the candidate loses.
    """

    name: ClassVar[str] = "attribution.compare"
    default_thresholds: ClassVar[dict[str, tuple[float, ...]]] = {"mean_difference": (-0.01, -0.025, -0.05)}
    lower_is_worse: ClassVar[frozenset[str]] = frozenset({"mean_difference"})

    candidate_score: str | None = None

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """Nothing to learn from the reference: both models are compared on the batch itself."""
        return {"reference_rows": len(reference)}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        if not self.candidate_score:
            raise NotApplicable("set candidate_score to the column holding the second model's scores")
        if self.candidate_score not in current.columns:
            raise CheckInputError(f"candidate_score column {self.candidate_score!r} is not in the batch")
        score_columns = [columns.score, self.candidate_score]
        batch = _usable_rows(current, columns.label, score_columns, self.positive_label)
        dims, absent = self.dimensions(batch.frame, columns, exclude=tuple(score_columns))
        comparison = compare_models(
            batch.positive,
            batch.scores[columns.score],
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
        return [summary, *self.slice_results(seg, batch, columns, "mean_difference")]


@register
@dataclass(kw_only=True)
class AttributionPairs(Check):
    """Pair attribution cross matrix: AUC of every cross of a negative slice and a positive slice.

    Slices come from one or two dimensions (the first categorical feature by default; numbers cut into
    quantile bins). A cell's mean pair attribution is the AUC restricted to it; its headroom is its
    mis-ordered pairs (ties one half) over all pairs, so the cells' headrooms sum to 1 - AUC.
    """

    name: ClassVar[str] = "attribution.pairs"
    family: ClassVar[str] = "attribution"
    needs: ClassVar[frozenset[str]] = frozenset({"label", "score", "features"})
    default_thresholds: ClassVar[dict[str, tuple[float, ...]]] = {"headroom": (0.02, 0.05, 0.1)}

    bins: int = 4
    max_slices: int = 8
    positive_label: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bins < 1 or self.max_slices < 2:
            raise CheckInputError(f"{self.name}: bins must be >= 1 and max_slices >= 2")

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """Nothing to learn from the reference: the matrix describes the batch."""
        return {"reference_rows": len(reference)}

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

    def _slices(self, frame: pd.DataFrame, dims: list[str]) -> pd.DataFrame:
        """Each dimension as slice labels: numbers in quantile bins, rare categories merged."""
        return pd.DataFrame({d: _slice_labels(frame[d], self.bins, self.max_slices) for d in dims})

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        dims = self._dimensions(current, columns)
        batch = _usable_rows(current, columns.label, [columns.score], self.positive_label)
        slices = self._slices(batch.frame, dims)
        matrix = pair_attribution(batch.positive, batch.scores[columns.score], slices, slices)
        summary = self.result(
            ALL_DATA,
            {"auc": matrix.auc},
            rows=len(batch.frame),
            details={"matrix": matrix.to_details(), "dimensions": dims, "dropped_rows": batch.dropped},
        )
        return [summary, *self._cell_results(matrix)]

    def _cell_results(self, matrix: CrossMatrix) -> list[CheckResult]:
        cells = matrix.to_frame().assign(headroom=matrix.headroom().ravel())
        return [
            self.result(
                f"negative: {row.negative_slice} | positive: {row.positive_slice}",
                {
                    "headroom": row.headroom,
                    "mean_attribution": row.mean_attribution,
                    "incorrect_pairs": row.incorrect_pairs,
                },
                rows=int(row.pairs),
                details={"negative_slice": row.negative_slice, "positive_slice": row.positive_slice},
            )
            for row in cells.itertuples(index=False)
        ]


def _slice_labels(column: pd.Series, bins: int, max_slices: int) -> pd.Series:
    """Readable slice labels: numeric columns in quantile bins, the rarest categories as `<other>`."""
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        numbers = column.astype(float).where(np.isfinite(column.astype(float)))
        if numbers.notna().any():
            binned = pd.qcut(numbers, q=bins, duplicates="drop")
            return binned.astype(str).where(binned.notna(), MISSING_LABEL)
    labels = column.astype(str).where(column.notna(), MISSING_LABEL)
    counts = labels.value_counts()
    if len(counts) <= max_slices:
        return labels
    kept = set(counts.index[: max_slices - 1])
    return labels.where(labels.isin(kept), OTHER_LABEL)
