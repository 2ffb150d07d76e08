"""Fairness metrics: our grouped counts against a per-subgroup scikit-learn loop, and our exact
consistency against a row-level `NearestNeighbors` search.

    .venv/bin/python -m benchmarks.bench_fairness --rows 200000
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from sklearn.metrics import confusion_matrix
from sklearn.neighbors import NearestNeighbors

from benchmarks.measure import measure
from benchmarks.synthetic import make_frame
from driftline.checks import fairness as fm

PROTECTED = ["cat_0", "cat_1"]  # 10 x 10 levels: up to 100 subgroups
RATE_FUNCTIONS = {
    "tpr": fm.true_positive_rate,
    "fpr": fm.false_positive_rate,
    "fnr": fm.false_negative_rate,
    "for": fm.false_omission_rate,
    "fdr": fm.false_discovery_rate,
    "error_rate": fm.error_rate,
}
CONSISTENCY_PEER_ROWS = 20_000  # a row-level neighbour search on tied points is quadratic-ish


def ours_rates(frame: pd.DataFrame) -> dict[str, float]:
    subgroups = frame[PROTECTED]
    return {
        name: fn(frame["label"], frame["prediction"], subgroups, reduction="max")
        for name, fn in RATE_FUNCTIONS.items()
    }


def peer_rates(frame: pd.DataFrame) -> dict[str, float]:
    """The same maxima with one scikit-learn confusion matrix per subgroup and per rest of population."""
    y, p = frame["label"].to_numpy(), frame["prediction"].to_numpy()
    keys = frame[PROTECTED].astype(str).agg("|".join, axis=1).to_numpy()
    formulas = {
        "tpr": lambda tn, fp, fn, tp: tp / (tp + fn),
        "fpr": lambda tn, fp, fn, tp: fp / (fp + tn),
        "fnr": lambda tn, fp, fn, tp: fn / (fn + tp),
        "for": lambda tn, fp, fn, tp: fn / (fn + tn),
        "fdr": lambda tn, fp, fn, tp: fp / (fp + tp),
        "error_rate": lambda tn, fp, fn, tp: (fp + fn) / (tn + fp + fn + tp),
    }
    out = {name: 0.0 for name in formulas}
    for key in np.unique(keys):
        inside = keys == key
        cm_in = confusion_matrix(y[inside], p[inside], labels=[0, 1]).ravel().astype(float)
        cm_out = confusion_matrix(y[~inside], p[~inside], labels=[0, 1]).ravel().astype(float)
        for name, formula in formulas.items():
            with np.errstate(divide="ignore", invalid="ignore"):
                value = abs(formula(*cm_in) - formula(*cm_out))
            if np.isfinite(value):
                out[name] = max(out[name], value)
    return out


def peer_consistency(frame: pd.DataFrame, n_neighbors: int = 5) -> float:
    """Row-level neighbours in the one-hot protected attributes (ties broken by the search order)."""
    points = pd.get_dummies(frame[PROTECTED].astype(str)).to_numpy(dtype=float)
    y = frame["label"].to_numpy()
    search = NearestNeighbors(n_neighbors=n_neighbors + 1).fit(points)
    _, neighbours = search.kneighbors(points)
    return float(np.mean(np.abs(y - y[neighbours[:, 1:]].mean(axis=1))))


def row(task: str, n: int, ours: tuple, peer: tuple) -> str:
    (_, t_ours, m_ours), (_, t_peer, m_peer) = ours, peer
    return (
        f"| {task} | {n:,} | {t_ours:.3f} | {t_peer:.3f} | {t_peer / t_ours:.1f}x | "
        f"{m_ours:.0f} | {m_peer:.0f} | {n / t_ours:,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    frame = make_frame(args.rows, n_numeric=2, n_categorical=2, seed=0)
    print("| task | rows | ours s | peer s | peer/ours | ours MiB | peer MiB | ours rows/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

    ours, peer = measure(lambda: ours_rates(frame)), measure(lambda: peer_rates(frame))
    assert ours[0] == peer[0] or all(np.isclose(ours[0][k], peer[0][k]) for k in ours[0]), (ours[0], peer[0])
    print(
        row(
            "6 rate disparities, max over subgroups (vs sklearn confusion_matrix loop)", args.rows, ours, peer
        )
    )

    sample = frame.iloc[: min(args.rows, CONSISTENCY_PEER_ROWS)]
    ours = measure(lambda: fm.consistency(sample["label"], sample[PROTECTED]))
    peer = measure(lambda: peer_consistency(sample))
    print(row("consistency, k=5 (vs NearestNeighbors)", len(sample), ours, peer))
    print(f"\nconsistency on {len(sample):,} rows: ours {ours[0]:.4f} (ties averaged), peer {peer[0]:.4f}")

    full = measure(lambda: fm.consistency(frame["label"], frame[PROTECTED]))
    print(f"consistency on all {args.rows:,} rows: {full[0]:.4f} in {full[1]:.3f} s, peak {full[2]:.0f} MiB")


if __name__ == "__main__":
    main()
