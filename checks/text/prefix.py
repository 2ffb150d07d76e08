"""Universal prefix attack: a short word sequence that, put before every text of a batch, pushes the
model toward a target class (after Wallace et al., "Universal Adversarial Triggers", 2019).

The search needs no gradients, so it works with any model: a greedy coordinate search over the
reference vocabulary. The prefix has `length` slots; slot by slot, `budget // length` candidate
words (drawn with the seed from the reference words seen at least `min_count` times) are each tried
in the slot, with the slots already chosen kept, and the word giving the highest mean probability of
the target class over the batch is kept. Each candidate costs one evaluation (one model call over the
batch, all candidates of a slot scored in a single call).

The batch: up to `sample_size` sampled texts the model does not assign to the target class.
Reported: the target-class probability before and after (`probability_shift`, graded), and the
share of the batch whose prediction becomes the target class (`flip_rate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.base import Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.text.evaluator import ModelCheck, call_model, wilson_interval
from driftline.checks.text.tokenise import Vocabulary, reference_vocabularies, text_series


@register
@dataclass(kw_only=True)
class UniversalPrefix(ModelCheck):
    """Universal prefix: a searched word prefix that moves a batch toward a target class."""

    name: ClassVar[str] = "attack.universal_prefix"
    family: ClassVar[str] = "attack"
    role: ClassVar[str] = "behaviour"
    needs: ClassVar[frozenset[str]] = frozenset({"text"})
    per_feature: ClassVar[bool] = True
    declared_metrics: ClassVar[dict[str, Metric]] = {"probability_shift": Metric((0.05, 0.1, 0.2))}

    target_class: Any = None
    length: int = 3
    budget: int = 300
    sample_size: int = 100
    min_count: int = 2
    seed: int = 0
    confidence: float = 0.95
    min_rows: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.length < 1 or self.budget < self.length or self.sample_size < 1:
            raise CheckInputError(f"{self.name}: need length >= 1, budget >= length and sample_size >= 1")

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        targets = self.feature_columns(columns, "text")
        return reference_vocabularies(reference, targets, Vocabulary.of_unigrams)

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        if not profile:
            raise NotApplicable(f"{self.name}: no text column (set columns.text)")
        model = self.model
        results = []
        for column, vocabulary in profile.items():
            try:
                if isinstance(vocabulary, str):
                    raise CheckInputError(vocabulary)
                results.append(self._attack(model, current, column, vocabulary))
            except CheckInputError as exc:
                results.append(CheckResult.error(self.name, column, str(exc), rows=len(current)))
            except NotApplicable as exc:
                results.append(CheckResult.skipped(self.name, column, str(exc), rows=len(current)))
        return results

    def _target(self, classes: np.ndarray, predicted: np.ndarray) -> int:
        """Column of the target class: the one given, else the class predicted least often."""
        if self.target_class is not None:
            matches = np.flatnonzero(classes.astype(str) == str(self.target_class))
            if not len(matches):
                raise CheckInputError(f"target_class {self.target_class!r} is not one of {classes.tolist()}")
            return int(matches[0])
        counts = np.array([(predicted == c).sum() for c in classes])
        return int(np.argmin(counts))

    def _attack(self, model: Any, current: pd.DataFrame, column: str, vocabulary: Vocabulary) -> CheckResult:
        if not hasattr(model, "predict_proba"):  # the search scores candidates by class probability
            raise NotApplicable(f"{self.name} needs a model with predict_proba")
        texts = text_series(current, column)[current[column].notna().to_numpy()].tolist()
        before = call_model(model, texts)
        assert before.proba is not None and before.classes is not None
        target = self._target(before.classes, before.labels)
        batch_rows = np.flatnonzero(before.labels != before.classes[target])
        if len(batch_rows) < self.min_rows:
            raise NotApplicable(
                f"column {column!r}: {len(batch_rows)} texts are not predicted as the target class "
                f"(min_rows={self.min_rows})"
            )
        rng = np.random.default_rng([self.seed, 3])
        if len(batch_rows) > self.sample_size:
            batch_rows = np.sort(rng.choice(batch_rows, size=self.sample_size, replace=False))
        batch = [texts[i] for i in batch_rows]
        start = float(before.proba[batch_rows, target].mean())
        pool = np.sort(vocabulary.counts.index[vocabulary.counts.to_numpy() >= self.min_count].astype(str))
        if len(pool) == 0:
            raise NotApplicable(f"column {column!r}: no reference word is seen {self.min_count} times")
        prefix, evaluations, best = self._search(model, batch, target, pool, rng)
        after = call_model(model, [f"{' '.join(prefix)} {t}" for t in batch])
        assert after.proba is not None
        flipped = after.labels == before.classes[target]
        low, high = wilson_interval(int(flipped.sum()), len(batch), self.confidence)
        end = float(after.proba[:, target].mean())
        metrics = {
            "probability_before": start,
            "probability_after": end,
            "probability_shift": end - start,
            "flip_rate": float(flipped.mean()),
            "flip_rate_ci_low": low,
            "flip_rate_ci_high": high,
        }
        examples = [
            {"original": batch[i], "perturbed": f"{' '.join(prefix)} {batch[i]}"}
            for i in np.flatnonzero(flipped)[:5]
        ]
        return self.result(
            column,
            metrics,
            rows=len(batch),
            failing_rows=int(flipped.sum()),
            model_impact=end - start,
            details={
                "prefix": " ".join(prefix),
                "target_class": before.classes[target],
                "evaluations": evaluations,
                "budget": self.budget,
                "candidate_words": len(pool),
                "examples": examples,
                "best_mean_probability_during_search": best,
            },
        )

    def _search(
        self, model: Any, batch: list[str], target: int, pool: np.ndarray, rng: np.random.Generator
    ) -> tuple[list[str], int, float]:
        """Greedy slot-by-slot search; returns the prefix, the evaluations spent and the best score."""
        per_slot = max(1, self.budget // self.length)
        prefix: list[str] = []
        evaluations, best = 0, float("nan")
        for _ in range(self.length):
            candidates = rng.choice(pool, size=min(per_slot, len(pool)), replace=False)
            stacked = [f"{' '.join([*prefix, word])} {text}" for word in candidates for text in batch]
            scored = call_model(model, stacked)
            assert scored.proba is not None
            means = scored.proba[:, target].reshape(len(candidates), len(batch)).mean(axis=1)
            evaluations += len(candidates)
            pick = int(np.argmax(means))
            prefix.append(str(candidates[pick]))
            best = float(means[pick])
        return prefix, evaluations, best
