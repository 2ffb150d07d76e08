"""Demographic terms in text: gender inferred from names and pronouns, and mentions of religion,
ethnicity and country terms, for the NLP bias, fairness and representation tests.

Lists: first names from Faker's en_US lists, countries from Faker's en_US address data, pronouns
below, and a short editable list of religion and ethnicity terms (`group_terms.json`); every list
can be replaced by the user's own (a JSON file mapping a category to its terms). Terms are matched as
whole words, case-sensitively for capitalised terms (names, countries), case-insensitively otherwise.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from driftline.checks.errors import CheckInputError
from driftline.checks.text import resources
from driftline.checks.text.transforms import (
    FEMALE_NAMES_FILE,
    FEMININE_TO_MASCULINE,
    MALE_NAMES_FILE,
    MASCULINE_TO_FEMININE,
)

GENDERS = ("male", "female", "unknown")
MALE_PRONOUNS = tuple(MASCULINE_TO_FEMININE)
FEMALE_PRONOUNS = tuple(FEMININE_TO_MASCULINE)


@functools.cache
def term_categories(path: str | None = None) -> dict[str, tuple[str, ...]]:
    """Category → terms: religion and ethnicity (shipped or the user's JSON file) and country."""
    try:
        raw = Path(path).read_text(encoding="utf-8") if path else resources.resource_text("group_terms.json")
        data = json.loads(raw)
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckInputError(f"cannot read the group terms {path}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise CheckInputError(f"group terms {path}: expected a JSON object of category -> list of terms")
    categories = {str(k): tuple(str(t) for t in v) for k, v in data.items()}
    categories.setdefault("country", resources.read_names(None, "countries.txt"))
    return categories


def _pattern(terms: Sequence[str]) -> re.Pattern[str]:
    """Whole-word alternation of `terms`, longest first; lower-case terms match any case."""
    parts = []
    for term in sorted(terms, key=len, reverse=True):
        escaped = re.escape(term)
        parts.append(escaped if term[:1].isupper() else f"(?i:{escaped})")
    return re.compile(r"\b(?:" + "|".join(parts) + r")\b")


def mentions(texts: pd.Series, terms: Sequence[str]) -> np.ndarray:
    """Per text: does it mention any of `terms`."""
    return texts.str.contains(_pattern(terms), regex=True).to_numpy(dtype=bool)


def infer_gender(texts: pd.Series) -> np.ndarray:
    """male / female / unknown per text: the side with more name and pronoun cues (ties: unknown)."""
    male_names = resources.read_names(None, MALE_NAMES_FILE)
    female_names = resources.read_names(None, FEMALE_NAMES_FILE)
    male = texts.str.count(_pattern([*male_names, *MALE_PRONOUNS])).to_numpy()
    female = texts.str.count(_pattern([*female_names, *FEMALE_PRONOUNS])).to_numpy()
    return np.select([male > female, female > male], ["male", "female"], "unknown").astype(object)


def term_swapper(terms: Sequence[str]) -> Callable[[str], str]:
    """Replace each term of a category by the next one in the list (cyclic), as a whole word."""
    if len(terms) < 2:
        raise CheckInputError("a category needs at least two terms to swap")
    following = {t: terms[(i + 1) % len(terms)] for i, t in enumerate(terms)}
    lowered = {t.lower(): v for t, v in following.items()}
    pattern = _pattern(terms)
    return lambda text: pattern.sub(
        lambda m: following.get(m.group(0), lowered.get(m.group(0).lower(), "")), text
    )
