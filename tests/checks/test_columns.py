"""Column-role inference and validation."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pandas as pd
import pytest

from driftline.checks.columns import ROLE_KEYS, Columns, infer_columns, infer_task, split_roles
from driftline.checks.errors import CheckInputError


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "age": [20.0, 30.0, 40.0, 50.0],
            "city": pd.Series(["a", "b", "a", "c"], dtype="str"),
            "grade": pd.Categorical(["x", "y", "x", "y"]),
            "flag": [True, False, True, True],
            "label": [0, 1, 1, 0],
            "predicted_probability": [0.1, 0.9, 0.7, 0.2],
        }
    )


def test_roles_are_inferred_from_names_and_dtypes() -> None:
    cols = infer_columns(frame())
    assert (cols.id, cols.label, cols.score, cols.prediction) == (
        "id",
        "label",
        "predicted_probability",
        None,
    )
    assert cols.numeric == ("age",)
    assert cols.categorical == ("city", "grade", "flag")
    assert cols.task == "binary"


def test_given_roles_win_and_lists_accept_a_string() -> None:
    cols = infer_columns(
        frame(), {"label": "flag", "numeric": ["age"], "categorical": "city", "protected": "city"}
    )
    assert cols.label == "flag" and cols.categorical == ("city",) and cols.protected == ("city",)


def test_unknown_role_and_absent_column_are_named() -> None:
    with pytest.raises(CheckInputError, match=r"unknown column role.*'labels'"):
        infer_columns(frame(), {"labels": "label"})
    with pytest.raises(CheckInputError, match=r"\['nope'\]"):
        infer_columns(frame(), {"label": "nope"})


def test_extra_is_no_role_and_every_role_key_is_a_column_role() -> None:
    with pytest.raises(CheckInputError, match=r"unknown column role.*'extra'"):
        infer_columns(frame(), {"extra": {"team": "risk"}})
    params, roles = split_roles({"label": "label", "task": "binary", "numeric": ["age"], "bins": 5})
    assert params == {"bins": 5} and roles == {"label": "label", "task": "binary", "numeric": ["age"]}
    cols = infer_columns(frame())
    assert {f.name for f in fields(Columns)} == set(ROLE_KEYS) and Columns.from_dict(cols.to_dict()) == cols


def test_restrict_rejects_non_features() -> None:
    cols = infer_columns(frame())
    assert cols.restrict(["age"]).features == ("age",)
    with pytest.raises(CheckInputError, match="label"):
        cols.restrict(["label"])


@pytest.mark.parametrize(
    ("values", "task"),
    [
        ([0, 1, 1, 0], "binary"),
        (["cat", "dog", "bird", "cat"], "multiclass"),
        ([1.0, 2.0, 3.0, 1.0], "multiclass"),
        (np.linspace(0, 1, 50).tolist(), "regression"),
        (list(range(100)), "regression"),
    ],
)
def test_task_inference(values, task) -> None:
    assert infer_task(pd.Series(values)) == task


# --- declared roles win, row numbers and ignored columns are not features ------------------------------


def integer_frame(n: int = 50) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "rownames": np.arange(1, n + 1),
            "zip": rng.integers(10_000, 10_010, n),
            "grade": rng.integers(1, 6, n),
            "income": rng.normal(50_000, 1_000, n),
            "label": rng.integers(0, 2, n),
        }
    )


def test_a_declared_role_wins_over_inference() -> None:
    """Integer columns declared categorical are not also inferred numeric (no feature twice)."""
    cols = infer_columns(integer_frame(), {"categorical": ["zip", "grade"]})
    assert cols.categorical == ("zip", "grade")
    assert cols.numeric == ("income",)
    assert len(set(cols.features)) == len(cols.features)


def test_a_column_declared_in_two_feature_roles_is_an_error() -> None:
    with pytest.raises(CheckInputError, match=r"'grade'.*categorical.*numeric|'grade'.*numeric.*categorical"):
        infer_columns(integer_frame(), {"categorical": ["grade"], "numeric": ["grade", "income"]})


def test_a_declared_column_is_not_guessed_into_a_named_role() -> None:
    frame = integer_frame().rename(columns={"grade": "score"})
    cols = infer_columns(frame, {"numeric": ["score", "income"]})
    assert cols.score is None and cols.numeric == ("score", "income")


def test_protected_marks_a_feature_without_taking_it_away() -> None:
    frame = integer_frame().assign(sex=["F", "M"] * 25)
    cols = infer_columns(frame, {"protected": ["sex"]})
    assert cols.protected == ("sex",) and "sex" in cols.categorical


@pytest.mark.parametrize("name", ["rownames", "Unnamed: 0", "index", "row_id"])
def test_row_number_columns_are_not_features(name: str) -> None:
    frame = integer_frame().rename(columns={"rownames": name})
    cols = infer_columns(frame)
    assert name not in cols.features
    assert cols.features == ("zip", "grade", "income")


def test_a_unique_monotonic_integer_column_becomes_the_id_not_a_feature() -> None:
    frame = integer_frame().rename(columns={"rownames": "n"})
    frame["n"] = frame["n"].to_numpy()[::-1] * 7  # descending, unique, not named like an id
    cols = infer_columns(frame)
    assert cols.id == "n" and "n" not in cols.features
    given = infer_columns(frame.assign(key=np.arange(50)), {"id": "key"})
    assert given.id == "key" and "n" not in given.features


def test_unique_but_unordered_integers_and_floats_stay_features() -> None:
    frame = integer_frame()
    frame["shuffled"] = np.random.default_rng(1).permutation(50)
    frame["ascending_float"] = np.linspace(0.0, 1.0, 50)
    cols = infer_columns(frame)
    assert {"shuffled", "ascending_float"} <= set(cols.numeric)


def test_ignored_columns_are_left_out_of_every_inferred_role() -> None:
    frame = integer_frame().assign(score=0.5)
    cols = infer_columns(frame, {"ignore": ["zip", "score"]})
    assert "zip" not in cols.all_columns() and cols.score is None
    assert cols.features == ("grade", "income") and cols.ignore == ("zip", "score")
    with pytest.raises(CheckInputError, match=r"\['nope'\]"):
        infer_columns(frame, {"ignore": ["nope"]})


def test_unknown_role_names_the_key_and_every_known_role() -> None:
    with pytest.raises(CheckInputError, match=r"\['ignored'\].*known roles: .*'ignore'.*'numeric'"):
        infer_columns(integer_frame(), {"ignored": ["zip"]})
