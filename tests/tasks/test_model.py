"""Scoring batches with the spec's model when they carry no predictions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from driftline.checks.columns import Columns
from driftline.tasks.model import ModelError, load_model, score_frame
from tests.tasks.model_fixture import load

COLS = Columns(numeric=("a", "b"), label="y")


def test_model_adds_prediction_and_score_columns() -> None:
    frame = pd.DataFrame({"a": [1.0, -2.0, 0.5], "b": [0.5, -1.0, -3.0], "y": [1, 0, 0]})
    scored, columns = score_frame(load_model("tests.tasks.model_fixture:load"), frame, COLS)
    reference = load()
    np.testing.assert_array_equal(scored["prediction"], reference.predict(frame[["a", "b"]]))
    np.testing.assert_allclose(scored["score"], reference.predict_proba(frame[["a", "b"]])[:, 1])
    assert (columns.prediction, columns.score) == ("prediction", "score")


def test_existing_predictions_are_kept() -> None:
    frame = pd.DataFrame({"a": [1.0], "b": [2.0], "p": [0]})
    cols = Columns(numeric=("a", "b"), prediction="p")
    scored, columns = score_frame(load(), frame, cols)
    assert scored is frame and columns is cols


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_colon", "expected the form package.module:callable"),
        ("tests.tasks.nowhere:load", "No module named 'tests.tasks.nowhere'"),
        ("tests.tasks.model_fixture:missing", "has no attribute 'missing'"),
    ],
)
def test_bad_import_paths_are_named(path: str, message: str) -> None:
    with pytest.raises(ModelError, match=message) as info:
        load_model(path)
    assert path in str(info.value)


def test_model_that_cannot_score_names_the_problem() -> None:
    frame = pd.DataFrame({"a": ["x"], "b": [1.0]})
    with pytest.raises(ModelError, match="could not score the data: ValueError"):
        score_frame(load(), frame, COLS)
