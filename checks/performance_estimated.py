"""Label-free performance estimation for binary classifiers (confidence-based, as NannyML's CBPE).

Fitted on a labelled reference: the scores are calibrated there (isotonic regression, when a
held-out calibration test says it helps), the realised metrics and their sampling spread over
reference chunks are recorded. On a batch without labels, the calibrated probability `p` of each row
is the chance that its label is positive, so the expected confusion matrix is
E[TP] = Σ p·[pred=1], E[FP] = Σ (1-p)·[pred=1], E[FN] = Σ p·[pred=0], E[TN] = Σ (1-p)·[pred=0],
and accuracy, precision, recall and F1 follow from it; the expected ROC curve ranks rows by score
with `p` and `1-p` as their positive and negative weights. A batch's estimate is graded against the
estimator's own value on the reference (so an estimator's bias does not alarm for ever), with the
realised metric's spread simulated from the batch's own calibrated probabilities as its noise; the band
shown around it is NannyML's sampling error (`checks.estimated_noise`). See docs/estimation.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks._attribution_kernels import binary_auc
from driftline.checks.base import Check, Metric
from driftline.checks.catalog_index import REALISED_PERFORMANCE
from driftline.checks.columns import Columns, infer_task
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.estimated_noise import (
    SIMULATION_ROWS,
    band_components,
    band_error,
    realised_spread,
)
from driftline.checks.evidence import normal
from driftline.checks.registry import register
from driftline.checks.result import CheckResult

METRICS = ("accuracy", "precision", "recall", "f1", "auc")
CALIBRATION_MODES = ("auto", "always", "never")
# NannyML's calibration test: 10 stratified shuffle splits holding out 10% each, seed 42
CALIBRATION_SPLITS = 10
CALIBRATION_HELD_OUT = 0.1
CALIBRATION_SEED = 42
SEPARATED_AUC = 0.999
ECE_BINS = 10
SHUFFLE_SEED = 0
MIN_VERDICT_ROWS = 30

# --- estimation kernels ------------------------------------------------------------------------------


def expected_confusion(p: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Expected TP, FP, FN, TN when row i is positive with probability p[i]."""
    p = np.asarray(p, dtype=float)
    predicted = np.asarray(predicted, dtype=bool)
    positives = float(p.sum())
    tp = float(p[predicted].sum())
    fp = float(np.count_nonzero(predicted) - tp)
    fn = positives - tp
    tn = float(len(p) - np.count_nonzero(predicted) - fn)
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn}


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator > 0 else float("nan")


def metrics_from_confusion(counts: dict[str, float]) -> dict[str, float]:
    """Accuracy, precision, recall and F1 of (expected or realised) confusion counts; NaN if undefined."""
    tp, fp, fn, tn = counts["tp"], counts["fp"], counts["fn"], counts["tn"]
    return {
        "accuracy": _ratio(tp + tn, tp + fp + fn + tn),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
    }


def expected_roc_auc(rank_score: np.ndarray, p: np.ndarray) -> float:
    """Area under the expected ROC curve: rows ranked by `rank_score`, each counting p as a positive
    and 1-p as a negative (tied scores move together, trapezoids between thresholds); NaN when the
    expected positives or negatives are zero."""
    rank_score = np.asarray(rank_score, dtype=float)
    p = np.asarray(p, dtype=float)
    order = np.argsort(-rank_score, kind="stable")
    s = rank_score[order]
    tp = np.cumsum(p[order])
    fp = np.cumsum(1.0 - p[order])
    if len(s) == 0 or tp[-1] <= 0 or fp[-1] <= 0:
        return float("nan")
    ends = np.r_[np.flatnonzero(s[1:] != s[:-1]), len(s) - 1]
    tpr = np.r_[0.0, tp[ends] / tp[-1]]
    fpr = np.r_[0.0, fp[ends] / fp[-1]]
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))


def estimate(p: np.ndarray, predicted: np.ndarray, rank_score: np.ndarray) -> dict[str, float]:
    """Every estimated metric of one batch from its calibrated probabilities."""
    values = metrics_from_confusion(expected_confusion(p, predicted))
    values["auc"] = expected_roc_auc(rank_score, p)
    return values


def realised(truth: np.ndarray, predicted: np.ndarray, score: np.ndarray) -> dict[str, float]:
    """The same metrics computed from real labels (used on the reference and its chunks)."""
    truth = np.asarray(truth, dtype=bool)
    predicted = np.asarray(predicted, dtype=bool)
    tp = float(np.count_nonzero(truth & predicted))
    fp = float(np.count_nonzero(~truth & predicted))
    fn = float(np.count_nonzero(truth & ~predicted))
    values = metrics_from_confusion({"tp": tp, "fp": fp, "fn": fn, "tn": len(truth) - tp - fp - fn})
    values["auc"] = binary_auc(truth, score)
    return values


# --- calibration -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IsotonicMap:
    """A fitted isotonic calibration as its breakpoints (what `IsotonicRegression.predict` interpolates
    with `out_of_bounds="clip"`): small, picklable, applied with `np.interp`."""

    x: np.ndarray
    y: np.ndarray

    @classmethod
    def fit(cls, score: np.ndarray, truth: np.ndarray) -> IsotonicMap:
        from sklearn.isotonic import IsotonicRegression

        model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
        model.fit(score, truth.astype(float))
        return cls(x=np.asarray(model.X_thresholds_, dtype=float), y=np.asarray(model.y_thresholds_))

    def __call__(self, score: np.ndarray) -> np.ndarray:
        return np.interp(score, self.x, self.y)


def expected_calibration_error(p: np.ndarray, truth: np.ndarray, bins: int = ECE_BINS) -> float:
    """ECE on equal-count bins of sorted p: Σ_b (n_b / n)·|mean p_b - mean y_b|."""
    order = np.argsort(p, kind="stable")
    p, truth = p[order], truth[order].astype(float)
    starts = np.unique(np.linspace(0, len(p), bins + 1).astype(int)[:-1])
    sizes = np.diff(np.r_[starts, len(p)])
    gap = np.add.reduceat(p, starts) - np.add.reduceat(truth, starts)
    return float(np.sum(np.abs(gap)) / len(p)) if len(p) and sizes.all() else float("nan")


def calibration_test(score: np.ndarray, truth: np.ndarray) -> dict[str, Any]:
    """Whether isotonic calibration makes the reference scores more faithful probabilities, decided
    as NannyML's `needs_calibration` does.

    Ten seeded stratified shuffle splits of the reference's rows hold out 10% each; the
    isotonic map fitted on the rest calibrates the held-out scores, and the ECE of the raw and of the
    calibrated held-out scores, pooled over the splits, are compared. Calibrate when the calibrated
    ECE is lower, or when the scores are not probabilities (outside [0, 1]); not when they already
    rank the labels perfectly (AUC above 0.999).
    """
    if score.min() < 0 or score.max() > 1:
        return {"calibrate": True, "why": "scores outside [0, 1] are not probabilities"}
    if min(int(truth.sum()), int((~truth).sum())) < 2:
        return {"calibrate": True, "why": "too few rows of one class for a held-out test"}
    if binary_auc(truth, score) > SEPARATED_AUC:
        return {"calibrate": False, "why": f"the scores separate the labels (AUC above {SEPARATED_AUC})"}
    from sklearn.model_selection import StratifiedShuffleSplit

    splits = StratifiedShuffleSplit(
        n_splits=CALIBRATION_SPLITS, test_size=CALIBRATION_HELD_OUT, random_state=CALIBRATION_SEED
    )
    held_out = [
        (score[test], IsotonicMap.fit(score[train], truth[train])(score[test]), truth[test])
        for train, test in splits.split(score, truth)
    ]
    raw, calibrated, labels = (np.concatenate(part) for part in zip(*held_out, strict=True))
    ece_raw = expected_calibration_error(raw, labels)
    ece_calibrated = expected_calibration_error(calibrated, labels)
    return {
        "calibrate": ece_calibrated < ece_raw,
        "why": f"held-out ECE {ece_raw:.4f} raw vs {ece_calibrated:.4f} calibrated "
        f"({CALIBRATION_SPLITS} splits of {CALIBRATION_HELD_OUT:.0%})",
        "ece_raw": ece_raw,
        "ece_calibrated": ece_calibrated,
    }


# --- the band on reference chunks ------------------------------------------------------------------


def chunks(rows: int, count: int) -> list[slice]:
    """`count` disjoint chunks of m = rows // count consecutive rows (none when m is 0)."""
    m = rows // count
    return [slice(i * m, (i + 1) * m) for i in range(count)] if m else []


def band_coverage(
    truth: np.ndarray,
    predicted: np.ndarray,
    score: np.ndarray,
    p: np.ndarray,
    count: int,
    components: dict[str, tuple[float, float]],
    band_sigmas: float,
) -> dict[str, float]:
    """Share of the reference chunks whose realised metric lies within the band (`band_sigmas`
    sampling errors at the chunk's size) around the chunk's estimate: how often the band holds the
    truth where it can be checked (the calibration was fitted on these rows, so a little optimistic)."""
    parts = chunks(len(truth), count)
    if not parts:
        return dict.fromkeys(METRICS, float("nan"))
    half_width = {m: band_sigmas * band_error(c, parts[0].stop) for m, c in components.items()}
    pairs = [
        (realised(truth[c], predicted[c], score[c]), estimate(p[c], predicted[c], score[c])) for c in parts
    ]
    coverage = {}
    for metric in METRICS:
        gaps = np.array([abs(r[metric] - e[metric]) for r, e in pairs])
        gaps = gaps[np.isfinite(gaps)]
        coverage[metric] = float(np.mean(gaps <= half_width[metric])) if len(gaps) else float("nan")
    return coverage


# --- reading the data -----------------------------------------------------------------------------------


def positive_class(label: pd.Series) -> Any:
    """1 for 0/1 labels, otherwise the larger of the two label values (as performance.overall)."""
    found = np.sort(label.dropna().unique())
    numeric = pd.api.types.is_numeric_dtype(label.dtype)
    return 1 if numeric and set(found.tolist()) <= {0, 1} else found[-1]


@dataclass(frozen=True)
class _Rows:
    """Score, predicted-positive flags (and labels, on the reference) of the usable rows."""

    score: np.ndarray
    predicted: np.ndarray
    truth: np.ndarray | None
    dropped: int

    def labels(self) -> np.ndarray:
        """The labels of reference rows (read `with_label`)."""
        if self.truth is None:
            raise CheckInputError("the rows were read without their labels")
        return self.truth


def _read(
    frame: pd.DataFrame,
    columns: Columns,
    positive: Any,
    classes: tuple[Any, ...],
    threshold: float,
    with_label: bool,
    where: str,
) -> _Rows:
    """The rows with a finite score, a prediction (when the role is set) and, for the reference, a label."""
    used = [c for c in (columns.score, columns.prediction, columns.label if with_label else None) if c]
    absent = [c for c in used if c not in frame.columns]
    if absent:
        raise CheckInputError(f"the {where} has no column(s) {absent}")
    values = frame[columns.score]
    if not pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        raise CheckInputError(
            f"score column {columns.score!r} is not numeric in the {where} ({values.dtype})"
        )
    score = values.to_numpy(dtype=float, na_value=np.nan)
    keep = np.isfinite(score)
    if columns.prediction:
        prediction = frame[columns.prediction]
        keep &= prediction.notna().to_numpy()
        known = pd.Index(classes).get_indexer(prediction[keep]) >= 0
        if not known.all():
            unseen = sorted({str(v) for v in prediction[keep][~known]})[:5]
            raise CheckInputError(
                f"prediction column {columns.prediction!r} has values {unseen} in the {where} that are "
                f"not among the reference labels {list(classes)}"
            )
        predicted = (prediction == positive).to_numpy(dtype=bool, na_value=False)
    else:
        predicted = score >= threshold
    truth = None
    if with_label:
        label = frame[columns.label]
        keep &= label.notna().to_numpy()
        truth = (label == positive).to_numpy(dtype=bool, na_value=False)[keep]
    return _Rows(score[keep], predicted[keep], truth, int(len(frame) - keep.sum()))


def _canonical(rows: _Rows) -> _Rows:
    """The reference rows in an order that depends only on their values (sorted, then shuffled with a
    fixed seed), so the calibration folds and chunks do not depend on how the file was sorted."""
    order = np.lexsort((rows.predicted, rows.labels(), rows.score))
    order = order[np.random.default_rng(SHUFFLE_SEED).permutation(len(order))]
    return _Rows(rows.score[order], rows.predicted[order], rows.labels()[order], rows.dropped)


# --- the check ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EstimationProfile:
    """What the reference gives the estimator: calibration, realised and estimated metrics, NannyML's
    band components, the realised metrics' simulated per-row spread and the band's coverage on
    reference chunks."""

    positive: Any
    classes: tuple[Any, ...]
    calibration: dict[str, Any]
    calibrator: IsotonicMap | None
    reference: dict[str, float]
    estimated_reference: dict[str, float]
    band: dict[str, tuple[float, float]]
    per_row_spread: dict[str, float]
    coverage: dict[str, float]
    reference_rows: int

    def probabilities(self, score: np.ndarray) -> np.ndarray:
        """Calibrated probability of the positive class for each score."""
        return self.calibrator(score) if self.calibrator is not None else score


@register
@dataclass(kw_only=True)
class EstimatedPerformance(Check):
    """Estimated performance without labels (CBPE): accuracy, precision, recall, F1 and AUC expected
    from calibrated scores, each with a sampling-error band, against the estimator's own value on the
    reference.

    Binary classification. Needs the score (and the prediction, or `threshold`) in the batch; the
    reference needs labels. One result per metric with `estimated`, `sampling_error` (NannyML's, from
    reference components at the batch's size), `lower`/`upper` (estimated ± `band_sigmas` · sampling_error,
    clipped to [0, 1]), `reference` (realised on the reference), `estimated_reference` (the estimate
    on the reference) and `degradation` (estimated_reference - estimated), which is graded in the
    metric's units, like performance.overall's drops, with `standard_error` (the realised metric's
    simulated spread on the batch, `realised_error`, and on the reference) as its noise;
    `details["band_coverage"]` is the share of reference chunks whose realised metric the band held.
    """

    name: ClassVar[str] = "performance.estimated"
    family: ClassVar[str] = "performance"
    role: ClassVar[str] = "estimate"
    estimates: ClassVar[str | None] = REALISED_PERFORMANCE
    needs: ClassVar[frozenset[str]] = frozenset({"score"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "degradation": Metric(
            (0.01, 0.02, 0.05),
            change="drop of the estimated metric from the estimator's value on the reference, in the "
            "metric's units (0.02 = two points)",
            uncertainty="normal: the realised metric's spread on the batch, simulated from its rows and "
            "their calibrated probabilities (seeded), and the reference's, variances added",
        )
    }
    min_verdict_rows: ClassVar[int] = MIN_VERDICT_ROWS

    threshold: float = 0.5
    calibration: str = "auto"
    band_sigmas: float = 3.0
    reference_chunks: int = 20
    metrics: list[str] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.calibration not in CALIBRATION_MODES:
            raise CheckInputError(f"{self.name}: calibration must be one of {list(CALIBRATION_MODES)}")
        if not self.band_sigmas > 0 or self.reference_chunks < 2:
            raise CheckInputError(f"{self.name}: band_sigmas must be > 0 and reference_chunks >= 2")
        unknown = sorted(set(self.metrics or ()) - set(METRICS))
        if unknown:
            raise CheckInputError(f"{self.name}: unknown metric(s) {unknown}; known: {list(METRICS)}")

    def fit(self, reference: pd.DataFrame, columns: Columns) -> EstimationProfile:
        if not columns.label:
            raise NotApplicable("the reference needs a label column to calibrate the scores")
        if columns.label not in reference.columns:
            raise CheckInputError(f"the reference has no label column {columns.label!r}")
        label = reference[columns.label]
        task = columns.task or infer_task(label)
        if task != "binary":
            hint = " (see performance.estimated_regression)" if task == "regression" else ""
            raise NotApplicable(f"estimation is implemented for binary classification, not {task}{hint}")
        classes = tuple(np.sort(label.dropna().unique()))
        if len(classes) < 2:
            raise NotApplicable(
                f"label {columns.label!r} has one class only in the reference: cannot calibrate"
            )
        positive = positive_class(label)
        rows = _read(reference, columns, positive, classes, self.threshold, True, "reference")
        if len(rows.score) == 0:
            raise CheckInputError("no reference row with a label and a finite score")
        if self.calibration == "auto":
            # in the reference's own row order, as NannyML splits it: the same file, the same decision
            decision = calibration_test(rows.score, rows.labels())
        else:
            decision = {"calibrate": self.calibration == "always", "why": f"calibration: {self.calibration}"}
        rows = _canonical(rows)
        if not decision["calibrate"] and (rows.score.min() < 0 or rows.score.max() > 1):
            raise CheckInputError("scores outside [0, 1] must be calibrated (calibration: auto or always)")
        calibrator = IsotonicMap.fit(rows.score, rows.labels()) if decision["calibrate"] else None
        p = calibrator(rows.score) if calibrator is not None else rows.score
        band = band_components(rows.labels(), rows.predicted, rows.score)
        drawn = min(len(p), SIMULATION_ROWS)
        spread = realised_spread(p, rows.predicted, rows.score, rows=drawn)
        return EstimationProfile(
            positive=positive,
            classes=classes,
            calibration=decision,
            calibrator=calibrator,
            reference=realised(rows.labels(), rows.predicted, rows.score),
            estimated_reference=estimate(p, rows.predicted, rows.score),
            band=band,
            per_row_spread={m: e * np.sqrt(drawn) for m, e in spread.items()},
            coverage=band_coverage(
                rows.labels(), rows.predicted, rows.score, p, self.reference_chunks, band, self.band_sigmas
            ),
            reference_rows=len(rows.score),
        )

    def evaluate(
        self, current: pd.DataFrame, profile: EstimationProfile, columns: Columns
    ) -> list[CheckResult]:
        rows = _read(current, columns, profile.positive, profile.classes, self.threshold, False, "batch")
        n = len(rows.score)
        if n == 0:
            raise CheckInputError(
                f"score {columns.score!r}: no batch row with a finite score and a prediction"
            )
        names = self.metrics or METRICS
        if n < self.min_verdict_rows:
            reason = f"{n} usable row(s): {self.name} needs at least {self.min_verdict_rows} for a verdict"
            return [CheckResult.skipped(self.name, m, reason, rows=len(current)) for m in names]
        p = profile.probabilities(rows.score)
        estimated = estimate(p, rows.predicted, rows.score)
        details = {
            "calibrated": bool(profile.calibrator is not None),
            "calibration": profile.calibration["why"],
            "expected_confusion": expected_confusion(p, rows.predicted),
            "band_sigmas": self.band_sigmas,
            "reference_rows": profile.reference_rows,
            "estimated_rows": n,
            "dropped_rows": rows.dropped,
        }
        spread = realised_spread(p, rows.predicted, rows.score)
        return [self._metric(m, estimated[m], spread[m], profile, n, len(current), details) for m in names]

    def _metric(
        self,
        name: str,
        value: float,
        spread: float,
        profile: EstimationProfile,
        n: int,
        rows: int,
        details: dict,
    ) -> CheckResult:
        reference = profile.estimated_reference[name]
        if not np.isfinite(value) or not np.isfinite(reference):
            side = "reference" if not np.isfinite(reference) else "batch"
            return CheckResult.skipped(self.name, name, f"{name} is undefined on the {side}", rows=rows)
        error = band_error(profile.band[name], n)
        # the batch's own simulation, never below the reference's per-row spread at n rows: a small
        # batch's resample can look steadier than its population by the luck of its rows
        spread = max(spread, profile.per_row_spread[name] / np.sqrt(n))
        standard_error = float(
            np.hypot(spread, profile.per_row_spread[name] / np.sqrt(profile.reference_rows))
        )
        degradation = reference - value
        metrics = {
            "estimated": value,
            "sampling_error": error,
            "lower": max(0.0, value - self.band_sigmas * error),
            "upper": min(1.0, value + self.band_sigmas * error),
            "realised_error": spread,
            "reference": profile.reference[name],
            "estimated_reference": reference,
            "degradation": degradation,
            "standard_error": standard_error,
        }
        details = {**details, "band_coverage": profile.coverage[name]}
        evidence = {"degradation": normal(degradation, standard_error)}
        return self.result(name, metrics, rows=rows, details=details, evidence=evidence)
