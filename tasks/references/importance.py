"""How much the monitored model relies on each feature, measured once per reference snapshot, so that
alerts and the report can put the drift of the features that matter first.

The model's own importances when it has them (`feature_importances_`, or `|coef_|` scaled by each
feature's standard deviation on the reference), else permutation importance on a seeded sample of the
reference: how much the model's agreement with its own predictions drops when a feature is shuffled
(no label needed; it measures what a change of the feature can do to the model's outputs). Shares sum
to 1. Cached as JSON beside the profiles, keyed by the reference's content, the model and this code.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.fingerprint import code_fingerprint, config_fingerprint
from driftline.checks.result import CheckResult
from driftline.tasks.references.model import model_features, model_input, scores_text
from driftline.tasks.references.reference import PreparedReference, materialised, model_fingerprint
from driftline.tasks.tools.files import write_cache_file
from driftline.tasks.views.ranking import IMPORTANCE_KEY

log = logging.getLogger(__name__)

SAMPLE_ROWS = 2000  # reference rows permutation importance is measured on
MIN_SAMPLE_ROWS = 200  # fewer rows than this within the time budget: no importance
REPEATS = 5  # shuffles per feature
SEED = 0
TIME_BUDGET = 30.0  # seconds permutation importance may take, estimated from one timed prediction
DISTINCT_FOR_REGRESSION = 20  # float predictions with more distinct values are compared as numbers


@dataclass(frozen=True)
class FeatureImportance:
    """Each model feature's share of the model's reliance on its features (shares sum to 1), and how
    it was measured."""

    shares: dict[str, float]
    method: str

    def ranks(self) -> dict[str, int]:
        """1 for the most important feature; ties keep the model's feature order."""
        order = sorted(self.shares, key=lambda name: -self.shares[name])
        return {name: i + 1 for i, name in enumerate(order)}

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (the cached file)."""
        return {"shares": dict(self.shares), "method": self.method}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FeatureImportance:
        """Inverse of `to_dict`; a malformed entry is a ValueError naming what is wrong."""
        shares, method = data.get("shares"), data.get("method")
        if not isinstance(shares, dict) or not isinstance(method, str):
            raise ValueError("importance entry needs `shares` (an object) and `method` (a string)")
        if not all(isinstance(k, str) and isinstance(v, (int, float)) for k, v in shares.items()):
            raise ValueError("importance shares must map feature names to numbers")
        return cls({k: float(v) for k, v in shares.items()}, method)


def normalised(names: Sequence[str], raw: Iterable[float], method: str) -> FeatureImportance | None:
    """Shares of the non-negative part of `raw` (a negative permutation importance is noise); None
    when nothing is left, or a value is not finite."""
    values = np.clip(np.asarray(list(raw), dtype=float), 0.0, None)
    if len(values) != len(names) or not np.isfinite(values).all() or not values.sum() > 0:
        return None
    shares = values / values.sum()
    return FeatureImportance({str(n): float(s) for n, s in zip(names, shares, strict=True)}, method)


def _coefficients(model: Any, count: int) -> np.ndarray | None:
    """|coef_| per feature (averaged over classes or outputs), when it has one value per feature."""
    coef = getattr(model, "coef_", None)
    if coef is None:
        return None
    coef = np.abs(np.atleast_2d(np.asarray(coef, dtype=float)))
    return coef.mean(axis=0) if coef.shape[1] == count else None


def own_importance(
    model: Any, features: Sequence[str], reference: pd.DataFrame | None
) -> FeatureImportance | None:
    """The model's own importances: `feature_importances_`, or `|coef_|` times each feature's standard
    deviation on `reference` (coefficients of unscaled features are not comparable); None when it has
    neither for exactly these features (a pipeline, whose last step sees transformed columns)."""
    importances = getattr(model, "feature_importances_", None)
    if importances is not None and len(importances) == len(features):
        return normalised(features, importances, "feature_importances_")
    coef = _coefficients(model, len(features))
    if coef is None or reference is None:
        return None
    frame = reference[list(features)]
    if not all(pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns):
        return None
    spread = frame.astype(float).std(ddof=0).to_numpy()
    return normalised(features, coef * spread, "coef_ × std")


def agreement(estimator: Any, inputs: Any, expected: np.ndarray) -> float:
    """How well the model's predictions on `inputs` agree with `expected` (its predictions on the
    unshuffled rows): 1 − MSE / variance for continuous outputs, the share of equal ones otherwise."""
    predicted = np.asarray(estimator.predict(inputs))
    if _continuous(expected):
        variance = float(np.var(expected))
        error = float(np.mean((predicted.astype(float) - expected.astype(float)) ** 2))
        return 1.0 - error / variance if variance > 0 else -error
    return float(np.mean(predicted == expected))


def _continuous(values: np.ndarray) -> bool:
    return values.dtype.kind == "f" and len(np.unique(values)) > DISTINCT_FOR_REGRESSION


def _affordable(seconds_per_prediction: float, features: int, rows: int) -> tuple[int, int] | None:
    """(rows, repeats) that fit in TIME_BUDGET given one prediction's time on `rows`; None when even
    one repeat on MIN_SAMPLE_ROWS rows would not."""
    for repeats in (REPEATS, 1):
        if seconds_per_prediction * (features * repeats + 1) <= TIME_BUDGET:
            return rows, repeats
    fitting = int(rows * TIME_BUDGET / (seconds_per_prediction * (features + 1)))
    return (fitting, 1) if fitting >= MIN_SAMPLE_ROWS else None


def permutation_importance(
    model: Any, reference: pd.DataFrame, columns: Columns, features: Sequence[str]
) -> FeatureImportance | None:
    """Seeded permutation importance on at most SAMPLE_ROWS reference rows, its repeats and rows cut
    to stay within TIME_BUDGET (None when it cannot)."""
    from sklearn.inspection import permutation_importance as sklearn_permutation

    sample = reference.sample(n=min(SAMPLE_ROWS, len(reference)), random_state=SEED)
    inputs = model_input(model, sample, columns)
    if len(inputs) < 2:
        return None
    started = time.perf_counter()
    expected = np.asarray(model.predict(inputs))
    plan = _affordable(time.perf_counter() - started, len(features), len(inputs))
    if plan is None:
        log.warning("feature importance skipped: the model predicts too slowly for %.0f s", TIME_BUDGET)
        return None
    rows, repeats = plan
    if rows < len(inputs):
        inputs, expected = inputs.iloc[:rows], expected[:rows]
    measured = sklearn_permutation(
        model, inputs, expected, scoring=agreement, n_repeats=repeats, random_state=SEED, n_jobs=1
    )
    return normalised(list(inputs.columns), measured.importances_mean, "permutation")


def feature_importance(model: Any, reference: pd.DataFrame, columns: Columns) -> FeatureImportance | None:
    """The model's own importances when it has them, else permutation importance on the reference;
    None for a text model (it reads one text column, not features)."""
    features = model_features(model, columns)
    if not features or scores_text(model, columns):
        return None
    return own_importance(model, features, reference) or permutation_importance(
        model, reference, columns, features
    )


class ImportanceCache:
    """Importances as small JSON files beside the profiles, keyed by the reference's content hash, the
    model's fingerprint, the roles, the driftline version and this module's code."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    @staticmethod
    def key(reference_hash: str, model: str, columns: Columns) -> str:
        import driftline

        settings = (SAMPLE_ROWS, MIN_SAMPLE_ROWS, REPEATS, SEED)
        code = code_fingerprint(FeatureImportance)
        return config_fingerprint(
            "feature-importance",
            reference_hash,
            model,
            columns.to_dict(),
            driftline.__version__,
            code,
            settings,
        )

    def _path(self, key: str) -> Path | None:
        return self.directory / f"importance-{key}.json" if self.directory else None

    def read(self, key: str) -> FeatureImportance | None:
        """The cached importance, or None when absent or unreadable (then measured again)."""
        path = self._path(key)
        if path is None or not path.exists():
            return None
        try:
            return FeatureImportance.from_dict(json.loads(path.read_text("utf-8")))
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable feature importance %s: %s", path, exc)
            return None

    def write(self, key: str, importance: FeatureImportance) -> None:
        path = self._path(key)
        if path is not None:
            write_cache_file(path, json.dumps(importance.to_dict()).encode())


def reference_importance(prepared: PreparedReference, directory: Path | None) -> FeatureImportance | None:
    """The importance of the model's features on the run's reference (None without a model, or when it
    cannot be measured: a run never fails for it), measured once per reference snapshot and model."""
    model = prepared.model
    if model is None:
        return None
    fingerprint = model_fingerprint(model)
    cache = ImportanceCache(directory if fingerprint is not None else None)
    key = ImportanceCache.key(prepared.content_hash, fingerprint or "", prepared.roles)
    cached = cache.read(key)
    if cached is not None:
        return cached
    try:
        importance = feature_importance(model, materialised(prepared.frame), prepared.roles)
    except Exception as exc:
        log.warning("feature importance not measured: %s: %s", type(exc).__name__, exc)
        return None
    if importance is not None:
        cache.write(key, importance)
    return importance


def attach_importance(results: Iterable[CheckResult], importance: FeatureImportance | None) -> None:
    """Store each feature's importance (share, rank, feature count, method) in the details of every
    per-feature result whose target is that feature, so the history keeps it and every surface can
    read it."""
    if importance is None:
        return
    ranks = importance.ranks()
    for result in results:
        target = str(result.target)
        known = registry.known(result.check)
        # Only per-feature checks target a feature (a performance check's target names a metric).
        if target in importance.shares and known is not None and known.per_feature:
            result.details[IMPORTANCE_KEY] = {
                "share": importance.shares[target],
                "rank": ranks[target],
                "of": len(ranks),
                "method": importance.method,
            }
