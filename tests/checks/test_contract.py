"""Every registered check through the same battery of bad input (like scikit-learn's estimator checks).

A check must answer each case with correct results or with `skipped`/`error` results that give a
reason, never with an unexpected exception, and its results must be JSON-serialisable.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.result import SEVERITIES, STATUSES
from driftline.checks.runner import run_check

COLUMNS = Columns(
    id="id",
    label="label",
    prediction="prediction",
    score="score",
    query_id="query",
    numeric=("x1", "x2", "age"),
    categorical=("color", "city", "sex"),
    protected=("sex",),
    class_scores=("p0", "p1"),
    task="binary",
)


def make_frame(n: int, seed: int) -> pd.DataFrame:
    """A frame with every role filled, realistic dtypes (str, category, int, float), ties included."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    score = 1 / (1 + np.exp(-(x1 + rng.normal(size=n))))
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "x1": x1,
            "x2": rng.exponential(size=n).round(1),
            "age": rng.integers(18, 90, size=n),
            "color": pd.Series(rng.choice(["red", "green", "blue", "Red"], size=n), dtype="str"),
            "city": pd.Categorical(rng.choice(["Paris", "Oslo", "Lima"], size=n)),
            "sex": rng.choice(["F", "M"], size=n),
            "label": (rng.random(n) < score).astype(np.int64),
            "prediction": (score >= 0.5).astype(np.int64),
            "score": score.round(2),
            "p0": 1 - score,
            "p1": score,
            "query": rng.integers(0, 20, size=n),
        }
    )


REFERENCE = make_frame(400, seed=0)


def _drop_columns(f: pd.DataFrame) -> pd.DataFrame:
    return f.drop(columns=["x1", "color", "label"])


def _all_nan(f: pd.DataFrame) -> pd.DataFrame:
    return f.assign(x1=np.nan, score=np.nan)


def _with_inf(f: pd.DataFrame) -> pd.DataFrame:
    x2 = f["x2"].to_numpy().copy()
    x2[::7] = np.inf
    x2[1::7] = -np.inf
    score = f["score"].to_numpy().copy()
    score[::11] = np.inf
    return f.assign(x2=x2, score=score)


def _single_class(f: pd.DataFrame) -> pd.DataFrame:
    return f.assign(label=1, prediction=1)


def _changed_dtypes(f: pd.DataFrame) -> pd.DataFrame:
    return f.assign(x1=f["x1"].round(3).astype(str), color=np.arange(len(f)), label=f["label"].astype(float))


CASES: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "valid": lambda f: f,
    "empty batch": lambda f: f.iloc[:0],
    "missing columns": _drop_columns,
    "all-NaN column": _all_nan,
    "inf values": _with_inf,
    "single class": _single_class,
    "changed dtypes": _changed_dtypes,
    "one row": lambda f: f.iloc[:1],
}


def _assert_well_formed(results: list, name: str) -> None:
    assert results, f"{name} returned no result"
    for r in results:
        assert r.check == name
        assert r.status in STATUSES and r.severity in SEVERITIES
        if r.status != "ok":
            assert r.reason, f"{name}: a {r.status} result must say why"
        json.dumps(r.to_dict(), allow_nan=False)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", registry.names())
def test_check_survives_bad_input(name: str, case: str) -> None:
    check = registry.create(name)
    current = CASES[case](make_frame(300, seed=1))
    results = run_check(check, current, COLUMNS, reference=REFERENCE, strict=True)
    _assert_well_formed(results, name)
    if case == "empty batch":
        assert all(r.status == "skipped" and "empty" in r.reason for r in results)
    if case == "valid":
        assert not [r.reason for r in results if r.status == "error"], "valid data must not give errors"


@pytest.mark.parametrize("name", registry.names())
def test_check_handles_single_class_reference(name: str) -> None:
    check = registry.create(name)
    reference = _single_class(REFERENCE)
    results = run_check(check, make_frame(300, seed=1), COLUMNS, reference=reference, strict=True)
    _assert_well_formed(results, name)


@pytest.mark.parametrize("name", registry.names())
def test_catalog_entry_is_complete(name: str) -> None:
    entry = registry.describe(name)
    assert entry["family"] and entry["summary"], f"{name} needs a family and a docstring"
    assert name.split(".")[0] == entry["family"] or entry["family"] in name
    for metric, values in entry["thresholds"].items():
        assert 1 <= len(values) <= 3, metric
        assert list(values) == sorted(values) or metric in registry.get(name).lower_is_worse
