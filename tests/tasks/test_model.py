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


def needs_arguments(path: str) -> object:
    """A model factory with the wrong signature (it wants an argument)."""
    return load()


def test_a_factory_that_needs_arguments_is_named_with_the_contract() -> None:
    """The wrong signature is a user mistake (ModelError, exit 2), not an internal error."""
    with pytest.raises(
        ModelError, match=r"missing a required argument: 'path'.*callable taking no arguments"
    ):
        load_model("tests.tasks.test_model:needs_arguments")


def test_the_model_module_is_found_in_the_spec_folder(tmp_path) -> None:
    """`model: my_model:build` next to the spec imports without installing anything."""
    (tmp_path / "spec_folder_model.py").write_text(
        "from sklearn.dummy import DummyClassifier\n"
        "def build():\n"
        "    return DummyClassifier(strategy='constant', constant=1).fit([[0], [1]], [0, 1])\n"
    )
    model = load_model("spec_folder_model:build", tmp_path)
    assert model.predict([[5]]).tolist() == [1]
    with pytest.raises(ModelError, match="No module named 'spec_folder_model_absent'"):
        load_model("spec_folder_model_absent:build", tmp_path)


def test_the_model_sees_the_columns_it_was_trained_on() -> None:
    """A model trained with a column the monitor does not watch still gets that column."""
    from sklearn.linear_model import LogisticRegression

    train = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "unwatched": [1.0, 0.0, 1.0, 0.0]})
    model = LogisticRegression().fit(train, [0, 0, 1, 1])
    frame = train.assign(y=[0, 0, 1, 1])
    scored, _ = score_frame(model, frame, Columns(numeric=("a",), label="y"))
    np.testing.assert_allclose(scored["score"], model.predict_proba(train)[:, 1])
    with pytest.raises(ModelError, match=r"trained on column\(s\) \['unwatched'\]"):
        score_frame(model, frame.drop(columns="unwatched"), Columns(numeric=("a",), label="y"))
