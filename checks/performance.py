"""Overall model performance against the reference: metric degradation and calibration drift.

The metric kernels are plain numpy (one pass, no per-row Python) so a million-row batch costs a sort
at most. Rows where the label or a model output used by a metric is missing or infinite are dropped
and counted in `details["dropped_rows"]`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks._attribution_kernels import binary_auc
from driftline.checks.base import Check
from driftline.checks.columns import Columns, infer_task
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.subset import macro_from_counts

# --- metric kernels -----------------------------------------------------------------------------------


def f1(positive: np.ndarray, predicted: np.ndarray) -> float:
    """F1 of one class from boolean truth and prediction masks (0 when there is no positive at all)."""
    tp = np.count_nonzero(positive & predicted)
    wrong = np.count_nonzero(positive ^ predicted)
    return float(tp / (tp + wrong / 2)) if tp + wrong else 0.0


def macro_f1(truth: np.ndarray, predicted: np.ndarray) -> float:
    """Unweighted mean of the per-class F1 over every class seen in the truth or the predictions."""
    classes, codes = np.unique(np.r_[truth, predicted], return_inverse=True)
    k, n = len(classes), len(truth)
    counts = np.bincount(codes[:n] * k + codes[n:], minlength=k * k)
    return float(macro_from_counts(counts, n_classes=k, kind="f1", average="macro"))


def log_loss(class_index: np.ndarray, scores: np.ndarray) -> float:
    """Mean negative log-likelihood of the true class; rows are normalised to sum to one and clipped
    to [eps, 1 - eps] like scikit-learn (a row of zeros counts as probability eps)."""
    totals = scores.sum(axis=1, keepdims=True)
    scores = np.divide(scores, totals, out=np.zeros_like(scores, dtype=float), where=totals > 0)
    eps = np.finfo(scores.dtype).eps
    picked = np.clip(scores[np.arange(len(scores)), class_index], eps, 1 - eps)
    return float(-np.mean(np.log(picked)))


def relative_change(degradation: float, reference: float) -> float:
    """Degradation relative to |reference| (floored at 1e-12 so a perfect reference stays finite)."""
    return float(degradation / max(abs(reference), 1e-12))


# --- prepared data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Outputs:
    """Label and model outputs of one frame, restricted to the rows where all the used ones are valid."""

    truth: np.ndarray
    predicted: np.ndarray | None
    scores: np.ndarray | None  # binary: P(positive); multiclass: one column per class; regression: prediction
    dropped: int


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
    scores = _numeric(frame, scores) if scores else None
    if scores is not None:
        keep = keep & np.isfinite(scores).all(axis=1)
    return _Outputs(
        truth=frame[columns.label].to_numpy()[keep],
        predicted=frame[prediction].to_numpy()[keep] if prediction else None,
        scores=scores[keep] if scores is not None else None,
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

# name -> (higher is better, computation on the prepared outputs)
_Metric = tuple[bool, Callable[[_Outputs, _Setup, float], float]]


def _predicted_positive(out: _Outputs, setup: _Setup, threshold: float) -> np.ndarray:
    if out.predicted is not None:
        return out.predicted == setup.positive
    return out.scores[:, 0] >= threshold


def _predicted_class(out: _Outputs, setup: _Setup, threshold: float) -> np.ndarray:
    if out.predicted is not None:
        return out.predicted
    return np.asarray(setup.classes, dtype=object)[out.scores.argmax(axis=1)]


def _class_index(out: _Outputs, setup: _Setup) -> np.ndarray:
    index = pd.Index(setup.classes).get_indexer(out.truth)
    if (index < 0).any():
        unseen = sorted({str(v) for v in out.truth[index < 0]})[:5]
        raise CheckInputError(f"label values {unseen} are not among the reference classes")
    return index


def _binary_log_loss(out: _Outputs, setup: _Setup, threshold: float) -> float:
    p = out.scores[:, 0]
    return log_loss((out.truth == setup.positive).astype(int), np.c_[1 - p, p])


def _multiclass_auc(out: _Outputs, setup: _Setup, threshold: float) -> float:
    """One-vs-rest AUC averaged over the classes present with both outcomes in the batch."""
    index = _class_index(out, setup)
    per_class = [binary_auc(index == k, out.scores[:, k]) for k in range(len(setup.classes))]
    return float(np.nanmean(per_class)) if not np.isnan(per_class).all() else float("nan")


BINARY_LABEL_METRICS: dict[str, _Metric] = {
    "accuracy": (
        True,
        lambda o, s, t: float(np.mean((o.truth == s.positive) == _predicted_positive(o, s, t))),
    ),
    "f1": (True, lambda o, s, t: f1(o.truth == s.positive, _predicted_positive(o, s, t))),
}
BINARY_SCORE_METRICS: dict[str, _Metric] = {
    "auc": (True, lambda o, s, t: binary_auc(o.truth == s.positive, o.scores[:, 0])),
    "log_loss": (False, _binary_log_loss),
}
MULTICLASS_LABEL_METRICS: dict[str, _Metric] = {
    "accuracy": (True, lambda o, s, t: float(np.mean(o.truth == _predicted_class(o, s, t)))),
    "f1": (True, lambda o, s, t: macro_f1(o.truth, _predicted_class(o, s, t))),
}
MULTICLASS_SCORE_METRICS: dict[str, _Metric] = {
    "auc": (True, _multiclass_auc),
    "log_loss": (False, lambda o, s, t: log_loss(_class_index(o, s), o.scores)),
}
REGRESSION_METRICS: dict[str, _Metric] = {
    "mae": (False, lambda o, s, t: float(np.mean(np.abs(o.truth - o.scores[:, 0])))),
    "rmse": (False, lambda o, s, t: float(np.sqrt(np.mean((o.truth - o.scores[:, 0]) ** 2)))),
}


def _metric_table(setup: _Setup) -> dict[str, _Metric]:
    if setup.task == "regression":
        return REGRESSION_METRICS
    binary = setup.task == "binary"
    table: dict[str, _Metric] = {}
    table.update(BINARY_LABEL_METRICS if binary else MULTICLASS_LABEL_METRICS)
    if setup.scores:
        table.update(BINARY_SCORE_METRICS if binary else MULTICLASS_SCORE_METRICS)
    return table


@dataclass(frozen=True)
class OverallProfile:
    setup: _Setup
    reference: dict[str, float]
    reference_rows: int


@register
@dataclass(kw_only=True)
class OverallMetrics(Check):
    """Overall metrics degradation: accuracy, F1, AUC and log loss (classification; macro F1 and
    one-vs-rest AUC for multiclass) or MAE and RMSE (regression), batch against reference.

    One result per metric with the reference and current values, `degradation` (signed so that larger
    is worse: reference - current for scores, current - reference for losses) and
    `relative_degradation` (degradation / |reference|), which is graded.
    """

    name: ClassVar[str] = "performance.overall"
    family: ClassVar[str] = "performance"
    needs: ClassVar[frozenset[str]] = frozenset({"label"})
    default_thresholds: ClassVar[dict[str, tuple[float, ...]]] = {"relative_degradation": (0.05, 0.1, 0.2)}

    threshold: float = 0.5
    classes: list[Any] | None = None

    def fit(self, reference: pd.DataFrame, columns: Columns) -> OverallProfile:
        setup = _setup(reference, columns, self.classes)
        out = self._outputs(reference, columns, setup)
        if len(out.truth) == 0:
            raise CheckInputError(
                f"label {columns.label!r}: no reference row with a label and a model output"
            )
        values = {}
        for name, (_, compute) in _metric_table(setup).items():
            try:
                values[name] = compute(out, setup, self.threshold)
            except CheckInputError:
                values[name] = float("nan")
        return OverallProfile(setup=setup, reference=values, reference_rows=len(out.truth))

    def _outputs(self, frame: pd.DataFrame, columns: Columns, setup: _Setup) -> _Outputs:
        if setup.task != "regression":
            return _outputs(frame, columns, setup.prediction, list(setup.scores))
        _numeric(frame, [columns.label])
        out = _outputs(frame, columns, None, list(setup.scores))
        return replace(out, truth=out.truth.astype(float))

    def evaluate(self, current: pd.DataFrame, profile: OverallProfile, columns: Columns) -> list[CheckResult]:
        out = self._outputs(current, columns, profile.setup)
        rows = len(current)
        if len(out.truth) == 0:
            raise CheckInputError(f"label {columns.label!r}: no batch row with a label and a model output")
        table = _metric_table(profile.setup)
        return [self._metric(name, table[name], out, profile, rows) for name in profile.reference]

    def _metric(
        self, name: str, metric: _Metric, out: _Outputs, profile: OverallProfile, rows: int
    ) -> CheckResult:
        higher_is_better, compute = metric
        reference = profile.reference[name]
        try:
            current = compute(out, profile.setup, self.threshold)
        except CheckInputError as exc:
            return CheckResult.error(self.name, name, str(exc), rows=rows)
        if np.isnan(reference) or np.isnan(current):
            side = "reference" if np.isnan(reference) else "batch"
            return CheckResult.skipped(
                self.name, name, f"{name} is undefined on the {side} (one class only?)", rows=rows
            )
        degradation = reference - current if higher_is_better else current - reference
        metrics = {
            "reference": reference,
            "current": current,
            "degradation": degradation,
            "relative_degradation": relative_change(degradation, reference),
        }
        details = {
            "task": profile.setup.task,
            "reference_rows": profile.reference_rows,
            "dropped_rows": out.dropped,
        }
        return self.result(name, metrics, rows=rows, details=details)

    # --- partitioned batches: partial -> merge -> finish --------------------------------------------
    #
    # Accuracy and F1 merge as confusion counts, MAE / RMSE / log loss as sums of per-row losses; AUC
    # has no exact mergeable form, so its partial state gathers the labels and scores (two columns,
    # not the batch) and computes it once at the end.

    mergeable: ClassVar[bool] = True

    def merge_limit(self) -> str | None:
        """Every metric of this check merges (AUC by gathering labels and scores)."""
        return None

    def partial(self, current: pd.DataFrame, profile: OverallProfile, columns: Columns) -> dict[str, Any]:
        """Mergeable state of one partition: per metric, its counts or sums (or an error)."""
        out = self._outputs(current, columns, profile.setup)
        metrics: dict[str, tuple] = {}
        for name in profile.reference:
            try:
                metrics[name] = _partial_metric(name, out, profile.setup, self.threshold)
            except CheckInputError as exc:
                metrics[name] = ("error", str(exc))
        return {"rows": len(current), "used": len(out.truth), "dropped": out.dropped, "metrics": metrics}

    def merge(self, states: list[dict[str, Any]]) -> dict[str, Any]:
        """The state of the whole batch from the states of its partitions."""
        metrics = {name: _merge_metric([s["metrics"][name] for s in states]) for name in states[0]["metrics"]}
        totals = {key: sum(s[key] for s in states) for key in ("rows", "used", "dropped")}
        return {**totals, "metrics": metrics}

    def finish(self, state: dict[str, Any], profile: OverallProfile, columns: Columns) -> list[CheckResult]:
        """The results `evaluate` gives on the whole batch, from its merged state."""
        rows = state["rows"]
        if state["used"] == 0:
            raise CheckInputError(f"label {columns.label!r}: no batch row with a label and a model output")
        table = _metric_table(profile.setup)
        out = _Outputs(truth=np.empty(0), predicted=None, scores=None, dropped=state["dropped"])
        results = []
        for name in profile.reference:
            part = state["metrics"][name]
            if part[0] == "error":
                results.append(CheckResult.error(self.name, name, part[1], rows=rows))
                continue
            higher_is_better, compute = table[name]
            if part[0] == "gather":
                gathered = _Outputs(truth=part[1], predicted=None, scores=part[2], dropped=0)
                metric = (higher_is_better, lambda _o, s, t, g=gathered, c=compute: c(g, s, t))
            else:
                metric = (higher_is_better, lambda *_, p=part: _finished_metric(p))
            results.append(self._metric(name, metric, out, profile, rows))
        return results


def _partial_metric(name: str, out: _Outputs, setup: _Setup, threshold: float) -> tuple:
    """One metric's mergeable state over one partition's prepared outputs."""
    n = len(out.truth)
    if name == "auc":
        return ("gather", out.truth, out.scores)
    if setup.task == "regression":
        error = out.truth - out.scores[:, 0]
        if name == "mae":
            return ("mean", float(np.sum(np.abs(error))), n)
        return ("rmse", float(np.sum(error**2)), n)
    if name == "log_loss":
        if n == 0:
            return ("mean", 0.0, 0)
        _, compute = _metric_table(setup)[name]
        return ("mean", compute(out, setup, threshold) * n, n)
    if setup.task == "binary":
        positive = out.truth == setup.positive
        predicted = _predicted_positive(out, setup, threshold)
        if name == "accuracy":
            return ("mean", int(np.count_nonzero(positive == predicted)), n)
        return (
            "f1",
            int(np.count_nonzero(positive & predicted)),
            int(np.count_nonzero(positive ^ predicted)),
        )
    predicted = _predicted_class(out, setup, threshold)
    if name == "accuracy":
        return ("mean", int(np.count_nonzero(out.truth == predicted)), n)
    pairs = pd.Series(1, index=pd.MultiIndex.from_arrays([out.truth, predicted])).groupby(level=[0, 1]).sum()
    return ("confusion", pairs)


def _merge_metric(parts: list[tuple]) -> tuple:
    """Add up one metric's partition states; the first error stands for the whole metric."""
    errors = [p for p in parts if p[0] == "error"]
    if errors:
        return errors[0]
    kind = parts[0][0]
    if kind == "gather":
        return ("gather", np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts]))
    if kind == "confusion":
        return ("confusion", pd.concat([p[1] for p in parts]).groupby(level=[0, 1]).sum())
    return (kind, sum(p[1] for p in parts), sum(p[2] for p in parts))


def _finished_metric(part: tuple) -> float:
    """The metric value from its merged state."""
    kind = part[0]
    if kind == "mean":
        return float(part[1] / part[2]) if part[2] else float("nan")
    if kind == "rmse":
        return float(np.sqrt(part[1] / part[2])) if part[2] else float("nan")
    if kind == "f1":
        tp, wrong = part[1], part[2]
        return float(tp / (tp + wrong / 2)) if tp + wrong else 0.0
    pairs: pd.Series = part[1]
    classes = np.unique(np.r_[pairs.index.get_level_values(0), pairs.index.get_level_values(1)])
    k = len(classes)
    truth = np.searchsorted(classes, pairs.index.get_level_values(0))
    predicted = np.searchsorted(classes, pairs.index.get_level_values(1))
    counts = np.bincount(truth * k + predicted, weights=pairs.to_numpy(), minlength=k * k).astype(np.int64)
    return float(macro_from_counts(counts, n_classes=k, kind="f1", average="macro"))


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


@register
@dataclass(kw_only=True)
class CalibrationComparison(Check):
    """Calibration comparison: MSE between the reference and batch calibration curves (positive rate per
    uniform score bin, bins filled on both sides); one curve per class score, one-vs-rest, for multiclass."""

    name: ClassVar[str] = "performance.calibration"
    family: ClassVar[str] = "performance"
    needs: ClassVar[frozenset[str]] = frozenset({"label"})
    default_thresholds: ClassVar[dict[str, tuple[float, ...]]] = {"calibration_mse": (0.01, 0.02, 0.04)}

    n_bins: int = 10
    classes: list[Any] | None = None

    def _curves(
        self, frame: pd.DataFrame, columns: Columns, setup: _Setup
    ) -> tuple[dict[str, CalibrationBins], int]:
        out = _outputs(frame, columns, None, list(setup.scores))
        scores = out.scores
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
        return CalibrationProfile(setup=setup, bins=self._curves(reference, columns, setup)[0])

    def evaluate(
        self, current: pd.DataFrame, profile: CalibrationProfile, columns: Columns
    ) -> list[CheckResult]:
        bins, dropped = self._curves(current, columns, profile.setup)
        rows = len(current)
        results = []
        for target, ref in profile.bins.items():
            mse, shared = calibration_mse(ref, bins[target])
            if shared == 0:
                results.append(
                    CheckResult.skipped(self.name, target, "no score bin filled on both sides", rows=rows)
                )
                continue
            details = {
                "bins_compared": shared,
                "reference_curve": ref.fraction_positive().tolist(),
                "current_curve": bins[target].fraction_positive().tolist(),
                "dropped_rows": dropped,
            }
            results.append(self.result(target, {"calibration_mse": mse}, rows=rows, details=details))
        return results
