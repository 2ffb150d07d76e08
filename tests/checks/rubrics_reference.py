"""nervaluate 1.2.1 as the independent reference for span matching (half-open ends become inclusive)."""

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
