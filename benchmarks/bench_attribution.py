"""Speed and memory of AUC attribution and honest slicing, against scikit-learn peers in the same run.

Run: `.venv/bin/python -m benchmarks.bench_attribution [--rows N]`. Rows of the table:

- example attribution (normalised, exact, O(n log n)) on `--rows` continuous scores (no ties: the
  slowest case for the tie groups), against `sklearn.metrics.roc_auc_score` on the same scores;
- the pair cross matrix over 8 x 8 slices on the same scores (no peer: shown for scale);
- honest segmentation of `--segment-rows` attributions over 10 dimensions (5 numeric, 5 categorical
  with 10 levels), against fitting scikit-learn's `DecisionTreeRegressor` alone on the same columns
  (ordinal-coded), which is the tree inside the segmentation without the honest machinery;
- the literal quadratic attribution (every pair compared, from the tests) on `--quadratic-rows`
  scores, against the O(n log n) kernel on the same scores.

Peak memory is traced with `tracemalloc` (numpy reports its allocations to it).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.tree import DecisionTreeRegressor

from benchmarks.measure import measure
from benchmarks.synthetic import make_frame
from driftline.checks.attribution import example_attribution, pair_attribution
from driftline.checks.segmentation import segment
from tests.attribution_reference import quadratic_attribution


def _row(
    task: str, rows: int, ours: tuple[float, float], peer: str, theirs: tuple[float, float] | None
) -> dict:
    seconds, peak = ours
    return {
        "task": task,
        "rows": rows,
        "ours_s": seconds,
        "ours_peak_MB": peak,
        "rows_per_s": rows / seconds,
        "peer": peer,
        "peer_s": theirs[0] if theirs else np.nan,
        "peer_peak_MB": theirs[1] if theirs else np.nan,
        "ratio": seconds / theirs[0] if theirs else np.nan,
    }


def bench_scores(rows: int) -> list[dict]:
    frame = make_frame(rows, n_numeric=2, n_categorical=0, seed=1)
    label, score = frame["label"].to_numpy(), frame["score"].to_numpy()
    del frame
    values, *ours = measure(lambda: example_attribution(label, score))
    auc, *theirs = measure(lambda: roc_auc_score(label, score))
    assert abs(2 * values.mean() - auc) < 1e-9, "attribution mean must be AUC / 2"
    del values
    slices = np.random.default_rng(2).integers(0, 8, rows)
    _, *cross = measure(lambda: pair_attribution(label, score, slices, slices))
    return [
        _row("example attribution", rows, tuple(ours), "sklearn roc_auc_score", tuple(theirs)),
        _row("pair cross matrix 8x8", rows, tuple(cross), "-", None),
    ]


def bench_segmentation(rows: int) -> list[dict]:
    frame = make_frame(rows, n_numeric=5, n_categorical=5, seed=3)
    dims = frame[[f"num_{i}" for i in range(5)] + [f"cat_{i}" for i in range(5)]]
    values = example_attribution(frame["label"], frame["score"])
    seg, *ours = measure(lambda: segment(dims, values, max_depth=3, min_leaf_size=100))
    coded = np.column_stack(
        [dims[c].to_numpy(dtype=float) if c.startswith("num") else dims[c].cat.codes.to_numpy() for c in dims]
    )
    tree = DecisionTreeRegressor(max_depth=3, min_samples_leaf=100, random_state=0)
    _, *theirs = measure(lambda: tree.fit(coded, values))
    assert len(seg.slices) >= 1
    return [_row("honest segmentation, 10 dims", rows, tuple(ours), "sklearn tree fit only", tuple(theirs))]


def bench_quadratic(rows: int) -> list[dict]:
    frame = make_frame(rows, n_numeric=2, n_categorical=0, seed=4)
    label, score = frame["label"].to_numpy(), frame["score"].round(3).to_numpy()
    fast, *ours = measure(lambda: example_attribution(label, score))
    slow, *theirs = measure(lambda: quadratic_attribution(label, score))
    assert np.allclose(fast, slow, rtol=1e-12, atol=1e-12)
    return [_row("example attribution", rows, tuple(ours), "literal quadratic", tuple(theirs))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="scores for the attribution kernels")
    parser.add_argument(
        "--segment-rows", type=int, default=None, help="rows to segment (default min(rows, 1M))"
    )
    parser.add_argument(
        "--quadratic-rows", type=int, default=None, help="rows for the quadratic version (20k)"
    )
    args = parser.parse_args(argv)
    segment_rows = args.segment_rows or min(args.rows, 1_000_000)
    quadratic_rows = args.quadratic_rows or min(args.rows, 20_000)
    table = pd.DataFrame(
        bench_scores(args.rows) + bench_segmentation(segment_rows) + bench_quadratic(quadratic_rows)
    )
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False, float_format=lambda v: f"{v:,.3f}"))


if __name__ == "__main__":
    main()
