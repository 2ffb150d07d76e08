"""Subset performance: is the model significantly worse on a subset of a feature than on the whole batch?

Every check here cuts each feature into subsets (its frequent values, or reference-quantile bins for a
numeric feature, see `checks.slicing`), computes one metric on every subset and on the whole batch, and
reports per feature the worst subset. The difference is signed so that larger is worse: overall minus
subset for metrics where higher is better, subset minus overall for error rates, variances and errors.

Significance is a one-sided z-test of that difference against the subset's standard error (the overall
value is taken as fixed): a subset is significantly worse when it has at least `min_subset_size` rows
and its p-value, Bonferroni-adjusted for the number of subsets tested on that feature, is below
`alpha`. Standard errors: Hanley-McNeil for AUC; a bootstrap of the subset's confusion counts
for the label metrics; the delta method for variances, MAE and RMSE; per-query spread for ranking.
The reported subset is the worst significant one, or the worst one when none is significant; with
`require_significance` (the default) a difference that is not significant grades as "none".
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.stats import norm

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.impact import model_impact
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.slice_codes import batch_codes
from driftline.checks.slicing import (
    bootstrap_se,
    divide,
    fit_slices,
    group_counts,
    group_sum,
    grouped_auc,
    grouped_moments,
    hanley_mcneil_se,
    mean_se,
)

BOOTSTRAP_DRAWS = 200
SCALE_FREE_THRESHOLDS: dict[str, tuple[float, ...]] = {"difference": (0.05, 0.10, 0.15)}
RELATIVE_THRESHOLDS: dict[str, tuple[float, ...]] = {"relative_difference": (0.25, 0.5, 1.0)}
SIGNIFICANCE_TEST = "one-sided z-test of the difference vs the subset standard error, Bonferroni over subsets"


@dataclass
class Prepared:
    """The batch rows a metric uses (`mask`) and their arrays; `missing` counts rows left out for a
    missing or non-finite value (every row outside `mask` unless given)."""

    mask: np.ndarray
    data: dict[str, Any] = field(default_factory=dict)
    missing: int | None = None

    @property
    def rows(self) -> int:
        return int(self.mask.sum())

    @property
    def dropped(self) -> int:
        return int(len(self.mask) - self.rows) if self.missing is None else self.missing


@dataclass
class SubsetValues:
    """One metric per subset: value, standard error and row count (arrays of the same length)."""

    value: np.ndarray
    se: np.ndarray
    size: np.ndarray


# --- column helpers ---------------------------------------------------------------------------------


def numeric_values(frame: pd.DataFrame, column: str, role: str) -> np.ndarray:
    """A numeric role column as floats (NaN for missing); a non-numeric dtype is an input error."""
    values = frame[column]
    if not pd.api.types.is_numeric_dtype(values):
        raise CheckInputError(f"{role} column {column!r} is not numeric (dtype {values.dtype})")
    return values.to_numpy(dtype=float, na_value=np.nan)


def score_column(columns: Columns) -> str:
    """The model output used as a continuous score: the score column, else the prediction column."""
    name = columns.score or columns.prediction
    if not name:
        raise NotApplicable("no score or prediction column (set columns.score or columns.prediction)")
    return name


def binary_truth(frame: pd.DataFrame, column: str, positive_label: Any) -> tuple[np.ndarray, np.ndarray]:
    """(label == positive_label, label present) for a label with at most two classes."""
    labels = frame[column]
    present = labels.notna().to_numpy()
    classes = pd.unique(labels[present])
    if len(classes) > 2:
        raise NotApplicable(
            f"label column {column!r} has {len(classes)} classes; binary subset metrics need two "
            "(use the subset.macro_* and subset.multiclass_auc checks)"
        )
    truth = (labels == positive_label).to_numpy(dtype=bool, na_value=False)
    if len(classes) == 2 and not truth.any():
        raise CheckInputError(
            f"positive_label {positive_label!r} is not a value of label column {column!r} "
            f"(values {sorted(map(str, classes))}); set positive_label"
        )
    return truth, present


def predicted_positive(
    frame: pd.DataFrame, columns: Columns, positive_label: Any, threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """(predicted positive, prediction present): the prediction column, else score >= threshold.

    A prediction column holding probabilities (numbers with a fractional part) is thresholded like a
    score; whole numbers are class labels compared with `positive_label`.
    """
    if columns.prediction:
        values = frame[columns.prediction]
        present = values.notna().to_numpy()
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        holds_scores = numeric and bool(np.any(np.mod(values[present].to_numpy(dtype=float), 1) != 0))
        if not holds_scores:
            return (values == positive_label).to_numpy(dtype=bool, na_value=False), present
        scores = numeric_values(frame, columns.prediction, "prediction")
    elif columns.score:
        scores = numeric_values(frame, columns.score, "score")
    else:
        raise NotApplicable("no prediction or score column (set columns.prediction or columns.score)")
    finite = np.isfinite(scores)
    return finite & (scores >= threshold), finite


def require_rows(mask: np.ndarray, what: str) -> None:
    """An input error naming the columns when no row is usable."""
    if not mask.any():
        raise CheckInputError(f"no row has {what}")


# --- the shared check ---------------------------------------------------------------------------------


@dataclass(kw_only=True)
class SubsetCheck(Check):
    """Base of the subset.* checks: one result per feature, for the worst subset of that feature."""

    family: ClassVar[str] = "subset"
    per_feature: ClassVar[bool] = True
    metric: ClassVar[str]
    higher_is_better: ClassVar[bool] = True
    needs: ClassVar[frozenset[str]] = frozenset({"features", "label"})
    default_thresholds: ClassVar[dict[str, tuple[float, ...]]] = SCALE_FREE_THRESHOLDS

    bins: int = 4
    max_categories: int = 20
    alpha: float = 0.05
    min_subset_size: int = 30
    require_significance: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bins < 1 or self.max_categories < 1 or self.min_subset_size < 1:
            raise CheckInputError(f"{self.name}: bins, max_categories and min_subset_size must be >= 1")
        if not 0 < self.alpha < 1:
            raise CheckInputError(f"{self.name}: alpha must be in (0, 1), got {self.alpha}")

    # hooks -------------------------------------------------------------------------------------------

    @abstractmethod
    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        """Select and convert the batch rows the metric uses (raise when none is usable)."""

    @abstractmethod
    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        """The metric on every subset given the kept rows' subset codes."""

    def fit_model(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """Extra reference facts the metric needs (class order for multiclass checks)."""
        return {}

    def require_classification(self, columns: Columns) -> None:
        """Classification metrics do not apply to a regression task."""
        if columns.task == "regression":
            raise NotApplicable(f"{self.metric} applies to classification, the task is regression")

    # fit / evaluate ----------------------------------------------------------------------------------

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """Subset definitions of every feature (bin edges, categories), plus the metric's extras."""
        slices: dict[str, dict[str, Any]] = {}
        for feature in self.feature_columns(columns):
            try:
                if feature not in reference:
                    raise CheckInputError(f"the reference has no column {feature!r}")
                slices[feature] = fit_slices(
                    reference[feature],
                    bins=self.bins,
                    max_categories=self.max_categories,
                    numeric=feature in columns.numeric,
                )
            except CheckInputError as exc:
                slices[feature] = {"error": str(exc)}
        return {"slices": slices, **self.fit_model(reference, columns)}

    def slice_definitions(self, profile: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Every feature's subset definition: the run computes their batch codes once for all checks."""
        return profile["slices"]

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        """One result per feature: worst subset, overall value, signed difference and its significance."""
        prepared = self.prepare(current, profile, columns)
        overall = float(self.compute(prepared, np.zeros(prepared.rows, dtype=np.intp), 1).value[0])
        if not math.isfinite(overall):
            raise NotApplicable(
                f"{self.metric} is undefined on the whole batch ({prepared.rows} usable rows; "
                "for example the label has a single class)"
            )
        results = []
        for feature in self.feature_columns(columns):
            try:
                results.append(self._feature_result(feature, current, profile, columns, prepared, overall))
            except CheckInputError as exc:
                results.append(CheckResult.error(self.name, feature, str(exc), rows=prepared.rows))
        return results

    def _subset_codes(
        self, feature: str, current: pd.DataFrame, profile: dict[str, Any], prepared: Prepared
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Subset code of every kept row, and the feature's subset definition."""
        slices = profile["slices"].get(feature)
        if slices is None:
            raise CheckInputError(f"feature {feature!r} was not fitted on the reference")
        if "error" in slices:
            raise CheckInputError(slices["error"])
        if feature not in current:
            raise CheckInputError(f"the batch has no column {feature!r}")
        return batch_codes(current, feature, slices)[prepared.mask].astype(np.intp, copy=False), slices

    def _test(self, values: SubsetValues, overall: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Signed difference (larger = worse), Bonferroni-adjusted p-value and significance per subset."""
        diff = overall - values.value if self.higher_is_better else values.value - overall
        testable = np.isfinite(values.value) & (values.size >= self.min_subset_size)
        p_value = np.minimum(_one_sided_p(diff, values.se) * max(int(testable.sum()), 1), 1.0)
        return diff, p_value, testable & (p_value < self.alpha)

    def _feature_result(
        self,
        feature: str,
        current: pd.DataFrame,
        profile: dict[str, Any],
        columns: Columns,
        prepared: Prepared,
        overall: float,
    ) -> CheckResult:
        codes, slices = self._subset_codes(feature, current, profile, prepared)
        labels = slices["labels"]
        values = self.compute(prepared, codes, len(labels))
        defined = np.isfinite(values.value) & (values.size > 0)
        if not defined.any():
            reason = f"{self.metric} is undefined in every subset of {feature!r}"
            return CheckResult.skipped(self.name, feature, reason, prepared.rows)
        diff, p_value, significant = self._test(values, overall)
        k = int(np.argmax(np.where(significant if significant.any() else defined, diff, -np.inf)))
        metrics = {
            "subset_value": float(values.value[k]),
            "overall_value": overall,
            "difference": float(diff[k]),
            "relative_difference": float(divide(diff[k], abs(overall))),
            "p_value": float(p_value[k]),
        }
        flagged = bool(significant[k]) or not self.require_significance
        severity = self.grade(metrics) if flagged else "none"
        failing = np.zeros(len(current), dtype=bool)
        if severity != "none":
            failing[np.flatnonzero(prepared.mask)[codes == k]] = True
        subsets = [
            {
                "subset": labels[j],
                "rows": int(values.size[j]),
                "value": float(values.value[j]),
                "std_error": float(values.se[j]),
                "p_value": float(p_value[j]),
                "significant": bool(significant[j]),
            }
            for j in np.flatnonzero(values.size > 0)
        ]
        details = {
            "metric": self.metric,
            "subset": labels[k],
            "subset_rows": int(values.size[k]),
            "significant": bool(significant[k]),
            "kind": slices["kind"],
            "test": SIGNIFICANCE_TEST,
            "dropped_rows": prepared.dropped,
            "subsets": subsets,
        }
        impact = model_impact(current, failing, columns) if failing.any() else None
        return self.result(
            feature,
            metrics,
            rows=prepared.rows,
            failing_rows=int(failing.sum()),
            model_impact=impact,
            severity=severity,
            details=details,
        )


def _one_sided_p(diff: np.ndarray, se: np.ndarray) -> np.ndarray:
    """P(difference this large | no real shortfall) under a normal approximation; 0 when se is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, diff / se, np.where(diff > 1e-12, np.inf, -np.inf))
    return np.where(np.isnan(diff) | np.isnan(se), np.nan, norm.sf(z))


# --- binary classification ---------------------------------------------------------------------------


@dataclass(kw_only=True)
class BinarySubsetCheck(SubsetCheck):
    """Binary classification metrics with `positive_label` as the positive class.

    Without a prediction column, scores at or above `threshold` count as positive predictions.
    """

    positive_label: int | float | str | bool = 1
    threshold: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.threshold <= 1:
            raise CheckInputError(f"{self.name}: threshold must be in [0, 1], got {self.threshold}")


@register
@dataclass(kw_only=True)
class SubsetAUC(BinarySubsetCheck):
    """Subset ROC AUC: Mann-Whitney AUC of the score (ties count 1/2) per subset vs the whole batch."""

    name: ClassVar[str] = "subset.auc"
    metric: ClassVar[str] = "auc"
    needs: ClassVar[frozenset[str]] = frozenset({"features", "label", "score"})

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        self.require_classification(columns)
        truth, present = binary_truth(frame, columns.label, self.positive_label)
        score = numeric_values(frame, columns.score, "score")
        mask = present & np.isfinite(score)
        require_rows(mask, f"a label in {columns.label!r} and a finite score in {columns.score!r}")
        kept = score[mask]
        return Prepared(
            mask, {"score": kept, "positive": truth[mask], "order": np.argsort(kept, kind="stable")}
        )

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        d = prepared.data
        auc, n_pos, n_neg = grouped_auc(d["score"], d["positive"], codes, n_groups, d["order"])
        return SubsetValues(auc, hanley_mcneil_se(auc, n_pos, n_neg), n_pos + n_neg)


# Cells of a binary confusion count: 2 * truth + predicted.
TN, FP, FN, TP = 0, 1, 2, 3


def accuracy_from_counts(c: np.ndarray) -> np.ndarray:
    return divide(c[..., TP] + c[..., TN], c.sum(axis=-1))


def precision_from_counts(c: np.ndarray) -> np.ndarray:
    return divide(c[..., TP], c[..., TP] + c[..., FP])


def recall_from_counts(c: np.ndarray) -> np.ndarray:
    return divide(c[..., TP], c[..., TP] + c[..., FN])


def f1_from_counts(c: np.ndarray) -> np.ndarray:
    return divide(2 * c[..., TP], 2 * c[..., TP] + c[..., FP] + c[..., FN])


def fpr_from_counts(c: np.ndarray) -> np.ndarray:
    return divide(c[..., FP], c[..., FP] + c[..., TN])


def counts_values(counts: np.ndarray, metric: Callable[[np.ndarray], np.ndarray]) -> SubsetValues:
    """A count-based metric per subset, with its bootstrap standard error (fixed seed)."""
    se = bootstrap_se(counts, metric, n_boot=BOOTSTRAP_DRAWS, rng=np.random.default_rng(0))
    return SubsetValues(metric(counts), se, counts.sum(axis=1).astype(float))


@dataclass(kw_only=True)
class ConfusionSubsetCheck(BinarySubsetCheck):
    """A binary metric computed from per-subset confusion counts of predicted vs true labels."""

    from_counts: ClassVar[Callable[[np.ndarray], np.ndarray]]

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        self.require_classification(columns)
        truth, has_label = binary_truth(frame, columns.label, self.positive_label)
        predicted, has_prediction = predicted_positive(frame, columns, self.positive_label, self.threshold)
        mask = has_label & has_prediction
        require_rows(mask, f"both a label in {columns.label!r} and a prediction")
        cells = 2 * truth[mask].astype(np.intp) + predicted[mask]
        return Prepared(mask, {"cells": cells})

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        counts = group_counts(codes, n_groups, prepared.data["cells"], 4)
        return counts_values(counts, self.from_counts)


@register
@dataclass(kw_only=True)
class SubsetAccuracy(ConfusionSubsetCheck):
    """Subset accuracy: share of rows whose predicted label (score >= threshold) equals the label."""

    name: ClassVar[str] = "subset.accuracy"
    metric: ClassVar[str] = "accuracy"
    from_counts = staticmethod(accuracy_from_counts)


@register
@dataclass(kw_only=True)
class SubsetF1(ConfusionSubsetCheck):
    """Subset F1: 2 TP / (2 TP + FP + FN) of the rounded predictions per subset vs the whole batch."""

    name: ClassVar[str] = "subset.f1"
    metric: ClassVar[str] = "f1"
    from_counts = staticmethod(f1_from_counts)


@register
@dataclass(kw_only=True)
class SubsetPrecision(ConfusionSubsetCheck):
    """Subset precision (positive predictive value): TP / (TP + FP) per subset vs the whole batch."""

    name: ClassVar[str] = "subset.precision"
    metric: ClassVar[str] = "precision"
    from_counts = staticmethod(precision_from_counts)


@register
@dataclass(kw_only=True)
class SubsetRecall(ConfusionSubsetCheck):
    """Subset recall (true positive rate): TP / (TP + FN) per subset vs the whole batch."""

    name: ClassVar[str] = "subset.recall"
    metric: ClassVar[str] = "recall"
    from_counts = staticmethod(recall_from_counts)


@register
@dataclass(kw_only=True)
class SubsetFPR(ConfusionSubsetCheck):
    """Subset false positive rate: FP / (FP + TN) per subset; a higher rate than overall is worse."""

    name: ClassVar[str] = "subset.fpr"
    metric: ClassVar[str] = "fpr"
    higher_is_better: ClassVar[bool] = False
    from_counts = staticmethod(fpr_from_counts)


# --- prediction variance -------------------------------------------------------------------------------


def variance_values(x: np.ndarray, codes: np.ndarray, n_groups: int) -> SubsetValues:
    """Population variance (ddof=0) per subset; standard error sqrt((m4 - var^2) / (n - 1))."""
    size, _, var, m4 = grouped_moments(x, codes, n_groups)
    return SubsetValues(var, mean_se(m4 - var**2, size), size)


@register
@dataclass(kw_only=True)
class SubsetVariance(SubsetCheck):
    """Subset prediction variance: population variance (ddof=0) of the score per subset; higher is worse."""

    name: ClassVar[str] = "subset.variance"
    metric: ClassVar[str] = "variance"
    higher_is_better: ClassVar[bool] = False
    needs: ClassVar[frozenset[str]] = frozenset({"features"})
    default_thresholds: ClassVar[dict[str, tuple[float, ...]]] = RELATIVE_THRESHOLDS
    label_condition: ClassVar[str] = ""

    def label_rows(self, frame: pd.DataFrame, columns: Columns) -> tuple[np.ndarray, np.ndarray]:
        """(rows with a usable label, rows of the class the variance is taken over): all rows here."""
        every = np.ones(len(frame), dtype=bool)
        return every, every

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        name = score_column(columns)
        x = numeric_values(frame, name, "score")
        labelled, selected = self.label_rows(frame, columns)
        usable = labelled & np.isfinite(x)
        mask = usable & selected
        require_rows(mask, f"a finite value in {name!r}{self.label_condition}")
        return Prepared(mask, {"x": x[mask]}, missing=int((~usable).sum()))

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        return variance_values(prepared.data["x"], codes, n_groups)


@dataclass(kw_only=True)
class LabelledVariance(SubsetVariance):
    """Prediction variance over the rows of one true class."""

    needs: ClassVar[frozenset[str]] = frozenset({"features", "label"})
    positive_rows: ClassVar[bool]

    positive_label: int | float | str | bool = 1

    def label_rows(self, frame: pd.DataFrame, columns: Columns) -> tuple[np.ndarray, np.ndarray]:
        truth, present = binary_truth(frame, columns.label, self.positive_label)
        return present, truth == self.positive_rows


@register
@dataclass(kw_only=True)
class SubsetVariancePositive(LabelledVariance):
    """Subset prediction variance on positive labels: ddof=0 variance of the score where label is positive."""

    name: ClassVar[str] = "subset.variance_positive"
    metric: ClassVar[str] = "variance_positive"
    positive_rows: ClassVar[bool] = True
    label_condition: ClassVar[str] = " and a positive label"


@register
@dataclass(kw_only=True)
class SubsetVarianceNegative(LabelledVariance):
    """Subset prediction variance on negative labels: ddof=0 variance of the score where label is negative."""

    name: ClassVar[str] = "subset.variance_negative"
    metric: ClassVar[str] = "variance_negative"
    positive_rows: ClassVar[bool] = False
    label_condition: ClassVar[str] = " and a negative label"


# --- regression ----------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class RegressionSubsetCheck(SubsetCheck):
    """A regression error per subset; errors are prediction (else score) minus label."""

    higher_is_better: ClassVar[bool] = False
    default_thresholds: ClassVar[dict[str, tuple[float, ...]]] = RELATIVE_THRESHOLDS

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        if columns.task in ("binary", "multiclass"):
            raise NotApplicable(f"{self.metric} applies to regression, the task is {columns.task}")
        name = columns.prediction or score_column(columns)
        predicted = numeric_values(frame, name, "prediction")
        truth = numeric_values(frame, columns.label, "label")
        mask = np.isfinite(predicted) & np.isfinite(truth)
        require_rows(mask, f"finite values in both {name!r} and {columns.label!r}")
        return Prepared(mask, {"error": predicted[mask] - truth[mask]})


@register
@dataclass(kw_only=True)
class SubsetMAE(RegressionSubsetCheck):
    """Subset mean absolute error: mean |prediction - label| per subset; higher than overall is worse."""

    name: ClassVar[str] = "subset.mae"
    metric: ClassVar[str] = "mae"

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        size, mae, var, _ = grouped_moments(np.abs(prepared.data["error"]), codes, n_groups)
        return SubsetValues(mae, mean_se(var, size), size)


@register
@dataclass(kw_only=True)
class SubsetRMSE(RegressionSubsetCheck):
    """Subset root mean squared error: sqrt(mean (prediction - label)^2) per subset; higher is worse."""

    name: ClassVar[str] = "subset.rmse"
    metric: ClassVar[str] = "rmse"

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        size, mse, var, _ = grouped_moments(prepared.data["error"] ** 2, codes, n_groups)
        rmse = np.sqrt(mse)
        return SubsetValues(rmse, divide(mean_se(var, size), 2 * rmse), size)


# --- multiclass ----------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class MulticlassSubsetCheck(SubsetCheck):
    """Multiclass metrics over the class probability columns `columns.class_scores`.

    `classes` names the class of each of those columns, in order; by default the sorted reference labels.
    """

    classes: list[Any] | None = None

    def fit_model(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        if self.classes is not None:
            return {"classes": list(self.classes)}
        if columns.label not in reference:
            return {"classes": None}
        try:
            return {"classes": sorted(pd.unique(reference[columns.label].dropna()).tolist())}
        except TypeError:
            return {"classes": None}

    def class_matrix(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> np.ndarray:
        """The class probability columns as an (n, C) float matrix, checked against the class list."""
        classes = profile.get("classes")
        names = list(columns.class_scores)
        if classes is None or len(classes) != len(names):
            raise CheckInputError(
                f"{len(names)} class score columns {names} but classes {classes}; "
                "set the `classes` parameter to name each class score column"
            )
        return np.column_stack([numeric_values(frame, c, "class score") for c in names])


@register
@dataclass(kw_only=True)
class SubsetMulticlassAUC(MulticlassSubsetCheck):
    """Subset multiclass AUC: Hand & Till one-vs-one AUC, the mean over class pairs present in the subset."""

    name: ClassVar[str] = "subset.multiclass_auc"
    metric: ClassVar[str] = "multiclass_auc"
    needs: ClassVar[frozenset[str]] = frozenset({"features", "label", "class_scores"})

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        self.require_classification(columns)
        probs = self.class_matrix(frame, profile, columns)
        truth = pd.Index(profile["classes"]).get_indexer(pd.Index(frame[columns.label], dtype=object))
        mask = (truth >= 0) & np.isfinite(probs).all(axis=1)
        require_rows(mask, f"a known class in {columns.label!r} and finite class scores")
        return Prepared(mask, {"probs": probs[mask], "truth": truth[mask]})

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        probs, truth = prepared.data["probs"], prepared.data["truth"]
        total = np.zeros(n_groups)
        pairs = np.zeros(n_groups)
        var_sum = np.zeros(n_groups)
        n_classes = probs.shape[1]
        for a in range(n_classes):
            for b in range(a + 1, n_classes):
                rows = (truth == a) | (truth == b)
                if not rows.any():
                    continue
                one_way = [
                    grouped_auc(probs[rows, c], truth[rows] == c, codes[rows], n_groups) for c in (a, b)
                ]
                pair_auc = (one_way[0][0] + one_way[1][0]) / 2
                both = np.isfinite(pair_auc)
                total[both] += pair_auc[both]
                pairs[both] += 1
                for auc, n_pos, n_neg in one_way:
                    var_sum[both] += hanley_mcneil_se(auc, n_pos, n_neg)[both] ** 2
        # Pair AUCs share rows, so their errors are taken as fully correlated (a conservative error).
        se = np.sqrt(divide(var_sum, 2 * pairs))
        return SubsetValues(divide(total, pairs), se, group_sum(codes, n_groups))


def sorted_codes(values: pd.Index) -> tuple[np.ndarray, pd.Index]:
    """Codes of `values` over their distinct values in sorted order (by type and text when they do
    not compare), so the class layout, and the bootstrap drawn on it, does not depend on row order."""
    codes, uniques = pd.factorize(values)
    try:
        order = np.argsort(uniques.to_numpy(), kind="stable")
    except TypeError:
        order = np.array(
            sorted(range(len(uniques)), key=lambda i: (type(uniques[i]).__name__, str(uniques[i])))
        )
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return np.where(codes >= 0, rank[codes], -1), uniques[order]


def macro_from_counts(counts: np.ndarray, *, n_classes: int, kind: str, average: str) -> np.ndarray:
    """Macro (or support-weighted) precision, recall or F1 from flattened (true, predicted) counts.

    Classes that occur in neither the labels nor the predictions are left out; a class metric with a
    zero denominator counts as 0 (scikit-learn's default).
    """
    m = counts.reshape(*counts.shape[:-1], n_classes, n_classes).astype(float)
    tp = np.diagonal(m, axis1=-2, axis2=-1)
    true, pred = m.sum(axis=-1), m.sum(axis=-2)
    denominator = {"precision": pred, "recall": true, "f1": (true + pred) / 2}[kind]
    per_class = np.nan_to_num(divide(tp, denominator), nan=0.0)
    weight = true if average == "weighted" else ((true + pred) > 0).astype(float)
    return divide((per_class * weight).sum(axis=-1), weight.sum(axis=-1))


@dataclass(kw_only=True)
class MacroSubsetCheck(MulticlassSubsetCheck):
    """Precision, recall or F1 averaged over classes (`average="weighted"`: weighted by support).

    The predicted class is the argmax of the class scores, or the prediction column without them.
    """

    kind: ClassVar[str]
    average: str = "macro"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.average not in ("macro", "weighted"):
            raise CheckInputError(f"{self.name}: average must be 'macro' or 'weighted', got {self.average!r}")

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        self.require_classification(columns)
        truth = frame[columns.label]
        if columns.class_scores:
            probs = self.class_matrix(frame, profile, columns)
            finite = np.isfinite(probs).all(axis=1)
            winner = np.argmax(np.where(finite[:, None], probs, 0.0), axis=1)
            predicted = pd.Series(np.asarray(profile["classes"], dtype=object)[winner], index=frame.index)
            mask = truth.notna().to_numpy() & finite
        elif columns.prediction:
            predicted = frame[columns.prediction]
            mask = (truth.notna() & predicted.notna()).to_numpy()
        else:
            raise NotApplicable(
                "no class score or prediction column (set columns.class_scores or .prediction)"
            )
        require_rows(mask, f"a label in {columns.label!r} and a predicted class")
        both = pd.Index(np.concatenate([truth[mask].to_numpy(object), predicted[mask].to_numpy(object)]))
        codes, uniques = sorted_codes(both)
        n = int(mask.sum())
        return Prepared(mask, {"cells": codes[:n] * len(uniques) + codes[n:], "n_classes": len(uniques)})

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        n_classes = prepared.data["n_classes"]
        counts = group_counts(codes, n_groups, prepared.data["cells"], n_classes * n_classes)
        metric = partial(macro_from_counts, n_classes=n_classes, kind=self.kind, average=self.average)
        return counts_values(counts, metric)


@register
@dataclass(kw_only=True)
class SubsetMacroF1(MacroSubsetCheck):
    """Subset macro F1: unweighted mean of per-class F1 (argmax predictions) per subset vs overall."""

    name: ClassVar[str] = "subset.macro_f1"
    metric: ClassVar[str] = "macro_f1"
    kind: ClassVar[str] = "f1"


@register
@dataclass(kw_only=True)
class SubsetMacroPrecision(MacroSubsetCheck):
    """Subset macro precision: unweighted mean of per-class precision per subset vs overall."""

    name: ClassVar[str] = "subset.macro_precision"
    metric: ClassVar[str] = "macro_precision"
    kind: ClassVar[str] = "precision"


@register
@dataclass(kw_only=True)
class SubsetMacroRecall(MacroSubsetCheck):
    """Subset macro recall: unweighted mean of per-class recall per subset vs overall."""

    name: ClassVar[str] = "subset.macro_recall"
    metric: ClassVar[str] = "macro_recall"
    kind: ClassVar[str] = "recall"
