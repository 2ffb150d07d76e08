"""SemEval-2013 task 9.1 match criteria, MUC-5 match results and pairing modes of the span rubrics."""

from __future__ import annotations

from enum import StrEnum

from driftline.checks.errors import CheckInputError


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
    prediction; `spurious`: a prediction paired with no true span (see MatchingMode for "paired").
    """

    correct = "correct"
    incorrect = "incorrect"
    partial = "partial"
    missing = "missing"
    spurious = "spurious"


class MatchingMode(StrEnum):
    """Which (prediction, truth) pairs are scored.

    `overlap` (default, the audit-rubric definition): every overlapping pair is a row; spurious and
    missing mean "overlaps nothing". `one_to_one` (nervaluate's counting): each span is paired at most
    once, so every prediction counts once in `actual` and every true span once in `possible`.
    """

    overlap = "overlap"
    one_to_one = "one_to_one"


def parse_matching(value: str, owner: str) -> MatchingMode:
    """A matching mode by name; an unknown name is an input error naming the valid ones."""
    try:
        return MatchingMode(value)
    except ValueError:
        valid = [m.value for m in MatchingMode]
        raise CheckInputError(f"{owner}: matching must be one of {valid}, got {value!r}") from None


CRITERIA: tuple[MatchCriterion, ...] = tuple(MatchCriterion)
RESULTS: tuple[MatchResult, ...] = tuple(MatchResult)
RESULT_COLUMNS: tuple[str, ...] = tuple(f"MatchResult.{r.value}" for r in MatchResult)
