"""A column missing from the batch (or the reference) is one error result; every other target is computed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check

COLUMNS = Columns(
    label="label",
    prediction="prediction",
    numeric=("a", "b", "c"),
    categorical=("d", "e"),
    task="binary",
)


def frame(n: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    return pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "c": rng.normal(shift, 1.0, n),
            "d": rng.choice(["x", "y", "z"], n),
            "e": rng.choice(["p", "q"], n),
            "label": label,
            "prediction": np.where(rng.random(n) < 0.8, label, 1 - label),
        }
    )


REFERENCE = frame(1000, 0)
BATCH = frame(500, 1, shift=0.8)


def by_target(name: str, current: pd.DataFrame, reference: pd.DataFrame = REFERENCE, **params) -> dict:
    results = run_check(registry.create(name, params), current, COLUMNS, reference=reference, strict=True)
    targets = [r.target for r in results]
    assert len(targets) == len(set(targets)), targets
    return {r.target: r for r in results}


def add_one_psi(reference: np.ndarray, current: np.ndarray, bins: int = 10) -> float:
    """PSI on inverted-CDF decile bins with add-one smoothing, computed with numpy and pandas only."""
    probs = np.arange(1, bins) / bins
    edges = np.unique(np.quantile(reference, probs, method="inverted_cdf"))
    cut = [-np.inf, *edges, np.inf]
    ref = pd.Series(pd.cut(reference, cut, right=True)).value_counts(sort=False).to_numpy() + 1.0
    cur = pd.Series(pd.cut(current, cut, right=True)).value_counts(sort=False).to_numpy() + 1.0
    p, q = ref / ref.sum(), cur / cur.sum()
    return float(sum((qi - pi) * math.log(qi / pi) for pi, qi in zip(p, q, strict=True)))


@pytest.mark.parametrize(
    ("name", "present"),
    [
        ("drift.numeric", {"a", "c"}),
        ("abnormal.out_of_range", {"a", "c"}),
        ("abnormal.nulls", {"a", "c", "d", "e", "prediction"}),
        ("subset.accuracy", {"a", "c", "d", "e"}),
    ],
)
def test_a_missing_feature_is_one_error_and_the_others_are_computed(name: str, present: set[str]) -> None:
    results = by_target(name, BATCH.drop(columns="b"))
    assert set(results) == present | {"b"}
    assert results["b"].status == "error" and "batch" in results["b"].reason and "'b'" in results["b"].reason
    assert all(results[t].status == "ok" for t in present)


def test_the_drift_of_the_other_features_is_still_measured() -> None:
    results = by_target("drift.numeric", BATCH.drop(columns="b"))
    expected = add_one_psi(REFERENCE["c"].to_numpy(), BATCH["c"].to_numpy())
    assert results["c"].metrics["psi"] == pytest.approx(expected, rel=1e-12)
    assert results["c"].severity != "none"


def test_a_missing_categorical_feature_in_drift_categorical() -> None:
    results = by_target("drift.categorical", BATCH.drop(columns="e"))
    assert results["e"].status == "error" and "'e'" in results["e"].reason
    assert results["d"].status == "ok"


def test_a_column_missing_from_the_reference_is_named_as_such() -> None:
    results = by_target("drift.numeric", BATCH, reference=REFERENCE.drop(columns="a"))
    assert results["a"].status == "error" and "reference" in results["a"].reason
    assert results["b"].status == "ok" and results["c"].status == "ok"


def test_selected_features_keep_their_targets_when_one_is_missing() -> None:
    results = by_target("drift.numeric", BATCH.drop(columns="b"), features=["b", "c"])
    assert set(results) == {"b", "c"} and results["c"].status == "ok" and results["b"].status == "error"


def test_every_feature_missing_gives_one_error_per_feature() -> None:
    results = by_target("drift.numeric", BATCH.drop(columns=["a", "b", "c"]))
    assert set(results) == {"a", "b", "c"}
    assert all(r.status == "error" for r in results.values())


def test_a_missing_label_still_stops_the_whole_check() -> None:
    results = by_target("subset.accuracy", BATCH.drop(columns=["label", "b"]))
    assert list(results) == ["*"] and "'label'" in results["*"].reason
