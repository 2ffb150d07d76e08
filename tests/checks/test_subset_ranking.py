"""Ranking subset checks: the query-document example, then per-query metrics against scipy/scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import ndcg_score

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from tests.golden import golden_cases

NAMES = {"spearman": "subset.rank_correlation", "ndcg": "subset.ndcg", "mrr": "subset.mrr"}
COLUMNS = Columns(label="label", score="score", query_id="qid", categorical=("feature",))


def run(name: str, frame: pd.DataFrame, columns: Columns = COLUMNS, **params):
    results = run_check(registry.create(name, params), frame, columns, reference=frame, strict=True)
    return {r.target: r for r in results}


@pytest.mark.parametrize("case", golden_cases("ranking_metric"), ids=lambda c: c["id"])
def test_query_document_example(case: dict) -> None:
    inputs = case["inputs"]
    frame = pd.DataFrame(
        {
            "qid": inputs["qids"],
            "feature": inputs["feature"],
            "score": inputs["preds"],
            "label": inputs["relevance"],
        }
    )
    result = run(NAMES[inputs["metric"]], frame)["feature"]
    values = {s["subset"]: s["value"] for s in result.details["subsets"]}
    got = result.metrics["batch_value"] if inputs["subset"] is None else values[inputs["subset"]]
    assert got == pytest.approx(case["expected"], abs=case["tolerance"])
    assert got == pytest.approx(case["seed_value"], abs=case["seed_tolerance"])


def reciprocal_rank(score: np.ndarray, relevance: np.ndarray) -> float:
    """1 / position of the first most-relevant document, relevant documents last among equal scores."""
    relevant = relevance == relevance.max()
    if relevant.all():
        return math.nan
    order = sorted(range(len(score)), key=lambda i: (-score[i], bool(relevant[i])))
    return 1.0 / (1 + next(p for p, i in enumerate(order) if relevant[i]))


def spearman(score: np.ndarray, relevance: np.ndarray) -> float:
    if len(set(score)) < 2 or len(set(relevance)) < 2:
        return math.nan
    return spearmanr(score, relevance).statistic


def ndcg(score: np.ndarray, relevance: np.ndarray) -> float:
    return ndcg_score([relevance], [score]) if relevance.sum() > 0 else math.nan


REFERENCE_METRICS = {"subset.rank_correlation": spearman, "subset.ndcg": ndcg, "subset.mrr": reciprocal_rank}


def expected(frame: pd.DataFrame, metric) -> float:
    """Mean over queries (with two or more documents) of the per-query metric, NaN queries left out."""
    values = [
        metric(docs["score"].to_numpy(), docs["label"].to_numpy())
        for _, docs in frame.groupby("qid")
        if len(docs) >= 2
    ]
    values = [v for v in values if not math.isnan(v)]
    return float(np.mean(values)) if values else math.nan


@pytest.fixture(scope="module")
def ranking_frame() -> pd.DataFrame:
    rng = np.random.default_rng(9)
    sizes = rng.integers(1, 9, size=120)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    n = len(qid)
    label = rng.integers(0, 4, size=n).astype(float)
    frame = pd.DataFrame(
        {
            "qid": qid,
            "feature": rng.choice(["x", "y", "z"], size=n),  # varies inside a query: partial lists
            "score": (label + rng.normal(scale=1.5, size=n)).round(0),  # many tied scores
            "label": label,
        }
    )
    frame.loc[rng.random(n) < 0.03, "score"] = np.nan
    frame.loc[rng.random(n) < 0.03, "label"] = np.nan
    return frame


@pytest.mark.parametrize("name", list(REFERENCE_METRICS))
def test_ranking_metrics_match_per_query_references(name: str, ranking_frame: pd.DataFrame) -> None:
    result = run(name, ranking_frame)["feature"]
    kept = ranking_frame.dropna(subset=["score", "label"])
    metric = REFERENCE_METRICS[name]
    assert result.details["dropped_rows"] == len(ranking_frame) - len(kept)
    assert result.metrics["batch_value"] == pytest.approx(expected(kept, metric), abs=1e-12)
    values = {s["subset"]: (s["value"], s["rows"]) for s in result.details["subsets"]}
    for label, rows in kept.groupby("feature"):
        assert values[label] == (pytest.approx(expected(rows, metric), abs=1e-12), len(rows))


def test_negative_relevance_is_an_error_for_ndcg_only() -> None:
    frame = pd.DataFrame(
        {"qid": [1, 1, 2, 2], "feature": ["a"] * 4, "score": [1, 2, 3, 4], "label": [-1, 0, 1, 2]}
    )
    (result,) = run("subset.ndcg", frame).values()
    assert result.status == "error" and "relevance" in result.reason
    assert run("subset.mrr", frame)["feature"].status == "ok"


def test_missing_query_id_role_is_skipped() -> None:
    frame = pd.DataFrame({"feature": ["a", "b"], "score": [1.0, 2.0], "label": [0, 1]})
    columns = Columns(label="label", score="score", categorical=("feature",))
    (result,) = run("subset.mrr", frame, columns).values()
    assert result.status == "skipped" and "query_id" in result.reason
