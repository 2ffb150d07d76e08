"""The NLP test categories: robustness, bias, accuracy, fairness and representation.

Each test is a target of its own (`<column>:<test>`, `class=<c>`, `gender=<g>`, ...) in driftline's
result format, graded by its score:

- `nlp.robustness`: perturbation tests (transformations and attacks by catalog name); a sample
  passes when the output is unchanged (same predicted class), or, for a model that generates text,
  when the ROUGE-L F-measure (`rouge-score`) of the perturbed output against the original reaches
  `rouge_threshold`. The test's `pass_rate` is graded lower-is-worse; the high threshold, 0.65, is
  the minimum pass rate.
- `nlp.bias`: the same, for swaps of gender (pronouns, first names), religion, ethnicity and country
  terms; only the texts a swap changes are scored.
- `nlp.accuracy`: precision, recall and F1 of each class, and their macro (or weighted) average.
- `nlp.fairness`: accuracy and macro F1 in each inferred gender group (male, female, unknown: from
  names and pronouns) and the gap to the whole batch.
- `nlp.representation`: count and proportion of each gender group, label and term category.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.base import Check, Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.registry import get, register
from driftline.checks.result import CheckResult
from driftline.checks.text import attacks, transforms  # noqa: F401  (registers the tests by name)
from driftline.checks.text.evaluator import ModelCheck, PerturbationCheck, call_model
from driftline.checks.text.groups import GENDERS, infer_gender, mentions, term_categories, term_swapper
from driftline.checks.text.tokenise import text_series

SCORE_THRESHOLDS = (0.75, 0.7, 0.65)
DEFAULT_ROBUSTNESS_TESTS = (
    "transform.upper",
    "transform.lower",
    "transform.remove_special",
    "attack.char_swap",
    "attack.keyboard",
    "attack.ocr",
    "attack.misspelling",
)
GENDER_SWAPS = (
    "transform.pronouns_m2f",
    "transform.pronouns_f2m",
    "transform.names_m2f",
    "transform.names_f2m",
)


def rouge_l(references: list[str], candidates: list[str]) -> np.ndarray:
    """ROUGE-L F-measure of each candidate against its reference (`rouge-score`)."""
    try:
        from rouge_score import rouge_scorer
    except ImportError:
        raise NotApplicable(
            "generated-text robustness needs rouge-score (pip install 'driftline[text]')"
        ) from None
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    return np.array(
        [scorer.score(r, c)["rougeL"].fmeasure for r, c in zip(references, candidates, strict=True)]
    )


def _outputs(model: Any, texts: list[str]) -> np.ndarray:
    return call_model(model, texts).labels


def _is_generated(outputs: np.ndarray) -> bool:
    return outputs.dtype.kind in "OUS" and any(" " in str(o) for o in outputs[:50])


@dataclass(kw_only=True)
class _AgreementTests(ModelCheck):
    """Shared by robustness and bias: per test, the share of samples whose output is preserved."""

    family: ClassVar[str] = "nlp"
    role: ClassVar[str] = "behaviour"
    needs: ClassVar[frozenset[str]] = frozenset({"text"})
    per_feature: ClassVar[bool] = True
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "pass_rate": Metric((0.9, 0.8, 0.65), higher_is_worse=False)
    }
    only_changed: ClassVar[bool] = False

    sample_size: int = 1000
    seed: int = 0
    rouge_threshold: float = 0.5
    min_rows: int = 10

    def perturbations(self) -> dict[str, Callable[[list[str]], list[str]]]:
        """Test name → function perturbing a list of texts."""
        raise NotImplementedError

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        targets = self.feature_columns(columns, "text")
        self.perturbations()  # an unknown test name fails before any batch is read
        return {c: None for c in targets}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        if not profile:
            raise NotApplicable(f"{self.name}: no text column (set columns.text)")
        model = self.model
        results: list[CheckResult] = []
        for column in profile:
            try:
                results.extend(self._run_column(model, current, column))
            except (CheckInputError, NotApplicable) as exc:
                make = CheckResult.skipped if isinstance(exc, NotApplicable) else CheckResult.error
                results.append(make(self.name, column, str(exc), rows=len(current)))
        return results

    def _run_column(self, model: Any, current: pd.DataFrame, column: str) -> list[CheckResult]:
        texts_all = text_series(current, column)
        present = np.flatnonzero(current[column].notna().to_numpy())
        if len(present) > self.sample_size:
            rng = np.random.default_rng([self.seed, 1])
            present = np.sort(rng.choice(present, size=self.sample_size, replace=False))
        texts = texts_all.iloc[present].tolist()
        original = _outputs(model, texts)
        generated = _is_generated(original)
        results = []
        for test, perturb in self.perturbations().items():
            target = f"{column}:{test}"
            perturbed = perturb(texts)
            keep = (
                np.array([a != b for a, b in zip(texts, perturbed, strict=True)])
                if self.only_changed
                else None
            )
            rows = np.flatnonzero(keep) if keep is not None else np.arange(len(texts))
            if len(rows) < self.min_rows:
                results.append(
                    CheckResult.skipped(
                        self.name,
                        target,
                        f"{len(rows)} texts to test (min_rows={self.min_rows})",
                        rows=len(rows),
                    )
                )
                continue
            after = _outputs(model, [perturbed[i] for i in rows])
            if generated:
                scores = rouge_l([str(o) for o in original[rows]], [str(o) for o in after])
                passed = scores >= self.rouge_threshold
            else:
                passed = original[rows] == after
            metrics = {"pass_rate": float(passed.mean())}
            failing = np.flatnonzero(~passed)[:5]
            details = {
                "test": test,
                "evaluation": "rouge_l" if generated else "agreement",
                "examples": [
                    {
                        "original": texts[rows[i]],
                        "perturbed": perturbed[rows[i]],
                        "expected": original[rows[i]],
                    }
                    for i in failing
                ],
            }
            results.append(
                self.result(
                    target, metrics, rows=len(rows), failing_rows=int((~passed).sum()), details=details
                )
            )
        return results


def _swapped(swap: Callable[[str], str], texts: list[str]) -> list[str]:
    """Every text with a category's terms swapped."""
    return [swap(t) for t in texts]


def _catalog_perturbation(name: str, seed: int) -> Callable[[list[str]], list[str]]:
    """The perturbation of a catalog attack or transformation, as a function of a list of texts."""
    cls = get(name)
    if not issubclass(cls, PerturbationCheck):
        raise CheckInputError(f"{name} is not a perturbation test (use attack.* or transform.* names)")
    check = cls(seed=seed)

    def perturb(texts: list[str]) -> list[str]:
        return check.perturb(texts, np.random.default_rng([seed, 2]), check.fit_column(pd.Series(texts)))

    return perturb


@register
@dataclass(kw_only=True)
class Robustness(_AgreementTests):
    """Robustness: pass rate of perturbation tests (agreement of labels, ROUGE-L of generated text)."""

    name: ClassVar[str] = "nlp.robustness"

    tests: list[str] = field(default_factory=lambda: list(DEFAULT_ROBUSTNESS_TESTS))

    def perturbations(self) -> dict[str, Callable[[list[str]], list[str]]]:
        return {t: _catalog_perturbation(t, self.seed) for t in self.tests}


@register
@dataclass(kw_only=True)
class Bias(_AgreementTests):
    """Bias: pass rate of gender, religion, ethnicity and country term swaps (changed texts only)."""

    name: ClassVar[str] = "nlp.bias"
    only_changed: ClassVar[bool] = True

    terms_file: str | None = None

    def perturbations(self) -> dict[str, Callable[[list[str]], list[str]]]:
        tests = {t: _catalog_perturbation(t, self.seed) for t in GENDER_SWAPS}
        for category, terms in term_categories(self.terms_file).items():
            tests[f"swap_{category}"] = partial(_swapped, term_swapper(terms))
        return tests


def _class_scores(truth: np.ndarray, predicted: np.ndarray) -> pd.DataFrame:
    """Precision, recall, F1 and support of each class from the confusion counts (0 when undefined)."""
    classes = np.unique(np.concatenate([truth, predicted]))
    rows = []
    for c in classes:
        tp = float(np.sum((predicted == c) & (truth == c)))
        fp = float(np.sum((predicted == c) & (truth != c)))
        fn = float(np.sum((predicted != c) & (truth == c)))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append({"class": c, "precision": precision, "recall": recall, "f1": f1, "support": tp + fn})
    return pd.DataFrame(rows)


@dataclass(kw_only=True)
class _LabelledTextCheck(ModelCheck):
    """Checks that compare labels with predictions: the prediction column, else the model on the text."""

    family: ClassVar[str] = "nlp"
    role: ClassVar[str] = "behaviour"
    needs: ClassVar[frozenset[str]] = frozenset({"text", "label"})

    min_rows: int = 10

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        return {}

    def predictions(
        self, current: pd.DataFrame, columns: Columns
    ) -> tuple[np.ndarray, np.ndarray, pd.Series]:
        """Labels, predictions and the text of the rows with a label (first text column)."""
        if not columns.text:
            raise NotApplicable(f"{self.name}: no text column (set columns.text)")
        column = columns.text[0]
        texts = text_series(current, column)
        labelled = current[columns.label].notna().to_numpy()
        if labelled.sum() < self.min_rows:
            raise NotApplicable(f"{int(labelled.sum())} labelled rows (min_rows={self.min_rows})")
        truth = current[columns.label].to_numpy()[labelled]
        if columns.prediction and columns.prediction in current.columns:
            predicted = current[columns.prediction].to_numpy()[labelled]
        else:
            predicted = _outputs(self.model, texts[labelled].tolist())
        return truth, predicted, texts[labelled].reset_index(drop=True)


@register
@dataclass(kw_only=True)
class Accuracy(_LabelledTextCheck):
    """Accuracy: precision, recall and F1 of each class and their macro average, against minimums."""

    name: ClassVar[str] = "nlp.accuracy"
    declared_metrics: ClassVar[dict[str, Metric]] = {
        metric: Metric(SCORE_THRESHOLDS, higher_is_worse=False) for metric in ("precision", "recall", "f1")
    }

    average: str = "macro"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.average not in ("macro", "weighted"):
            raise CheckInputError(f"{self.name}: average is 'macro' or 'weighted', got {self.average!r}")

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        truth, predicted, _ = self.predictions(current, columns)
        scores = _class_scores(truth, predicted)
        results = []
        for row in scores.itertuples(index=False):
            metrics = {"precision": row.precision, "recall": row.recall, "f1": row.f1}
            results.append(self.result(f"class={row[0]}", metrics, rows=int(row.support)))
        weights = scores["support"] / scores["support"].sum() if self.average == "weighted" else None
        averaged = {m: float(np.average(scores[m], weights=weights)) for m in ("precision", "recall", "f1")}
        results.append(self.result(self.average, averaged, rows=len(truth)))
        return results


@register
@dataclass(kw_only=True)
class Fairness(_LabelledTextCheck):
    """Fairness: accuracy and macro F1 in each inferred gender group, and the gap to the whole batch."""

    name: ClassVar[str] = "nlp.fairness"
    declared_metrics: ClassVar[dict[str, Metric]] = {"f1_gap": Metric((0.05, 0.1, 0.2))}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        truth, predicted, texts = self.predictions(current, columns)
        overall = float(_class_scores(truth, predicted)["f1"].mean())
        groups = infer_gender(texts)
        results = []
        for group in GENDERS:
            rows = groups == group
            if rows.sum() < self.min_rows:
                reason = f"{int(rows.sum())} rows in group {group} (min_rows={self.min_rows})"
                results.append(
                    CheckResult.skipped(self.name, f"gender={group}", reason, rows=int(rows.sum()))
                )
                continue
            f1 = float(_class_scores(truth[rows], predicted[rows])["f1"].mean())
            metrics = {
                "accuracy": float(np.mean(truth[rows] == predicted[rows])),
                "f1": f1,
                "f1_gap": overall - f1,
            }
            results.append(
                self.result(f"gender={group}", metrics, rows=int(rows.sum()), details={"overall_f1": overall})
            )
        return results


@register
@dataclass(kw_only=True)
class Representation(Check):
    """Representation: count and proportion of each gender group, label and term category."""

    name: ClassVar[str] = "nlp.representation"
    family: ClassVar[str] = "nlp"
    role: ClassVar[str] = "behaviour"
    needs: ClassVar[frozenset[str]] = frozenset({"text"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "proportion": Metric((0.1, 0.05, 0.01), higher_is_worse=False)
    }

    terms_file: str | None = None

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        return {}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        if not columns.text:
            raise NotApplicable(f"{self.name}: no text column (set columns.text)")
        texts = text_series(current, columns.text[0])
        n = len(texts)
        counts: dict[str, tuple[int, dict[str, Any]]] = {}
        genders = infer_gender(texts)
        for group in GENDERS:
            counts[f"gender={group}"] = (int(np.sum(genders == group)), {})
        for category, terms in term_categories(self.terms_file).items():
            hit = mentions(texts, terms)
            counts[category] = (int(hit.sum()), {"terms": len(terms)})
        if columns.label and columns.label in current.columns:
            for label, count in current[columns.label].value_counts(dropna=True).sort_index().items():
                counts[f"label={label}"] = (int(count), {})
        return [
            self.result(target, {"count": float(count), "proportion": count / n}, rows=n, details=details)
            for target, (count, details) in counts.items()
        ]
