"""Shared data and comparisons of the partitioned-batch tests: frames split into partitions, the
single-machine and merged evaluations of a check, a deep comparison within rounding, and the stored
history of two runs compared."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.tasks.config.spec import load_spec
from driftline.tasks.history.db import connected_store
from driftline.tasks.history.query import latest_results

# Sums added in another order differ in the last bits; counts must be equal.
REL = 1e-9


def mixed_frame(n: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    """Numeric (NaN, ±inf, ties, out-of-range values), categorical (nulls, unseen levels), binary label,
    score and prediction columns."""
    rng = np.random.default_rng(seed)
    x = rng.normal(shift, 1.0, n)
    x[rng.random(n) < 0.05] = np.nan
    x[rng.random(n) < 0.01] = np.inf
    x[rng.random(n) < 0.01] = -np.inf
    ties = rng.integers(0, 6, n).astype(float) + (shift > 0) * rng.integers(0, 3, n)
    wide = rng.normal(0, 1 + shift, n)
    levels = np.array(["a", "b", "c", "d", "e"] + (["new_1", "new_2"] if shift else []))
    cat = levels[rng.integers(0, len(levels), n)].astype(object)
    cat[rng.random(n) < 0.03] = None
    logit = np.nan_to_num(x, nan=0.0, posinf=3.0, neginf=-3.0) - 0.3 * ties
    score = 1 / (1 + np.exp(-(logit + rng.normal(0, 1, n))))
    label = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return pd.DataFrame(
        {
            "x": x,
            "ties": ties,
            "wide": wide,
            "cat": pd.array(cat, dtype="str"),
            "label": label,
            "score": score,
            "prediction": (score >= 0.5 + 0.1 * shift).astype(np.int64),
        }
    )


def split(frame: pd.DataFrame, sizes: list[int]) -> list[pd.DataFrame]:
    """Consecutive partitions of the given sizes (the last takes the rest), indexed by batch position."""
    bounds = np.cumsum([0, *sizes])
    parts = [frame.iloc[a:b] for a, b in itertools.pairwise(bounds)]
    return [*parts, frame.iloc[bounds[-1] :]]


def merged_results(check: Check, parts: list[pd.DataFrame], profile: Any, columns: Columns) -> list[dict]:
    """The check evaluated partition by partition and merged."""
    states = [check.partial(p, profile, columns) for p in parts]
    return [r.to_dict() for r in check.finish(check.merge(states), profile, columns)]


def assert_same(merged: Any, single: Any, path: str = "") -> None:
    """Equal structures: integers and strings exactly, floats within REL (NaN equal to NaN)."""
    if isinstance(single, dict):
        assert isinstance(merged, dict) and set(merged) == set(single), f"{path}: keys {merged} != {single}"
        for key in single:
            assert_same(merged[key], single[key], f"{path}.{key}")
    elif isinstance(single, list | tuple):
        assert len(merged) == len(single), f"{path}: {merged} != {single}"
        for i, (a, b) in enumerate(zip(merged, single, strict=True)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(single, float) and not isinstance(single, bool):
        if math.isnan(single):
            assert isinstance(merged, float) and math.isnan(merged), f"{path}: {merged} != nan"
        else:
            assert merged == single or math.isclose(merged, single, rel_tol=REL, abs_tol=1e-15), (
                f"{path}: {merged} != {single}"
            )
    else:
        assert merged == single, f"{path}: {merged!r} != {single!r}"


def stored(spec_path: Path, batch_id: str) -> list[dict]:
    """The stored results of one batch, as the history store folds them back."""
    spec = load_spec(spec_path)
    with connected_store(spec.database_url()) as engine:
        return latest_results(engine, spec.name, batch_id)


def assert_same_history(
    one: Path, other: Path, batch_id: str, normalise: Callable[[dict], dict] = lambda row: row
) -> None:
    """Two monitors' stored results of the batch agree (counts exactly, floats within `REL`), in
    (check, target) order, after `normalise` of each row."""

    def ordered(spec_path: Path) -> list[dict]:
        rows = [normalise(row) for row in stored(spec_path, batch_id)]
        return sorted(rows, key=lambda r: (r["check"], r["target"]))

    rows_one, rows_other = ordered(one), ordered(other)
    assert len(rows_one) == len(rows_other) > 15
    assert_same(rows_one, rows_other)
