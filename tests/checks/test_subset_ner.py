"""NER checks: subset.ner_precision / subset.ner_recall and the rubric.* span checks on a batch.

Numbers are pinned against the golden worked example of seed 000 and against nervaluate 1.2.1 run on
the same spans (tests/checks/rubrics_reference.py); top-k against scikit-learn.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import top_k_accuracy_score

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from tests.checks.rubrics_reference import nervaluate_counts, random_docs
from tests.golden import golden_cases

COLUMNS = Columns(label="truth", prediction="pred", categorical=("source",))


def golden_frame(case: dict) -> pd.DataFrame:
    inputs = case["inputs"]
    return pd.DataFrame(
        {"truth": [inputs["truth_spans"]], "pred": [inputs["pred_spans"]], "source": ["news"]}
    )


@pytest.mark.parametrize("case", golden_cases("span_exact_prf"), ids=lambda c: c["id"])
@pytest.mark.parametrize("criterion", ["exact", "strict"])
def test_golden_ner_case(case: dict, criterion: str) -> None:
    """Seed 000: precision 1/4 and recall 1/3 with exact boundaries (tags absent: strict is the same)."""
    frame = golden_frame(case)
    metric = case["inputs"]["metric"]
    check = registry.create(f"subset.ner_{metric}", {"criterion": criterion, "min_subset_size": 1})
    (result,) = run_check(check, frame, COLUMNS, reference=frame, strict=True)
    assert result.metrics["batch_value"] == pytest.approx(case["expected"], abs=case["tolerance"])
    table = run_check(registry.create("rubric.extended_precision_recall"), frame, COLUMNS, reference=frame)
    by_criterion = {r.target: r for r in table}
    assert by_criterion[criterion].metrics[metric] == pytest.approx(case["expected"], abs=case["tolerance"])


def two_source_frame(seed: int = 0, n: int = 400) -> pd.DataFrame:
    """Documents from two sources; the `forum` predictions are shifted (worse) versions of the truths."""
    truths = random_docs(n, seed=seed, max_spans=5, length=60)
    rng = np.random.default_rng(seed + 1)
    source = np.where(rng.random(n) < 0.5, "wire", "forum")
    predictions = []
    for doc, src in zip(truths, source, strict=True):
        shift = 2 if src == "forum" else 0
        kept = [dict(s, start=s["start"] + shift, end=s["end"] + shift) for s in doc if rng.random() < 0.9]
        predictions.append(kept)
    return pd.DataFrame({"truth": truths, "pred": predictions, "source": source})


@pytest.mark.parametrize(
    ("name", "key"), [("subset.ner_precision", "precision"), ("subset.ner_recall", "recall")]
)
def test_worst_subset_matches_nervaluate(name: str, key: str) -> None:
    """Against a reference whose predictions are the truths: the shifted `forum` spans lost the most."""
    frame = two_source_frame()
    reference = frame.assign(pred=frame["truth"])
    (result,) = run_check(registry.create(name), frame, COLUMNS, reference=reference, strict=True)
    forum = frame[frame["source"] == "forum"]
    expected_subset = nervaluate_counts(list(forum["pred"]), list(forum["truth"]))["strict"][key]
    expected_all = nervaluate_counts(list(frame["pred"]), list(frame["truth"]))["strict"][key]
    assert result.details["subset"] == "forum"
    assert result.metrics["subset_value"] == pytest.approx(expected_subset, abs=1e-12)
    assert result.metrics["reference_value"] == pytest.approx(1.0)
    assert result.metrics["change"] == pytest.approx(1.0 - expected_subset, abs=1e-12)
    assert result.metrics["batch_value"] == pytest.approx(expected_all, abs=1e-12)
    assert result.severity == "high"
    audit = registry.create(name, {"compare_to": "batch"})
    (against_batch,) = run_check(audit, frame, COLUMNS, reference=frame, strict=True)
    assert against_batch.details["subset"] == "forum" and against_batch.severity == "high"
    assert against_batch.metrics["overall_value"] == pytest.approx(expected_all, abs=1e-12)


def test_span_columns_as_json_text_give_the_same_results() -> None:
    frame = two_source_frame(seed=4, n=120)
    as_json = frame.assign(truth=frame["truth"].map(json.dumps), pred=frame["pred"].map(json.dumps))
    assert pd.api.types.is_string_dtype(as_json["truth"])
    for name in ("subset.ner_precision", "rubric.extended_precision_recall"):
        a = run_check(registry.create(name), frame, COLUMNS, reference=frame, strict=True)
        b = run_check(registry.create(name), as_json, COLUMNS, reference=as_json, strict=True)
        assert [r.to_dict() for r in a] == [r.to_dict() for r in b]


def test_text_span_matches_grades_the_f1_drop_against_the_reference() -> None:
    frame = two_source_frame(seed=2)
    reference = frame.assign(pred=frame["truth"])  # a perfect reference: F1 = 1
    results = {
        r.target: r
        for r in run_check(
            registry.create("rubric.text_span_matches", {"matching": "one_to_one"}),
            frame,
            COLUMNS,
            reference=reference,
            strict=True,
        )
    }
    expected = nervaluate_counts(list(frame["pred"]), list(frame["truth"]))
    for criterion in ("exact", "partial", "strict", "type"):
        r = results[criterion]
        assert r.metrics["reference_f1"] == pytest.approx(1.0)
        assert r.metrics["f1"] == pytest.approx(expected[criterion]["f1"], abs=1e-12)
        assert r.metrics["f1_drop"] == pytest.approx(1 - expected[criterion]["f1"], abs=1e-12)
        assert r.details["counts"]["missing"] == expected[criterion]["counts"][3]
    assert results["strict"].severity == "high"


def test_not_span_columns_are_skipped_and_malformed_spans_are_errors() -> None:
    numbers = pd.DataFrame({"truth": [1, 0], "pred": [1, 1], "source": ["a", "b"]})
    (r,) = run_check(registry.create("subset.ner_recall"), numbers, COLUMNS, reference=numbers, strict=True)
    assert r.status == "skipped" and "spans" in r.reason
    bad = pd.DataFrame(
        {"truth": ['[{"start": 4, "end": 2}]', "[]"], "pred": ["[]", "not json"], "source": ["a", "b"]}
    )
    for name in ("subset.ner_precision", "rubric.extended_precision_recall", "rubric.text_span_matches"):
        (r,) = run_check(registry.create(name), bad, COLUMNS, reference=bad, strict=True)
        assert r.status == "error" and "label column 'truth'" in r.reason, r.reason
    nulls = pd.DataFrame({"truth": [None, [[0, 2]]], "pred": [[[0, 2]], None], "source": ["a", "b"]})
    (r,) = run_check(
        registry.create("rubric.extended_precision_recall", {"criteria": ["exact"]}),
        nulls,
        COLUMNS,
        reference=nulls,
        strict=True,
    )
    assert r.status == "error" and "no row has both" in r.reason


def test_top_k_accuracy_check_matches_scikit_learn() -> None:
    rng = np.random.default_rng(3)
    n, c = 600, 6
    scores = rng.dirichlet(np.ones(c), size=n)
    label = rng.integers(0, c, size=n)
    names = [f"p{i}" for i in range(c)]
    frame = pd.DataFrame(scores, columns=names).assign(label=label)
    reference = frame.assign(label=np.argmax(scores, axis=1))  # top-1 accuracy 1 on the reference
    columns = Columns(label="label", class_scores=tuple(names))
    results = {
        r.target: r
        for r in run_check(
            registry.create("rubric.top_k_accuracy"), frame, columns, reference=reference, strict=True
        )
    }
    for k in (1, 5):
        expected = top_k_accuracy_score(label, scores, k=k, labels=np.arange(c))
        assert results[f"top{k}"].metrics["current"] == pytest.approx(expected)
    assert results["top1"].metrics["reference"] == 1.0
    assert results["top1"].severity == "high"
    lists = pd.DataFrame({"label": label, "ranked": list(np.argsort(-scores, axis=1)[:, :5])})
    (top5,) = run_check(
        registry.create("rubric.top_k_accuracy", {"ks": [5]}),
        lists,
        Columns(label="label", prediction="ranked"),
        reference=lists,
        strict=True,
    )
    assert top5.metrics["current"] == pytest.approx(
        top_k_accuracy_score(label, scores, k=5, labels=np.arange(c))
    )
