"""Fairness of a model's predictions and of a dataset's labels across protected subgroups.

A subgroup is one observed combination of protected-attribute values (with `race` and `sex`
protected, ("a", "F") is one subgroup). Model metrics compare a rate of each subgroup with the same
rate on the rest of the population, by `diff` (|a - b|) or `ratio` (max/min, 0/0 -> 1, x/0 -> inf),
and reduce the per-subgroup distances with `mean`, `max`, or None (a dict keyed by subgroup).
The comparing functions and scorers also take `comparison="pairwise"`, which compares each pair of subgroups
instead (the dict is then keyed by pairs); both agree when there are exactly two subgroups.
Dataset statistical parity compares pairs of subgroups by default, as its definition says.

Two forms share one implementation (`checks._fairness_core`):

- functions and scorer classes with the usual names (`true_positive_rate(y_true, y_pred, subgroups)`,
  `TruePositiveRateScorer(["race", "sex"])(model, X, y_true)`, ...);
- registered checks (`fairness.tpr`, ...) for monitors, on `columns.protected`, the label and the
  prediction (or score >= `score_threshold`).

Labels and predictions are binary: a value equal to `positive_label` (default 1) is positive. Rows
with a missing protected value, label or prediction are left out.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks import _fairness_core as core
from driftline.checks.base import Check, Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import NULL_DRAWS, Evidence, bootstrap_standard_error, normal
from driftline.checks.impact import model_impact
from driftline.checks.registry import register
from driftline.checks.result import CheckResult, reaches

__all__ = [
    "ConsistencyScorer",
    "DatasetStatisticalParityScorer",
    "EqualizedOddsScorer",
    "ErrorRateScorer",
    "FalseDiscoveryRateScorer",
    "FalseNegativeRateScorer",
    "FalseOmissionRateScorer",
    "FalsePositiveRateScorer",
    "ModelStatisticalParityScorer",
    "SmoothedEDFScorer",
    "TheilIndexScorer",
    "TruePositiveRateScorer",
    "consistency",
    "dataset_statistical_parity",
    "equalized_odds",
    "error_rate",
    "false_discovery_rate",
    "false_negative_rate",
    "false_omission_rate",
    "false_positive_rate",
    "model_statistical_parity",
    "smoothed_edf",
    "theil_index",
    "true_positive_rate",
]

Label = int | float | str | bool
Reduced = float | dict[Any, float]


# ---------------------------------------------------------------------------------------------------
# Shared input handling


@dataclass(frozen=True)
class _Rows:
    """The usable rows: their subgroups, their values of each input, and what was left out."""

    groups: core.Subgroups
    values: dict[str, np.ndarray]
    kept: np.ndarray  # boolean mask over the input rows
    missing: dict[str, int]  # rows missing a value, per input ("protected" and each array)


def _clean(protected: pd.DataFrame, arrays: Mapping[str, Any]) -> _Rows:
    """Group the rows that have every protected value and every array value present."""
    n = len(protected)
    present = {"protected": protected.notna().all(axis=1).to_numpy()}
    series = {}
    for name, values in arrays.items():
        s = values.reset_index(drop=True) if isinstance(values, pd.Series) else pd.Series(values)
        if len(s) != n:
            raise CheckInputError(f"{name} has {len(s)} values but the protected attributes have {n} rows")
        series[name] = s
        present[name] = s.notna().to_numpy()
    kept = np.logical_and.reduce(list(present.values()))
    missing = {name: int((~mask).sum()) for name, mask in present.items()}
    if not kept.any():
        raise CheckInputError(f"no usable row: rows missing a value, per input: {missing}")
    groups = core.encode_subgroups(protected.loc[kept])
    return _Rows(groups, {name: s.to_numpy()[kept] for name, s in series.items()}, kept, missing)


def _subgroup_frame(subgroups: Any) -> pd.DataFrame:
    if isinstance(subgroups, pd.Series):
        return subgroups.to_frame().reset_index(drop=True)
    if isinstance(subgroups, pd.DataFrame):
        return subgroups.reset_index(drop=True)
    raise CheckInputError(
        f"subgroups must be a pandas DataFrame of protected attributes, got {type(subgroups)}"
    )


def _api_inputs(
    subgroups: Any, arrays: Mapping[str, Any], positive_label: Label
) -> tuple[core.Subgroups, dict]:
    """Subgroups and boolean label/prediction arrays for the function API."""
    for name, values in arrays.items():
        if values is None:
            raise CheckInputError(f"{name} is required (got None)")
    rows = _clean(_subgroup_frame(subgroups), arrays)
    return rows.groups, {name: core.binary(v, name, positive_label) for name, v in rows.values.items()}


def _disparity(
    metric: str,
    groups: core.Subgroups,
    y_true: np.ndarray,
    y_pred: np.ndarray,
    distance_measure: str | None,
    comparison: str,
) -> core.Disparity:
    counts = core.confusion_counts(groups, y_true, y_pred)
    return core.model_disparity(
        metric, counts, core.Comparisons.build(comparison, groups.n_groups), distance_measure
    )


def _model_metric(
    metric: str,
    y_true: Any,
    y_pred: Any,
    subgroups: Any,
    distance_measure: str | None,
    reduction: str | None,
    comparison: str,
    positive_label: Label,
) -> Reduced:
    core.check_choice("reduction", reduction, core.REDUCTIONS)
    arrays = (
        {"y_pred": y_pred}
        if metric == "statistical_parity" and y_true is None
        else {"y_true": y_true, "y_pred": y_pred}
    )
    groups, data = _api_inputs(subgroups, arrays, positive_label)
    y = data.get("y_true", np.zeros(len(data["y_pred"]), dtype=bool))
    result = _disparity(metric, groups, y, data["y_pred"], distance_measure, comparison)
    return core.reduce(result.values, result.comparisons.keys(groups), reduction)


# ---------------------------------------------------------------------------------------------------
# Function API: model metrics


def model_statistical_parity(
    y_true: Any = None,
    y_pred: Any = None,
    subgroups: pd.DataFrame | None = None,
    distance_measure: str = "diff",
    reduction: str | None = "mean",
    *,
    comparison: str = "rest",
    positive_label: Label = 1,
) -> Reduced:
    """Disparity of the positive-prediction rate PP / N across subgroups (`y_true` is not used)."""
    return _model_metric(
        "statistical_parity", None, y_pred, subgroups, distance_measure, reduction, comparison, positive_label
    )


def _rate_function(metric: str, name: str, doc: str) -> Callable[..., Reduced]:
    """A function of the API computing the model metric `metric` (the signature every rate shares)."""

    def function(
        y_true: Any,
        y_pred: Any,
        subgroups: pd.DataFrame,
        distance_measure: str = "diff",
        reduction: str | None = "mean",
        *,
        comparison: str = "rest",
        positive_label: Label = 1,
    ) -> Reduced:
        return _model_metric(
            metric, y_true, y_pred, subgroups, distance_measure, reduction, comparison, positive_label
        )

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


true_positive_rate = _rate_function(
    "tpr", "true_positive_rate", "Disparity of TP / (TP + FN) across subgroups (equal opportunity)."
)
false_positive_rate = _rate_function(
    "fpr", "false_positive_rate", "Disparity of FP / (FP + TN) across subgroups."
)
false_negative_rate = _rate_function(
    "fnr", "false_negative_rate", "Disparity of FN / (FN + TP) across subgroups."
)
false_omission_rate = _rate_function(
    "for", "false_omission_rate", "Disparity of FN / (FN + TN) across subgroups."
)
false_discovery_rate = _rate_function(
    "fdr", "false_discovery_rate", "Disparity of FP / (FP + TP) across subgroups."
)
error_rate = _rate_function("error_rate", "error_rate", "Disparity of (FP + FN) / N across subgroups.")
equalized_odds = _rate_function(
    "equalized_odds",
    "equalized_odds",
    "Per comparison, the larger of the TPR and the FPR distances; then reduced over comparisons.",
)


def theil_index(
    y_true: Any,
    y_pred: Any,
    subgroups: pd.DataFrame,
    distance_measure: None = None,
    reduction: str | None = "mean",
    *,
    comparison: str = "rest",
    positive_label: Label = 1,
) -> Reduced:
    """Between-group Theil index of the benefit b = 1 + prediction - label for each subgroup and the
    group it is compared with (Speicher et al. 2018); a distance measure is an error."""
    return _model_metric(
        "theil_index", y_true, y_pred, subgroups, distance_measure, reduction, comparison, positive_label
    )


# ---------------------------------------------------------------------------------------------------
# Function API: dataset metrics


def dataset_statistical_parity(
    y_true: Any,
    subgroups: pd.DataFrame,
    distance_measure: str = "diff",
    reduction: str | None = "mean",
    *,
    comparison: str = "pairwise",
    positive_label: Label = 1,
) -> Reduced:
    """Disparity of the positive-label rate PL / N between pairs of subgroups (or, with
    `comparison="rest"`, between each subgroup and the rest of the population)."""
    core.check_choice("reduction", reduction, core.REDUCTIONS)
    groups, data = _api_inputs(subgroups, {"y_true": y_true}, positive_label)
    y = data["y_true"]
    result = _disparity("base_rate", groups, y, np.zeros_like(y), distance_measure, comparison)
    return core.reduce(result.values, result.comparisons.keys(groups), reduction)


def _consistency_scores(
    groups: core.Subgroups, y_true: np.ndarray, n_neighbors: int
) -> tuple[float, np.ndarray]:
    """The dataset's consistency and each subgroup's mean row inconsistency."""
    positives = core.positives_per_group(groups, y_true)
    per_group = core.group_inconsistency(groups.level_codes, groups.sizes(), positives, n_neighbors)
    return float(np.average(per_group, weights=groups.sizes())), per_group


def _edf_scores(
    groups: core.Subgroups, y_true: np.ndarray, concentration: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """Smoothed EDF, each subgroup's largest log ratio against another subgroup, the smoothed rates."""
    rates = core.smoothed_rates(groups.sizes(), core.positives_per_group(groups, y_true), concentration)
    per_group = core.differential_fairness(rates)
    return float(np.max(per_group)), per_group, rates


def consistency(
    y_true: Any, subgroups: pd.DataFrame, *, n_neighbors: int = 5, positive_label: Label = 1
) -> float:
    """Mean over rows of |label - share of positive labels among the row's `n_neighbors` nearest other
    rows|, neighbours taken in the (one-hot) protected attributes; 0 when neighbours always agree."""
    groups, data = _api_inputs(subgroups, {"y_true": y_true}, positive_label)
    return _consistency_scores(groups, data["y_true"], n_neighbors)[0]


def smoothed_edf(
    y_true: Any, subgroups: pd.DataFrame, *, concentration: float = 1.0, positive_label: Label = 1
) -> float:
    """Smoothed empirical differential fairness (Foulds et al. 2020): the largest log ratio between two
    subgroups' Dirichlet-smoothed positive-label rates (or negative-label rates); 0 is perfect."""
    groups, data = _api_inputs(subgroups, {"y_true": y_true}, positive_label)
    return _edf_scores(groups, data["y_true"], concentration)[0]


# ---------------------------------------------------------------------------------------------------
# Scorer classes: the same metrics bound to protected attribute names, evaluated on (model, X, y)


def _attribute_list(protected_attributes: Any) -> list[str]:
    if isinstance(protected_attributes, str):
        return [protected_attributes]
    attributes = list(protected_attributes)
    if not attributes:
        raise CheckInputError("protected_attributes is empty")
    return attributes


class _Scorer:
    """Protected attribute names plus metric settings; calling it gathers the subgroups from `X`
    (and `supplementary_features`) and computes the metric."""

    def __init__(self, protected_attributes: Any, **settings: Any) -> None:
        self.protected_attributes = _attribute_list(protected_attributes)
        self.settings = settings
        choices = {
            "distance_measure": core.DISTANCES,
            "reduction": core.REDUCTIONS,
            "comparison": core.COMPARISONS,
        }
        for name, allowed in choices.items():
            if name in settings:
                core.check_choice(name, settings[name], allowed)

    def _subgroups(self, X: pd.DataFrame, supplementary_features: pd.DataFrame | None) -> pd.DataFrame:
        if not isinstance(X, pd.DataFrame):
            raise CheckInputError(f"X must be a pandas DataFrame, got {type(X)}")
        extra = pd.DataFrame(index=X.index) if supplementary_features is None else supplementary_features
        if not isinstance(extra, pd.DataFrame):
            raise CheckInputError(f"supplementary_features must be a pandas DataFrame, got {type(extra)}")
        both = sorted(set(X.columns) & set(extra.columns), key=str)
        if both:
            raise CheckInputError(
                f"feature(s) {both} are in both X and supplementary_features; keep each in one"
            )
        missing = [a for a in self.protected_attributes if a not in X.columns and a not in extra.columns]
        if missing:
            raise CheckInputError(
                f"protected attribute(s) {missing} are in neither X nor supplementary_features"
            )
        if len(extra) != len(X):
            raise CheckInputError(f"supplementary_features has {len(extra)} rows, X has {len(X)}")
        return pd.DataFrame(
            {a: (X[a] if a in X.columns else extra[a]).to_numpy() for a in self.protected_attributes}
        )


class _ModelScorer(_Scorer):
    function: ClassVar[Any]

    def __init__(
        self,
        protected_attributes: Any,
        distance_measure: str = "diff",
        reduction: str | None = "mean",
        *,
        comparison: str = "rest",
        positive_label: Label = 1,
    ) -> None:
        super().__init__(
            protected_attributes,
            distance_measure=distance_measure,
            reduction=reduction,
            comparison=comparison,
            positive_label=positive_label,
        )

    def __call__(
        self, model: Any, X: pd.DataFrame, y_true: Any, supplementary_features: pd.DataFrame | None = None
    ) -> Reduced:
        """The metric on `model.predict(X)` against `y_true`."""
        subgroups = self._subgroups(X, supplementary_features)
        return type(self).function(y_true, model.predict(X), subgroups, **self.settings)


class ModelStatisticalParityScorer(_ModelScorer):
    """Scorer form of `model_statistical_parity`; `y_true` may be omitted."""

    function = staticmethod(model_statistical_parity)

    def __call__(
        self,
        model: Any,
        X: pd.DataFrame,
        y_true: Any = None,
        supplementary_features: pd.DataFrame | None = None,
    ) -> Reduced:
        return super().__call__(model, X, y_true, supplementary_features)


class TruePositiveRateScorer(_ModelScorer):
    """Scorer form of `true_positive_rate`."""

    function = staticmethod(true_positive_rate)


class FalsePositiveRateScorer(_ModelScorer):
    """Scorer form of `false_positive_rate`."""

    function = staticmethod(false_positive_rate)


class FalseNegativeRateScorer(_ModelScorer):
    """Scorer form of `false_negative_rate`."""

    function = staticmethod(false_negative_rate)


class FalseOmissionRateScorer(_ModelScorer):
    """Scorer form of `false_omission_rate`."""

    function = staticmethod(false_omission_rate)


class FalseDiscoveryRateScorer(_ModelScorer):
    """Scorer form of `false_discovery_rate`."""

    function = staticmethod(false_discovery_rate)


class ErrorRateScorer(_ModelScorer):
    """Scorer form of `error_rate`."""

    function = staticmethod(error_rate)


class EqualizedOddsScorer(_ModelScorer):
    """Scorer form of `equalized_odds`."""

    function = staticmethod(equalized_odds)


class TheilIndexScorer(_ModelScorer):
    """Scorer form of `theil_index` (no distance measure)."""

    function = staticmethod(theil_index)

    def __init__(
        self,
        protected_attributes: Any,
        distance_measure: None = None,
        reduction: str | None = "mean",
        *,
        comparison: str = "rest",
        positive_label: Label = 1,
    ) -> None:
        if distance_measure is not None:
            raise CheckInputError("theil_index takes no distance_measure (it compares the groups itself)")
        _Scorer.__init__(
            self,
            protected_attributes,
            reduction=reduction,
            comparison=comparison,
            positive_label=positive_label,
        )


class _DatasetScorer(_Scorer):
    function: ClassVar[Any]

    def __call__(
        self,
        model: Any = None,
        X: pd.DataFrame | None = None,
        y_true: Any = None,
        supplementary_features: pd.DataFrame | None = None,
    ) -> Reduced:
        """The metric on the labels `y_true` of the rows of `X` (`model` is not used)."""
        if X is None or y_true is None:
            raise CheckInputError(
                "X and y_true are required; call scorer(None, X, y_true) or scorer(X=X, y_true=y)"
            )
        return type(self).function(y_true, self._subgroups(X, supplementary_features), **self.settings)


class DatasetStatisticalParityScorer(_DatasetScorer):
    """Scorer form of `dataset_statistical_parity`."""

    function = staticmethod(dataset_statistical_parity)

    def __init__(
        self,
        protected_attributes: Any,
        distance_measure: str = "diff",
        reduction: str | None = "mean",
        *,
        comparison: str = "pairwise",
        positive_label: Label = 1,
    ) -> None:
        super().__init__(
            protected_attributes,
            distance_measure=distance_measure,
            reduction=reduction,
            comparison=comparison,
            positive_label=positive_label,
        )


class ConsistencyScorer(_DatasetScorer):
    """Scorer form of `consistency`."""

    function = staticmethod(consistency)

    def __init__(self, protected_attributes: Any, *, n_neighbors: int = 5, positive_label: Label = 1) -> None:
        super().__init__(protected_attributes, n_neighbors=n_neighbors, positive_label=positive_label)


class SmoothedEDFScorer(_DatasetScorer):
    """Scorer form of `smoothed_edf`."""

    function = staticmethod(smoothed_edf)

    def __init__(
        self, protected_attributes: Any, *, concentration: float = 1.0, positive_label: Label = 1
    ) -> None:
        super().__init__(protected_attributes, concentration=concentration, positive_label=positive_label)


# ---------------------------------------------------------------------------------------------------
# Registered checks
#
# One result per check, target = the protected columns joined by ",". Every value below is a function
# of the per-subgroup confusion counts, so its noise is measured by resampling those counts.
#
# By default (`compare_to: reference`) the graded metric is the change against the reference,
# `<metric>_change`: the batch's value minus the value a clean batch with the same subgroup sizes
# shows (the mean over batches simulated from the reference's outcome shares within each subgroup,
# which also takes out the upward bias of a disparity measured on few rows). Its noise is normal, with
# the bootstrap standard errors (`checks.evidence.bootstrap_standard_error`, multinomial over the
# subgroup × outcome counts) of the batch's and of the reference's value combined. The reference's
# own disparity is a standing property of the model, not a change. `compare_to: none` audits the
# batch alone: the value's own level is graded on its lower bound (same bootstrap).
#
# Only comparisons (or subgroups) with at least `min_group_rows` rows behind their rate on each side,
# in the batch and in the reference, are graded; `details.not_graded` lists the others. The full
# value over every comparison, as the function API computes it, is reported as `value`.

DETAILS_LIMIT = 100  # comparisons listed in a result's details, worst first
COMPARE_TO = ("reference", "none")
MIN_GROUP_ROWS = 30
# A ratio of rates swings widely when a rate counts few rows: the ratio distance grades a comparison,
# and smoothed_edf a subgroup, only when each side is expected to hold `min_outcome_rows` rows counted
# by the rate (its rarer outcome for smoothed_edf), at the reference's rates (its own in an audit).
MIN_OUTCOME_ROWS = 10
RATIO_SMOOTHING = 1.0  # graded ratios use rates (k + 1/2) / (n + 1), finite when a rate is 0

_UNDEFINED = {
    "tpr": "no comparison has rows with a positive label on both sides",
    "fnr": "no comparison has rows with a positive label on both sides",
    "fpr": "no comparison has rows with a negative label on both sides",
    "for": "no comparison has rows with a negative prediction on both sides",
    "fdr": "no comparison has rows with a positive prediction on both sides",
    "equalized_odds": "no comparison has rows with both labels on both sides",
    "theil_index": "every row has zero benefit (negative prediction, positive label)",
}
CHANGE = (
    "the batch's value minus the value a clean batch with the same subgroup sizes shows (simulated "
    "from the reference's outcome shares per subgroup); with compare_to: none, the value itself (audit)"
)
UNCERTAINTY = (
    "normal: multinomial bootstrap over the subgroup × outcome counts of the batch and of the "
    "reference, standard errors combined"
)


def _declared(level: str, thresholds: tuple[float, ...], change: tuple[float, ...]) -> dict[str, Metric]:
    """A fairness value graded on its level (audit) and on its change against the reference."""
    return {
        level: Metric(
            thresholds,
            change="its level in the batch (compare_to: none)",
            uncertainty=UNCERTAINTY,
            audit=True,
        ),
        f"{level}_change": Metric(change, change=CHANGE, uncertainty=UNCERTAINTY),
    }


@dataclass(frozen=True)
class _Batch:
    """A frame's usable rows: subgroups, boolean label and prediction (all False when not used)."""

    rows: _Rows
    frame: pd.DataFrame
    y_true: np.ndarray
    y_pred: np.ndarray
    prediction_from: str | None


@dataclass(frozen=True)
class _Measurement:
    value: float
    records: list[dict[str, Any]]
    group_scores: np.ndarray  # per subgroup, its worst value; rows of subgroups reaching a threshold fail


@dataclass(frozen=True)
class _Aligned:
    """Batch and reference confusion counts (groups × 4) on one numbering of the subgroups of either."""

    batch: np.ndarray
    reference: np.ndarray
    level_codes: np.ndarray
    records: list[dict[str, Any]]
    batch_index: np.ndarray  # position of each batch subgroup in this numbering


def _aligned(groups: core.Subgroups, counts: np.ndarray, profile: Mapping[str, Any]) -> _Aligned:
    """The batch's and the reference's counts per subgroup, subgroups of either side numbered once."""
    seen = set(groups.values)
    values = list(groups.values) + [v for v in profile["values"] if v not in seen]
    union = core.encode_subgroups(pd.DataFrame(values, columns=list(groups.attributes)))
    position = dict(zip(values, union.codes, strict=True))
    batch = np.zeros((union.n_groups, 4), dtype=np.int64)
    batch[union.codes[: groups.n_groups]] = counts
    reference = np.zeros_like(batch)
    reference[[position[v] for v in profile["values"]]] = profile["counts"]
    records = [union.records(g) for g in range(union.n_groups)]
    return _Aligned(batch, reference, union.level_codes, records, union.codes[: groups.n_groups])


def _clean_batches(
    statistic: Callable[[np.ndarray], np.ndarray], aligned: _Aligned, draws: int = NULL_DRAWS, seed: int = 2
) -> tuple[float, float, float]:
    """Mean and spread (standard deviation) of `statistic` over clean batches (the batch's subgroup
    sizes, the reference's outcome shares within each subgroup; a subgroup new to the reference keeps
    its own), and the Monte Carlo standard error of that mean."""
    sizes = aligned.batch.sum(axis=1)
    reference_rows = aligned.reference.sum(axis=1, keepdims=True)
    source = np.where(reference_rows > 0, aligned.reference, aligned.batch).astype(float)
    shares = source / np.maximum(source.sum(axis=1, keepdims=True), 1.0)
    shares[sizes == 0] = 0.25  # no rows are drawn there; any valid shares do
    sample = np.random.default_rng(seed).multinomial(sizes, shares, size=(draws, len(sizes)))
    values = np.asarray(statistic(sample), dtype=float)
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return math.nan, math.inf, math.inf
    spread = float(values.std(ddof=1))
    return float(values.mean()), spread, spread / math.sqrt(len(values))


@dataclass(kw_only=True)
class _FairnessCheck(Check):
    """Shared plumbing: usable rows, the reference's counts in the profile, one result graded on the
    confidence bound of the change against the reference (or of the level, `compare_to: none`)."""

    family: ClassVar[str] = "fairness"
    role: ClassVar[str] = "fairness"
    needs: ClassVar[frozenset[str]] = frozenset({"protected", "label"})
    uses_label: ClassVar[bool] = True
    uses_prediction: ClassVar[bool] = True
    # The name of the fairness index the check reports (its metric at its level, `<index>_change`
    # against the reference).
    index_name: ClassVar[str]

    positive_label: Label = 1
    score_threshold: float = 0.5
    compare_to: str = "reference"
    min_group_rows: int = MIN_GROUP_ROWS
    min_outcome_rows: int = MIN_OUTCOME_ROWS

    def __post_init__(self) -> None:
        super().__post_init__()
        core.check_choice(f"{self.name}: compare_to", self.compare_to, COMPARE_TO)
        for name, least in (("min_group_rows", 1), ("min_outcome_rows", 0)):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= least):
                raise CheckInputError(f"{self.name}: {name} must be an integer >= {least}")

    @abstractmethod
    def _measure(self, batch: _Batch) -> _Measurement:
        """The check's value on the usable rows, with per-subgroup records and scores."""

    @abstractmethod
    def _statistic(self, aligned: _Aligned, graded: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """The graded value as a function of counts (..., groups, 4), over the `graded` comparisons."""

    @abstractmethod
    def _graded(self, aligned: _Aligned) -> tuple[np.ndarray, np.ndarray]:
        """Which comparisons are graded, and which subgroups take part in them."""

    def _undefined(self) -> str:
        return f"{self.name} is undefined on this batch"

    def _index(self) -> str:
        """The reported index: its level is graded in an audit, its change against the reference else."""
        return self.index_name

    def _graded_metric(self) -> str:
        return self._index() if self.compare_to == "none" else f"{self._index()}_change"

    def _enough(self, rows: np.ndarray, reference_rows: np.ndarray) -> np.ndarray:
        """Whether the batch (and, against the reference, the reference) has enough rows."""
        enough = rows >= self.min_group_rows
        return enough & (reference_rows >= self.min_group_rows) if self.compare_to == "reference" else enough

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """The reference's value, counts and per-subgroup scores; None (with the reason) when it has none."""
        try:
            batch = self._batch(reference, columns)
            measured = self._measure(batch)
        except (CheckInputError, NotApplicable) as exc:
            return {"value": None, "reason": str(exc)}
        groups = batch.rows.groups
        return {
            "value": None if np.isnan(measured.value) else measured.value,
            "reason": None,
            "values": groups.values,
            "counts": core.confusion_counts(groups, batch.y_true, batch.y_pred),
            "scores": dict(zip(groups.values, measured.group_scores.tolist(), strict=True)),
        }

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        batch = self._batch(current, columns)
        measured = self._measure(batch)
        if np.isnan(measured.value):
            raise NotApplicable(self._undefined())
        if self.compare_to == "reference" and profile.get("counts") is None:
            raise NotApplicable(
                f"no reference value to compare with ({profile.get('reason')}); "
                "compare_to: none grades the batch's own level"
            )
        groups = batch.rows.groups
        counts = core.confusion_counts(groups, batch.y_true, batch.y_pred)
        reference = (
            profile
            if profile.get("counts") is not None
            else {"values": [], "counts": np.zeros((0, 4), dtype=np.int64)}
        )
        aligned = _aligned(groups, counts, reference)
        graded, graded_groups = self._graded(aligned)
        if not graded.any():
            where = " in the batch and the reference" if self.compare_to == "reference" else ""
            raise NotApplicable(
                f"{self.name}: no comparison is graded: none has {self.min_group_rows} rows "
                f"(min_group_rows) behind its rate on each side{where}, and a ratio of rates also "
                f"needs {self.min_outcome_rows} rows counted by them (min_outcome_rows)"
            )
        statistic = self._statistic(aligned, graded)
        evidence, extra = self._evidence(statistic, aligned)
        failing_groups = self._failing(measured, groups, profile, graded_groups[aligned.batch_index])
        failing = failing_groups[groups.codes]
        details = {
            "settings": {k: v for k, v in self.params().items() if k not in ("thresholds", "features")},
            "subgroups": groups.n_groups,
            "records": measured.records,
            "not_graded": self._not_graded(aligned, graded_groups),
            "dropped_rows": int((~batch.rows.kept).sum()),
            "missing": batch.rows.missing,
            "prediction_from": batch.prediction_from,
            **extra,
        }
        graded_metric = self._graded_metric()
        metrics = {
            graded_metric: evidence.estimate,
            "value": measured.value,
            "reference_value": profile.get("value"),
        }
        result = self.result(
            ",".join(columns.protected),
            metrics,
            rows=int(batch.rows.kept.sum()),
            failing_rows=int(failing.sum()),
            model_impact=model_impact(batch.frame, failing, columns),
            details=details,
            evidence={graded_metric: evidence},
        )
        return [result]

    def _evidence(
        self, statistic: Callable[[np.ndarray], np.ndarray], aligned: _Aligned
    ) -> tuple[Evidence, dict[str, Any]]:
        """The graded value with its noise: the level (audit) or the change against the reference."""
        shape = aligned.batch.shape

        def resampled(draws: np.ndarray) -> np.ndarray:
            return statistic(draws.reshape(-1, *shape))

        value = float(statistic(aligned.batch))
        batch_se = bootstrap_standard_error(resampled, aligned.batch.ravel())
        if self.compare_to == "none":
            return normal(value, batch_se), {"graded_value": value}
        # A cell empty in the batch does not vary in its bootstrap: the spread of clean batches of the
        # same sizes keeps the batch's standard error from looking more certain than that.
        expected, spread, expected_se = _clean_batches(statistic, aligned)
        reference_se = bootstrap_standard_error(resampled, aligned.reference.ravel(), seed=1)
        se = math.sqrt(max(batch_se, spread) ** 2 + reference_se**2 + expected_se**2)
        return normal(value - expected, se), {"graded_value": value, "expected_value": expected}

    def _failing(
        self, measured: _Measurement, groups: core.Subgroups, profile: Mapping[str, Any], graded: np.ndarray
    ) -> np.ndarray:
        """Graded subgroups whose own worst value (its growth over the reference's, by default)
        reaches the lowest threshold."""
        lowest = min(self.effective_thresholds()[self._graded_metric()])
        scores = measured.group_scores
        if self.compare_to == "reference":
            before = profile.get("scores") or {}
            with np.errstate(invalid="ignore"):
                scores = scores - np.array([before.get(v, np.nan) for v in groups.values])
        reached = np.array([reaches(float(v), lowest) for v in scores], dtype=bool)
        return reached & graded

    def _not_graded(self, aligned: _Aligned, graded_groups: np.ndarray) -> list[dict[str, Any]]:
        """The batch's subgroups in no graded comparison, with their rows in the batch and reference."""
        batch_rows, reference_rows = aligned.batch.sum(axis=1), aligned.reference.sum(axis=1)
        left_out = np.flatnonzero(~graded_groups & (batch_rows > 0))[:DETAILS_LIMIT]
        return [
            {
                "subgroup": aligned.records[g],
                "rows": int(batch_rows[g]),
                "reference_rows": int(reference_rows[g]),
                "min_group_rows": self.min_group_rows,
            }
            for g in left_out
        ]

    def _batch(self, frame: pd.DataFrame, columns: Columns) -> _Batch:
        arrays: dict[str, pd.Series] = {}
        if self.uses_label:
            arrays[columns.required("label")] = frame[columns.required("label")]
        if self.uses_prediction:
            prediction, arrays[prediction], from_score = self._prediction(frame, columns)
        rows = _clean(frame[list(columns.protected)].reset_index(drop=True), arrays)
        if rows.groups.n_groups < 2:
            raise NotApplicable(
                f"protected column(s) {list(columns.protected)} have one subgroup "
                f"{rows.groups.records(0)} in the usable rows: nothing to compare"
            )
        n = int(rows.kept.sum())
        y_true = y_pred = np.zeros(n, dtype=bool)
        if self.uses_label:
            name = f"label column {columns.label!r}"
            y_true = core.binary(rows.values[columns.required("label")], name, self.positive_label)
        source = None
        if self.uses_prediction and from_score:
            y_pred = rows.values[prediction] >= self.score_threshold
            source = f"{prediction} >= {self.score_threshold}"
        elif self.uses_prediction:
            y_pred = core.binary(
                rows.values[prediction], f"prediction column {prediction!r}", self.positive_label
            )
            source = prediction
        # Model impact needs only the label, prediction and score of the usable rows.
        roles = [
            c for c in dict.fromkeys((columns.label, columns.prediction, columns.score)) if c and c in frame
        ]
        kept = frame[roles] if rows.kept.all() else frame[roles].iloc[np.flatnonzero(rows.kept)]
        return _Batch(rows, kept, y_true, y_pred, source)

    def _prediction(self, frame: pd.DataFrame, columns: Columns) -> tuple[str, pd.Series, bool]:
        """The predicted labels' column, else the score column (non-finite scores become missing);
        the flag says whether it is the score."""
        if columns.prediction and columns.prediction in frame:
            return columns.prediction, frame[columns.prediction], False
        if columns.score and columns.score in frame:
            score = frame[columns.score]
            if not pd.api.types.is_numeric_dtype(score) or pd.api.types.is_bool_dtype(score):
                raise CheckInputError(f"score column {columns.score!r} is not numeric (dtype {score.dtype})")
            values = score.to_numpy(dtype=float)
            return columns.score, pd.Series(np.where(np.isfinite(values), values, np.nan)), True
        raise NotApplicable(
            "no prediction or score column in the batch (set columns.prediction or columns.score)"
        )


def _comparison_records(groups: core.Subgroups, disparity: core.Disparity) -> list[dict[str, Any]]:
    """The worst `DETAILS_LIMIT` comparisons: subgroups, sizes, each side's values, the disparity."""
    comparisons = disparity.comparisons
    sizes = groups.sizes()
    rest = comparisons.kind == "rest"
    other_sizes = sizes.sum() - sizes if rest else sizes[comparisons.right]
    order = np.argsort(-np.nan_to_num(disparity.values, nan=-1.0), kind="stable")[:DETAILS_LIMIT]
    records = []
    for i in order:
        left = comparisons.left[i]
        record = {
            "subgroup": groups.records(left),
            "other": "rest" if rest else groups.records(comparisons.right[i]),
            "rows": int(sizes[left]),
            "other_rows": int(other_sizes[left] if rest else other_sizes[i]),
            "disparity": float(disparity.values[i]),
        }
        for name, (a, b) in disparity.sides.items():
            record[name], record[f"other_{name}"] = float(a[i]), float(b[i])
        records.append(record)
    return records


def _worst_per_group(disparity: core.Disparity, n_groups: int) -> np.ndarray:
    """Each subgroup's largest disparity over the comparisons it takes part in (NaN if none defined)."""
    comparisons = disparity.comparisons
    worst = np.full(n_groups, np.nan)
    np.fmax.at(worst, comparisons.left, disparity.values)
    paired = comparisons.right >= 0
    np.fmax.at(worst, comparisons.right[paired], disparity.values[paired])
    return worst


def _reduce_graded(values: np.ndarray, graded: np.ndarray, reduction: str) -> np.ndarray:
    """Mean or max over the graded comparisons (last axis), skipping undefined ones (NaN if none)."""
    chosen = values[..., graded]
    defined = ~np.isnan(chosen)
    if reduction == "max":
        return np.where(defined.any(axis=-1), np.max(np.where(defined, chosen, -np.inf), axis=-1), np.nan)
    with np.errstate(invalid="ignore"):
        return np.where(defined, chosen, 0.0).sum(axis=-1) / defined.sum(axis=-1)


@dataclass(kw_only=True)
class _ComparisonCheck(_FairnessCheck):
    """A metric compared across subgroups, reduced over the comparisons by `reduction`."""

    # The quantity compared, as `_fairness_core` names it (a rate, `base_rate`, `theil_index`).
    metric: ClassVar[str]

    reduction: str = "mean"
    comparison: str = "rest"

    def __post_init__(self) -> None:
        super().__post_init__()
        core.check_choice(f"{self.name}: reduction", self.reduction, ("mean", "max"))
        core.check_choice(f"{self.name}: comparison", self.comparison, core.COMPARISONS)

    def _distance(self) -> str | None:
        return None

    def _undefined(self) -> str:
        return f"{self.name}: {_UNDEFINED.get(self.metric, 'undefined on this batch')}"

    def _measure(self, batch: _Batch) -> _Measurement:
        groups = batch.rows.groups
        disparity = _disparity(
            self.metric, groups, batch.y_true, batch.y_pred, self._distance(), self.comparison
        )
        value = core.reduce(disparity.values, list(range(len(disparity.values))), self.reduction)
        return _Measurement(
            value, _comparison_records(groups, disparity), _worst_per_group(disparity, groups.n_groups)
        )

    def _graded(self, aligned: _Aligned) -> tuple[np.ndarray, np.ndarray]:
        comparisons = core.Comparisons.build(self.comparison, len(aligned.batch))

        def rows(counts: np.ndarray) -> np.ndarray:
            left, right = comparisons.sides(counts)
            return np.minimum(
                core.denominator_rows(left, self.metric), core.denominator_rows(right, self.metric)
            )

        graded = self._enough(rows(aligned.batch), rows(aligned.reference))
        if self._distance() == "ratio":
            graded &= self._expected_counted(aligned, comparisons) >= self.min_outcome_rows
        groups = np.zeros(len(aligned.batch), dtype=bool)
        groups[comparisons.left[graded]] = True
        groups[comparisons.right[graded & (comparisons.right >= 0)]] = True
        return graded, groups

    def _expected_counted(self, aligned: _Aligned, comparisons: core.Comparisons) -> np.ndarray:
        """Per comparison, the fewest rows a side's rate is expected to count in its numerator: the
        batch's rows behind the rate times the reference's rate (the batch's own in an audit)."""
        source = aligned.reference if self.compare_to == "reference" else aligned.batch
        fewest = np.full(len(comparisons.left), np.inf)
        for name in core.rate_names(self.metric):
            for batch_side, source_side in zip(
                comparisons.sides(aligned.batch), comparisons.sides(source), strict=True
            ):
                expected = core.denominator_rows(batch_side, name) * core.rate(source_side, name)
                fewest = np.fmin(fewest, expected)
        return fewest

    def _statistic(self, aligned: _Aligned, graded: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        comparisons = core.Comparisons.build(self.comparison, len(aligned.batch))
        smoothing = RATIO_SMOOTHING if self._distance() == "ratio" else 0.0

        def statistic(counts: np.ndarray) -> np.ndarray:
            disparity = core.model_disparity(self.metric, counts, comparisons, self._distance(), smoothing)
            return _reduce_graded(disparity.values, graded, self.reduction)

        return statistic


@dataclass(kw_only=True)
class _DisparityCheck(_ComparisonCheck):
    """A rate compared across subgroups by `diff` (metric `disparity`) or `ratio` (`disparity_ratio`;
    graded on rates smoothed by half a row, so that a zero rate gives a large but finite ratio, and
    over the comparisons whose rates are expected to count `min_outcome_rows` rows on each side)."""

    declared_metrics: ClassVar[dict[str, Metric]] = {
        **_declared("disparity", (0.05, 0.1, 0.2), (0.05, 0.1, 0.2)),
        **_declared("disparity_ratio", (1.1, 1.25, 1.5), (0.1, 0.25, 0.5)),
    }

    distance_measure: str = "diff"

    def __post_init__(self) -> None:
        super().__post_init__()
        core.check_choice(f"{self.name}: distance_measure", self.distance_measure, core.DISTANCES)

    def _distance(self) -> str | None:
        return self.distance_measure

    def _index(self) -> str:
        return "disparity" if self.distance_measure == "diff" else "disparity_ratio"


@register
@dataclass(kw_only=True)
class StatisticalParity(_DisparityCheck):
    """Model statistical parity: the positive-prediction rate PP / N of each protected subgroup
    against the rest of the population, |a - b| (or max/min), averaged over subgroups."""

    name: ClassVar[str] = "fairness.statistical_parity"
    needs: ClassVar[frozenset[str]] = frozenset({"protected"})
    uses_label: ClassVar[bool] = False
    metric: ClassVar[str] = "statistical_parity"


@register
@dataclass(kw_only=True)
class TruePositiveRateDisparity(_DisparityCheck):
    """True-positive-rate disparity: TP / (TP + FN) of each protected subgroup against the rest of the
    population (equal opportunity), averaged over subgroups."""

    name: ClassVar[str] = "fairness.tpr"
    metric: ClassVar[str] = "tpr"


@register
@dataclass(kw_only=True)
class FalsePositiveRateDisparity(_DisparityCheck):
    """False-positive-rate disparity: FP / (FP + TN) of each protected subgroup against the rest of
    the population, averaged over subgroups."""

    name: ClassVar[str] = "fairness.fpr"
    metric: ClassVar[str] = "fpr"


@register
@dataclass(kw_only=True)
class FalseNegativeRateDisparity(_DisparityCheck):
    """False-negative-rate disparity: FN / (FN + TP) of each protected subgroup against the rest of
    the population, averaged over subgroups."""

    name: ClassVar[str] = "fairness.fnr"
    metric: ClassVar[str] = "fnr"


@register
@dataclass(kw_only=True)
class FalseOmissionRateDisparity(_DisparityCheck):
    """False-omission-rate disparity: FN / (FN + TN) of each protected subgroup against the rest of
    the population, averaged over subgroups."""

    name: ClassVar[str] = "fairness.for"
    metric: ClassVar[str] = "for"


@register
@dataclass(kw_only=True)
class FalseDiscoveryRateDisparity(_DisparityCheck):
    """False-discovery-rate disparity: FP / (FP + TP) of each protected subgroup against the rest of
    the population, averaged over subgroups."""

    name: ClassVar[str] = "fairness.fdr"
    metric: ClassVar[str] = "fdr"


@register
@dataclass(kw_only=True)
class ErrorRateDisparity(_DisparityCheck):
    """Error-rate disparity: (FP + FN) / N of each protected subgroup against the rest of the
    population, averaged over subgroups."""

    name: ClassVar[str] = "fairness.error_rate"
    metric: ClassVar[str] = "error_rate"


@register
@dataclass(kw_only=True)
class EqualizedOdds(_DisparityCheck):
    """Equalized odds: per protected subgroup, the larger of its TPR and FPR distances to the rest of
    the population, averaged over subgroups."""

    name: ClassVar[str] = "fairness.equalized_odds"
    metric: ClassVar[str] = "equalized_odds"


@register
@dataclass(kw_only=True)
class TheilIndex(_ComparisonCheck):
    """Theil index: between-group Theil index of the benefit 1 + prediction - label for each protected
    subgroup and the rest of the population, averaged over subgroups; 0 is perfect."""

    name: ClassVar[str] = "fairness.theil_index"
    metric: ClassVar[str] = "theil_index"
    index_name: ClassVar[str] = "theil_index"
    declared_metrics: ClassVar[dict[str, Metric]] = _declared(
        "theil_index", (0.002, 0.005, 0.02), (0.002, 0.005, 0.02)
    )


@register
@dataclass(kw_only=True)
class DatasetStatisticalParity(_DisparityCheck):
    """Dataset statistical parity: the positive-label rate PL / N compared between every pair of
    protected subgroups, |a - b| (or max/min), averaged over pairs."""

    name: ClassVar[str] = "fairness.dataset_statistical_parity"
    uses_prediction: ClassVar[bool] = False
    metric: ClassVar[str] = "base_rate"

    comparison: str = "pairwise"


@dataclass(kw_only=True)
class _LabelCheck(_FairnessCheck):
    """A value of the labels per subgroup, graded over the subgroups with `min_group_rows` rows."""

    uses_prediction: ClassVar[bool] = False

    def _graded(self, aligned: _Aligned) -> tuple[np.ndarray, np.ndarray]:
        graded = self._enough(aligned.batch.sum(axis=1), aligned.reference.sum(axis=1))
        graded &= graded.sum() >= 2
        return graded, graded

    @staticmethod
    def _sizes(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows and positive labels per subgroup, from the confusion counts."""
        return counts.sum(axis=-1), counts[..., core.FN] + counts[..., core.TP]


@register
@dataclass(kw_only=True)
class Consistency(_LabelCheck):
    """Label consistency: mean over rows of |label - positive share among the row's 5 nearest other
    rows| in the protected attributes (ties averaged); 0 when neighbours always agree."""

    name: ClassVar[str] = "fairness.consistency"
    index_name: ClassVar[str] = "consistency"
    declared_metrics: ClassVar[dict[str, Metric]] = _declared(
        "consistency", (0.3, 0.4, 0.5), (0.05, 0.1, 0.2)
    )

    n_neighbors: int = 5

    def _measure(self, batch: _Batch) -> _Measurement:
        groups = batch.rows.groups
        value, per_group = _consistency_scores(groups, batch.y_true, self.n_neighbors)
        sizes = groups.sizes()
        records = [
            {"subgroup": groups.records(g), "rows": int(sizes[g]), "consistency": float(per_group[g])}
            for g in np.argsort(-per_group, kind="stable")[:DETAILS_LIMIT]
        ]
        return _Measurement(value, records, per_group)

    def _statistic(self, aligned: _Aligned, graded: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        def statistic(counts: np.ndarray) -> np.ndarray:
            sizes, positives = self._sizes(counts)
            per_group = core.group_inconsistency(aligned.level_codes, sizes, positives, self.n_neighbors)
            weights = sizes[..., graded]
            with np.errstate(invalid="ignore"):
                return np.nansum(per_group[..., graded] * weights, axis=-1) / weights.sum(axis=-1)

        return statistic


@register
@dataclass(kw_only=True)
class SmoothedEDF(_LabelCheck):
    """Smoothed empirical differential fairness: the largest |ln r_i - ln r_j| between two protected
    subgroups' smoothed positive (or negative) label rates r = (pos + 0.5) / (n + 1); 0 is perfect.

    A log ratio of a rate of a few rows swings widely: a subgroup is graded when it also is expected
    to hold `min_outcome_rows` rows of its rarer outcome.
    """

    name: ClassVar[str] = "fairness.smoothed_edf"
    index_name: ClassVar[str] = "smoothed_edf"
    declared_metrics: ClassVar[dict[str, Metric]] = _declared(
        "smoothed_edf", (0.1, 0.25, 0.5), (0.1, 0.25, 0.5)
    )

    concentration: float = 1.0

    def _measure(self, batch: _Batch) -> _Measurement:
        groups = batch.rows.groups
        value, per_group, rates = _edf_scores(groups, batch.y_true, self.concentration)
        sizes = groups.sizes()
        positives = core.positives_per_group(groups, batch.y_true)
        records = [
            {
                "subgroup": groups.records(g),
                "rows": int(sizes[g]),
                "positives": int(positives[g]),
                "smoothed_rate": float(rates[g]),
                "smoothed_edf": float(per_group[g]),
            }
            for g in np.argsort(-per_group, kind="stable")[:DETAILS_LIMIT]
        ]
        return _Measurement(value, records, per_group)

    def _graded(self, aligned: _Aligned) -> tuple[np.ndarray, np.ndarray]:
        """Subgroups with `min_group_rows` rows and `min_outcome_rows` expected of either outcome."""
        rows = aligned.batch.sum(axis=1)
        source = aligned.reference if self.compare_to == "reference" else aligned.batch
        source_rows, source_positives = self._sizes(source)
        share = source_positives / np.maximum(source_rows, 1)
        outcomes = rows * np.minimum(share, 1 - share)
        graded = super()._graded(aligned)[0] & (outcomes >= self.min_outcome_rows)
        graded &= graded.sum() >= 2
        return graded, graded

    def _statistic(self, aligned: _Aligned, graded: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        def statistic(counts: np.ndarray) -> np.ndarray:
            sizes, positives = self._sizes(counts)
            rates = core.smoothed_rates(sizes[..., graded], positives[..., graded], self.concentration)
            return core.differential_fairness(rates).max(axis=-1)

        return statistic
