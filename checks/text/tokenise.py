"""Tokenisation shared by every text check, and mergeable unigram/bigram vocabularies.

Rule (one for all text checks, so that "unseen", "drift" and "perturbed word" mean the same thing):

- text is lower-cased;
- it is split at every run of characters that are neither word characters (letters, digits,
  underscore: `\\w`) nor apostrophes (' and ’);
- apostrophes at either end of a piece are removed, and pieces left empty are dropped: `don't` and
  `o'neill` are one token each, `'quoted'` is `quoted`, `rock'n'roll` is one token;
- a null value counts as an empty text (no tokens);
- bigrams are pairs of consecutive tokens of the same text (never across two texts).

Batches are tokenised with Arrow compute kernels (lower-case, split, dictionary-encode) in C++, so a
million sentences cost a few vectorised passes, not a Python loop over rows or tokens; only the
distinct tokens (tens of thousands) are trimmed in Python. `tokens(text)` applies the same rule to
one text with Python's `re` (used by the perturbations).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from driftline.checks.errors import CheckInputError

APOSTROPHES = "'’"
# The same separator for Python's `re` and Arrow's RE2 (`\\w` is ASCII-only in RE2).
_SEPARATOR_RE2 = r"[^\p{L}\p{N}_'’]+"
_PIECE = re.compile(r"[\w'’]+")
# Joins the two words of a bigram in stored vocabularies (tokens never contain a space).
BIGRAM_SEPARATOR = " "


def text_series(frame: pd.DataFrame, column: str) -> pd.Series:
    """The column as strings with nulls as "" (a clear error if it is absent or not text)."""
    if column not in frame.columns:
        raise CheckInputError(f"text column {column!r} is not in the data")
    values = frame[column]
    if len(values) and not (pd.api.types.is_string_dtype(values) or pd.api.types.is_object_dtype(values)):
        raise CheckInputError(f"text column {column!r} holds {values.dtype}, not strings")
    present = values.dropna()
    if len(present) and pd.api.types.is_object_dtype(values):
        kinds = present.map(type).unique()
        if any(k is not str for k in kinds):
            bad = sorted({k.__name__ for k in kinds if k is not str})
            raise CheckInputError(f"text column {column!r} holds non-string values ({', '.join(bad)})")
    return values.astype(object).where(values.notna(), "").astype(str)


def tokens(text: str) -> list[str]:
    """The tokens of one text (the module's rule)."""
    return [t for t in (m.group(0).strip(APOSTROPHES) for m in _PIECE.finditer(text.lower())) if t]


def token_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets in `text` of each of its tokens."""
    spans = []
    for match in _PIECE.finditer(text):
        piece = match.group(0)
        start = match.start() + len(piece) - len(piece.lstrip(APOSTROPHES))
        end = match.end() - (len(piece) - len(piece.rstrip(APOSTROPHES)))
        if end > start:
            spans.append((start, end))
    return spans


@dataclass(frozen=True)
class Tokenised:
    """The tokens of many texts: token codes into `vocabulary`, and the text each token belongs to."""

    codes: np.ndarray  # int64, one per token
    rows: np.ndarray  # int64, row position of each token
    vocabulary: pd.Index  # distinct tokens, indexed by code
    n_rows: int

    def unigram_counts(self) -> pd.Series:
        """Count of each distinct token."""
        counts = np.bincount(self.codes, minlength=len(self.vocabulary))
        return pd.Series(counts, index=self.vocabulary, dtype=np.int64)

    def tokens_per_row(self) -> np.ndarray:
        """Number of tokens in each text."""
        return np.bincount(self.rows, minlength=self.n_rows)

    def bigram_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Codes of the first and second token of every bigram (consecutive tokens of one text)."""
        same = self.rows[:-1] == self.rows[1:]
        return self.codes[:-1][same], self.codes[1:][same]

    def bigram_counts(self) -> pd.Series:
        """Count of each distinct bigram, keyed by "first second"."""
        first, second = self.bigram_codes()
        if len(first) == 0:
            return pd.Series([], dtype=np.int64, index=pd.Index([], dtype=object))
        size = np.int64(len(self.vocabulary))
        pair, counts = np.unique(first.astype(np.int64) * size + second, return_counts=True)
        words = self.vocabulary.to_numpy(dtype=object)
        names = pd.Index(words[pair // size]) + BIGRAM_SEPARATOR + pd.Index(words[pair % size])
        return pd.Series(counts, index=names, dtype=np.int64)


def _arrow_strings(texts: Iterable[str] | pd.Series) -> pa.Array | pa.ChunkedArray:
    """The texts as an Arrow string array, nulls as ""."""
    if isinstance(texts, pd.Series):
        values = texts.to_numpy(dtype=object, na_value=None)
    else:
        values = np.array(list(texts), dtype=object)
    return pc.fill_null(pa.array(values, type=pa.large_string(), from_pandas=True), "")


def tokenise(texts: Iterable[str] | pd.Series) -> Tokenised:
    """Tokenise many texts at once (see the module docstring for the rule)."""
    strings = _arrow_strings(texts)
    n_rows = len(strings)
    pieces = pc.split_pattern_regex(pc.utf8_lower(strings), _SEPARATOR_RE2)
    rows = np.asarray(pc.list_parent_indices(pieces), dtype=np.int64)
    flat = pc.list_flatten(pieces)
    if len(flat) == 0:
        return Tokenised(np.zeros(0, np.int64), np.zeros(0, np.int64), pd.Index([], dtype=object), n_rows)
    encoded = pc.dictionary_encode(flat)
    distinct = [w.strip(APOSTROPHES) for w in encoded.dictionary.to_pylist()]
    trimmed = pd.Series(distinct, dtype=object).replace("", None)
    remap, vocabulary = pd.factorize(trimmed, use_na_sentinel=True)
    codes = remap[np.asarray(encoded.indices, dtype=np.int64)]
    kept = codes >= 0
    return Tokenised(codes[kept].astype(np.int64), rows[kept], pd.Index(vocabulary, dtype=object), n_rows)


@dataclass
class Vocabulary:
    """Token (or bigram) counts of a reference: mergeable, so partitions can be profiled apart.

    `counts` holds every distinct term with its count; `rows` is the number of texts seen.
    """

    counts: pd.Series = field(default_factory=lambda: pd.Series([], dtype=np.int64))
    rows: int = 0

    @classmethod
    def of_unigrams(cls, texts: Sequence[str] | pd.Series) -> Vocabulary:
        """The unigram counts of `texts`."""
        tokenised = tokenise(texts)
        return cls(tokenised.unigram_counts(), tokenised.n_rows)

    @classmethod
    def of_bigrams(cls, texts: Sequence[str] | pd.Series) -> Vocabulary:
        """The bigram counts of `texts`."""
        tokenised = tokenise(texts)
        return cls(tokenised.bigram_counts(), tokenised.n_rows)

    @property
    def total(self) -> int:
        """Number of term occurrences."""
        return int(self.counts.sum())

    def merge(self, other: Vocabulary) -> Vocabulary:
        """The counts of both vocabularies added term by term."""
        merged = self.counts.add(other.counts, fill_value=0).astype(np.int64)
        return Vocabulary(merged, self.rows + other.rows)

    def top(self, n: int) -> pd.Series:
        """The `n` most frequent terms (ties broken alphabetically, so the choice is reproducible)."""
        frame = pd.DataFrame({"term": self.counts.index.astype(str), "count": self.counts.to_numpy()})
        frame = frame.sort_values(["count", "term"], ascending=[False, True], kind="stable").head(n)
        return pd.Series(frame["count"].to_numpy(), index=pd.Index(frame["term"], dtype=object))


def reference_vocabularies(
    reference: pd.DataFrame, columns: Iterable[str], build: Callable[[pd.Series], Vocabulary]
) -> dict[str, Vocabulary | str]:
    """A profile of text checks: `build`'s vocabulary of each text column of the reference, or the
    reason it could not be read (reported as that column's error)."""
    profile: dict[str, Vocabulary | str] = {}
    for column in columns:
        try:
            profile[column] = build(text_series(reference, column))
        except CheckInputError as exc:
            profile[column] = f"reference: {exc}"
    return profile
