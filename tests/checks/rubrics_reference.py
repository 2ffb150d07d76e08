"""Independent references for span matching.

`nervaluate_counts`: nervaluate 1.2.1 (half-open ends become inclusive) for one-to-one matching.
`overlap_records`: the audit-rubric document's definition, pair by pair in plain Python, for overlap
matching: a record per overlapping (prediction, truth) pair, spurious for a prediction that overlaps no
true span, missing for a true span that no prediction overlaps.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from nervaluate import Evaluator

# nervaluate's strategy names for the SemEval criteria; `missed` is MUC-5's missing.
STRATEGY = {"exact": "exact", "partial": "partial", "strict": "strict", "type": "ent_type"}
FIELDS = ("correct", "incorrect", "partial", "missed", "spurious")


def _doc(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ordered = sorted(spans, key=lambda s: (s["start"], s["end"]))
    return [{"label": s.get("tag") or "", "start": s["start"], "end": s["end"] - 1} for s in ordered]


def nervaluate_counts(
    predictions: list[list[dict[str, Any]]], truths: list[list[dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """Per criterion: counts (correct, incorrect, partial, missing, spurious), precision, recall, f1."""
    true, pred = [_doc(d) for d in truths], [_doc(d) for d in predictions]
    tags = sorted({e["label"] for d in true + pred for e in d} | {""})
    if not any(true) and not any(pred):
        return {c: {"counts": [0] * 5, "precision": 0.0, "recall": 0.0, "f1": 0.0} for c in STRATEGY}
    overall = Evaluator(true, pred, tags=tags, loader="dict").evaluate()["overall"]
    out = {}
    for criterion, strategy in STRATEGY.items():
        r = overall[strategy]
        out[criterion] = {
            "counts": [getattr(r, f) for f in FIELDS],
            "precision": r.precision,
            "recall": r.recall,
            "f1": r.f1,
        }
    return out


RESULTS = ("correct", "incorrect", "partial", "missing", "spurious")


def _pair_result(criterion: str, p: dict[str, Any], t: dict[str, Any]) -> str:
    """The document's rule for one overlapping pair under one criterion."""
    same_bounds = (p["start"], p["end"]) == (t["start"], t["end"])
    same_tag = (p.get("tag") or "") == (t.get("tag") or "")
    good = {
        "exact": same_bounds,
        "partial": same_bounds,
        "strict": same_bounds and same_tag,
        "type": same_tag,
    }[criterion]
    if good:
        return "correct"
    return "partial" if criterion == "partial" else "incorrect"


def overlap_records(
    predictions: list[dict[str, Any]], truths: list[dict[str, Any]]
) -> dict[str, set[tuple[int | None, int | None, str]]]:
    """Per criterion the (prediction, truth, result) records of one document (indices in start order)."""
    pred = sorted(predictions, key=lambda s: (s["start"], s["end"]))
    true = sorted(truths, key=lambda s: (s["start"], s["end"]))
    overlaps = {
        (i, j)
        for i, p in enumerate(pred)
        for j, t in enumerate(true)
        if p["start"] < t["end"] and t["start"] < p["end"]
    }
    lone_pred = {(i, None, "spurious") for i in range(len(pred)) if all(i != a for a, _ in overlaps)}
    lone_true = {(None, j, "missing") for j in range(len(true)) if all(j != b for _, b in overlaps)}
    return {
        criterion: {(i, j, _pair_result(criterion, pred[i], true[j])) for i, j in overlaps}
        | lone_pred
        | lone_true
        for criterion in STRATEGY
    }


def overlap_counts(
    predictions: list[list[dict[str, Any]]], truths: list[list[dict[str, Any]]]
) -> dict[str, list[int]]:
    """Per criterion the summed counts (correct, incorrect, partial, missing, spurious) of documents."""
    out = {criterion: [0] * 5 for criterion in STRATEGY}
    for pred, true in zip(predictions, truths, strict=True):
        for criterion, records in overlap_records(pred, true).items():
            for _, _, result in records:
                out[criterion][RESULTS.index(result)] += 1
    return out


def random_docs(n_docs: int, seed: int, max_spans: int = 6, length: int = 40) -> list[list[dict[str, Any]]]:
    """Documents of random short spans: nested, overlapping, touching and duplicated ones included."""
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n_docs):
        k = int(rng.integers(0, max_spans + 1))
        start = rng.integers(0, length, size=k)
        end = start + rng.integers(1, 8, size=k)
        tags = rng.choice(["PER", "LOC", "ORG"], size=k)
        docs.append(
            [
                {"start": int(s), "end": int(e), "tag": str(t)}
                for s, e, t in zip(start, end, tags, strict=True)
            ]
        )
    return docs
