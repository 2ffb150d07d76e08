"""Abnormal categorical values: rare categories and values unseen in the reference (any category,
URLs, domains, e-mail addresses)."""

from __future__ import annotations

from dataclasses import dataclass
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
) -> np.ndarray:
    """Which categories are rare given their reference counts.

    Rare: count < `min_num_occurrences` or share < `min_pct_occurrences` (either rule, when set);
    with neither set, share < `min_ratio_rel_uniform` / number of categories. Comparisons are strict.
    """
    counts = np.asarray(counts, dtype=float)
    share = counts / counts.sum()
    if min_num_occurrences is None and min_pct_occurrences is None:
        return below(share, min_ratio_rel_uniform / len(counts))
    rare = np.zeros(len(counts), dtype=bool)
    if min_num_occurrences is not None:
        rare |= below(counts, float(min_num_occurrences))
    if min_pct_occurrences is not None:
        rare |= below(share, min_pct_occurrences)
    return rare


def unseen_rate(counts: np.ndarray) -> tuple[int, int]:
    """Rows of a clean batch expected to hold a value unseen in the reference, over the reference's
    rows: its values seen once (Good–Turing; leave-one-out, each is unseen in the other rows)."""
    return int(np.count_nonzero(counts == 1)), int(counts.sum())


@register
@dataclass(kw_only=True)
class RareCategories(RateCheck):
    """Rare categories: batch rows holding a category that is rare in the reference.

    Rare: reference count < `min_num_occurrences` or share < `min_pct_occurrences` (either rule, when
    set; strict); with neither set, share < `min_ratio_rel_uniform` / number of categories (0.1 by
    default). Values absent from the reference are not rare (see `abnormal.unseen_categorical`).
    A clean batch shows the reference's share of rows in rare categories.
    """

    name: ClassVar[str] = "abnormal.rare_categories"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: rate_metric("the reference's share of rows in rare categories")
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
        rare = rare_mask(
            counts, self.min_num_occurrences, self.min_pct_occurrences, self.min_ratio_rel_uniform
        )
        return {
            "rare": uniques[rare],
            "rare_counts": counts[rare],
            "categories": len(counts),
            "clean": (int(counts[rare].sum()), int(counts.sum())),
        }

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, Any]) -> Flags:
        flags = code_flags(current, target, lambda uniques: member(uniques, profile["rare"]))
        flags.details.update(rare_categories=len(profile["rare"]), reference_categories=profile["categories"])
        return flags


@dataclass(kw_only=True)
class _UnseenValues(RateCheck):
    """Batch rows whose non-null value never occurs in the reference (exact match). A clean batch
    shows the reference's share of values seen once (`unseen_rate`)."""

    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: rate_metric("the reference's share of values seen once (Good–Turing)")
    }

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any] | None:
        return self._vocabulary(*reference_categories(values, column))

    @staticmethod
    def _vocabulary(uniques: pd.Index, counts: np.ndarray) -> dict[str, Any]:
        return {"values": uniques, "clean": unseen_rate(counts)}

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
