"""The SemEval-2013 task 9.1 match criteria and the MUC-5 match results used by the span rubrics."""

from __future__ import annotations

from enum import StrEnum


class MatchCriterion(StrEnum):
    """How a predicted span is compared with a true one (SemEval-2013 task 9.1).

    `exact`: tag ignored, correct only when [start, end) are identical, otherwise incorrect.
    `partial`: tag ignored, identical bounds are correct, any other overlap is partial.
    `strict`: correct only when the bounds are identical and the tag is the same, otherwise incorrect.
    `type`: any overlap is correct when the tag is the same, incorrect when it differs.
    """

    exact = "exact"
    partial = "partial"
    strict = "strict"
    type = "type"


class MatchResult(StrEnum):
    """What a prediction or a true span scored under one criterion (MUC-5 categories).

    `correct` and `incorrect`: a prediction paired with an overlapping true span; `partial`: the pair
    overlaps without identical bounds (under `partial` only); `missing`: a true span paired with no
    prediction; `spurious`: a prediction paired with no true span.
    """

    correct = "correct"
    incorrect = "incorrect"
    partial = "partial"
    missing = "missing"
    spurious = "spurious"


CRITERIA: tuple[MatchCriterion, ...] = tuple(MatchCriterion)
RESULTS: tuple[MatchResult, ...] = tuple(MatchResult)
RESULT_COLUMNS: tuple[str, ...] = tuple(f"MatchResult.{r.value}" for r in MatchResult)
