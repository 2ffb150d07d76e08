"""Abnormal text: unseen unigrams and empty strings in the text columns (`columns.text`).

Both follow the tabular abnormal checks graded on a rate (`driftline.checks.abnormal.RateCheck`): each
text column is a target whose result carries the failing rows, their share, their model impact
(performance on passing minus failing rows, or the change in predictions without labels) and the
first failing ids, and is graded on `failing_rate_increase`, the batch's failing rate minus the rate a
clean batch shows, estimated from the reference. Null texts are not judged (they are counted in
`details.dropped_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.abnormal import Flags, RateCheck, column_of, rate_metric
from driftline.checks.base import Metric
from driftline.checks.errors import CheckInputError
from driftline.checks.registry import register
from driftline.checks.text.tokenise import Tokenised, Vocabulary, text_series, tokenise

TOP_TERMS = 10


def _checked_text(values: pd.Series, column: str) -> pd.Series:
    """The values as strings ("" for null) after checking that the column holds text."""
    return text_series(values.to_frame(column), column)


def rows_unseen_when_left_out(tokenised: Tokenised, min_count: int) -> int:
    """Rows holding a token that the other rows hold fewer than `min_count` times: the rows of the
    reference that would show an unseen token were each left out of it (a leave-one-out estimate of
    a clean batch's rate, as Good–Turing's share of singletons)."""
    size = np.int64(max(len(tokenised.vocabulary), 1))
    pairs, in_row = np.unique(tokenised.rows * size + tokenised.codes, return_counts=True)
    total = np.bincount(tokenised.codes, minlength=len(tokenised.vocabulary))
    unseen = total[pairs % size] - in_row < min_count
    return len(np.unique(pairs[unseen] // size))


@register
@dataclass(kw_only=True)
class UnseenUnigram(RateCheck):
    """Unseen unigrams: batch texts holding a token that the reference texts never contain.

    Tokens follow `driftline.checks.text.tokenise`. A token counts as seen when it occurs at least
    `min_reference_count` times in the reference column. A row fails when it holds at least one
    unseen token; `unseen_token_share` is the share of all batch tokens that are unseen, and
    `details.row_unseen_share_mean` the mean over rows of each row's share of unseen tokens. Real text
    always holds words a reference never saw, so a clean batch's rate of such rows is estimated by
    leaving each reference row out in turn.
    """

    name: ClassVar[str] = "text.unseen_unigram"
    family: ClassVar[str] = "text"
    role: ClassVar[str] = "data_quality"
    needs: ClassVar[frozenset[str]] = frozenset({"text"})
    kind: ClassVar[str] = "text"

    declared_metrics: ClassVar[dict[str, Metric]] = {
        "failing_rate_increase": rate_metric("reference rows holding a token no other reference row holds")
    }

    min_reference_count: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_reference_count < 1:
            raise CheckInputError(f"{self.name}: min_reference_count must be >= 1")

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any]:
        texts = _checked_text(values, column)
        tokenised = tokenise(texts)
        vocabulary = Vocabulary(tokenised.unigram_counts(), tokenised.n_rows)
        clean = rows_unseen_when_left_out(tokenised, self.min_reference_count)
        return {"vocabulary": vocabulary, "clean": (clean, int(values.notna().sum()))}

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, Any]) -> Flags:
        raw = column_of(current, target)
        texts = _checked_text(raw, target)
        tokenised = tokenise(texts)
        counts: pd.Series = profile["vocabulary"].counts
        seen_terms = pd.Index(counts.index[counts.to_numpy() >= self.min_reference_count])
        unseen_term = seen_terms.get_indexer(tokenised.vocabulary) < 0
        unseen_token = unseen_term[tokenised.codes]
        per_row = np.bincount(tokenised.rows, weights=unseen_token, minlength=tokenised.n_rows)
        per_row_tokens = tokenised.tokens_per_row()
        usable = raw.notna().to_numpy()
        row_share = np.divide(per_row, per_row_tokens, out=np.zeros(len(per_row)), where=per_row_tokens > 0)
        unseen_counts = np.bincount(tokenised.codes[unseen_token], minlength=len(tokenised.vocabulary))
        order = np.argsort(-unseen_counts, kind="stable")[:TOP_TERMS]
        total = len(tokenised.codes)
        return Flags(
            failing=(per_row > 0) & usable,
            usable=usable,
            metrics={"unseen_token_share": float(unseen_token.sum() / total) if total else 0.0},
            details={
                "row_unseen_share_mean": float(row_share[usable].mean()) if usable.any() else 0.0,
                "top_unseen_tokens": [
                    [tokenised.vocabulary[i], int(unseen_counts[i])] for i in order if unseen_counts[i] > 0
                ],
                "reference_terms": len(seen_terms),
            },
        )

    def _no_target_reason(self) -> str:
        return "no text column to check"


@register
@dataclass(kw_only=True)
class EmptyText(RateCheck):
    """Empty texts: batch values of a text column that are "" (or only whitespace, by default).

    A model trained on real sentences has no defined behaviour on an empty input; nulls are a
    different case and are not flagged here (see `abnormal.nulls`).
    """

    name: ClassVar[str] = "text.empty_string"
    family: ClassVar[str] = "text"
    role: ClassVar[str] = "data_quality"
    needs: ClassVar[frozenset[str]] = frozenset({"text"})
    kind: ClassVar[str] = "text"

    declared_metrics: ClassVar[dict[str, Metric]] = {
        "failing_rate_increase": rate_metric("the reference's share of empty texts")
    }

    whitespace_is_empty: bool = True

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any]:
        empty = self._empty(values, column)
        return {"clean": (int(empty.sum()), int(values.notna().sum()))}

    def _empty(self, raw: pd.Series, column: str) -> np.ndarray:
        """Which non-null values are empty texts."""
        texts = _checked_text(raw, column)
        if self.whitespace_is_empty:
            texts = texts.str.strip()
        return (texts.str.len().to_numpy() == 0) & raw.notna().to_numpy()

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, Any]) -> Flags:
        raw = column_of(current, target)
        return Flags(failing=self._empty(raw, target), usable=raw.notna().to_numpy())

    def _no_target_reason(self) -> str:
        return "no text column to check"
