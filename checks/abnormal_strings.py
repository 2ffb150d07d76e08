"""Abnormal string values: empty strings, capitalization variants, strings missing required characters.

These checks run on the categorical features whose reference values are all strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.abnormal import (
    FAILING_RATE_INCREASE,
    Flags,
    RateCheck,
    code_flags,
    is_text,
    member,
    rate_metric,
    text_values,
)
from driftline.checks.abnormal_categories import category_counts
from driftline.checks.base import Metric
from driftline.checks.registry import register


def string_vocabulary(values: pd.Series) -> tuple[pd.Series, np.ndarray] | None:
    """The distinct non-null reference strings and their counts, or None when the column does not
    hold strings."""
    uniques, counts = category_counts(values)
    return (pd.Series(uniques, dtype=str), counts) if len(uniques) and is_text(uniques) else None


def contains_any(strings: pd.Series, characters: list[str]) -> np.ndarray:
    """Per string: does it contain at least one of `characters`."""
    found = np.zeros(len(strings), dtype=bool)
    for character in characters:
        found |= strings.str.contains(character, regex=False).to_numpy(dtype=bool)
    return found


@register
@dataclass(kw_only=True)
class EmptyString(RateCheck):
    """Empty strings: batch values equal to "" in the string features with nulls in the reference.

    The model saw missing values as nulls there, so an empty string is a missing value in disguise.
    A clean batch shows the reference's share of empty strings among its non-null values.
    """

    name: ClassVar[str] = "abnormal.empty_string"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: rate_metric("the reference's share of empty strings")
    }

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any] | None:
        null_rate = float(values.isna().mean())
        vocabulary = string_vocabulary(values)
        if null_rate == 0 or vocabulary is None:
            return None
        strings, counts = vocabulary
        empty = int(counts[(strings == "").to_numpy()].sum())
        return {"reference_null_rate": null_rate, "clean": (empty, int(counts.sum()))}

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, Any]) -> Flags:
        flags = code_flags(current, target, lambda uniques: uniques.isin([""]))
        flags.details["reference_null_rate"] = profile["reference_null_rate"]
        return flags

    def _no_target_reason(self) -> str:
        return "no string feature has nulls in the reference"


@register
@dataclass(kw_only=True)
class Capitalization(RateCheck):
    """Capitalization: unseen batch strings whose lower-case form is that of a reference value.

    E.g. "uSa" when the reference has "USA" but not "uSa"; values seen in the reference never fail.
    A clean batch shows the reference's leave-one-out rate: its values seen once whose lower-case
    form another reference value shares.
    """

    name: ClassVar[str] = "abnormal.capitalization"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: rate_metric(
            "the reference's values seen once whose lower-case form another value shares"
        )
    }

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any] | None:
        vocabulary = string_vocabulary(values)
        if vocabulary is None:
            return None
        strings, counts = vocabulary
        lowered = strings.str.lower()
        shared = lowered.duplicated(keep=False).to_numpy()
        clean = (int(np.count_nonzero(shared & (counts == 1))), int(counts.sum()))
        return {"values": pd.Index(strings), "lowered": pd.Index(lowered.unique()), "clean": clean}

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, pd.Index]) -> Flags:
        def variant(uniques: pd.Index) -> np.ndarray:
            strings = text_values(uniques, target)
            return ~member(strings, profile["values"]) & member(strings.str.lower(), profile["lowered"])

        return code_flags(current, target, variant)

    def _no_target_reason(self) -> str:
        return "no categorical feature holds strings"


@register
@dataclass(kw_only=True)
class RequiredCharacters(RateCheck):
    """Required characters: batch strings with none of the characters every reference value has.

    E.g. "@" in e-mail addresses. Features whose reference values share no such character are not
    checked. No reference value fails, so a clean batch's rate is taken as 0 (0 of the reference's
    rows, which the standard error's added row and failure keep from being certain).

    With `symbols_only` (the default) letters and digits are never required: values sharing a letter
    by coincidence ("USA", "FRA") say nothing about the format, while separators ("@", "/", "-") do.
    """

    name: ClassVar[str] = "abnormal.required_characters"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: rate_metric("0: no reference value fails")
    }

    symbols_only: bool = True

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any] | None:
        vocabulary = string_vocabulary(values)
        if vocabulary is None:
            return None
        strings, counts = vocabulary
        candidates = sorted(c for c in set(strings.iloc[0]) if not (self.symbols_only and c.isalnum()))
        required = [c for c in candidates if strings.str.contains(c, regex=False).all()]
        return {"required": required, "clean": (0, int(counts.sum()))} if required else None

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, Any]) -> Flags:
        required = profile["required"]
        flags = code_flags(current, target, lambda u: ~contains_any(text_values(u, target), required))
        flags.details["required"] = required
        return flags

    def _no_target_reason(self) -> str:
        return "no string feature has characters common to all its reference values"
