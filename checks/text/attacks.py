"""Text attacks: rewrite a share of the words of sampled texts and measure how the model's output moves.

Every attack perturbs `word_share` (default 30%) of the words of each sampled text (see
`driftline.checks.text.perturb`) with the check's `seed`, calls the model on the original and the
perturbed texts and reports the comparison of `driftline.checks.text.evaluator`. The data behind
them: keyboard neighbours, OCR confusions and misspellings from nlpaug's data files, homoglyphs from
the Unicode confusables table, word neighbours from GloVe (`driftline.checks.text.embeddings`).
The universal prefix attack lives in `driftline.checks.text.prefix`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from driftline.checks.errors import CheckInputError
from driftline.checks.registry import register
from driftline.checks.text import perturb as p
from driftline.checks.text import resources
from driftline.checks.text.embeddings import Glove, load_glove
from driftline.checks.text.evaluator import PerturbationCheck
from driftline.checks.text.tokenise import tokens


@dataclass(kw_only=True)
class WordAttack(PerturbationCheck):
    """An attack rewriting `word_share` of the words of each sampled text with one word edit."""

    family: ClassVar[str] = "attack"
    role: ClassVar[str] = "behaviour"

    word_share: float = 0.3

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.word_share <= 1:
            raise CheckInputError(f"{self.name}: word_share must be in [0, 1], got {self.word_share}")

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        """The word edit and which words it can change."""
        raise NotImplementedError

    def perturb(self, texts: list[str], rng: np.random.Generator, profile: Any) -> list[str]:
        edit, eligible = self.edit()
        return p.perturb_texts(texts, self.word_share, rng, edit, eligible)

    def describe_run(self, fitted: Any) -> dict[str, Any]:
        return {"word_share": self.word_share}


def _longer_than(n: int) -> p.Eligible:
    return lambda word: len(word) > n


@register
@dataclass(kw_only=True)
class CharDeletion(WordAttack):
    """Character deletion: one character deleted in each attacked word ("brown" → "brwn")."""

    name: ClassVar[str] = "attack.char_deletion"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.delete_char, _longer_than(1)


@register
@dataclass(kw_only=True)
class CharInsertion(WordAttack):
    """Character insertion: one random letter inserted in each attacked word ("brown" → "broqwn")."""

    name: ClassVar[str] = "attack.char_insertion"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.insert_char, None


@register
@dataclass(kw_only=True)
class CharSubstitution(WordAttack):
    """Character substitution: one character replaced by a random letter ("brown" → "brorn")."""

    name: ClassVar[str] = "attack.char_substitution"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.substitute_char, None


@register
@dataclass(kw_only=True)
class CharSwap(WordAttack):
    """Character swap: two neighbouring characters exchanged ("the" → "teh")."""

    name: ClassVar[str] = "attack.char_swap"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.swap_chars, p.can_swap


@register
@dataclass(kw_only=True)
class Keyboard(WordAttack):
    """Keyboard typos: one character replaced by a neighbouring key on a QWERTY keyboard."""

    name: ClassVar[str] = "attack.keyboard"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.table_edit(resources.keyboard_neighbours(), keep_case=True)


@register
@dataclass(kw_only=True)
class Ocr(WordAttack):
    """OCR errors: one character replaced by one an OCR engine confuses it with ("dog" → "d0g")."""

    name: ClassVar[str] = "attack.ocr"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.table_edit(resources.ocr_confusions())


@register
@dataclass(kw_only=True)
class Misspelling(WordAttack):
    """Common misspellings: words replaced by a misspelling people make ("quick" → "quik")."""

    name: ClassVar[str] = "attack.misspelling"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.word_table_edit(resources.misspellings())


@register
@dataclass(kw_only=True)
class InvisibleCharacter(WordAttack):
    """Invisible characters: a zero-width character inserted inside each attacked word."""

    name: ClassVar[str] = "attack.invisible_character"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.insert_invisible, None


@register
@dataclass(kw_only=True)
class DeletionControl(WordAttack):
    """Deletion control characters: a letter followed by a backspace inserted in each attacked word."""

    name: ClassVar[str] = "attack.deletion_control"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.insert_deletion_control, None


@register
@dataclass(kw_only=True)
class IntentionalHomoglyph(WordAttack):
    """Intentional homoglyphs: a Latin letter replaced by the Cyrillic or Greek letter drawn like it."""

    name: ClassVar[str] = "attack.intentional_homoglyph"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.table_edit(resources.intentional_homoglyphs())


@register
@dataclass(kw_only=True)
class ConfusableHomoglyph(WordAttack):
    """Confusable homoglyphs: a letter or digit replaced by a character Unicode lists as confusable."""

    name: ClassVar[str] = "attack.confusable_homoglyph"

    def edit(self) -> tuple[p.Edit, p.Eligible | None]:
        return p.table_edit(resources.confusable_homoglyphs())


@dataclass(kw_only=True)
class _EmbeddingAttack(WordAttack):
    """Attacks drawing replacement words from GloVe neighbours (of the picked words only)."""

    neighbours: int = 10
    vocabulary_size: int = 20_000

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.neighbours < 1 or self.vocabulary_size < self.neighbours + 1:
            raise CheckInputError(f"{self.name}: neighbours must be >= 1 and below vocabulary_size")

    def perturb(self, texts: list[str], rng: np.random.Generator, profile: Any) -> list[str]:
        glove = load_glove(self.vocabulary_size)
        known = glove.index.__contains__
        picked = [p.pick_spans(t, self.word_share, rng, lambda w: known(w.lower())) for t in texts]
        words = {t[s:e].lower() for t, spans in zip(texts, picked, strict=True) for s, e in spans}
        table = glove.neighbours(words, self.neighbours)
        return [
            p.rewrite(t, spans, [self.replace(t, (s, e), table, glove, rng) for s, e in spans])
            if spans
            else t
            for t, spans in zip(texts, picked, strict=True)
        ]

    def replace(
        self,
        text: str,
        span: tuple[int, int],
        table: dict[str, list[str]],
        glove: Glove,
        rng: np.random.Generator,
    ) -> str:
        """What the picked word at `span` becomes."""
        raise NotImplementedError


def _keep_capital(original: str, new: str) -> str:
    return new[:1].upper() + new[1:] if original[:1].isupper() else new


@register
@dataclass(kw_only=True)
class SynonymSwap(_EmbeddingAttack):
    """Synonym swap: words replaced by one of their GloVe nearest neighbours, drawn at random."""

    name: ClassVar[str] = "attack.synonym_swap"
    neighbours: int = 5

    def replace(
        self,
        text: str,
        span: tuple[int, int],
        table: dict[str, list[str]],
        glove: Glove,
        rng: np.random.Generator,
    ) -> str:
        word = text[span[0] : span[1]]
        options = table[word.lower()]
        return _keep_capital(word, options[int(rng.integers(0, len(options)))])


@dataclass(kw_only=True)
class _ContextualAttack(_EmbeddingAttack):
    """Word choices ranked by similarity to the sentence: the mean GloVe vector of its other words."""

    insert: ClassVar[bool] = False

    def replace(
        self,
        text: str,
        span: tuple[int, int],
        table: dict[str, list[str]],
        glove: Glove,
        rng: np.random.Generator,
    ) -> str:
        word = text[span[0] : span[1]]
        context = glove.vector(tokens(text[: span[0]]) + tokens(text[span[1] :]))
        options = table[word.lower()]
        if context is None:
            choice = options[int(rng.integers(0, len(options)))]
        else:
            choice = options[int(np.argmax(glove.vectors[[glove.index[o] for o in options]] @ context))]
        return f"{word} {choice}" if self.insert else _keep_capital(word, choice)


@register
@dataclass(kw_only=True)
class ContextualSwap(_ContextualAttack):
    """Contextual swap: words replaced by the GloVe neighbour that fits the rest of the sentence best."""

    name: ClassVar[str] = "attack.contextual_swap"


@register
@dataclass(kw_only=True)
class ContextualInsertion(_ContextualAttack):
    """Contextual insertion: after each attacked word, the GloVe neighbour fitting the sentence best."""

    name: ClassVar[str] = "attack.contextual_insertion"
    insert: ClassVar[bool] = True
