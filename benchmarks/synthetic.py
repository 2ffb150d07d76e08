"""Synthetic wide frames for benchmarks: numeric and categorical features, labels and scores."""

from __future__ import annotations

import numpy as np
import pandas as pd


def make_frame(
    n_rows: int, n_numeric: int = 40, n_categorical: int = 10, *, shift: float = 0.0, seed: int = 0
) -> pd.DataFrame:
    """`n_rows` rows of numeric `num_i`, categorical `cat_i` (10 levels), `label`, `score`, `prediction`.

    `shift` moves every numeric mean by that many standard deviations and skews category frequencies,
    so a current frame made with a shift drifts from a reference made without.
    """
    rng = np.random.default_rng(seed)
    data: dict[str, np.ndarray] = {}
    for i in range(n_numeric):
        data[f"num_{i}"] = rng.normal(shift, 1.0, n_rows)
    levels = np.array([f"level_{k}" for k in range(10)])
    weights = np.linspace(1.0, 1.0 + 3.0 * shift, 10)
    weights /= weights.sum()
    for i in range(n_categorical):
        data[f"cat_{i}"] = levels[rng.choice(10, size=n_rows, p=weights)]
    logit = data["num_0"] - 0.5 * data["num_1"] if n_numeric > 1 else rng.normal(size=n_rows)
    score = 1.0 / (1.0 + np.exp(-(logit + rng.normal(0, 1, n_rows))))
    frame = pd.DataFrame(data)
    for i in range(n_categorical):
        frame[f"cat_{i}"] = frame[f"cat_{i}"].astype("category")
    frame["label"] = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    frame["score"] = score
    frame["prediction"] = (score >= 0.5).astype(np.int64)
    return frame
