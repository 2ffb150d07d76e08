"""Column-role inference and validation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from driftline.checks.columns import infer_columns, infer_task
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
