"""Abnormal string values: empty strings, capitalization variants, strings missing required characters.

These checks run on the categorical features whose reference values are all strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.abnormal import AbnormalCheck, Flags, code_flags, is_text, member, text_values
from driftline.checks.abnormal_categories import category_counts
from driftline.checks.registry import register


def string_vocabulary(values: pd.Series) -> pd.Series | None:
    """The distinct non-null reference strings, or None when the column does not hold strings."""
    uniques = category_counts(values)[0]
    return pd.Series(uniques, dtype=str) if len(uniques) and is_text(uniques) else None


def contains_any(strings: pd.Series, characters: list[str]) -> np.ndarray:
    """Per string: does it contain at least one of `characters`."""
    found = np.zeros(len(strings), dtype=bool)
    for character in characters:
        found |= strings.str.contains(character, regex=False).to_numpy(dtype=bool)
    return found


@register
@dataclass(kw_only=True)
class EmptyString(AbnormalCheck):
    """Empty strings: batch values equal to "" in the string features with nulls in the reference.

    The model saw missing values as nulls there, so an empty string is a missing value in disguise.
    """

    name: ClassVar[str] = "abnormal.empty_string"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, float] | None:
        null_rate = float(values.isna().mean())
        if null_rate == 0 or string_vocabulary(values) is None:
            return None
        return {"reference_null_rate": null_rate}

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, float]) -> Flags:
        flags = code_flags(current, target, lambda uniques: uniques.isin([""]))
        flags.details.update(profile)
        return flags

    def _no_target_reason(self) -> str:
        return "no string feature has nulls in the reference"


@register
@dataclass(kw_only=True)
class Capitalization(AbnormalCheck):
    """Capitalization: unseen batch strings whose lower-case form is that of a reference value.

    E.g. "uSa" when the reference has "USA" but not "uSa"; values seen in the reference never fail.
    """

    name: ClassVar[str] = "abnormal.capitalization"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, pd.Index] | None:
        vocabulary = string_vocabulary(values)
        if vocabulary is None:
            return None
        return {"values": pd.Index(vocabulary), "lowered": pd.Index(vocabulary.str.lower().unique())}

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, pd.Index]) -> Flags:
        def variant(uniques: pd.Index) -> np.ndarray:
            strings = text_values(uniques, target)
            return ~member(strings, profile["values"]) & member(strings.str.lower(), profile["lowered"])

        return code_flags(current, target, variant)

    def _no_target_reason(self) -> str:
        return "no categorical feature holds strings"


@register
@dataclass(kw_only=True)
class RequiredCharacters(AbnormalCheck):
    """Required characters: batch strings with none of the characters every reference value has.

    E.g. "@" in e-mail addresses. Features whose reference values share no such character are not
    checked.

    With `symbols_only` (the default) letters and digits are never required: values sharing a letter
    by coincidence ("USA", "FRA") say nothing about the format, while separators ("@", "/", "-") do.
    """

    name: ClassVar[str] = "abnormal.required_characters"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})

    symbols_only: bool = True

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any] | None:
        vocabulary = string_vocabulary(values)
        if vocabulary is None:
            return None
        candidates = sorted(c for c in set(vocabulary.iloc[0]) if not (self.symbols_only and c.isalnum()))
        required = [c for c in candidates if vocabulary.str.contains(c, regex=False).all()]
        return {"required": required} if required else None

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, Any]) -> Flags:
        required = profile["required"]
        flags = code_flags(current, target, lambda u: ~contains_any(text_values(u, target), required))
        flags.details["required"] = required
        return flags

    def _no_target_reason(self) -> str:
        return "no string feature has characters common to all its reference values"
