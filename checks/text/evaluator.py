"""Perturb, call the model, compare: the machinery every attack and transformation shares.

A text check that needs the model gets it with `attach_model(model)` (the monitor attaches the spec's
`model:` to every check that has this method). The model is called on a list of raw strings:
`predict_proba` when it has one (the predicted class is then `classes_[argmax]`), else `predict`.

The comparison, on a seeded sample of `sample_size` rows of each text column:
- `flip_rate`: share of sampled rows whose predicted class changes, with a Wilson interval
  (`flip_rate_ci_low`, `flip_rate_ci_high`, level `confidence`);
- `accuracy_change` (with a label column): accuracy on the original texts minus accuracy on the
  perturbed ones (positive: the perturbation hurts);
- `confidence_drop`: mean drop of the probability of the originally predicted class;
- `changed_share`: share of sampled texts the perturbation changed at all.
`details.examples` holds up to `examples` rows (those whose prediction changed first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.stats import norm

from driftline.checks.base import Check, Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.result import CheckResult
from driftline.checks.text.tokenise import text_series

NO_MODEL = "needs the monitored model: set `model:` in the spec (or call attach_model(model))"


@dataclass(frozen=True)
class Predictions:
    """The model's answer on a list of texts: predicted classes and, when available, probabilities."""

    labels: np.ndarray
    proba: np.ndarray | None
    classes: np.ndarray | None


def call_model(model: Any, texts: Sequence[str]) -> Predictions:
    """Predicted classes (and class probabilities when the model has `predict_proba`) for `texts`."""
    texts = list(texts)
    try:
        if hasattr(model, "predict_proba"):
            proba = np.asarray(model.predict_proba(texts), dtype=float)
            classes = np.asarray(getattr(model, "classes_", np.arange(proba.shape[1])))
            return Predictions(classes[np.argmax(proba, axis=1)], proba, classes)
        return Predictions(np.asarray(model.predict(texts)), None, None)
    except Exception as exc:
        raise CheckInputError(f"the model could not score raw text: {type(exc).__name__}: {exc}") from exc


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (no continuity correction)."""
    if n == 0:
        return float("nan"), float("nan")
    z = float(norm.ppf(0.5 + confidence / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return float(low), float(high)


def compare(
    original: Predictions,
    perturbed: Predictions,
    labels: np.ndarray | None,
    confidence: float = 0.95,
) -> tuple[dict[str, float], np.ndarray]:
    """The comparison metrics of the module docstring, and which rows flipped."""
    flipped = original.labels != perturbed.labels
    n = len(flipped)
    low, high = wilson_interval(int(flipped.sum()), n, confidence)
    metrics = {"flip_rate": float(flipped.mean()), "flip_rate_ci_low": low, "flip_rate_ci_high": high}
    if labels is not None:
        before = float(np.mean(original.labels == labels))
        after = float(np.mean(perturbed.labels == labels))
        metrics.update(accuracy=before, accuracy_perturbed=after, accuracy_change=before - after)
    if original.proba is not None and perturbed.proba is not None:
        picked = np.argmax(original.proba, axis=1)
        rows = np.arange(n)
        metrics["confidence_drop"] = float(
            np.mean(original.proba[rows, picked] - perturbed.proba[rows, picked])
        )
    return metrics, flipped


@dataclass(kw_only=True)
class ModelCheck(Check):
    """A check that calls the monitored model; without one it is skipped with a reason."""

    model_required: ClassVar[bool] = True

    def attach_model(self, model: Any) -> ModelCheck:
        """Give the check the model to call on raw text (returns the check, for chaining)."""
        if not (hasattr(model, "predict") or hasattr(model, "predict_proba")):
            raise CheckInputError(f"{self.name}: the model has neither predict nor predict_proba")
        self._model = model
        return self

    @property
    def model(self) -> Any:
        """The attached model (NotApplicable when none is attached)."""
        model = getattr(self, "_model", None)
        if model is None:
            raise NotApplicable(f"{self.name} {NO_MODEL}")
        return model


@dataclass(kw_only=True)
class PerturbationCheck(ModelCheck):
    """Base of attacks and transformations: perturb a seeded sample, call the model twice, compare."""

    needs: ClassVar[frozenset[str]] = frozenset({"text"})
    per_feature: ClassVar[bool] = True
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "flip_rate": Metric((0.05, 0.1, 0.2)),
        "accuracy_change": Metric((0.02, 0.05, 0.1)),
    }

    sample_size: int = 1000
    seed: int = 0
    examples: int = 5
    confidence: float = 0.95
    min_rows: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sample_size < 1 or self.min_rows < 1 or self.examples < 0:
            raise CheckInputError(f"{self.name}: sample_size and min_rows must be >= 1, examples >= 0")
        if not 0 < self.confidence < 1:
            raise CheckInputError(f"{self.name}: confidence must be in (0, 1), got {self.confidence}")

    # -- hooks ---------------------------------------------------------------------------------------

    def perturb(self, texts: list[str], rng: np.random.Generator, profile: Any) -> list[str]:
        """The perturbed texts, one per input text."""
        raise NotImplementedError

    def fit_column(self, texts: pd.Series) -> Any:
        """What `perturb` needs from the reference column (nothing by default)."""
        return None

    # -- interface -----------------------------------------------------------------------------------

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        targets = self.feature_columns(columns, "text")
        profile: dict[str, Any] = {}
        for column in targets:
            try:
                profile[column] = ("ok", self.fit_column(text_series(reference, column)))
            except CheckInputError as exc:
                profile[column] = ("error", f"reference: {exc}")
        return profile

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        if not profile:
            raise NotApplicable(f"{self.name}: no text column (set columns.text)")
        model = self.model
        results = []
        for column, (state, fitted) in profile.items():
            if state == "error":
                results.append(CheckResult.error(self.name, column, fitted, rows=len(current)))
                continue
            try:
                results.append(self._evaluate_column(model, current, column, fitted, columns))
            except CheckInputError as exc:
                results.append(CheckResult.error(self.name, column, str(exc), rows=len(current)))
            except NotApplicable as exc:
                results.append(CheckResult.skipped(self.name, column, str(exc), rows=len(current)))
        return results

    def sample(self, current: pd.DataFrame, column: str) -> np.ndarray:
        """Positions of the sampled rows: `sample_size` non-null texts drawn with the check's seed."""
        present = np.flatnonzero(current[column].notna().to_numpy())
        if len(present) < self.min_rows:
            raise NotApplicable(f"column {column!r} has {len(present)} texts (min_rows={self.min_rows})")
        if len(present) <= self.sample_size:
            return present
        rng = np.random.default_rng([self.seed, 1])
        return np.sort(rng.choice(present, size=self.sample_size, replace=False))

    def _evaluate_column(
        self, model: Any, current: pd.DataFrame, column: str, fitted: Any, columns: Columns
    ) -> CheckResult:
        texts_all = text_series(current, column)
        positions = self.sample(current, column)
        texts = texts_all.iloc[positions].tolist()
        perturbed = self.perturb(texts, np.random.default_rng([self.seed, 2]), fitted)
        original_out, perturbed_out = call_model(model, texts), call_model(model, perturbed)
        labels = None
        if columns.label and columns.label in current.columns:
            raw = current[columns.label].iloc[positions]
            labels = None if raw.isna().any() else raw.to_numpy()
        metrics, flipped = compare(original_out, perturbed_out, labels, self.confidence)
        changed = np.array([a != b for a, b in zip(texts, perturbed, strict=True)])
        metrics["changed_share"] = float(changed.mean())
        ids = np.asarray(
            current[columns.id] if columns.id and columns.id in current.columns else current.index
        )
        order = np.argsort(~flipped * 2 + ~changed, kind="stable")[: self.examples]
        examples = [
            {
                "id": ids[positions[i]],
                "original": texts[i],
                "perturbed": perturbed[i],
                "prediction": original_out.labels[i],
                "perturbed_prediction": perturbed_out.labels[i],
            }
            for i in order
            if changed[i]
        ]
        impact = metrics.get("accuracy_change", metrics["flip_rate"])
        return self.result(
            column,
            metrics,
            rows=len(texts),
            failing_rows=int(flipped.sum()),
            model_impact=impact,
            details={"examples": examples, "sampled_rows": len(texts), **self.describe_run(fitted)},
        )

    def describe_run(self, fitted: Any) -> dict[str, Any]:
        """Extra details of one column's run (the parameters that shaped the perturbation)."""
        return {}
