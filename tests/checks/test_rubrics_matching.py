"""The two span matching modes on the worked cases where they differ.

`overlap` (the default) is the audit-rubric document's definition: one record per overlapping
(prediction, truth) pair, spurious only for a prediction that overlaps no true span, missing only for
a true span that no prediction overlaps. `one_to_one` is nervaluate's counting. The expected numbers
below are derived by hand from those definitions; the one-to-one ones are also checked against
nervaluate 1.2.1.
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd
import pyarrow as pa
import pytest

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError
from driftline.checks.rubrics import ExtendedPrecisionRecall, MatchCriterion, TextSpanMatches, match_spans
from driftline.checks.runner import run_check
from tests.checks.rubrics_reference import RESULTS, nervaluate_counts
from tests.golden import golden_cases

FLAGS = [f"MatchResult.{r}" for r in RESULTS]


def S(start: int, end: int, tag: str = "PER") -> dict:
    return {"start": start, "end": end, "tag": tag}


class Worked(NamedTuple):
    """One document; counts (correct, incorrect, partial, missing, spurious) per criterion in
    MatchCriterion order (exact, partial, strict, type), under each mode."""

    predictions: list[dict]
    truths: list[dict]
    overlap: list[list[int]]
    one_to_one: list[list[int]]


WORKED = {
    # Overlap: pairs (0, 0) and (0, 1), neither with identical bounds, only (0, 0) with the same tag.
    # One to one: the prediction takes truth 0 (the first overlapping; the same tag under type),
    # truth 1 is left missing.
    "one prediction over two truths": Worked(
        [S(0, 10)],
        [S(0, 4), S(6, 10, "LOC")],
        [[0, 2, 0, 0, 0], [0, 0, 2, 0, 0], [0, 2, 0, 0, 0], [1, 1, 0, 0, 0]],
        [[0, 1, 0, 1, 0], [0, 0, 1, 1, 0], [0, 1, 0, 1, 0], [1, 0, 0, 1, 0]],
    ),
    # Overlap: pairs (0, 0) and (1, 0), neither with identical bounds, only (0, 0) with the same tag.
    # One to one: prediction 0 takes the truth, prediction 1 finds it taken and is spurious.
    "two predictions over one truth": Worked(
        [S(0, 4), S(6, 10, "LOC")],
        [S(0, 10)],
        [[0, 2, 0, 0, 0], [0, 0, 2, 0, 0], [0, 2, 0, 0, 0], [1, 1, 0, 0, 0]],
        [[0, 1, 0, 0, 1], [0, 0, 1, 0, 1], [0, 1, 0, 0, 1], [1, 0, 0, 0, 1]],
    ),
    # Overlap: pairs (0, 0) and (1, 0), both with identical bounds; only prediction 0 (PER, first in
    # input order among equal spans) has the truth's tag. One to one: prediction 0 takes the truth.
    "two predictions, same span, different tags, over one truth": Worked(
        [S(0, 5), S(0, 5, "LOC")],
        [S(0, 5)],
        [[2, 0, 0, 0, 0], [2, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 0, 0, 0]],
        [[1, 0, 0, 0, 1], [1, 0, 0, 0, 1], [1, 0, 0, 0, 1], [1, 0, 0, 0, 1]],
    ),
}

# Every case has the same two records under overlap, one per overlapping (prediction, truth) pair.
OVERLAP_PAIRS = {
    "one prediction over two truths": [(0, 0), (0, 1)],
    "two predictions over one truth": [(0, 0), (1, 0)],
    "two predictions, same span, different tags, over one truth": [(0, 0), (1, 0)],
}

# Hand-computed from the counts above: (possible, actual, precision, recall) under `type` and `partial`.
ONE_OVER_TWO, TWO_OVER_ONE = "one prediction over two truths", "two predictions over one truth"
SCORES = {
    (ONE_OVER_TWO, "overlap"): {"type": (2, 2, 0.5, 0.5), "partial": (2, 2, 0.5, 0.5)},
    (ONE_OVER_TWO, "one_to_one"): {"type": (2, 1, 1.0, 0.5), "partial": (2, 1, 0.5, 0.25)},
    (TWO_OVER_ONE, "overlap"): {"type": (2, 2, 0.5, 0.5), "partial": (2, 2, 0.5, 0.5)},
    (TWO_OVER_ONE, "one_to_one"): {"type": (1, 2, 0.5, 1.0), "partial": (1, 2, 0.25, 0.5)},
}


def counts(records: list[dict], criterion: str) -> list[int]:
    rows = [r for r in records if r["MatchCriterion"] == criterion]
    return [sum(bool(r[f]) for r in rows) for f in FLAGS]


@pytest.mark.parametrize("case", list(WORKED))
def test_overlap_is_the_default_and_scores_every_overlapping_pair(case: str) -> None:
    predictions, truths, expected, _ = WORKED[case]
    records = match_spans(predictions, truths)
    assert records == match_spans(predictions, truths, matching="overlap")
    for k, criterion in enumerate(MatchCriterion):
        assert counts(records, criterion.value) == expected[k], criterion
        pairs = [(r["prediction"], r["truth"]) for r in records if r["MatchCriterion"] == criterion.value]
        assert pairs == OVERLAP_PAIRS[case]


@pytest.mark.parametrize("case", list(WORKED))
def test_one_to_one_counts_each_span_once_as_nervaluate(case: str) -> None:
    predictions, truths, _, expected = WORKED[case]
    records = match_spans(predictions, truths, matching="one_to_one")
    reference = nervaluate_counts([predictions], [truths])
    for k, criterion in enumerate(MatchCriterion):
        assert counts(records, criterion.value) == expected[k], criterion
        assert expected[k] == reference[criterion.value]["counts"], criterion


@pytest.mark.parametrize(("case", "mode"), list(SCORES))
def test_extended_precision_recall_of_the_worked_cases(case: str, mode: str) -> None:
    predictions, truths, _, _ = WORKED[case]
    table = ExtendedPrecisionRecall()(pd.DataFrame(match_spans(predictions, truths, matching=mode)))
    table = table.set_index("MatchCriterion")
    for criterion, (possible, actual, precision, recall) in SCORES[(case, mode)].items():
        row = table.loc[criterion]
        assert (row["possible"], row["actual"]) == (possible, actual), criterion
        assert (row["precision"], row["recall"]) == pytest.approx((precision, recall)), criterion


@pytest.mark.parametrize("case", golden_cases("span_match_counts_spec"), ids=lambda c: c["id"])
def test_golden_nested_truth_case(case: dict) -> None:
    """Two predictions inside one long truth: both are scored against it (the other truth is missing)."""
    inputs = case["inputs"]
    records = match_spans(inputs["pred"], inputs["truth"])
    for criterion, expected in case["expected"].items():
        assert counts(records, criterion) == [expected[r] for r in RESULTS], criterion
    one_to_one = match_spans(inputs["pred"], inputs["truth"], matching="one_to_one")
    reference = nervaluate_counts([inputs["pred"]], [inputs["truth"]])
    for criterion in case["expected"]:
        # The second prediction finds the long truth taken: spurious under one_to_one.
        assert counts(one_to_one, criterion)[4] == 1
        assert counts(one_to_one, criterion) == reference[criterion]["counts"], criterion


def _records_of_rubric(rubric: TextSpanMatches, predictions: list[dict], truths: list[dict]) -> list[dict]:
    span = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("tag", pa.string())]))
    task = pa.table({"_index_": [0], "spans": pa.array([truths], span)})
    preds = pa.table({"_index_": [0], "spans": pa.array([predictions], span)})
    return pa.Table.from_batches(list(rubric.apply(task, preds))).to_pylist()


@pytest.mark.parametrize("params", [{}, {"matching": "overlap"}, {"matching": "one_to_one"}])
def test_rubric_api_and_checks_follow_the_mode(params: dict) -> None:
    """TextSpanMatches and both rubric checks count as match_spans does; overlap when not given."""
    predictions, truths, overlap, one_to_one = WORKED[ONE_OVER_TWO]
    expected = one_to_one if params.get("matching") == "one_to_one" else overlap
    records = _records_of_rubric(TextSpanMatches(**params), predictions, truths)
    frame = pd.DataFrame({"truth": [truths], "pred": [predictions]})
    columns = Columns(label="truth", prediction="pred")
    epr, tsm = (
        {r.target: r for r in run_check(registry.create(name, params), frame, columns, reference=frame)}
        for name in ("rubric.extended_precision_recall", "rubric.text_span_matches")
    )
    for k, criterion in enumerate(MatchCriterion):
        assert counts(records, criterion.value) == expected[k], criterion
        by_result = dict(zip(RESULTS, expected[k], strict=True))
        assert {r: epr[criterion.value].details[r] for r in RESULTS} == by_result, criterion
        assert tsm[criterion.value].details["counts"] == by_result, criterion


def test_an_unknown_matching_mode_is_an_error_naming_the_valid_ones() -> None:
    with pytest.raises(
        CheckInputError, match=r"match_spans: matching must be one of \['overlap', 'one_to_one'\]"
    ):
        match_spans([S(0, 2)], [S(0, 2)], matching="greedy")
    with pytest.raises(CheckInputError, match=r"text\.TextSpanMatches: matching must be one of"):
        TextSpanMatches(matching="pairs")
    for name in ("rubric.extended_precision_recall", "rubric.text_span_matches"):
        with pytest.raises(CheckInputError, match=f"{name}: matching must be one of .*'nervaluate'"):
            registry.create(name, {"matching": "nervaluate"})
