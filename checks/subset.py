"""Subset performance: has the model got worse on a subset of a feature since the reference?

Every check here cuts each feature into subsets (its frequent values, or reference-quantile bins for a
numeric feature, see `checks.slicing`) and computes one metric on every subset, in the batch and, once
when fitted, in the reference. The graded metric is each subset's `change` against the same subset in
the reference, signed so that larger is worse (reference minus batch for metrics where higher is
better, batch minus reference for error rates, variances and errors; `relative_change` divides it by
the reference value for the scale-bound variance and error checks). Its noise combines both sides:
Agresti–Caffo for rates (`checks.evidence.rate_change`), Hanley–McNeil for AUC, a seeded
multinomial bootstrap of the confusion counts for F1 and the macro metrics, the delta method for
variances, MAE and RMSE, the per-query spread for ranking and the ratio estimator for NER spans.

A subset is graded only when it has at least `min_subset_size` usable rows in both the batch and the
reference and its metric is defined on both sides; the others are listed in the details with the
reason. Each feature reports the subset whose change is most surely large: the highest lower bound at
the per-feature Bonferroni level over its graded subsets. Every graded subset is a test, so the run
grades the reported one as the best of them (`checks.evidence.best_of`: its p-value is the number of
graded subsets times its own), and a feature cut in ten subsets is no likelier to alarm on a clean
batch than one cut in two.

`compare_to: batch` is an audit of the batch alone: each subset against the whole batch (`difference`,
`relative_difference`), a standing property of the model that is large on clean batches too, graded
with the subset's own standard error (the whole-batch value taken as fixed).
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

from driftline.checks.base import Check, Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import (
    DEFAULT_CONFIDENCE,
    Evidence,
    best_of,
    normal,
    per_test_confidence,
    rate_change,
)
from driftline.checks.impact import model_impact
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.slice_codes import batch_codes
from driftline.checks.slicing import (
    apply_slices,
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

COMPARE_TO = ("reference", "batch")
SCALE_FREE = (0.05, 0.10, 0.15)
RELATIVE = (0.25, 0.5, 1.0)
# The reported subset's value of the check's metric: its declaration holds the metric's direction.
SUBSET_VALUE = "subset_value"


def subset_metrics(
    uncertainty: str, relative: bool = False, higher_is_worse: bool = False
) -> dict[str, Metric]:
    """The metrics of a subset check whose standard errors come from `uncertainty`: the graded change
    against the reference (default) and audit difference against the whole batch, and the reported
    subset's value, which declares whether higher values of the check's metric are worse."""
    prefix, thresholds = ("relative_", RELATIVE) if relative else ("", SCALE_FREE)
    scale = " over the reference value" if relative else ""
    return {
        f"{prefix}change": Metric(
            thresholds,
            change=f"the subset's metric in the batch against the same subset in the reference{scale}, "
            "signed so that larger is worse (the subset with the surest change per feature)",
            uncertainty=f"normal bound, both sides' standard errors combined, graded as the best of the "
            f"feature's graded subsets; {uncertainty}",
            figure="subsets",
        ),
        f"{prefix}difference": Metric(
            thresholds,
            change=f"audit (compare_to: batch): the subset against the whole batch{scale}, signed so "
            "that larger is worse; not a change against the reference",
            uncertainty=f"normal bound on the subset's standard error, graded as the best of the "
            f"feature's graded subsets; {uncertainty}",
            figure="subsets",
            audit=True,
        ),
        SUBSET_VALUE: Metric(
            (),
            higher_is_worse=higher_is_worse,
            change="reported, not graded: the reported subset's metric in the batch (its reference, "
            "batch and overall values are in the same units)",
            uncertainty="none: not graded",
        ),
    }


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
    """One metric per subset: value, standard error and row count (arrays of the same length), and
    the rows its noise rests on (`support`: the rows unless narrower, e.g. a rate's denominator); a
    rate also keeps its `hits` out of `trials`, whose change is bounded by `rate_change`."""

    value: np.ndarray
    se: np.ndarray
    size: np.ndarray
    hits: np.ndarray | None = None
    trials: np.ndarray | None = None
    support: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.support is None:
            self.support = self.trials if self.trials is not None else self.size

    def rows_of_noise(self) -> np.ndarray:
        """`support`, which `__post_init__` fills when it was not given."""
        return self.size if self.support is None else self.support


@dataclass
class Comparison:
    """Every subset's signed change (larger = worse) with its evidence, and why a subset is not graded."""

    change: np.ndarray
    evidence: list[Evidence | None]
    why_not: list[str | None]

    @property
    def graded(self) -> np.ndarray:
        return np.array([e is not None for e in self.evidence], dtype=bool)


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
    """Base of the subset.* checks: one result per feature, for the subset of that feature whose
    change against the reference is surest."""

    family: ClassVar[str] = "subset"
    role: ClassVar[str] = "subset"
    per_feature: ClassVar[bool] = True
    metric: ClassVar[str]
    relative: ClassVar[bool] = False
    # What `SubsetValues.support` counts: a subset is graded when both sides have `min_subset_size`.
    support_rows: ClassVar[str] = "usable rows"
    needs: ClassVar[frozenset[str]] = frozenset({"features", "label"})
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics("standard error of the subset metric")

    bins: int = 4
    max_categories: int = 20
    min_subset_size: int = 30
    compare_to: str = "reference"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bins < 1 or self.max_categories < 1 or self.min_subset_size < 1:
            raise CheckInputError(f"{self.name}: bins, max_categories and min_subset_size must be >= 1")
        if self.compare_to not in COMPARE_TO:
            raise CheckInputError(
                f"{self.name}: compare_to must be one of {COMPARE_TO}, got {self.compare_to!r}"
            )

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

    # fit ---------------------------------------------------------------------------------------------

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """Subset definitions of every feature (bin edges, categories), the metric's extras, and every
        subset's metric in the reference (its value, standard error and counts)."""
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
        profile = {"slices": slices, **self.fit_model(reference, columns)}
        if self.compare_to == "batch":
            return profile
        return {**profile, **self._reference_values(reference, profile, columns)}

    def _reference_values(
        self, reference: pd.DataFrame, profile: dict[str, Any], columns: Columns
    ) -> dict[str, Any]:
        """Each fitted feature's subset values in the reference, or why the reference has none."""
        try:
            prepared = self.prepare(reference, profile, columns)
        except (CheckInputError, NotApplicable) as exc:
            return {"reference": {}, "reference_error": (type(exc).__name__, str(exc))}
        except KeyError as exc:
            return {
                "reference": {},
                "reference_error": ("CheckInputError", f"the reference has no column {exc}"),
            }
        values = {}
        for feature, slices in profile["slices"].items():
            if "error" not in slices:
                codes = apply_slices(reference[feature], slices)[prepared.mask]
                values[feature] = self.compute(prepared, codes, len(slices["labels"]))
        return {"reference": values, "reference_error": None}

    def slice_definitions(self, profile: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Every feature's subset definition: the run computes their batch codes once for all checks."""
        return profile["slices"]

    # evaluate ----------------------------------------------------------------------------------------

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        """One result per feature: the subset whose change (or audit difference) is surest, graded."""
        prepared = self.prepare(current, profile, columns)
        if self.compare_to == "reference":
            self._require_reference(profile)
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

    def _require_reference(self, profile: dict[str, Any]) -> None:
        """Raise the reference's own error (input error or not applicable) when it has no values."""
        kind, message = profile.get("reference_error") or (None, None)
        if "reference" not in profile:
            kind, message = "NotApplicable", "the profile predates them; refit it"
        if kind is not None:
            error = CheckInputError if kind == "CheckInputError" else NotApplicable
            raise error(f"no reference value of {self.metric} per subset: {message}")

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

    @property
    def higher_is_worse(self) -> bool:
        """Whether higher values of the metric are worse, as the check declares its subset value."""
        return self.declared_metrics[SUBSET_VALUE].higher_is_worse

    def worse(self, value: np.ndarray, baseline: np.ndarray | float) -> np.ndarray:
        """`value` against `baseline`, signed so that larger is worse."""
        return value - baseline if self.higher_is_worse else baseline - value

    def _against_reference(self, batch: SubsetValues, ref: SubsetValues) -> Comparison:
        """Every subset's change against the same subset in the reference, with its evidence."""
        change = self.worse(batch.value, ref.value)
        if self.relative:
            change = divide(change, np.abs(ref.value))
        why_not = [
            self._why_not(batch, j, "batch") or self._why_not(ref, j, "reference") or self._zero_base(ref, j)
            for j in range(len(change))
        ]
        evidence = [
            None if reason else self._change_evidence(batch, ref, j, change[j])
            for j, reason in enumerate(why_not)
        ]
        return Comparison(change, evidence, why_not)

    def _change_evidence(self, batch: SubsetValues, ref: SubsetValues, j: int, change: float) -> Evidence:
        """Evidence of subset j's change: `rate_change` for a rate, else both standard errors."""
        if batch.hits is not None and ref.hits is not None and not self.relative:
            assert batch.trials is not None and ref.trials is not None  # a rate keeps both
            sides = [(batch.hits[j], int(batch.trials[j])), (ref.hits[j], int(ref.trials[j]))]
            (hits, trials), (ref_hits, ref_trials) = sides if self.higher_is_worse else sides[::-1]
            return rate_change(hits, trials, ref_hits, ref_trials)
        se = math.hypot(batch.se[j], ref.se[j])
        if self.relative:  # delta method of value / reference - 1
            se = math.hypot(batch.se[j], batch.value[j] / ref.value[j] * ref.se[j]) / abs(ref.value[j])
        return normal(change, se)

    def _against_batch(self, batch: SubsetValues, overall: float) -> Comparison:
        """Audit: every subset against the whole batch, with the subset's own standard error."""
        difference = self.worse(batch.value, overall)
        scale = abs(overall) if self.relative else 1.0
        difference = divide(difference, scale)
        why_not = [self._why_not(batch, j, "batch") for j in range(len(difference))]
        evidence = [
            None if reason else normal(difference[j], batch.se[j] / scale) for j, reason in enumerate(why_not)
        ]
        return Comparison(difference, evidence, why_not)

    def _zero_base(self, ref: SubsetValues, j: int) -> str | None:
        """A relative change from a reference value of 0 is undefined."""
        return f"its reference {self.metric} is 0" if self.relative and ref.value[j] == 0 else None

    def _why_not(self, values: SubsetValues, j: int, side: str) -> str | None:
        """Why subset j cannot be graded on one side (too few rows, undefined metric), or None."""
        support = values.rows_of_noise()
        if support[j] < self.min_subset_size:
            return (
                f"{int(support[j])} {self.support_rows} in the {side}, fewer than "
                f"min_subset_size={self.min_subset_size}"
            )
        if not (math.isfinite(values.value[j]) and math.isfinite(values.se[j])):
            return f"{self.metric} is undefined in the {side}"
        return None

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
        if not (np.isfinite(values.value) & (values.size > 0)).any():
            reason = f"{self.metric} is undefined in every subset of {feature!r}"
            return CheckResult.skipped(self.name, feature, reason, prepared.rows)
        reference = profile["reference"].get(feature) if self.compare_to == "reference" else None
        if self.compare_to == "reference" and reference is None:
            raise CheckInputError(f"feature {feature!r} has no reference values; refit the profile")
        comparison = (
            self._against_reference(values, reference)
            if reference is not None
            else self._against_batch(values, overall)
        )
        k = self._reported(comparison, values)
        chosen = comparison.evidence[k]
        graded = chosen is not None
        result = self.result(
            feature,
            self._metrics(values, reference, overall, comparison, k),
            rows=prepared.rows,
            details=self._details(slices, values, reference, comparison, k, prepared),
            evidence={self.graded_metric(): self._best_of(chosen, comparison)}
            if chosen is not None
            else None,
            severity=None if graded else "none",
        )
        failing = np.zeros(len(current), dtype=bool)
        if not graded:
            sides = "both the batch and the reference" if reference is not None else "the batch"
            result.reason = (
                f"not graded: no subset of {feature!r} has {self.min_subset_size} {self.support_rows} "
                f"and a defined {self.metric} in {sides}"
            )
        elif result.severity != "none":
            failing[np.flatnonzero(prepared.mask)[codes == k]] = True
            result.model_impact = model_impact(current, failing, columns)
        result.failing_rows = int(failing.sum())
        return result

    @staticmethod
    def _best_of(chosen: Evidence, comparison: Comparison) -> Evidence:
        """The reported subset's evidence as the best of the feature's graded subsets: each is a test
        of the run's family, so the chosen one is graded as the best of them (`checks.evidence.best_of`)."""
        return best_of(chosen.estimate, chosen.scale, int(comparison.graded.sum()))

    def graded_metric(self) -> str:
        """The metric graded: the change against the reference, or the audit's difference."""
        prefix = "relative_" if self.relative else ""
        return prefix + ("change" if self.compare_to == "reference" else "difference")

    def _reported(self, comparison: Comparison, values: SubsetValues) -> int:
        """The subset whose change is surest: the highest lower bound at the per-feature Bonferroni
        level over the graded subsets; without any, the largest defined change."""
        graded = comparison.graded
        if graded.any():
            level = per_test_confidence(DEFAULT_CONFIDENCE, int(graded.sum()))
            bounds = [e.bound(level) if e is not None else -np.inf for e in comparison.evidence]
            return int(np.argmax(bounds))
        defined = np.isfinite(comparison.change) & (values.size > 0)
        return int(np.argmax(np.where(defined, comparison.change, -np.inf)))

    def _metrics(
        self,
        values: SubsetValues,
        reference: SubsetValues | None,
        overall: float,
        comparison: Comparison,
        k: int,
    ) -> dict[str, float]:
        """The reported subset's numbers: its value, its baseline and the graded change."""
        if reference is None:
            absolute = float(self.worse(values.value[k], overall))
            return {
                self.graded_metric(): float(comparison.change[k]),
                SUBSET_VALUE: float(values.value[k]),
                "overall_value": overall,
                **({"difference": absolute} if self.relative else {}),
            }
        absolute = float(self.worse(values.value[k], reference.value[k]))
        return {
            self.graded_metric(): float(comparison.change[k]),
            SUBSET_VALUE: float(values.value[k]),
            "reference_value": float(reference.value[k]),
            "batch_value": overall,
            **({"change": absolute} if self.relative else {}),
        }

    def _details(
        self,
        slices: dict[str, Any],
        values: SubsetValues,
        reference: SubsetValues | None,
        comparison: Comparison,
        k: int,
        prepared: Prepared,
    ) -> dict[str, Any]:
        """The reported subset, how it was chosen, and every subset's numbers (graded or why not)."""
        labels = slices["labels"]
        graded_metric = self.graded_metric()
        shown = values.size > 0
        if reference is not None:
            shown |= reference.size > 0
        subsets = []
        for j in np.flatnonzero(shown):
            evidence = comparison.evidence[j]
            entry = {
                "subset": labels[j],
                "rows": int(values.size[j]),
                "value": float(values.value[j]),
                "std_error": float(values.se[j]),
                graded_metric: float(comparison.change[j]),
                f"{graded_metric}_std_error": None if evidence is None else evidence.scale,
                "p_value": None if evidence is None else evidence.p_value(),
                "not_graded": comparison.why_not[j],
            }
            if reference is not None:
                entry.update(reference_rows=int(reference.size[j]), reference_value=float(reference.value[j]))
            subsets.append(entry)
        return {
            "metric": self.metric,
            "compare_to": self.compare_to,
            "subset": labels[k],
            "subset_rows": int(values.size[k]),
            "kind": slices["kind"],
            "graded_subsets": int(comparison.graded.sum()),
            "not_graded": [labels[j] for j in np.flatnonzero(shown & ~comparison.graded)],
            "dropped_rows": prepared.dropped,
            "subsets": subsets,
        }


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
    """Subset ROC AUC: Mann-Whitney AUC of the score (ties count 1/2) per subset."""

    name: ClassVar[str] = "subset.auc"
    metric: ClassVar[str] = "auc"
    needs: ClassVar[frozenset[str]] = frozenset({"features", "label", "score"})
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics("Hanley–McNeil for each AUC")
    support_rows: ClassVar[str] = "rows of the rarer class"

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        self.require_classification(columns)
        truth, present = binary_truth(frame, columns.required("label"), self.positive_label)
        score = numeric_values(frame, columns.required("score"), "score")
        mask = present & np.isfinite(score)
        require_rows(mask, f"a label in {columns.label!r} and a finite score in {columns.score!r}")
        kept = score[mask]
        return Prepared(
            mask, {"score": kept, "positive": truth[mask], "order": np.argsort(kept, kind="stable")}
        )

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        d = prepared.data
        auc, n_pos, n_neg = grouped_auc(d["score"], d["positive"], codes, n_groups, d["order"])
        se = hanley_mcneil_se(auc, n_pos, n_neg)
        return SubsetValues(auc, se, n_pos + n_neg, support=np.minimum(n_pos, n_neg))


# Cells of a binary confusion count: 2 * truth + predicted.
TN, FP, FN, TP = 0, 1, 2, 3


def f1_from_counts(c: np.ndarray) -> np.ndarray:
    return divide(2 * c[..., TP], 2 * c[..., TP] + c[..., FP] + c[..., FN])


def counts_values(
    counts: np.ndarray, metric: Callable[[np.ndarray], np.ndarray], support: np.ndarray | None = None
) -> SubsetValues:
    """A count-based metric per subset, with the seeded bootstrap standard error of the counts plus
    two pseudo-rows spread over the cells (as Agresti–Caffo adds them to a rate), so that an empty
    cell does not make every resample alike and the spread vanish."""
    smoothed = counts + 2.0 / counts.shape[1] * (counts.sum(axis=1, keepdims=True) > 0)
    size = counts.sum(axis=1).astype(float)
    return SubsetValues(metric(counts), bootstrap_se(smoothed, metric), size, support=support)


def rate_values(counts: np.ndarray, hits: tuple[int, ...], trials: tuple[int, ...]) -> SubsetValues:
    """A rate of confusion cells per subset (`hits` out of `trials`), with the Agresti–Caffo standard
    error (one success and one failure added), which is never zero."""
    n_hits, n_trials = counts[:, list(hits)].sum(axis=1), counts[:, list(trials)].sum(axis=1)
    adjusted = (n_hits + 1) / (n_trials + 2)
    se = np.where(n_trials > 0, np.sqrt(adjusted * (1 - adjusted) / (n_trials + 2)), np.nan)
    size = counts.sum(axis=1).astype(float)
    return SubsetValues(divide(n_hits, n_trials), se, size, n_hits.astype(float), n_trials.astype(float))


RATE_UNCERTAINTY = "Agresti–Caffo for each rate, never below the no-change error (rate_change)"
BOOTSTRAP_UNCERTAINTY = "a seeded multinomial bootstrap of each side's confusion counts"


@dataclass(kw_only=True)
class ConfusionSubsetCheck(BinarySubsetCheck):
    """A binary rate of per-subset confusion counts of predicted vs true labels: `hits` cells out of
    `trials` cells."""

    hits: ClassVar[tuple[int, ...]]
    trials: ClassVar[tuple[int, ...]]
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics(RATE_UNCERTAINTY)

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        self.require_classification(columns)
        truth, has_label = binary_truth(frame, columns.required("label"), self.positive_label)
        predicted, has_prediction = predicted_positive(frame, columns, self.positive_label, self.threshold)
        mask = has_label & has_prediction
        require_rows(mask, f"both a label in {columns.label!r} and a prediction")
        cells = 2 * truth[mask].astype(np.intp) + predicted[mask]
        return Prepared(mask, {"cells": cells})

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        return rate_values(group_counts(codes, n_groups, prepared.data["cells"], 4), self.hits, self.trials)


@register
@dataclass(kw_only=True)
class SubsetAccuracy(ConfusionSubsetCheck):
    """Subset accuracy: share of rows whose predicted label (score >= threshold) equals the label."""

    name: ClassVar[str] = "subset.accuracy"
    metric: ClassVar[str] = "accuracy"
    hits: ClassVar[tuple[int, ...]] = (TN, TP)
    trials: ClassVar[tuple[int, ...]] = (TN, FP, FN, TP)


@register
@dataclass(kw_only=True)
class SubsetF1(ConfusionSubsetCheck):
    """Subset F1: 2 TP / (2 TP + FP + FN) of the rounded predictions per subset."""

    name: ClassVar[str] = "subset.f1"
    metric: ClassVar[str] = "f1"
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics(BOOTSTRAP_UNCERTAINTY)
    support_rows: ClassVar[str] = "rows labelled or predicted positive"

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        counts = group_counts(codes, n_groups, prepared.data["cells"], 4)
        return counts_values(counts, f1_from_counts, counts[:, [FP, FN, TP]].sum(axis=1).astype(float))


@register
@dataclass(kw_only=True)
class SubsetPrecision(ConfusionSubsetCheck):
    """Subset precision (positive predictive value): TP / (TP + FP) per subset."""

    name: ClassVar[str] = "subset.precision"
    metric: ClassVar[str] = "precision"
    support_rows: ClassVar[str] = "rows predicted positive"
    hits: ClassVar[tuple[int, ...]] = (TP,)
    trials: ClassVar[tuple[int, ...]] = (FP, TP)


@register
@dataclass(kw_only=True)
class SubsetRecall(ConfusionSubsetCheck):
    """Subset recall (true positive rate): TP / (TP + FN) per subset."""

    name: ClassVar[str] = "subset.recall"
    metric: ClassVar[str] = "recall"
    support_rows: ClassVar[str] = "rows labelled positive"
    hits: ClassVar[tuple[int, ...]] = (TP,)
    trials: ClassVar[tuple[int, ...]] = (FN, TP)


@register
@dataclass(kw_only=True)
class SubsetFPR(ConfusionSubsetCheck):
    """Subset false positive rate: FP / (FP + TN) per subset; a higher rate is worse."""

    name: ClassVar[str] = "subset.fpr"
    metric: ClassVar[str] = "fpr"
    support_rows: ClassVar[str] = "rows labelled negative"
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics(RATE_UNCERTAINTY, higher_is_worse=True)
    hits: ClassVar[tuple[int, ...]] = (FP,)
    trials: ClassVar[tuple[int, ...]] = (TN, FP)


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
    needs: ClassVar[frozenset[str]] = frozenset({"features"})
    relative: ClassVar[bool] = True
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics(
        "sqrt((m4 - variance²) / (n - 1)) for each variance", relative=True, higher_is_worse=True
    )
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
        truth, present = binary_truth(frame, columns.required("label"), self.positive_label)
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

    relative: ClassVar[bool] = True
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics(
        "the delta method for each mean error", relative=True, higher_is_worse=True
    )

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        if columns.task in ("binary", "multiclass"):
            raise NotApplicable(f"{self.metric} applies to regression, the task is {columns.task}")
        name = columns.prediction or score_column(columns)
        predicted = numeric_values(frame, name, "prediction")
        truth = numeric_values(frame, columns.required("label"), "label")
        mask = np.isfinite(predicted) & np.isfinite(truth)
        require_rows(mask, f"finite values in both {name!r} and {columns.label!r}")
        return Prepared(mask, {"error": predicted[mask] - truth[mask]})


@register
@dataclass(kw_only=True)
class SubsetMAE(RegressionSubsetCheck):
    """Subset mean absolute error: mean |prediction - label| per subset; higher is worse."""

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
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics(
        "Hanley–McNeil per class pair, the pairs taken as fully correlated"
    )

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
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics(BOOTSTRAP_UNCERTAINTY)

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
    """Subset macro F1: unweighted mean of per-class F1 (argmax predictions) per subset."""

    name: ClassVar[str] = "subset.macro_f1"
    metric: ClassVar[str] = "macro_f1"
    kind: ClassVar[str] = "f1"


@register
@dataclass(kw_only=True)
class SubsetMacroPrecision(MacroSubsetCheck):
    """Subset macro precision: unweighted mean of per-class precision per subset."""

    name: ClassVar[str] = "subset.macro_precision"
    metric: ClassVar[str] = "macro_precision"
    kind: ClassVar[str] = "precision"


@register
@dataclass(kw_only=True)
class SubsetMacroRecall(MacroSubsetCheck):
    """Subset macro recall: unweighted mean of per-class recall per subset."""

    name: ClassVar[str] = "subset.macro_recall"
    metric: ClassVar[str] = "macro_recall"
    kind: ClassVar[str] = "recall"
