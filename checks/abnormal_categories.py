"""Abnormal categorical values: rare categories and values unseen in the reference (any category,
URLs, domains, e-mail addresses)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.abnormal import (
    FAILING_RATE_INCREASE,
    Flags,
    RateCheck,
    below,
    code_flags,
    encode,
    is_text,
    member,
    rate_metric,
)
from driftline.checks.base import Metric
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import Evidence, estimated_rate_change
from driftline.checks.registry import register

# Full-match patterns of the string kinds the unseen-value checks recognise.
PATTERNS: dict[str, str] = {
    "url": r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#]+[^\s]*",
    "email": r"[A-Za-z0-9._%+\-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}",
    "domain": r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}",
}


def category_counts(values: pd.Series) -> tuple[pd.Index, np.ndarray]:
    """Distinct non-null values that occur (unused categories left out) and their counts."""
    codes, uniques = encode(values)
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    seen = counts > 0
    return uniques[seen], counts[seen]


def reference_categories(values: pd.Series, column: str) -> tuple[pd.Index, np.ndarray]:
    """`category_counts` of a reference column; NotApplicable for an all-null column."""
    uniques, counts = category_counts(values)
    if len(uniques) == 0:
        raise NotApplicable(f"column {column!r} has no non-null value in the reference")
    return uniques, counts


def rare_mask(
    counts: np.ndarray,
    min_num_occurrences: int | None,
    min_pct_occurrences: float | None,
    min_ratio_rel_uniform: float,
    total: float | None = None,
    categories: int | None = None,
) -> np.ndarray:
    """Which categories are rare given their reference counts.

    Rare: count < `min_num_occurrences` or share < `min_pct_occurrences` (either rule, when set);
    with neither set, share < `min_ratio_rel_uniform` / number of categories. Comparisons are strict.
    Shares are over `total` rows and `categories` categories (by default those of `counts`).
    """
    counts = np.asarray(counts, dtype=float)
    share = counts / (counts.sum() if total is None else total)
    if min_num_occurrences is None and min_pct_occurrences is None:
        return below(share, min_ratio_rel_uniform / (len(counts) if categories is None else categories))
    rare = np.zeros(len(counts), dtype=bool)
    if min_num_occurrences is not None:
        rare |= below(counts, float(min_num_occurrences))
    if min_pct_occurrences is not None:
        rare |= below(share, min_pct_occurrences)
    return rare


def left_out_rate(counts: np.ndarray, in_set: Callable[[np.ndarray], np.ndarray]) -> tuple[int, float]:
    """The rate at which a clean batch's rows fall in a set of categories chosen by their reference
    counts (`in_set` says which counts choose a category), estimated leave-one-out: reference rows
    whose category the rest of the reference would choose, count - 1 in the set (Good–Turing). Returns
    those rows and the variance of their share as an estimate of the set's mass.

    The variance, with X a category's count, S the set and n the reference's rows (Poisson
    approximation, less the share of the total n fixes; `n1 + 2 n2 - n1^2 / n` over n^2 for the
    unseen mass, Esty 1983): sum X^2 [X-1 in S] - 2 X (X-1) [X-1 in S][X-2 in S]
    + X (X-1) [X-2 in S], less hits^2 / n, all over n^2.
    """
    x = np.asarray(counts, dtype=float)
    rows = x.sum()
    once, twice = in_set(counts - 1), in_set(counts - 2)
    hits = float(x[once].sum())
    pairs = x * (x - 1)
    spread = (x * x)[once].sum() - 2 * pairs[once & twice].sum() + pairs[twice].sum() - hits * hits / rows
    return int(hits), max(float(spread), 0.0) / rows**2


def left_out_metric(clean_rate: str) -> Metric:
    """A failing rate graded on its increase over a leave-one-out `clean_rate` (`left_out_rate`)."""
    uncertainty = (
        "normal: the batch rate's Agresti–Caffo variance plus the Good–Turing variance of the clean "
        "rate's estimate"
    )
    return replace(rate_metric(clean_rate), uncertainty=uncertainty)


@dataclass(kw_only=True)
class _LeftOutRate(RateCheck):
    """A rate check whose clean rate is a leave-one-out estimate (`left_out_rate`): its profile holds
    `clean_variance` beside `clean`, and the increase is graded on both sides' variances."""

    __profile_version__: ClassVar[int] = 2

    def _evidence(
        self, profile: dict[str, Any], usable_rows: int, failing_rows: int, details: dict[str, Any]
    ) -> dict[str, Evidence]:
        hits, rows = profile["clean"]
        details["clean_rate"] = hits / rows
        change = estimated_rate_change(failing_rows, usable_rows, hits / rows, profile["clean_variance"])
        return {FAILING_RATE_INCREASE: change}


@register
@dataclass(kw_only=True)
class RareCategories(_LeftOutRate):
    """Rare categories: batch rows holding a category that is rare in the reference.

    Rare: reference count < `min_num_occurrences` or share < `min_pct_occurrences` (either rule, when
    set; strict); with neither set, share < `min_ratio_rel_uniform` / number of categories (0.1 by
    default). Values absent from the reference are not rare (see `abnormal.unseen_categorical`).
    A clean batch's rate is estimated leave-one-out (`left_out_rate`): the reference rows whose
    category would be rare in the rest of the reference. The reference's own share of rows in rare
    categories would understate it, since a category picked for its low count in the reference is
    more common, on average, than that count says.
    """

    name: ClassVar[str] = "abnormal.rare_categories"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: left_out_metric(
            "leave-one-out: the reference's rows whose category is rare in the rest of the reference"
        )
    }

    min_num_occurrences: int | None = None
    min_pct_occurrences: float | None = None
    min_ratio_rel_uniform: float = 0.1

    def __post_init__(self) -> None:
        super().__post_init__()
        for key in ("min_num_occurrences", "min_pct_occurrences", "min_ratio_rel_uniform"):
            value = getattr(self, key)
            if value is not None and not (isinstance(value, (int, float)) and value >= 0):
                raise CheckInputError(f"{self.name}: {key} must be a non-negative number, got {value!r}")
        if self.min_pct_occurrences is not None and self.min_pct_occurrences > 1:
            raise CheckInputError(f"{self.name}: min_pct_occurrences is a share in [0, 1]")

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any]:
        uniques, counts = reference_categories(values, column)
        rules = (self.min_num_occurrences, self.min_pct_occurrences, self.min_ratio_rel_uniform)
        rare = rare_mask(counts, *rules)
        rows = int(counts.sum())

        def left_out_rare(reduced: np.ndarray) -> np.ndarray:
            """Counts rare in a reference of one row less (a count of 0 is unseen, not rare)."""
            return (reduced >= 1) & rare_mask(reduced, *rules, total=max(rows - 1, 1), categories=len(counts))

        hits, variance = left_out_rate(counts, left_out_rare)
        return {
            "rare": uniques[rare],
            "rare_counts": counts[rare],
            "categories": len(counts),
            "clean": (hits, rows),
            "clean_variance": variance,
        }

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, Any]) -> Flags:
        flags = code_flags(current, target, lambda uniques: member(uniques, profile["rare"]))
        flags.details.update(rare_categories=len(profile["rare"]), reference_categories=profile["categories"])
        return flags


@dataclass(kw_only=True)
class _UnseenValues(_LeftOutRate):
    """Batch rows whose non-null value never occurs in the reference (exact match). A clean batch
    shows the reference's share of values seen once (Good–Turing: `left_out_rate` of the unseen)."""

    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: left_out_metric("the reference's share of values seen once (Good–Turing)")
    }

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any] | None:
        return self._vocabulary(*reference_categories(values, column))

    @staticmethod
    def _vocabulary(uniques: pd.Index, counts: np.ndarray) -> dict[str, Any]:
        hits, variance = left_out_rate(counts, lambda reduced: reduced == 0)
        return {"values": uniques, "clean": (hits, int(counts.sum())), "clean_variance": variance}

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, Any]) -> Flags:
        vocabulary = profile["values"]
        flags = code_flags(current, target, lambda uniques: ~member(uniques, vocabulary))
        flags.details["reference_values"] = len(vocabulary)
        return flags


@register
@dataclass(kw_only=True)
class UnseenCategorical(_UnseenValues):
    """Unseen categorical values: batch values of a categorical feature that the reference never had."""

    name: ClassVar[str] = "abnormal.unseen_categorical"
    signature: ClassVar[str | None] = "unseen"


def matches_pattern(vocabulary: pd.Index, pattern: str, sample_size: int, min_share: float) -> bool:
    """True when at least `min_share` of the first `sample_size` distinct values fully match `pattern`."""
    sample = vocabulary[:sample_size]
    if len(sample) == 0 or not is_text(sample):
        return False
    return bool(pd.Series(sample, dtype=str).str.fullmatch(pattern).mean() >= min_share)


@dataclass(kw_only=True)
class _UnseenPattern(_UnseenValues):
    """Unseen values of the categorical features inferred to hold one kind of string.

    A column qualifies when at least `min_match_share` of its first `sample_size` distinct reference
    values (in order of appearance) fully match the kind's pattern in `PATTERNS`.
    """

    pattern: ClassVar[str]

    sample_size: int = 1000
    min_match_share: float = 0.9

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sample_size < 1 or not 0 < self.min_match_share <= 1:
            raise CheckInputError(f"{self.name}: sample_size must be >= 1 and min_match_share in (0, 1]")

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any] | None:
        vocabulary, counts = category_counts(values)
        pattern = PATTERNS[self.pattern]
        if not matches_pattern(vocabulary, pattern, self.sample_size, self.min_match_share):
            return None
        return self._vocabulary(vocabulary, counts)

    def _no_target_reason(self) -> str:
        return f"no categorical feature is inferred to hold {self.pattern} values"


@register
@dataclass(kw_only=True)
class UnseenURL(_UnseenPattern):
    """Unseen URLs: values of URL features (scheme://host...) that the reference never had."""

    name: ClassVar[str] = "abnormal.unseen_url"
    pattern: ClassVar[str] = "url"


@register
@dataclass(kw_only=True)
class UnseenDomain(_UnseenPattern):
    """Unseen domains: values of domain-name features (host.tld) that the reference never had."""

    name: ClassVar[str] = "abnormal.unseen_domain"
    pattern: ClassVar[str] = "domain"


@register
@dataclass(kw_only=True)
class UnseenEmail(_UnseenPattern):
    """Unseen e-mail addresses: values of e-mail features (local@host.tld) that the reference never had."""

    name: ClassVar[str] = "abnormal.unseen_email"
    pattern: ClassVar[str] = "email"
