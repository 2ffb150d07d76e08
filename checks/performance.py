"""Overall model performance against the reference: metric degradation and calibration drift.

Every graded change carries its evidence (`checks.evidence`): a metric's change against the
reference is graded on its one-sided confidence bound, the batch's and the reference's sampling
errors combined, so a clean batch drawn from the reference's population stays quiet while a real
loss of a few points on a few thousand rows is graded by its size. The metric kernels are plain
numpy (one pass, no per-row Python) so a million-row batch costs a sort at most. Rows where the
label or a model output used by a metric is missing or infinite are dropped and counted in
`details["dropped_rows"]`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks._attribution_kernels import binary_auc
from driftline.checks.base import Metric
from driftline.checks.columns import Columns, infer_task
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import auc_standard_error, bootstrap_standard_error, normal
from driftline.checks.mergeable import Mergeable
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.subset import macro_from_counts

# Below this many usable batch rows, or rows of a class a class metric depends on, no verdict.
MIN_VERDICT_ROWS = 30
MIN_CLASS_ROWS = 10

# --- metric kernels -----------------------------------------------------------------------------------


def row_log_loss(class_index: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Negative log-likelihood of the true class per row; rows are normalised to sum to one and
    clipped to [eps, 1 - eps] like scikit-learn (a row of zeros counts as probability eps)."""
    totals = scores.sum(axis=1, keepdims=True)
    scores = np.divide(scores, totals, out=np.zeros_like(scores, dtype=float), where=totals > 0)
    eps = np.finfo(scores.dtype).eps
    return -np.log(np.clip(scores[np.arange(len(scores)), class_index], eps, 1 - eps))


def log_loss(class_index: np.ndarray, scores: np.ndarray) -> float:
    """Mean negative log-likelihood of the true class (see `row_log_loss`)."""
    return float(np.mean(row_log_loss(class_index, scores)))


def binary_accuracy(counts: np.ndarray) -> np.ndarray:
    """Accuracy of binary confusion counts [tn, fp, fn, tp] (last axis; any leading axes)."""
    return (counts[..., 0] + counts[..., 3]) / counts.sum(axis=-1)


def binary_f1(counts: np.ndarray) -> np.ndarray:
    """F1 of the positive class from confusion counts [tn, fp, fn, tp]; 0 when there is no positive
    at all (neither labelled nor predicted)."""
    tp, wrong = counts[..., 3], counts[..., 1] + counts[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tp + wrong > 0, tp / (tp + wrong / 2), 0.0)


def square_confusion(counts: np.ndarray) -> np.ndarray:
    """Flattened k × k (true, predicted) counts as a (..., k, k) matrix."""
    k = math.isqrt(counts.shape[-1])
    return counts.reshape(*counts.shape[:-1], k, k)


def multiclass_accuracy(counts: np.ndarray) -> np.ndarray:
    """Accuracy of flattened k × k (true, predicted) counts."""
    return np.trace(square_confusion(counts), axis1=-2, axis2=-1) / counts.sum(axis=-1)


def multiclass_f1(counts: np.ndarray) -> np.ndarray:
    """Macro F1 of flattened k × k counts over the classes seen in the labels or predictions."""
    return macro_from_counts(counts, n_classes=math.isqrt(counts.shape[-1]), kind="f1", average="macro")


def mean_with_error(total: float, squares: float, n: int) -> tuple[float, float]:
    """Mean of n values and its standard error from their sum and sum of squares."""
    if n < 1:
        return float("nan"), math.inf
    mean = total / n
    variance = max(squares - n * mean * mean, 0.0) / (n - 1) if n > 1 else math.inf
    return float(mean), float(math.sqrt(variance / n))


# --- prepared data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Outputs:
    """Label and model outputs of one frame, restricted to the rows where all the used ones are valid."""

    truth: np.ndarray
    predicted: np.ndarray | None
    scores: np.ndarray | None  # binary: P(positive); multiclass: one column per class; regression: prediction
    dropped: int

    def score_matrix(self) -> np.ndarray:
        """The score columns, for a metric read from scores (its setup names them, so they were read)."""
        if self.scores is None:
            raise CheckInputError("the metric needs score columns and none were read")
        return self.scores


def _numeric(frame: pd.DataFrame, names: list[str]) -> np.ndarray:
    for name in names:
        if not pd.api.types.is_numeric_dtype(frame[name].dtype):
            raise CheckInputError(f"column {name!r} is not numeric (dtype {frame[name].dtype})")
    return frame[names].to_numpy(dtype=float, na_value=np.nan)


def _outputs(frame: pd.DataFrame, columns: Columns, prediction: str | None, scores: list[str]) -> _Outputs:
    """Read the label, the prediction column (if any) and the score columns, dropping unusable rows."""
    used = [c for c in (columns.label, prediction, *scores) if c]
    absent = [c for c in used if c not in frame.columns]
    if absent:
        raise CheckInputError(f"column(s) {absent} are not in the data")
    label = frame[columns.label]
    keep = label.notna().to_numpy()
    if pd.api.types.is_numeric_dtype(label.dtype):
        keep = keep & np.isfinite(label.to_numpy(dtype=float, na_value=np.nan))
    if prediction:
        keep = keep & frame[prediction].notna().to_numpy()
    matrix = _numeric(frame, scores) if scores else None
    if matrix is not None:
        keep = keep & np.isfinite(matrix).all(axis=1)
    return _Outputs(
        truth=frame[columns.label].to_numpy()[keep],
        predicted=frame[prediction].to_numpy()[keep] if prediction else None,
        scores=matrix[keep] if matrix is not None else None,
        dropped=int(len(frame) - keep.sum()),
    )


@dataclass(frozen=True)
class _Setup:
    """How the model's outputs are read: task, reference classes, positive class, score columns."""

    task: str
    classes: tuple[Any, ...]
    positive: Any
    prediction: str | None
    scores: tuple[str, ...]


def _setup(reference: pd.DataFrame, columns: Columns, classes: list[Any] | None) -> _Setup:
    label = reference[columns.label]
    task = columns.task or infer_task(label)
    found = tuple(classes) if classes else tuple(np.sort(label.dropna().unique()))
    if task == "regression":
        source = columns.prediction or columns.score
        if not source:
            raise NotApplicable("no prediction or score column for a regression model")
        if not pd.api.types.is_numeric_dtype(label.dtype):
            raise CheckInputError(f"label {columns.label!r} is not numeric for a regression model")
        return _Setup(task, (), None, None, (source,))
    numeric = pd.api.types.is_numeric_dtype(label.dtype)
    # 1 is the positive class of 0/1 labels (also when one of them is absent); otherwise the larger label.
    positive = (1 if numeric and set(found) <= {0, 1} else max(found)) if task == "binary" else None
    scores: tuple[str, ...]
    if task == "binary":
        scores = (columns.score,) if columns.score else ()
    else:
        scores = tuple(columns.class_scores)
        if scores and len(scores) != len(found):
            raise CheckInputError(
                f"{len(scores)} class-score column(s) for {len(found)} classes {list(found)}; pass `classes`"
            )
    if not columns.prediction and not scores:
        raise NotApplicable("no prediction, score or class_scores column")
    return _Setup(task, found, positive, columns.prediction, scores)


# --- overall metrics ------------------------------------------------------------------------------------

# Lower is better for these, and their units are the data's: they are graded on their relative change.
LOSSES = frozenset({"log_loss", "mae", "rmse"})


def _metric_names(setup: _Setup) -> tuple[str, ...]:
    if setup.task == "regression":
        return ("mae", "rmse")
    return ("accuracy", "f1", "auc", "log_loss") if setup.scores else ("accuracy", "f1")


def graded_change(name: str) -> str:
    """The thresholded change of a metric: the drop in points of a score bounded in [0, 1], the
    relative rise of a loss (whose units are the data's)."""
    return "relative_degradation" if name in LOSSES else "degradation"


def _predicted_positive(out: _Outputs, setup: _Setup, threshold: float) -> np.ndarray:
    if out.predicted is not None:
        return out.predicted == setup.positive
    return out.score_matrix()[:, 0] >= threshold


def _predicted_class(out: _Outputs, setup: _Setup, threshold: float) -> np.ndarray:
    if out.predicted is not None:
        return out.predicted
    return np.asarray(setup.classes, dtype=object)[out.score_matrix().argmax(axis=1)]


def _class_index(truth: np.ndarray, setup: _Setup) -> np.ndarray:
    index = pd.Index(setup.classes).get_indexer(truth)
    if (index < 0).any():
        unseen = sorted({str(v) for v in truth[index < 0]})[:5]
        raise CheckInputError(f"label values {unseen} are not among the reference classes")
    return index


def _row_log_loss(out: _Outputs, setup: _Setup) -> np.ndarray:
    if setup.task == "binary":
        p = out.score_matrix()[:, 0]
        return row_log_loss((out.truth == setup.positive).astype(int), np.c_[1 - p, p])
    return row_log_loss(_class_index(out.truth, setup), out.score_matrix())


@dataclass(frozen=True)
class Measured:
    """A metric's value, its standard error, and the fewest batch rows of a class it depends on
    (None for a metric that depends on no class)."""

    value: float
    standard_error: float
    class_rows: int | None = None


# (kind, metric) -> statistic of confusion counts, vectorised over leading axes (bootstrap draws)
COUNT_STATISTICS = {
    ("binary", "accuracy"): binary_accuracy,
    ("binary", "f1"): binary_f1,
    ("pairs", "accuracy"): multiclass_accuracy,
    ("pairs", "f1"): multiclass_f1,
}


def _state(name: str, out: _Outputs, setup: _Setup, threshold: float) -> tuple:
    """One metric's mergeable state over prepared outputs: confusion counts, sums of per-row losses
    and of their squares, or (AUC, which has no exact mergeable form) the labels and scores."""
    if name == "auc":
        return ("gather", out.truth, out.scores)
    if setup.task == "regression":
        error = out.truth - out.score_matrix()[:, 0]
        if name == "mae":
            return ("losses", float(np.sum(np.abs(error))), float(np.sum(error**2)), len(error))
        return ("squares", float(np.sum(error**2)), float(np.sum(error**4)), len(error))
    if name == "log_loss":
        losses = _row_log_loss(out, setup)
        return ("losses", float(np.sum(losses)), float(np.sum(losses**2)), len(losses))
    if setup.task == "binary":
        positive = (out.truth == setup.positive).astype(np.int64)
        codes = 2 * positive + _predicted_positive(out, setup, threshold)
        return ("binary", name, np.bincount(codes, minlength=4))
    predicted = _predicted_class(out, setup, threshold)
    pairs = pd.Series(1, index=pd.MultiIndex.from_arrays([out.truth, predicted])).groupby(level=[0, 1]).sum()
    return ("pairs", name, pairs)


def _merge_metric(parts: list[tuple]) -> tuple:
    """Add up one metric's partition states; the first error stands for the whole metric."""
    errors = [p for p in parts if p[0] == "error"]
    if errors:
        return errors[0]
    kind = parts[0][0]
    if kind == "gather":
        return ("gather", np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts]))
    if kind == "pairs":
        return ("pairs", parts[0][1], pd.concat([p[2] for p in parts]).groupby(level=[0, 1]).sum())
    if kind == "binary":
        return ("binary", parts[0][1], sum(p[2] for p in parts))
    return (kind, *(sum(p[i] for p in parts) for i in (1, 2, 3)))


def _square_counts(pairs: pd.Series) -> np.ndarray:
    """Flattened k × k (true, predicted) counts over the classes seen on either side, sorted."""
    truth, predicted = pairs.index.get_level_values(0), pairs.index.get_level_values(1)
    classes = np.unique(np.r_[truth, predicted])
    k = len(classes)
    codes = np.searchsorted(classes, truth) * k + np.searchsorted(classes, predicted)
    return np.bincount(codes, weights=pairs.to_numpy(), minlength=k * k).astype(np.int64)


def _measure(state: tuple, setup: _Setup) -> Measured:
    """The metric, its standard error and the rows of its scarcest class, from its (merged) state."""
    kind = state[0]
    if kind == "gather":
        return _auc(state[1], state[2], setup)
    if kind == "losses":
        return Measured(*mean_with_error(*state[1:]))
    if kind == "squares":  # RMSE = sqrt(mean e²); delta method: SE(RMSE) = SE(mean e²) / (2 RMSE)
        mse, error = mean_with_error(*state[1:])
        rmse = math.sqrt(mse)
        return Measured(rmse, error / (2 * rmse) if rmse > 0 else error)
    counts = state[2] if kind == "binary" else _square_counts(state[2])
    statistic = COUNT_STATISTICS[(kind, state[1])]
    value = float(statistic(counts[None, :].astype(float))[0])
    error = bootstrap_standard_error(statistic, counts)
    return Measured(value, error, _labelled_rows(kind, counts) if state[1] == "f1" else None)


def _labelled_rows(kind: str, counts: np.ndarray) -> int:
    """Rows of the scarcest class an F1 depends on: the positives (binary), every labelled class."""
    if kind == "binary":
        return int(counts[2] + counts[3])
    per_class = square_confusion(counts).sum(axis=1)
    return int(per_class[per_class > 0].min())


def _auc(truth: np.ndarray, scores: np.ndarray, setup: _Setup) -> Measured:
    """Binary AUC with its Hanley–McNeil standard error; multiclass: one-vs-rest AUC averaged over the
    classes present with both outcomes, with the mean of their standard errors (the classes' errors
    are correlated, and the mean of standard errors bounds the standard error of the mean)."""
    if setup.task == "binary":
        positive = truth == setup.positive
        positives = int(positive.sum())
        auc = binary_auc(positive, scores[:, 0])
        negatives = len(positive) - positives
        return Measured(auc, auc_standard_error(auc, positives, negatives), min(positives, negatives))
    index = _class_index(truth, setup)
    sizes = np.bincount(index, minlength=len(setup.classes))
    present = [k for k in range(len(setup.classes)) if 0 < sizes[k] < len(index)]
    if not present:
        return Measured(float("nan"), math.inf, 0)
    aucs = [binary_auc(index == k, scores[:, k]) for k in present]
    errors = [
        auc_standard_error(a, sizes[k], len(index) - sizes[k]) for a, k in zip(aucs, present, strict=True)
    ]
    rows = min(min(sizes[k], len(index) - sizes[k]) for k in present)
    return Measured(float(np.mean(aucs)), float(np.mean(errors)), int(rows))


@dataclass(frozen=True)
class OverallProfile:
    setup: _Setup
    reference: dict[str, float]
    reference_errors: dict[str, float]
    reference_rows: int


@register
@dataclass(kw_only=True)
class OverallMetrics(Mergeable):
    """Overall metrics degradation: accuracy, F1, AUC and log loss (classification; macro F1 and
    one-vs-rest AUC for multiclass) or MAE and RMSE (regression), batch against reference.

    One result per metric with the reference and current values, `degradation` (signed so that larger
    is worse: reference - current for scores, current - reference for losses), `relative_degradation`
    (degradation / |reference|) and `standard_error` (of the degradation, batch and reference combined).
    Scores in [0, 1] (accuracy, F1, AUC) are graded on `degradation`, their drop in points; losses
    on `relative_degradation`. Class metrics (F1, AUC) need `min_class_rows` batch rows of every class
    they depend on.
    """

    name: ClassVar[str] = "performance.overall"
    family: ClassVar[str] = "performance"
    role: ClassVar[str] = "performance"
    needs: ClassVar[frozenset[str]] = frozenset({"label"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "degradation": Metric(
            (0.01, 0.02, 0.05),
            change="drop of accuracy, F1 or AUC from the reference value, in the metric's units "
            "(0.02 = two points)",
            uncertainty="normal: accuracy and F1 by a seeded multinomial bootstrap of the confusion "
            "counts, AUC by Hanley–McNeil; the batch's and the reference's variances added",
        ),
        "relative_degradation": Metric(
            (0.05, 0.1, 0.2),
            change="rise of log loss, MAE or RMSE relative to the reference value",
            uncertainty="normal: standard error of the mean per-row loss (RMSE by the delta method), "
            "the batch's and the reference's variances added, divided by the reference value",
        ),
    }
    min_verdict_rows: ClassVar[int] = MIN_VERDICT_ROWS

    threshold: float = 0.5
    classes: list[Any] | None = None
    min_class_rows: int = MIN_CLASS_ROWS

    def fit(self, reference: pd.DataFrame, columns: Columns) -> OverallProfile:
        setup = _setup(reference, columns, self.classes)
        out = self._outputs(reference, columns, setup)
        if len(out.truth) == 0:
            raise CheckInputError(
                f"label {columns.label!r}: no reference row with a label and a model output"
            )
        values, errors = {}, {}
        for name in _metric_names(setup):
            try:
                measured = _measure(_state(name, out, setup, self.threshold), setup)
            except CheckInputError:
                measured = Measured(float("nan"), math.inf)
            values[name], errors[name] = measured.value, measured.standard_error
        return OverallProfile(setup, values, errors, reference_rows=len(out.truth))

    def _outputs(self, frame: pd.DataFrame, columns: Columns, setup: _Setup) -> _Outputs:
        if setup.task != "regression":
            return _outputs(frame, columns, setup.prediction, list(setup.scores))
        _numeric(frame, [columns.required("label")])
        out = _outputs(frame, columns, None, list(setup.scores))
        return replace(out, truth=out.truth.astype(float))

    # --- partial -> merge -> finish -------------------------------------------------------------------
    #
    # Accuracy and F1 merge as confusion counts, MAE / RMSE / log loss as sums of per-row losses and
    # of their squares; AUC has no exact mergeable form, so its partial state gathers the labels and
    # scores (two columns, not the batch) and computes it once at the end.

    def partial(self, current: pd.DataFrame, profile: OverallProfile, columns: Columns) -> dict[str, Any]:
        """Mergeable state of one partition: per metric, its counts or sums (or an error)."""
        out = self._outputs(current, columns, profile.setup)
        metrics: dict[str, tuple] = {}
        for name in profile.reference:
            try:
                metrics[name] = _state(name, out, profile.setup, self.threshold)
            except CheckInputError as exc:
                metrics[name] = ("error", str(exc))
        return {"rows": len(current), "used": len(out.truth), "dropped": out.dropped, "metrics": metrics}

    def merge(self, states: list[dict[str, Any]]) -> dict[str, Any]:
        """The state of the whole batch from the states of its partitions."""
        metrics = {name: _merge_metric([s["metrics"][name] for s in states]) for name in states[0]["metrics"]}
        totals = {key: sum(s[key] for s in states) for key in ("rows", "used", "dropped")}
        return {**totals, "metrics": metrics}

    def finish(self, state: dict[str, Any], profile: OverallProfile, columns: Columns) -> list[CheckResult]:
        """The results of the whole batch from its merged state."""
        rows, used = state["rows"], state["used"]
        if used == 0:
            raise CheckInputError(f"label {columns.label!r}: no batch row with a label and a model output")
        if used < self.min_verdict_rows:
            reason = f"{used} usable row(s): {self.name} needs at least {self.min_verdict_rows} for a verdict"
            return [CheckResult.skipped(self.name, name, reason, rows=rows) for name in profile.reference]
        return [self._metric(name, state["metrics"][name], profile, state) for name in profile.reference]

    def _metric(self, name: str, part: tuple, profile: OverallProfile, state: dict[str, Any]) -> CheckResult:
        rows = state["rows"]
        try:
            if part[0] == "error":
                raise CheckInputError(part[1])
            measured = _measure(part, profile.setup)
        except CheckInputError as exc:
            return CheckResult.error(self.name, name, str(exc), rows=rows)
        reference, current = profile.reference[name], measured.value
        if np.isnan(reference) or np.isnan(current):
            side = "reference" if np.isnan(reference) else "batch"
            return CheckResult.skipped(
                self.name, name, f"{name} is undefined on the {side} (one class only?)", rows=rows
            )
        if measured.class_rows is not None and measured.class_rows < self.min_class_rows:
            reason = (
                f"{name} needs at least {self.min_class_rows} batch rows of each class it depends on; "
                f"the scarcest has {measured.class_rows}"
            )
            return CheckResult.skipped(self.name, name, reason, rows=rows)
        degradation = current - reference if name in LOSSES else reference - current
        scale = max(abs(reference), 1e-12)
        error = math.hypot(measured.standard_error, profile.reference_errors[name])
        metrics = {
            "reference": reference,
            "current": current,
            "degradation": degradation,
            "relative_degradation": degradation / scale,
            "standard_error": error,
        }
        graded = graded_change(name)
        evidence = normal(metrics[graded], error / scale if graded == "relative_degradation" else error)
        details = {
            "task": profile.setup.task,
            "reference_rows": profile.reference_rows,
            "dropped_rows": state["dropped"],
            "batch_standard_error": measured.standard_error,
            "reference_standard_error": profile.reference_errors[name],
        }
        result = self.result(name, metrics, rows=rows, details=details, evidence={graded: evidence})
        result.thresholds = {graded: result.thresholds[graded]}
        return result


# --- calibration ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationBins:
    """Per-bin row counts, positive counts and score sums on uniform bins of [0, 1] (mergeable)."""

    total: np.ndarray
    positives: np.ndarray
    score_sum: np.ndarray

    @classmethod
    def from_arrays(cls, positive: np.ndarray, score: np.ndarray, n_bins: int) -> CalibrationBins:
        """Bin like `sklearn.calibration.calibration_curve(strategy="uniform")`: a score on an inner
        edge goes to the lower bin."""
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        index = np.searchsorted(edges[1:-1], score)
        return cls(
            total=np.bincount(index, minlength=n_bins),
            positives=np.bincount(index, weights=positive, minlength=n_bins),
            score_sum=np.bincount(index, weights=score, minlength=n_bins),
        )

    def merge(self, other: CalibrationBins) -> CalibrationBins:
        return CalibrationBins(
            self.total + other.total, self.positives + other.positives, self.score_sum + other.score_sum
        )

    def fraction_positive(self) -> np.ndarray:
        """Observed positive rate per bin (NaN for empty bins)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.total > 0, self.positives / self.total, np.nan)

    def mean_score(self) -> np.ndarray:
        """Mean score per bin (NaN for empty bins)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.total > 0, self.score_sum / self.total, np.nan)

    def cells(self) -> np.ndarray:
        """Row counts per (outcome, bin): the negatives of every bin, then the positives."""
        return np.r_[self.total - self.positives, self.positives]

    def calibration_error(self) -> Measured:
        """The debiased calibration error (`calibration_error`) and its bootstrap standard error."""
        mean_score = self.mean_score()

        def statistic(cells: np.ndarray) -> np.ndarray:
            return calibration_error(cells, mean_score)

        cells = self.cells()
        value = float(statistic(cells[None, :])[0])
        return Measured(value, bootstrap_standard_error(statistic, cells))


def calibration_error(cells: np.ndarray, mean_score: np.ndarray) -> np.ndarray:
    """Binned squared calibration error with the binning noise removed, from (..., 2B) counts
    [negatives per bin, positives per bin]: Σ_b (n_b / n) [(ȳ_b - s̄_b)² - ȳ_b (1 - ȳ_b) / (n_b - 1)]
    over bins of at least two rows (ȳ_b observed positive rate, s̄_b mean score). The subtracted term
    is unbiased for the variance of ȳ_b, so a small batch does not look miscalibrated by chance."""
    bins = cells.shape[-1] // 2
    positives = cells[..., bins:].astype(float)
    sizes = cells[..., :bins] + positives
    usable = sizes >= 2
    safe = np.where(usable, sizes, 2.0)
    rate = positives / safe
    gap = np.where(usable, (rate - np.nan_to_num(mean_score)) ** 2 - rate * (1 - rate) / (safe - 1), 0.0)
    return (sizes * gap).sum(axis=-1) / sizes.sum(axis=-1)


def calibration_mse(reference: CalibrationBins, current: CalibrationBins) -> tuple[float, int]:
    """Mean squared difference of the observed positive rates over the bins filled on both sides."""
    ref, cur = reference.fraction_positive(), current.fraction_positive()
    shared = ~np.isnan(ref) & ~np.isnan(cur)
    if not shared.any():
        return float("nan"), 0
    return float(np.mean((ref[shared] - cur[shared]) ** 2)), int(shared.sum())


@dataclass(frozen=True)
class CalibrationProfile:
    setup: _Setup
    bins: dict[str, CalibrationBins]
    errors: dict[str, Measured]


@register
@dataclass(kw_only=True)
class CalibrationComparison(Mergeable):
    """Calibration comparison: the change of the calibration error between reference and batch (one
    per class score, one-vs-rest, for multiclass), with the MSE between their calibration curves.

    The calibration error is the row-weighted squared gap between the positive rate and the mean score
    of uniform score bins, with each bin's binomial noise subtracted (`calibration_error`): its change
    `calibration_change` (batch minus reference, in squared probability: 0.01 is a 0.1 gap) is graded.
    `calibration_mse` (positive rate per bin, bins filled on both sides) is reported, not graded.
    """

    name: ClassVar[str] = "performance.calibration"
    subject: ClassVar[str | None] = "calibration error"
    family: ClassVar[str] = "performance"
    role: ClassVar[str] = "performance"
    needs: ClassVar[frozenset[str]] = frozenset({"label"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "calibration_change": Metric(
            (0.01, 0.02, 0.04),
            change="batch calibration error minus the reference's (squared gap between positive rate "
            "and mean score per bin, binning noise subtracted)",
            uncertainty="normal: seeded multinomial bootstrap of the (bin, outcome) counts of each "
            "side, their variances added",
            figure="calibration",
        )
    }
    min_verdict_rows: ClassVar[int] = MIN_VERDICT_ROWS

    n_bins: int = 10
    classes: list[Any] | None = None

    def _curves(
        self, frame: pd.DataFrame, columns: Columns, setup: _Setup
    ) -> tuple[dict[str, CalibrationBins], int]:
        out = _outputs(frame, columns, None, list(setup.scores))
        scores = out.score_matrix()
        if len(scores) and (scores.min() < 0 or scores.max() > 1):
            raise CheckInputError(f"score column(s) {list(setup.scores)} have values outside [0, 1]")
        if setup.task == "binary":
            truths = [out.truth == setup.positive]
        else:
            truths = [out.truth == c for c in setup.classes]
        bins = {
            name: CalibrationBins.from_arrays(truth, scores[:, k], self.n_bins)
            for k, (name, truth) in enumerate(zip(setup.scores, truths, strict=True))
        }
        return bins, out.dropped

    def fit(self, reference: pd.DataFrame, columns: Columns) -> CalibrationProfile:
        setup = _setup(reference, columns, self.classes)
        if setup.task == "regression" or not setup.scores:
            raise NotApplicable("calibration needs a classifier's score (or class_scores) column")
        bins = self._curves(reference, columns, setup)[0]
        return CalibrationProfile(setup, bins, {t: b.calibration_error() for t, b in bins.items()})

    # Merge protocol: a partition's state is its per-bin counts and score sums, which add up exactly.

    def partial(self, current: pd.DataFrame, profile: CalibrationProfile, columns: Columns) -> dict[str, Any]:
        """Mergeable state of one partition: its calibration bins per class score, rows and drops."""
        bins, dropped = self._curves(current, columns, profile.setup)
        return {"rows": len(current), "dropped": dropped, "bins": bins}

    def merge(self, states: list[dict[str, Any]]) -> dict[str, Any]:
        """The state of the whole batch from the states of its partitions."""
        bins = {
            target: functools.reduce(CalibrationBins.merge, [s["bins"][target] for s in states])
            for target in states[0]["bins"]
        }
        return {
            "rows": sum(s["rows"] for s in states),
            "dropped": sum(s["dropped"] for s in states),
            "bins": bins,
        }

    def finish(
        self, state: dict[str, Any], profile: CalibrationProfile, columns: Columns
    ) -> list[CheckResult]:
        """The results of the whole batch from its merged state."""
        bins, dropped, rows = state["bins"], state["dropped"], state["rows"]
        results = []
        for target, ref in profile.bins.items():
            mse, shared = calibration_mse(ref, bins[target])
            used = int(bins[target].total.sum())
            if shared == 0 or used < self.min_verdict_rows:
                why = "no score bin filled on both sides" if shared == 0 else f"{used} usable row(s)"
                results.append(CheckResult.skipped(self.name, target, why, rows=rows))
                continue
            details = {"bins_compared": shared, "dropped_rows": dropped}
            results.append(
                self._compare(target, ref, bins[target], profile.errors[target], rows, mse, details)
            )
        return results

    def _compare(
        self,
        target: str,
        ref: CalibrationBins,
        cur: CalibrationBins,
        reference: Measured,
        rows: int,
        mse: float,
        details: dict[str, Any],
    ) -> CheckResult:
        """One class score's calibration change, graded on its evidence."""
        current = cur.calibration_error()
        change = current.value - reference.value
        error = math.hypot(current.standard_error, reference.standard_error)
        metrics = {
            "calibration_change": change,
            "calibration_error": current.value,
            "reference_calibration_error": reference.value,
            "standard_error": error,
            "calibration_mse": mse,
        }
        details = {
            **details,
            "reference_curve": ref.fraction_positive().tolist(),
            "current_curve": cur.fraction_positive().tolist(),
        }
        evidence = {"calibration_change": normal(change, error)}
        return self.result(target, metrics, rows=rows, details=details, evidence=evidence)
