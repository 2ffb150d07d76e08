"""Text transformations: rewrite whole sampled texts in a way that should not change the prediction.

Upper- and lower-casing, removing periods and apostrophes, swapping masculine and feminine pronouns,
and swapping masculine and feminine first names (name lists shipped with driftline, from Faker's
en_US lists; pass `male_names` / `female_names` files, one name a line, to use your own). The
comparison is that of `driftline.checks.text.evaluator`; `changed_share` says how many sampled
texts held something to transform.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from driftline.checks.registry import register
from driftline.checks.text import resources
from driftline.checks.text.evaluator import PerturbationCheck

MASCULINE_TO_FEMININE = {"he": "she", "him": "her", "his": "her", "himself": "herself"}
# "her" is either "him" or "his"; the possessive reading is the more frequent one.
FEMININE_TO_MASCULINE = {"she": "he", "her": "his", "hers": "his", "herself": "himself"}
MALE_NAMES_FILE = "first_names_male.txt"
FEMALE_NAMES_FILE = "first_names_female.txt"


def _case_like(original: str, new: str) -> str:
    """`new` written in the case pattern of `original` (HE → SHE, He → She, he → she)."""
    if original.isupper() and len(original) > 1:
        return new.upper()
    if original[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def word_swapper(mapping: Mapping[str, str], ignore_case: bool = True) -> Callable[[str], str]:
    """A function replacing every whole word of `mapping` (matched case-insensitively by default)."""
    if not mapping:
        return lambda text: text
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(
        r"\b(" + "|".join(map(re.escape, keys)) + r")\b", re.IGNORECASE if ignore_case else 0
    )
    lookup = {k.lower(): v for k, v in mapping.items()} if ignore_case else dict(mapping)

    def swap(text: str) -> str:
        return pattern.sub(
            lambda m: _case_like(m.group(0), lookup[m.group(0).lower() if ignore_case else m.group(0)]), text
        )

    return swap


def name_mapping(source: tuple[str, ...], target: tuple[str, ...]) -> dict[str, str]:
    """Each source name paired with the target name at the same position (cycling the target list)."""
    return {name: target[i % len(target)] for i, name in enumerate(source)}


@functools.cache
def _names(path: str | None, default: str) -> tuple[str, ...]:
    return resources.read_names(path, default)


@dataclass(kw_only=True)
class Transformation(PerturbationCheck):
    """A transformation applied to every sampled text as a whole."""

    family: ClassVar[str] = "transform"
    role: ClassVar[str] = "behaviour"

    def transform(self) -> Callable[[str], str]:
        """The text-to-text function."""
        raise NotImplementedError

    def perturb(self, texts: list[str], rng: np.random.Generator, profile: Any) -> list[str]:
        function = self.transform()
        return [function(t) for t in texts]


@register
@dataclass(kw_only=True)
class Upper(Transformation):
    """Upper-case text: the whole input capitalised."""

    name: ClassVar[str] = "transform.upper"

    def transform(self) -> Callable[[str], str]:
        return str.upper


@register
@dataclass(kw_only=True)
class Lower(Transformation):
    """Lower-case text: the whole input lower-cased."""

    name: ClassVar[str] = "transform.lower"

    def transform(self) -> Callable[[str], str]:
        return str.lower


_SPECIAL = re.compile(r"[.'’]")


@register
@dataclass(kw_only=True)
class RemoveSpecial(Transformation):
    """Remove special characters: every period and apostrophe deleted."""

    name: ClassVar[str] = "transform.remove_special"

    def transform(self) -> Callable[[str], str]:
        return lambda text: _SPECIAL.sub("", text)


@register
@dataclass(kw_only=True)
class PronounsM2F(Transformation):
    """Masculine pronouns replaced by feminine ones (he → she, his → her, ...)."""

    name: ClassVar[str] = "transform.pronouns_m2f"

    def transform(self) -> Callable[[str], str]:
        return word_swapper(MASCULINE_TO_FEMININE)


@register
@dataclass(kw_only=True)
class PronounsF2M(Transformation):
    """Feminine pronouns replaced by masculine ones (she → he, her → his, ...)."""

    name: ClassVar[str] = "transform.pronouns_f2m"

    def transform(self) -> Callable[[str], str]:
        return word_swapper(FEMININE_TO_MASCULINE)


@dataclass(kw_only=True)
class _NameSwap(Transformation):
    """Capitalised first names of one list replaced by names of the other list."""

    male_names: str | None = None
    female_names: str | None = None
    to_female: ClassVar[bool] = True

    def transform(self) -> Callable[[str], str]:
        male = _names(self.male_names, MALE_NAMES_FILE)
        female = _names(self.female_names, FEMALE_NAMES_FILE)
        mapping = name_mapping(male, female) if self.to_female else name_mapping(female, male)
        return word_swapper(mapping, ignore_case=False)


@register
@dataclass(kw_only=True)
class NamesM2F(_NameSwap):
    """Masculine first names replaced by feminine ones (each name by the one at its list position)."""

    name: ClassVar[str] = "transform.names_m2f"
    to_female: ClassVar[bool] = True


@register
@dataclass(kw_only=True)
class NamesF2M(_NameSwap):
    """Feminine first names replaced by masculine ones (each name by the one at its list position)."""

    name: ClassVar[str] = "transform.names_f2m"
    to_female: ClassVar[bool] = False
