"""Every registered check through the same battery of bad input (like scikit-learn's estimator checks).

A check must answer each case with correct results or with `skipped`/`error` results that give a
reason, never with an unexpected exception, and its results must be JSON-serialisable. It must also
give the same results for the same batch rows in any order, from a pickled profile and from a second
fit, and leave the reference and the batch unmodified.
"""

from __future__ import annotations

import json
import pickle
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
    text=("review",),
    protected=("sex",),
    class_scores=("p0", "p1"),
    task="binary",
)
WORDS = np.array(["good", "bad", "film", "the", "plot", "was", "not", "great", "she", "he", "Paris", "!"])


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
            "review": pd.Series(
                [" ".join(rng.choice(WORDS, size=rng.integers(0, 9))) for _ in range(n)], dtype="str"
            ),
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


# --- profile and row-order invariants -----------------------------------------------------------------

# Details listing rows or values in order of appearance: compared as collections, not sequences.
APPEARANCE_ORDER = frozenset({"failing_ids", "unseen_examples"})


def _same(a: object, b: object, where: str) -> None:
    """Equal values, floats to 1e-9 relative, NaN equal to NaN."""
    if isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None, where
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12, nan_ok=True), where
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def _normalised(result: dict) -> dict:
    """A result with order-of-appearance listings as sorted collections (truncated ones by size only)."""
    details = dict(result["details"])
    for key in APPEARANCE_ORDER & details.keys():
        values = details[key]
        total = details.get(f"{key}_total", len(values))
        details[key] = len(values) if total > len(values) else sorted(map(repr, values))
    return {**result, "details": details}


def _by_target(results: list) -> dict[tuple[str, str], dict]:
    """Results as plain dicts keyed by (check, target): the order of the results is not compared."""
    return {(r.check, r.target): _normalised(r.to_dict()) for r in results}


def _assert_same_results(left: list, right: list) -> None:
    a, b = _by_target(left), _by_target(right)
    assert sorted(a) == sorted(b) and len(a) == len(left) and len(b) == len(right)
    for key in a:
        _same(a[key], b[key], f"{key[0]}[{key[1]}]")


def _shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The same rows (index labels kept) in another order."""
    return frame.iloc[np.random.default_rng(seed).permutation(len(frame))]


@pytest.mark.parametrize("case", ["valid", "inf values"])
@pytest.mark.parametrize("name", registry.names())
def test_results_do_not_depend_on_row_order(name: str, case: str) -> None:
    check = registry.create(name)
    current = CASES[case](make_frame(300, seed=1))
    profile = check.fit(REFERENCE, COLUMNS)
    expected = run_check(check, current, COLUMNS, profile=profile, strict=True)
    for seed in (1, 2):
        shuffled = run_check(check, _shuffled(current, seed), COLUMNS, profile=profile, strict=True)
        _assert_same_results(expected, shuffled)


@pytest.mark.parametrize("name", registry.names())
def test_profile_survives_pickling_and_fit_is_idempotent(name: str) -> None:
    check = registry.create(name)
    current = make_frame(300, seed=1)
    first = check.fit(REFERENCE, COLUMNS)
    expected = run_check(check, current, COLUMNS, profile=first, strict=True)
    restored = pickle.loads(pickle.dumps(first))
    _assert_same_results(expected, run_check(check, current, COLUMNS, profile=restored, strict=True))
    again = check.fit(REFERENCE, COLUMNS)
    _assert_same_results(expected, run_check(check, current, COLUMNS, profile=again, strict=True))


@pytest.mark.parametrize("case", ["valid", "inf values", "missing columns"])
@pytest.mark.parametrize("name", registry.names())
def test_inputs_are_left_unmodified(name: str, case: str) -> None:
    reference, current = REFERENCE.copy(deep=True), CASES[case](make_frame(300, seed=1)).copy(deep=True)
    reference_before, current_before = reference.copy(deep=True), current.copy(deep=True)
    run_check(registry.create(name), current, COLUMNS, reference=reference, strict=True)
    pd.testing.assert_frame_equal(reference, reference_before)
    pd.testing.assert_frame_equal(current, current_before)
