"""Shipped data the perturbations rest on, read once per process.

Keyboard neighbours, OCR confusions and common misspellings come from nlpaug 1.1.11's data files,
first names from Faker's en_US lists (both MIT; see `data/text/SOURCE.md`); homoglyphs come from the
Unicode confusables table shipped by `confusable-homoglyphs`. A user can extend the name lists by
passing their own files to the name transformations.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from importlib import resources
from pathlib import Path

from driftline.checks.errors import CheckInputError

RESOURCE_DIR = "text/resources"
# Scripts whose letters copy Latin letters on purpose (the "intentional" homoglyphs of Unicode's
# security data are single Cyrillic or Greek letters standing for an ASCII letter).
INTENTIONAL_SCRIPTS = ("CYRILLIC", "GREEK")


def resource_text(name: str) -> str:
    """The text of one shipped resource file."""
    return (resources.files("driftline.data") / RESOURCE_DIR / name).read_text(encoding="utf-8")


@functools.cache
def keyboard_neighbours() -> dict[str, tuple[str, ...]]:
    """English (QWERTY) keyboard: each key's neighbouring keys."""
    return {k: tuple(v) for k, v in json.loads(resource_text("keyboard_en.json")).items()}


@functools.cache
def ocr_confusions() -> dict[str, tuple[str, ...]]:
    """Characters an OCR engine mistakes for one another, in both directions (o→0 and 0→o)."""
    pairs: dict[str, list[str]] = {}
    for source, targets in json.loads(resource_text("ocr_en.json")).items():
        for target in targets:
            pairs.setdefault(source, []).append(target)
            pairs.setdefault(target, []).append(source)
    return {k: tuple(dict.fromkeys(v)) for k, v in pairs.items()}


@functools.cache
def misspellings() -> dict[str, tuple[str, ...]]:
    """Common misspellings of English words (word → observed misspellings)."""
    table: dict[str, tuple[str, ...]] = {}
    for line in resource_text("spelling_en.txt").splitlines():
        parts = line.split()
        if len(parts) > 1:
            table[parts[0].lower()] = tuple(p for p in parts[1:] if p.lower() != parts[0].lower())
    return table


def read_names(path: str | Path | None, default: str) -> tuple[str, ...]:
    """First names, one a line, from `path` (a user's file) or the shipped list `default`."""
    if path is None:
        text = resource_text(default)
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise CheckInputError(f"cannot read the name list {path}: {exc.strerror}") from None
    names = tuple(dict.fromkeys(n.strip() for n in text.splitlines() if n.strip()))
    if not names:
        raise CheckInputError(f"the name list {path or default} is empty")
    return names


@functools.cache
def _confusables() -> dict[str, tuple[str, ...]]:
    from confusable_homoglyphs import confusables

    path = Path(confusables.__file__).with_name("confusables.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: tuple(e["c"] for e in v) for k, v in data.items()}


@functools.cache
def confusable_homoglyphs() -> dict[str, tuple[str, ...]]:
    """For each ASCII letter or digit: the single characters Unicode lists as confusable with it."""
    table = {}
    for char, alternatives in _confusables().items():
        if len(char) == 1 and char.isascii() and char.isalnum():
            singles = tuple(a for a in alternatives if len(a) == 1 and a != char)
            if singles:
                table[char] = singles
    return table


@functools.cache
def intentional_homoglyphs() -> dict[str, tuple[str, ...]]:
    """For each ASCII letter: the Cyrillic or Greek letters that look the same (a → а, o → о, ...)."""
    table = {}
    for char, alternatives in confusable_homoglyphs().items():
        same = tuple(
            a
            for a in alternatives
            if unicodedata.name(a, "").startswith(INTENTIONAL_SCRIPTS) and "LETTER" in unicodedata.name(a, "")
        )
        if same and char.isalpha():
            table[char] = same
    return table
