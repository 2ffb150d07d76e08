"""The audit rubrics API: match_spans, TextSpanMatches, ExtendedPrecisionRecall and top_k.

Span records of the default overlap matching are compared with the document's definition computed pair
by pair, one-to-one counts with nervaluate 1.2.1 (both in tests/checks/rubrics_reference.py); top-k with
scikit-learn's top_k_accuracy_score. The worked cases where the modes differ are in
test_rubrics_matching.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.metrics import top_k_accuracy_score

from driftline.checks.errors import CheckInputError
from driftline.checks.rubrics import (
    ExtendedPrecisionRecall,
    MatchCriterion,
    MatchResult,
    TextSpanMatches,
    TopKAccuracy,
    match_spans,
    top_k,
)
from tests.checks.rubrics_reference import nervaluate_counts, overlap_counts, overlap_records, random_docs

RESULTS = [f"MatchResult.{r.value}" for r in MatchResult]


def S(start: int, end: int, tag: str = "PER") -> dict:
    return {"start": start, "end": end, "tag": tag}


# Each case: (predictions, truths) of one document.
EDGE_CASES = {
    "nothing predicted": ([], [S(0, 5), S(8, 12, "LOC")]),
    "nothing true": ([S(0, 5), S(8, 12, "LOC")], []),
    "both empty": ([], []),
    "nested truths": ([S(0, 10)], [S(0, 10, "ORG"), S(2, 5)]),
    "overlapping truths": ([S(3, 9)], [S(0, 6), S(4, 12)]),
    "one prediction over several truths": ([S(0, 20)], [S(0, 5), S(7, 12, "LOC"), S(14, 20)]),
    "several predictions over one truth": ([S(0, 4), S(3, 8), S(6, 12, "LOC")], [S(0, 12)]),
    "adjacent spans touch but do not overlap": ([S(5, 10)], [S(0, 5), S(10, 15)]),
    "identical duplicate spans": ([S(0, 5), S(0, 5)], [S(0, 5), S(0, 5)]),
    "duplicate predictions, one truth": ([S(0, 5), S(0, 5)], [S(0, 5)]),
    "spans out of order": ([S(20, 25, "LOC"), S(0, 5), S(10, 14)], [S(10, 14), S(21, 25, "LOC"), S(0, 5)]),
    "wrong tags with exact boundaries": ([S(0, 5, "LOC"), S(8, 12, "ORG")], [S(0, 5), S(8, 12)]),
    "type prefers the closest same-tag truth": ([S(2, 9)], [S(0, 4), S(3, 9), S(5, 8, "LOC")]),
}


def counts_of(records: list[dict], criterion: str) -> list[int]:
    rows = [r for r in records if r["MatchCriterion"] == criterion]
    return [sum(bool(r[c]) for r in rows) for c in RESULTS]


def records_by_criterion(records: list[dict]) -> dict[str, set[tuple]]:
    """(prediction, truth, result) records per criterion, as the reference gives them."""
    out: dict[str, set[tuple]] = {c.value: set() for c in MatchCriterion}
    for r in records:
        result = next(k for k in RESULTS if r[k]).removeprefix("MatchResult.")
        out[r["MatchCriterion"]].add((r["prediction"], r["truth"], result))
    return out


@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_match_spans_records_every_overlapping_pair_by_default(case: str) -> None:
    predictions, truths = EDGE_CASES[case]
    records = match_spans(predictions, truths)
    assert len(records) == sum(map(len, overlap_records(predictions, truths).values()))
    assert records_by_criterion(records) == overlap_records(predictions, truths)


def test_overlap_records_of_random_documents_follow_the_definition() -> None:
    """Nested, overlapping, touching and duplicated spans: record for record, index for index."""
    for predictions, truths in zip(random_docs(300, seed=1), random_docs(300, seed=2), strict=True):
        records = match_spans(predictions, truths)
        assert len(records) == sum(map(len, overlap_records(predictions, truths).values()))
        assert records_by_criterion(records) == overlap_records(predictions, truths)


@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_one_to_one_match_spans_agrees_with_nervaluate(case: str) -> None:
    predictions, truths = EDGE_CASES[case]
    records = match_spans(predictions, truths, matching="one_to_one")
    reference = nervaluate_counts([predictions], [truths])
    table = ExtendedPrecisionRecall()(pd.DataFrame(records, columns=["MatchCriterion", *RESULTS]))
    for criterion in MatchCriterion:
        assert counts_of(records, criterion.value) == reference[criterion.value]["counts"], criterion
        row = table.set_index("MatchCriterion").loc[criterion.value]
        for ours, theirs in (("precision", "precision"), ("recall", "recall"), ("f1_score", "f1")):
            assert row[ours] == pytest.approx(reference[criterion.value][theirs], abs=1e-12), (
                criterion,
                ours,
            )


def test_one_to_one_counts_every_span_once() -> None:
    """MUC-5 accounting: actual = number of predictions, possible = number of true spans."""
    predictions, truths = EDGE_CASES["one prediction over several truths"]
    table = ExtendedPrecisionRecall()(pd.DataFrame(match_spans(predictions, truths, matching="one_to_one")))
    assert (table["actual"] == 1).all() and (table["possible"] == 3).all()
    predictions, truths = EDGE_CASES["several predictions over one truth"]
    table = ExtendedPrecisionRecall()(pd.DataFrame(match_spans(predictions, truths, matching="one_to_one")))
    assert (table["actual"] == 3).all() and (table["possible"] == 1).all()


def test_overlap_counts_every_overlapping_pair() -> None:
    """One prediction over three truths: three records; three predictions over one truth: three."""
    for case in ("one prediction over several truths", "several predictions over one truth"):
        table = ExtendedPrecisionRecall()(pd.DataFrame(match_spans(*EDGE_CASES[case])))
        assert (table["actual"] == 3).all() and (table["possible"] == 3).all(), case


def test_records_name_span_indices_in_start_order() -> None:
    predictions, truths = EDGE_CASES["spans out of order"]
    strict = [r for r in match_spans(predictions, truths) if r["MatchCriterion"] == "strict"]
    # Sorted predictions: (0,5) (10,14) (20,25); sorted truths: (0,5) (10,14) (21,25).
    pairs = {(r["prediction"], r["truth"]): next(k for k in RESULTS if r[k]) for r in strict}
    assert pairs == {
        (0, 0): "MatchResult.correct",
        (1, 1): "MatchResult.correct",
        (2, 2): "MatchResult.incorrect",
    }
    assert match_spans([], []) == []


def test_both_empty_gives_zero_scores_without_warnings() -> None:
    with np.errstate(all="raise"):
        table = ExtendedPrecisionRecall()(pd.DataFrame(columns=["MatchCriterion", *RESULTS]))
    assert table[["precision", "recall", "f1_score"]].to_numpy().tolist() == [[0.0, 0.0, 0.0]] * 4
    assert (
        ExtendedPrecisionRecall(zero_division=float("nan"))(pd.DataFrame(match_spans([], [S(0, 2)])))[
            "precision"
        ]
        .isna()
        .all()
    )


def test_partial_credit_is_half() -> None:
    """partial: (C + P/2) / actual; one exact and one overlapping prediction over two truths -> 0.75."""
    table = ExtendedPrecisionRecall()(pd.DataFrame(match_spans([S(0, 5), S(10, 13)], [S(0, 5), S(10, 15)])))
    row = table.set_index("MatchCriterion").loc["partial"]
    assert (row["MatchResult.correct"], row["MatchResult.partial"]) == (1, 1)
    assert row["precision"] == pytest.approx(0.75) and row["recall"] == pytest.approx(0.75)


@pytest.mark.parametrize("bad", [S(5, 5), S(6, 2), S(-1, 3), {"start": 1}, {"start": 0.5, "end": 2}])
def test_malformed_spans_are_errors(bad: dict) -> None:
    with pytest.raises(CheckInputError):
        match_spans([bad], [S(0, 3)])


def _span_table(docs: list[list[dict]], index: np.ndarray, **extra: object) -> pa.Table:
    spans = pa.array(
        docs, pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("tag", pa.string())]))
    )
    return pa.table({"_index_": pa.array(index, pa.int64()), "spans": spans, **extra})


@pytest.mark.parametrize("matching", ["overlap", "one_to_one"])
def test_text_span_matches_streams_batches_with_the_documented_schema(matching: str) -> None:
    truths, predictions = random_docs(500, seed=3), random_docs(500, seed=4)
    index = np.arange(500) * 2 + 7
    task = _span_table(truths, index)
    preds = _span_table(predictions, index, _replication_=pa.array(["r0"] * 500))
    rubric = TextSpanMatches(matching=matching)
    batches = list(rubric.apply(task.to_batches(max_chunksize=64), preds.to_batches(max_chunksize=50)))
    assert len(batches) == 10
    assert rubric.schema.names == [
        "_index_", "_replication_", "MatchCriterion", "prediction", "truth", *RESULTS
    ]  # fmt: skip
    assert [f.type for f in rubric.schema][:5] == [
        pa.int64(),
        pa.string(),
        pa.string(),
        pa.int32(),
        pa.int32(),
    ]
    assert all(b.schema.equals(rubric.schema) for b in batches)
    table = pa.Table.from_batches(batches)
    flags = table.select(RESULTS).to_pandas().to_numpy()
    assert (flags.sum(axis=1) == 1).all()
    assert set(table["_index_"].to_numpy()) <= set(index)
    ours = ExtendedPrecisionRecall()(table.to_pandas()).set_index("MatchCriterion")
    if matching == "overlap":
        expected = overlap_counts(predictions, truths)
        for criterion in MatchCriterion:
            assert ours.loc[criterion.value, RESULTS].tolist() == expected[criterion.value]
        return
    reference = nervaluate_counts(predictions, truths)
    for criterion in MatchCriterion:
        assert ours.loc[criterion.value, RESULTS].tolist() == reference[criterion.value]["counts"]
        assert ours.loc[criterion.value, "precision"] == pytest.approx(
            reference[criterion.value]["precision"]
        )
        assert ours.loc[criterion.value, "recall"] == pytest.approx(reference[criterion.value]["recall"])


def test_text_span_matches_joins_unsorted_predictions_and_replications() -> None:
    truths, predictions = random_docs(200, seed=5), random_docs(400, seed=6)
    task = _span_table(truths, np.arange(200))
    index = np.r_[np.arange(200)[::-1], np.arange(200)]
    preds = _span_table(predictions, index, _replication_=pa.array(["a"] * 200 + ["b"] * 200))
    batches = preds.to_batches(max_chunksize=32)
    table = pa.Table.from_batches(list(TextSpanMatches().apply(task, batches)))
    ours = ExtendedPrecisionRecall()(table.to_pandas()).set_index("MatchCriterion")
    assert (
        ours.loc["strict", RESULTS].tolist()
        == overlap_counts(predictions, [truths[i] for i in index])["strict"]
    )
    assert set(table["_replication_"].to_pylist()) == {"a", "b"}


def test_text_span_matches_reports_unknown_index() -> None:
    task = _span_table([[S(0, 2)]], np.array([0]))
    preds = _span_table([[S(0, 2)]], np.array([9]))
    with pytest.raises(CheckInputError, match="_index_"):
        list(TextSpanMatches().apply(task, preds))


def test_top_k_single_item() -> None:
    assert top_k(["b", "a", "c"], "a", k=1) == 0
    assert top_k(["b", "a", "c"], "a", k=2) == 1
    assert top_k("a", "a", k=5) == 1 and top_k("ab", "a", k=5) == 0
    with pytest.raises(ValueError):
        top_k(["a"], "a", k=0)


def test_top_k_accuracy_rubric_matches_scikit_learn() -> None:
    rng = np.random.default_rng(0)
    n, classes = 400, np.arange(8)
    scores = rng.random((n, len(classes)))
    truth = rng.integers(0, 8, size=n)
    ranked = np.argsort(-scores, axis=1)
    task = pa.table({"_index_": np.arange(n), "label": truth})
    preds = pa.table({"_index_": np.arange(n), "prediction": pa.array(ranked[:, :5].tolist())})
    rubric = TopKAccuracy()
    out = pa.Table.from_batches(list(rubric.apply(task, preds.to_batches(max_chunksize=100))))
    assert out.schema.equals(rubric.schema)
    for k, column in ((1, "top1"), (5, "top5")):
        expected = top_k_accuracy_score(truth, scores, k=k, labels=classes)
        assert np.mean(out[column].to_numpy()) == pytest.approx(expected)
        assert out[column].to_pylist() == [
            bool(top_k(list(r), t, k=k)) for r, t in zip(ranked, truth, strict=True)
        ]
