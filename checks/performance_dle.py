"""Label-free MAE and RMSE of a regression model by direct loss estimation (DLE, as NannyML's).

On the labelled reference a loss model (scikit-learn's HistGradientBoostingRegressor, where NannyML
uses LightGBM with the same defaults) learns each row's loss, the absolute error for MAE and the
squared error for RMSE, from the features and the model's prediction. It is cross-fitted: one loss
model per half of the reference, each scoring the other half, so the estimator's value on the
reference is measured on rows it never saw. A batch's estimated MAE is the mean of its predicted
absolute errors (the two half models averaged), its estimated RMSE the root of the mean predicted
squared error. The estimate is graded on its rise relative to the held-out reference estimate, with
the spread of the predicted losses on both sides as its noise; the band around it is NannyML's
sampling error of the realised metric. See docs/estimation.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.base import Check, Metric
from driftline.checks.catalog_index import REALISED_PERFORMANCE
from driftline.checks.columns import Columns, infer_task
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import normal
from driftline.checks.performance_estimated import chunks
from driftline.checks.registry import register
from driftline.checks.result import CheckResult

METRICS = ("mae", "rmse")
MIN_VERDICT_ROWS = 30
MIN_REFERENCE_ROWS = 100
# LightGBM's defaults, which NannyML's DLE uses: 100 trees of up to 31 leaves of at least 20 rows,
# learning rate 0.1; no early stopping, so the fit depends on the rows only.
LOSS_MODEL = {
    "max_iter": 100,
    "learning_rate": 0.1,
    "max_leaf_nodes": 31,
    "min_samples_leaf": 20,
    "early_stopping": False,
    "random_state": 0,
}
PREDICT_BLOCK = 4096  # rows walked through every tree at once

# --- losses and metrics ------------------------------------------------------------------------------


def row_losses(truth: np.ndarray, predicted: np.ndarray, metric: str) -> np.ndarray:
    """Each row's loss: the absolute error (MAE) or the squared error (RMSE)."""
    error = truth - predicted
    return np.abs(error) if metric == "mae" else error**2


def metric_value(losses: np.ndarray, metric: str) -> float:
    """The metric from per-row losses: their mean (MAE), the root of their mean (RMSE)."""
    mean = float(np.mean(losses))
    return mean if metric == "mae" else math.sqrt(mean)


def per_row_error(losses: np.ndarray, metric: str) -> float:
    """The metric's standard error on n rows times √n: the losses' standard deviation (MAE), divided
    by 2·RMSE for RMSE (delta method), as NannyML's sampling error."""
    spread = float(np.std(losses, ddof=1)) if len(losses) > 1 else 0.0
    value = metric_value(losses, metric)
    return spread if metric == "mae" or value == 0 else spread / (2 * value)


# --- the loss model as data ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LossModel:
    """A fitted HistGradientBoostingRegressor as arrays, every tree's nodes end to end, so that a profile
    stays data (cached without pickle); `predict` walks all the trees at once and gives the estimator's
    predictions."""

    baseline: float
    roots: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray
    value: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray) -> LossModel:
        """Fit the loss model (`LOSS_MODEL`) on rows `x` (NaN: missing) and losses `y`, on one OpenMP
        thread: a run already evaluates checks side by side, and on a busy machine the estimator's own
        threads made a 4,000-row fit take 6-16 s instead of 0.2 s."""
        from sklearn.ensemble import HistGradientBoostingRegressor
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1, user_api="openmp"):
            return cls.from_estimator(HistGradientBoostingRegressor(**LOSS_MODEL).fit(x, y))

    @classmethod
    def from_estimator(cls, model: Any) -> LossModel:
        """The arrays of a fitted HistGradientBoostingRegressor (numeric splits only)."""
        trees = [predictor.nodes for [predictor] in model._predictors]
        sizes = np.array([len(t) for t in trees])
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        nodes = np.concatenate(trees)
        offset = np.repeat(starts, sizes)
        return cls(
            baseline=float(np.ravel(model._baseline_prediction)[0]),
            roots=starts.astype(np.int64),
            feature=nodes["feature_idx"].astype(np.int64),
            threshold=nodes["num_threshold"].astype(float),
            missing_left=nodes["missing_go_to_left"].astype(bool),
            left=nodes["left"].astype(np.int64) + offset,
            right=nodes["right"].astype(np.int64) + offset,
            leaf=nodes["is_leaf"].astype(bool),
            value=nodes["value"].astype(float),
        )

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The model's prediction for each row of `x`, in blocks of `PREDICT_BLOCK` rows."""
        blocks = [self._walk(x[start : start + PREDICT_BLOCK]) for start in range(0, len(x), PREDICT_BLOCK)]
        return np.concatenate(blocks) if blocks else np.empty(0)

    def _walk(self, x: np.ndarray) -> np.ndarray:
        """Every (tree, row) pair at once, one level per step over the pairs not yet at a leaf: NaN goes
        the way the split learnt for missing values, a value at or below the threshold goes left."""
        rows, width = x.shape
        node = np.repeat(self.roots, rows)  # pair k: tree k // rows, row k % rows
        start = np.tile(np.arange(rows) * width, len(self.roots))
        flat = x.ravel()
        active = np.flatnonzero(~self.leaf[node])
        while len(active):
            current = node[active]
            value = flat[start[active] + self.feature[current]]
            left = (value <= self.threshold[current]) | (np.isnan(value) & self.missing_left[current])
            node[active] = np.where(left, self.left[current], self.right[current])
            active = active[~self.leaf[node[active]]]
        return self.baseline + self.value[node].reshape(len(self.roots), rows).sum(axis=0)


# --- reading the data ------------------------------------------------------------------------------------


def _numeric(frame: pd.DataFrame, name: str, role: str, where: str) -> np.ndarray:
    """A numeric column as floats; an absent or non-numeric one is a `CheckInputError` naming it."""
    if name not in frame.columns:
        raise CheckInputError(f"the {where} has no {role} column {name!r}")
    values = frame[name]
    if not pd.api.types.is_numeric_dtype(values.dtype):
        raise CheckInputError(f"{role} column {name!r} is not numeric in the {where} ({values.dtype})")
    return values.to_numpy(dtype=float, na_value=np.nan)


def _codes(values: pd.Series, vocabulary: tuple[str, ...]) -> np.ndarray:
    """Positions of the values in the reference's sorted vocabulary; missing and unseen values NaN."""
    codes = pd.Index(vocabulary).get_indexer(values.astype(str)).astype(float)
    codes[(codes < 0) | values.isna().to_numpy()] = np.nan
    return codes


@dataclass(frozen=True)
class Design:
    """How a frame becomes the loss model's input: the numeric features as they are, the categorical
    ones as codes of the reference's sorted values (ordered splits; unseen values count as missing),
    then the model's prediction. Infinite values count as missing."""

    numeric: tuple[str, ...]
    categories: dict[str, tuple[str, ...]]

    @classmethod
    def of(cls, reference: pd.DataFrame, numeric: tuple[str, ...], categorical: tuple[str, ...]) -> Design:
        """The design of the reference's features."""
        absent = [c for c in numeric + categorical if c not in reference.columns]
        if absent:
            raise CheckInputError(f"the reference has no feature column(s) {absent}")
        vocabularies = {c: tuple(sorted(set(reference[c].dropna().astype(str)))) for c in categorical}
        return cls(numeric, vocabularies)

    @property
    def features(self) -> tuple[str, ...]:
        """The feature columns, in the order of the loss model's input."""
        return self.numeric + tuple(self.categories)

    def matrix(self, frame: pd.DataFrame, prediction: np.ndarray, where: str) -> np.ndarray:
        """The loss model's input for every row of `frame`."""
        absent = [c for c in self.features if c not in frame.columns]
        if absent:
            raise CheckInputError(f"the {where} has no feature column(s) {absent}")
        numeric = [_numeric(frame, c, "feature", where) for c in self.numeric]
        coded = [_codes(frame[c], vocabulary) for c, vocabulary in self.categories.items()]
        x = np.column_stack([*numeric, *coded, prediction])
        x[~np.isfinite(x)] = np.nan
        return x


@dataclass(frozen=True)
class _Rows:
    """The loss model's input of the rows with a finite prediction (and label, on the reference)."""

    x: np.ndarray
    truth: np.ndarray | None
    dropped: int

    def labels(self) -> np.ndarray:
        """The labels of reference rows (read `with_label`)."""
        if self.truth is None:
            raise CheckInputError("the rows were read without their labels")
        return self.truth


def _rows(frame: pd.DataFrame, columns: Columns, design: Design, with_label: bool, where: str) -> _Rows:
    """The usable rows of a frame: a finite prediction and, for the reference, a finite label."""
    prediction = _numeric(frame, columns.required("prediction"), "prediction", where)
    keep = np.isfinite(prediction)
    truth = None
    if with_label:
        truth = _numeric(frame, columns.required("label"), "label", where)
        keep &= np.isfinite(truth)
        truth = truth[keep]
    x = design.matrix(frame, prediction, where)[keep]
    return _Rows(x, truth, int(len(frame) - keep.sum()))


def _canonical(rows: _Rows) -> _Rows:
    """The reference rows in an order fixed by their values (sorted by a hash of each row), so the
    halves and chunks do not depend on how the file was sorted; equal rows are interchangeable."""
    hashed = pd.util.hash_pandas_object(pd.DataFrame(np.column_stack([rows.x, rows.labels()])), index=False)
    order = np.argsort(hashed.to_numpy(), kind="stable")
    return _Rows(rows.x[order], rows.labels()[order], rows.dropped)


def _regression_label(reference: pd.DataFrame, columns: Columns) -> None:
    """Stop unless the reference has the numeric label of a regression model."""
    if not columns.label:
        raise NotApplicable("the reference needs a label column to learn the model's losses")
    if columns.label not in reference.columns:
        raise CheckInputError(f"the reference has no label column {columns.label!r}")
    label = reference[columns.label]
    task = columns.task or infer_task(label)
    if task != "regression":
        raise NotApplicable(
            f"direct loss estimation is for regression models, not {task} "
            "(performance.estimated estimates binary classifiers)"
        )
    if not pd.api.types.is_numeric_dtype(label.dtype):
        raise CheckInputError(
            f"label {columns.label!r} is not numeric for a regression model ({label.dtype})"
        )


# --- fitting ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FittedLoss:
    """One metric's half models and what the reference says of them: the realised value, the held-out
    estimate and its standard error, the per-row sampling error of the realised metric (the band's)
    and the band's coverage on reference chunks."""

    models: tuple[LossModel, LossModel]
    reference: float
    estimated_reference: float
    reference_error: float
    band_error: float
    coverage: float | None


def held_out_losses(models: tuple[LossModel, LossModel], x: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Each reference row's loss predicted by the half model that did not see it (clipped at 0)."""
    predicted = np.empty(len(x))
    predicted[~first] = models[0].predict(x[~first])
    predicted[first] = models[1].predict(x[first])
    return predicted.clip(min=0.0)


def band_coverage(
    losses: np.ndarray, predicted: np.ndarray, metric: str, count: int, half_width: float
) -> float | None:
    """Share of `count` reference chunks whose realised metric lies within `half_width` (at the
    chunk's size) of the chunk's held-out estimate; None when the reference has fewer rows than chunks."""
    parts = chunks(len(losses), count)
    if not parts:
        return None
    gaps = [abs(metric_value(losses[c], metric) - metric_value(predicted[c], metric)) for c in parts]
    return float(np.mean(np.array(gaps) <= half_width / math.sqrt(parts[0].stop)))


def fit_loss(rows: _Rows, metric: str, count: int, band_sigmas: float) -> FittedLoss:
    """Cross-fit the loss model of one metric on the reference rows (in canonical order: alternate
    rows form the two halves)."""
    losses = row_losses(rows.labels(), rows.x[:, -1], metric)
    first = np.arange(len(losses)) % 2 == 0
    models = (LossModel.fit(rows.x[first], losses[first]), LossModel.fit(rows.x[~first], losses[~first]))
    predicted = held_out_losses(models, rows.x, first)
    estimated, realised = metric_value(predicted, metric), metric_value(losses, metric)
    if not min(estimated, realised) > 0:
        raise NotApplicable(f"the reference's {metric} is zero (perfect predictions): no rise to grade")
    band_error = per_row_error(losses, metric)
    return FittedLoss(
        models=models,
        reference=realised,
        estimated_reference=estimated,
        reference_error=per_row_error(predicted, metric) / math.sqrt(len(losses)),
        band_error=band_error,
        coverage=band_coverage(losses, predicted, metric, count, band_sigmas * band_error),
    )


# --- the check -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DirectLossProfile:
    """The features' design, each metric's fitted losses and the reference's usable rows."""

    design: Design
    losses: dict[str, FittedLoss]
    reference_rows: int


@dataclass(frozen=True)
class Refused:
    """The profile of a reference the estimator cannot learn from: evaluating raises the reason again,
    as `skipped` when the check does not apply (no label, not a regression) or `error` for unusable data."""

    applicable: bool
    reason: str

    def error(self) -> Exception:
        """The exception the runner turns into this result."""
        return CheckInputError(self.reason) if self.applicable else NotApplicable(self.reason)


@register
@dataclass(kw_only=True)
class EstimatedRegressionPerformance(Check):
    """Estimated MAE and RMSE of a regression model without labels (direct loss estimation, as
    NannyML's DLE), each with a sampling-error band, against the estimator's held-out value on the
    reference.

    Needs the prediction (and the features) in the batch; the reference needs numeric labels. One
    result per metric with `estimated`, `sampling_error` (NannyML's: the realised metric's per-row
    spread on the reference over √n), `lower`/`upper` (estimated ± `band_sigmas` · sampling_error,
    floored at 0), `reference` (realised on the reference), `estimated_reference` (the cross-fitted
    estimate on the reference) and `relative_degradation` (estimated / estimated_reference - 1), graded
    against 0.1 / 0.2 / 0.5. Labels in the batch are not read: the realised values are
    performance.overall's.
    """

    name: ClassVar[str] = "performance.estimated_regression"
    family: ClassVar[str] = "performance"
    role: ClassVar[str] = "estimate"
    estimates: ClassVar[str | None] = REALISED_PERFORMANCE
    needs: ClassVar[frozenset[str]] = frozenset({"prediction"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "relative_degradation": Metric(
            (0.1, 0.2, 0.5),
            change="rise of the estimated MAE or RMSE relative to the estimator's held-out value on the "
            "reference (0.2 = a fifth higher)",
            uncertainty="normal: the spread of the predicted per-row losses on the batch and on the held-out "
            "reference rows (RMSE by the delta method), variances added, over the reference estimate",
        )
    }
    min_verdict_rows: ClassVar[int] = MIN_VERDICT_ROWS

    band_sigmas: float = 3.0
    reference_chunks: int = 20
    metrics: list[str] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.band_sigmas > 0 or self.reference_chunks < 2:
            raise CheckInputError(f"{self.name}: band_sigmas must be > 0 and reference_chunks >= 2")
        unknown = sorted(set(self.metrics or ()) - set(METRICS))
        if unknown:
            raise CheckInputError(f"{self.name}: unknown metric(s) {unknown}; known: {list(METRICS)}")

    def fit(self, reference: pd.DataFrame, columns: Columns) -> DirectLossProfile | Refused:
        try:
            return self._fit(reference, columns)
        except (CheckInputError, NotApplicable) as exc:
            return Refused(isinstance(exc, CheckInputError), str(exc))

    def _fit(self, reference: pd.DataFrame, columns: Columns) -> DirectLossProfile:
        _regression_label(reference, columns)
        design = Design.of(
            reference, self.feature_columns(columns, "numeric"), self.feature_columns(columns, "categorical")
        )
        rows = _rows(reference, columns, design, True, "reference")
        if len(rows.x) < MIN_REFERENCE_ROWS:
            raise CheckInputError(
                f"{len(rows.x)} reference row(s) with a finite label and prediction: direct loss "
                f"estimation needs at least {MIN_REFERENCE_ROWS}"
            )
        rows = _canonical(rows)
        losses = {
            m: fit_loss(rows, m, self.reference_chunks, self.band_sigmas) for m in self.metrics or METRICS
        }
        return DirectLossProfile(design, losses, len(rows.x))

    def evaluate(
        self, current: pd.DataFrame, profile: DirectLossProfile | Refused, columns: Columns
    ) -> list[CheckResult]:
        if isinstance(profile, Refused):
            raise profile.error()
        rows = _rows(current, columns, profile.design, False, "batch")
        n = len(rows.x)
        if n == 0:
            raise CheckInputError(f"prediction {columns.prediction!r}: no batch row with a finite prediction")
        if n < self.min_verdict_rows:
            reason = f"{n} usable row(s): {self.name} needs at least {self.min_verdict_rows} for a verdict"
            return [CheckResult.skipped(self.name, m, reason, rows=len(current)) for m in profile.losses]
        details = {
            "features": list(profile.design.features),
            "band_sigmas": self.band_sigmas,
            "reference_rows": profile.reference_rows,
            "estimated_rows": n,
            "dropped_rows": rows.dropped,
        }
        return [
            self._metric(name, fitted, rows.x, len(current), details)
            for name, fitted in profile.losses.items()
        ]

    def _metric(
        self, name: str, fitted: FittedLoss, x: np.ndarray, rows: int, details: dict[str, Any]
    ) -> CheckResult:
        by_half = [model.predict(x).clip(min=0.0) for model in fitted.models]
        predicted = (by_half[0] + by_half[1]) / 2
        estimated, n = metric_value(predicted, name), len(predicted)
        band = fitted.band_error / math.sqrt(n)
        reference = fitted.estimated_reference
        relative = estimated / reference - 1
        standard_error = math.hypot(per_row_error(predicted, name) / math.sqrt(n), fitted.reference_error)
        metrics = {
            "estimated": estimated,
            "sampling_error": band,
            "lower": max(0.0, estimated - self.band_sigmas * band),
            "upper": estimated + self.band_sigmas * band,
            "reference": fitted.reference,
            "estimated_reference": reference,
            "relative_degradation": relative,
            "standard_error": standard_error / reference,
        }
        details = {
            **details,
            "band_coverage": fitted.coverage,
            "held_out_bias": reference / fitted.reference - 1,
            "estimated_by_half": [metric_value(p, name) for p in by_half],
        }
        evidence = {"relative_degradation": normal(relative, standard_error / reference)}
        return self.result(name, metrics, rows=rows, details=details, evidence=evidence)
