"""Text drift: unigram and bigram distributions of each text column against the reference's.

The bins are the `max_terms` most frequent reference terms plus one "other" bin that holds every
other term (rarer reference terms and terms the reference never had). Each side's counts over these
bins are compared with the population stability index (`driftline.checks.binning.psi`: add-one
smoothing by default, `smoothing=0` for the plain formula) or, with `statistic="jensen_shannon"`, the
Jensen–Shannon distance in base 2 (0 for identical distributions, 1 for disjoint ones) of the
unsmoothed shares. The profile keeps every reference term with its count (`Vocabulary`), so profiles
of reference partitions can be merged.

Either statistic is graded on its lower confidence bound (`checks.evidence.divergence_evidence`): its
no-change noise is simulated by redrawing both sides' term counts at their sizes from the pooled
shares. Terms are drawn one by one there, while real texts repeat terms within a text, so the real
noise is somewhat larger than simulated; the false-alarm rate on clean resamples of real sentences
stays under 1% because the thresholds sit well above the noise of a batch with `min_terms` terms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from driftline.checks.base import Check, Metric
from driftline.checks.binning import DEFAULT_SMOOTHING, LARGE_TABLE_DRAWS, psi_evidence
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import Evidence, divergence_evidence
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.text.tokenise import (
    BIGRAM_SEPARATOR,
    Tokenised,
    Vocabulary,
    reference_vocabularies,
    text_series,
    tokenise,
)

OTHER = "<other>"
STATISTICS = ("psi", "jensen_shannon")
DETAIL_TERMS = 10


SIMULATED = (
    "simulated: both sides' term counts redrawn at their sizes from the pooled shares, matched to a "
    "scaled chi-square; terms are drawn independently, texts repeat terms, so the real noise is "
    "somewhat larger (the thresholds' distance from the noise keeps false alarms rare)"
)
TERM_METRICS = {
    "psi": Metric(
        (0.1, 0.2, 0.3),
        change="PSI of the batch's term shares against the reference's",
        uncertainty=SIMULATED,
        figure="distribution",
        divergence=True,
    ),
    "jensen_shannon": Metric(
        (0.1, 0.2, 0.3),
        change="Jensen–Shannon distance (base 2) of the batch's term shares from the reference's",
        uncertainty=SIMULATED,
        figure="distribution",
        divergence=True,
    ),
}


def jensen_shannon_rows(reference_counts: np.ndarray, current_counts: np.ndarray) -> np.ndarray:
    """Jensen–Shannon distance (base 2) of each pair of rows of two (rows x bins) count arrays."""
    p = reference_counts / reference_counts.sum(axis=-1, keepdims=True)
    q = current_counts / current_counts.sum(axis=-1, keepdims=True)
    m = (p + q) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        kl_p = np.where(p > 0, p * np.log2(p / m), 0.0).sum(axis=-1)
        kl_q = np.where(q > 0, q * np.log2(q / m), 0.0).sum(axis=-1)
    return np.sqrt(np.maximum((kl_p + kl_q) / 2, 0.0))


def jensen_shannon_evidence(reference_counts: np.ndarray, current_counts: np.ndarray) -> Evidence:
    """The Jensen–Shannon distance of two count vectors with its simulated no-change noise (over the
    terms' hundreds of bins, hence `LARGE_TABLE_DRAWS`)."""
    p = np.asarray(reference_counts, dtype=float)
    q = np.asarray(current_counts, dtype=float)
    if p.sum() <= 0 or q.sum() <= 0:
        raise CheckInputError("Jensen-Shannon needs at least one count on each side")
    return divergence_evidence(jensen_shannon_rows, p, q, float(jensen_shannon_rows(p, q)), LARGE_TABLE_DRAWS)


def unigram_bin_counts(terms: pd.Index, tokenised: Tokenised) -> np.ndarray:
    """Batch counts of each of `terms`, then of every other token (last bin)."""
    counts = tokenised.unigram_counts()
    position = terms.get_indexer(counts.index)
    found = position >= 0
    binned = np.bincount(position[found], weights=counts.to_numpy()[found], minlength=len(terms))
    return np.append(binned, counts.to_numpy()[~found].sum()).astype(float)


def bigram_bin_counts(terms: pd.Index, tokenised: Tokenised) -> np.ndarray:
    """Batch counts of each of the bigrams `terms` ("first second"), then of every other bigram."""
    first, second = tokenised.bigram_codes()
    total = len(first)
    size = np.int64(max(len(tokenised.vocabulary), 1))
    pairs, counts = np.unique(first * size + second, return_counts=True)
    split = pd.Series(terms, dtype=object).str.split(BIGRAM_SEPARATOR, n=1, expand=True)
    binned = np.zeros(len(terms), dtype=float)
    if len(terms) and len(pairs):
        a = tokenised.vocabulary.get_indexer(pd.Index(split[0]))
        b = tokenised.vocabulary.get_indexer(pd.Index(split[1]))
        known = (a >= 0) & (b >= 0)
        wanted = a[known].astype(np.int64) * size + b[known]
        slot = np.clip(np.searchsorted(pairs, wanted), 0, len(pairs) - 1)
        hit = pairs[slot] == wanted
        values = np.zeros(int(known.sum()))
        values[hit] = counts[slot[hit]]
        binned[known] = values
    return np.append(binned, total - binned.sum())


@dataclass(kw_only=True)
class _TermDrift(Check):
    """Shared machinery of the unigram and bigram drift checks (one result per text column)."""

    family: ClassVar[str] = "drift"
    role: ClassVar[str] = "feature_drift"
    needs: ClassVar[frozenset[str]] = frozenset({"text"})
    per_feature: ClassVar[bool] = True
    declared_metrics: ClassVar[Mapping[str, Metric]] = TERM_METRICS
    ngram: ClassVar[int] = 1

    statistic: Literal["psi", "jensen_shannon"] = "psi"
    max_terms: int = 500
    smoothing: float = DEFAULT_SMOOTHING
    min_terms: int = 20

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.statistic not in STATISTICS:
            raise CheckInputError(
                f"{self.name}: statistic must be one of {STATISTICS}, got {self.statistic!r}"
            )
        if self.max_terms < 1 or self.min_terms < 1:
            raise CheckInputError(f"{self.name}: max_terms and min_terms must be >= 1")
        if self.smoothing < 0:
            raise CheckInputError(f"{self.name}: smoothing must be >= 0, got {self.smoothing}")

    def vocabulary(self, texts: pd.Series) -> Vocabulary:
        """The reference counts of this check's terms."""
        return Vocabulary.of_unigrams(texts) if self.ngram == 1 else Vocabulary.of_bigrams(texts)

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        return reference_vocabularies(reference, self.feature_columns(columns, "text"), self.vocabulary)

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        if not profile:
            raise NotApplicable(f"{self.name}: no text column (set columns.text)")
        results = []
        for column, vocabulary in profile.items():
            rows = len(current)
            if isinstance(vocabulary, str):
                results.append(CheckResult.error(self.name, column, vocabulary, rows=rows))
                continue
            try:
                results.append(self._compare(column, vocabulary, current))
            except CheckInputError as exc:
                results.append(CheckResult.error(self.name, column, str(exc), rows=rows))
            except NotApplicable as exc:
                results.append(CheckResult.skipped(self.name, column, str(exc), rows=rows))
        return results

    def bins(self, vocabulary: Vocabulary) -> tuple[pd.Index, np.ndarray]:
        """The binned reference terms and the reference counts over them plus the "other" bin."""
        top = vocabulary.top(self.max_terms)
        return pd.Index(top.index, dtype=object), np.append(top.to_numpy(), vocabulary.total - top.sum())

    def _compare(self, column: str, vocabulary: Vocabulary, current: pd.DataFrame) -> CheckResult:
        if vocabulary.total < self.min_terms:
            raise NotApplicable(
                f"column {column!r}: the reference has {vocabulary.total} terms (min_terms={self.min_terms})"
            )
        terms, reference = self.bins(vocabulary)
        tokenised = tokenise(text_series(current, column))
        count = unigram_bin_counts if self.ngram == 1 else bigram_bin_counts
        batch = count(terms, tokenised)
        if batch.sum() < self.min_terms:
            raise NotApplicable(
                f"column {column!r}: the batch has {int(batch.sum())} terms (min_terms={self.min_terms})"
            )
        if self.statistic == "psi":
            evidence = psi_evidence(reference, batch, self.smoothing, LARGE_TABLE_DRAWS)
        else:
            evidence = jensen_shannon_evidence(reference, batch)
        metrics: dict[str, float | None] = {self.statistic: evidence.estimate}
        ref_share, cur_share = reference / reference.sum(), batch / batch.sum()
        names = [*terms, OTHER]
        order = np.argsort(-np.abs(cur_share - ref_share), kind="stable")[:DETAIL_TERMS]
        details = {
            "terms": len(terms),
            "reference_terms_total": int(vocabulary.total),
            "batch_terms_total": int(batch.sum()),
            "other_share": {"reference": float(ref_share[-1]), "current": float(cur_share[-1])},
            "largest_changes": {
                names[i]: {"reference": float(ref_share[i]), "current": float(cur_share[i])} for i in order
            },
        }
        return self.result(
            column, metrics, rows=len(current), details=details, evidence={self.statistic: evidence}
        )


@register
@dataclass(kw_only=True)
class UnigramDrift(_TermDrift):
    """Unigram drift: PSI (or Jensen–Shannon) of token frequencies over the reference's top terms."""

    name: ClassVar[str] = "drift.unigrams"
    ngram: ClassVar[int] = 1


@register
@dataclass(kw_only=True)
class BigramDrift(_TermDrift):
    """Bigram drift: PSI (or Jensen–Shannon) of bigram frequencies over the reference's top bigrams."""

    name: ClassVar[str] = "drift.bigrams"
    ngram: ClassVar[int] = 2
