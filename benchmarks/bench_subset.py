"""Subset performance checks vs a pandas groupby + scikit-learn loop over subsets.

10 features (5 numeric cut into 10 reference-quantile bins, 5 categorical with 10 levels) times every
binary-classification subset metric, on one batch. Both sides compute the same per-subset values;
the table prints wall time, peak traced memory, rows/s, the ratio, and the largest disagreement.

    .venv/bin/python -m benchmarks.bench_subset --rows 1000000
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np
import pandas as pd
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from benchmarks.measure import measure
from benchmarks.synthetic import make_frame
from driftline.checks import registry
from driftline.checks.columns import Columns

METRICS = (
    "subset.auc",
    "subset.accuracy",
    "subset.f1",
    "subset.precision",
    "subset.recall",
    "subset.fpr",
    "subset.variance",
    "subset.variance_positive",
    "subset.variance_negative",
)
BINS = 10


def _fpr(y: np.ndarray, p: np.ndarray) -> float:
    tn, fp, _, _ = confusion_matrix(y, p, labels=[0, 1]).ravel()
    return fp / (fp + tn) if fp + tn else math.nan


PEER: dict[str, Callable[[pd.DataFrame], float]] = {
    "subset.auc": lambda g: roc_auc_score(g["label"], g["score"]) if g["label"].nunique() == 2 else math.nan,
    "subset.accuracy": lambda g: accuracy_score(g["label"], g["prediction"]),
    "subset.f1": lambda g: f1_score(g["label"], g["prediction"], zero_division=np.nan),
    "subset.precision": lambda g: precision_score(g["label"], g["prediction"], zero_division=np.nan),
    "subset.recall": lambda g: recall_score(g["label"], g["prediction"], zero_division=np.nan),
    "subset.fpr": lambda g: _fpr(g["label"], g["prediction"]),
    "subset.variance": lambda g: float(np.var(g["score"])),
    "subset.variance_positive": lambda g: float(np.var(g["score"][g["label"] == 1])),
    "subset.variance_negative": lambda g: float(np.var(g["score"][g["label"] == 0])),
}


def ours(
    reference: pd.DataFrame, batch: pd.DataFrame, columns: Columns
) -> dict[tuple[str, str], list[float]]:
    """Every subset check through fit + evaluate; per (metric, feature) the subset values in order."""
    out = {}
    for name in METRICS:
        check = registry.create(name, {"bins": BINS})
        profile = check.fit(reference, columns)
        for result in check.evaluate(batch, profile, columns):
            out[name, result.target] = [s["value"] for s in result.details["subsets"]]
    return out


def peer(
    reference: pd.DataFrame, batch: pd.DataFrame, columns: Columns
) -> dict[tuple[str, str], list[float]]:
    """pandas groups (qcut edges from the reference, category values), scikit-learn per subset."""
    out = {}
    for feature in columns.features:
        if feature in columns.numeric:
            _, edges = pd.qcut(reference[feature], BINS, retbins=True, duplicates="drop")
            keys = pd.cut(batch[feature], [-np.inf, *edges[1:-1], np.inf], labels=False)
        else:
            order = reference[feature].value_counts().index.tolist()
            keys = pd.Categorical(batch[feature], categories=order).codes
        groups = [g for _, g in batch.groupby(keys, sort=True)]
        for name in METRICS:
            out[name, feature] = [PEER[name](g) for g in groups]
    return out


def largest_gap(a: dict, b: dict) -> float:
    gaps = [
        abs(x - y)
        for key in a
        for x, y in zip(a[key], b[key], strict=True)
        if not (math.isnan(x) and math.isnan(y))
    ]
    return max(gaps)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    reference = make_frame(min(args.rows, 200_000), n_numeric=5, n_categorical=5, seed=0)
    batch = make_frame(args.rows, n_numeric=5, n_categorical=5, shift=0.2, seed=1)
    columns = Columns(
        label="label",
        score="score",
        prediction="prediction",
        numeric=tuple(f"num_{i}" for i in range(5)),
        categorical=tuple(f"cat_{i}" for i in range(5)),
        task="binary",
    )
    mine, our_s, our_mb = measure(lambda: ours(reference, batch, columns))
    theirs, peer_s, peer_mb = measure(lambda: peer(reference, batch, columns))
    print(f"{args.rows:,} rows, 10 features x {BINS} subsets x {len(METRICS)} metrics (fit + evaluate)")
    print(f"{'implementation':<34}{'wall s':>9}{'peak MB':>10}{'rows/s':>14}{'ratio':>8}")
    for label, seconds, mb in (
        ("driftline subset.* checks", our_s, our_mb),
        ("pandas groupby + sklearn per subset", peer_s, peer_mb),
    ):
        print(f"{label:<34}{seconds:>9.2f}{mb:>10.0f}{args.rows / seconds:>14,.0f}{seconds / our_s:>8.1f}")
    print(f"largest per-subset disagreement: {largest_gap(mine, theirs):.2e}")


if __name__ == "__main__":
    main()
