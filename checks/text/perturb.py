"""Word-level perturbations: pick a share of a text's words (seeded) and rewrite each picked word.

Words are the tokens of `driftline.checks.text.tokenise`; the text between them (spaces,
punctuation) is kept as it is. `round(share × words)` words are picked among the eligible ones (a
word an edit cannot change, e.g. a one-letter word for a swap, is not eligible), so a share of 0
leaves every text unchanged. The character edits below reproduce the attacks of the source
document: deletion, insertion, substitution, swap, keyboard typos, OCR errors, misspellings,
invisible characters, deletion control characters and homoglyphs.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from driftline.checks.text.tokenise import token_spans

# A word edit returns the rewritten word; `eligible` says whether it can change a word at all.
Edit = Callable[[str, np.random.Generator], str]
Eligible = Callable[[str], bool]

LETTERS = string.ascii_lowercase
# Zero-width characters (Pajola and Conti): invisible when rendered, yet they split a word for a tokeniser.
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060")
BACKSPACE = "\u0008"


def picked_count(words: int, share: float) -> int:
    """How many of `words` words a share perturbs: round half up, so 30% of 5 words is 2."""
    return int(np.floor(share * words + 0.5))


def pick_spans(
    text: str, share: float, rng: np.random.Generator, eligible: Eligible | None = None
) -> list[tuple[int, int]]:
    """The spans of the `round(share × words)` eligible words picked at random, in text order."""
    spans = token_spans(text)
    want = picked_count(len(spans), share)
    if want == 0:
        return []
    candidates = [span for span in spans if eligible is None or eligible(text[span[0] : span[1]])]
    if not candidates:
        return []
    chosen = np.sort(rng.choice(len(candidates), size=min(want, len(candidates)), replace=False))
    return [candidates[i] for i in chosen]


def rewrite(text: str, spans: Sequence[tuple[int, int]], words: Sequence[str]) -> str:
    """`text` with the word at each span replaced by the matching entry of `words`."""
    pieces, last = [], 0
    for (start, end), word in zip(spans, words, strict=True):
        pieces.append(text[last:start])
        pieces.append(word)
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def perturb_text(
    text: str, share: float, rng: np.random.Generator, edit: Edit, eligible: Eligible | None = None
) -> str:
    """`text` with `round(share × words)` eligible words (picked at random) rewritten by `edit`."""
    spans = pick_spans(text, share, rng, eligible)
    return rewrite(text, spans, [edit(text[s:e], rng) for s, e in spans]) if spans else text


def perturb_texts(
    texts: Sequence[str], share: float, rng: np.random.Generator, edit: Edit, eligible: Eligible | None = None
) -> list[str]:
    """`perturb_text` over many texts with one generator (a re-run with the same seed is identical)."""
    return [perturb_text(t, share, rng, edit, eligible) for t in texts]


def _position(word: str, rng: np.random.Generator, low: int = 0, high_offset: int = 0) -> int:
    return int(rng.integers(low, len(word) - high_offset)) if len(word) - high_offset > low else low


def delete_char(word: str, rng: np.random.Generator) -> str:
    """Delete one character."""
    i = _position(word, rng)
    return word[:i] + word[i + 1 :]


def insert_char(word: str, rng: np.random.Generator) -> str:
    """Insert one random lower-case letter at a random position."""
    i = int(rng.integers(0, len(word) + 1))
    return word[:i] + LETTERS[int(rng.integers(0, 26))] + word[i:]


def substitute_char(word: str, rng: np.random.Generator) -> str:
    """Replace one character with a different random lower-case letter."""
    i = _position(word, rng)
    options = [c for c in LETTERS if c != word[i].lower()]
    return word[:i] + options[int(rng.integers(0, len(options)))] + word[i + 1 :]


def swap_chars(word: str, rng: np.random.Generator) -> str:
    """Swap two neighbouring characters that differ."""
    positions = [i for i in range(len(word) - 1) if word[i] != word[i + 1]]
    i = positions[int(rng.integers(0, len(positions)))]
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def can_swap(word: str) -> bool:
    """A swap changes the word: it has two neighbouring characters that differ."""
    return any(word[i] != word[i + 1] for i in range(len(word) - 1))


def table_edit(table: Mapping[str, Sequence[str]], keep_case: bool = False) -> tuple[Edit, Eligible]:
    """An edit replacing one character that has alternatives in `table` with one of them."""

    def key(char: str) -> str:
        return char.lower() if keep_case and char.lower() in table else char

    def eligible(word: str) -> bool:
        return any(key(c) in table for c in word)

    def edit(word: str, rng: np.random.Generator) -> str:
        positions = [i for i, c in enumerate(word) if key(c) in table]
        i = positions[int(rng.integers(0, len(positions)))]
        options = table[key(word[i])]
        new = options[int(rng.integers(0, len(options)))]
        if keep_case and word[i].isupper():
            new = new.upper()
        return word[:i] + new + word[i + 1 :]

    return edit, eligible


def word_table_edit(table: Mapping[str, Sequence[str]]) -> tuple[Edit, Eligible]:
    """An edit replacing a whole word by one of its alternatives (looked up lower-cased), keeping an
    initial capital."""

    def eligible(word: str) -> bool:
        return bool(table.get(word.lower()))

    def edit(word: str, rng: np.random.Generator) -> str:
        options = table[word.lower()]
        new = options[int(rng.integers(0, len(options)))]
        return new[:1].upper() + new[1:] if word[:1].isupper() else new

    return edit, eligible


def insert_invisible(word: str, rng: np.random.Generator) -> str:
    """Insert one zero-width character inside the word (or after it, for one-letter words)."""
    i = int(rng.integers(1, len(word))) if len(word) > 1 else 1
    return word[:i] + INVISIBLE[int(rng.integers(0, len(INVISIBLE)))] + word[i:]


def insert_deletion_control(word: str, rng: np.random.Generator) -> str:
    """Insert a random letter followed by a backspace control character (renders as the original)."""
    i = int(rng.integers(0, len(word) + 1))
    return word[:i] + LETTERS[int(rng.integers(0, 26))] + BACKSPACE + word[i:]
