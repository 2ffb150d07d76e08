"""Scoring batches with the spec's model when they carry no predictions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from driftline.checks.columns import Columns, infer_columns
from driftline.checks.errors import CheckInputError
from driftline.tasks.references.model import ModelError, load_model, roles_for_model, score_frame
from tests.tasks.model_fixture import load

COLS = Columns(numeric=("a", "b"), label="y")


def test_model_adds_prediction_and_score_columns() -> None:
    frame = pd.DataFrame({"a": [1.0, -2.0, 0.5], "b": [0.5, -1.0, -3.0], "y": [1, 0, 0]})
    scored, columns = score_frame(load_model("tests.tasks.model_fixture:load"), frame, COLS)
    reference = load()
    np.testing.assert_array_equal(scored["prediction"], reference.predict(frame[["a", "b"]]))
    np.testing.assert_allclose(scored["score"], reference.predict_proba(frame[["a", "b"]])[:, 1])
    assert (columns.prediction, columns.score) == ("prediction", "score")


def test_the_data_s_predictions_are_kept_and_the_model_fills_the_score() -> None:
    """A monitor that stores its predictions and names the model gets the model's score beside them."""
    frame = pd.DataFrame({"a": [1.0, -2.0], "b": [2.0, 0.5], "p": [0, 0]})
    scored, columns = score_frame(load(), frame, Columns(numeric=("a", "b"), prediction="p"))
    np.testing.assert_array_equal(scored["p"], [0, 0])
    np.testing.assert_allclose(scored["score"], load().predict_proba(frame[["a", "b"]].to_numpy())[:, 1])
    assert (columns.prediction, columns.score) == ("p", "score")


class Unusable:
    """A model that must not be called: every output role is already in the data."""

    def predict(self, inputs: object) -> None:
        raise AssertionError("called")

    predict_proba = predict


def test_a_frame_carrying_every_output_is_not_scored() -> None:
    frame = pd.DataFrame({"a": [1.0], "p": [0], "s": [0.2]})
    cols = Columns(numeric=("a",), prediction="p", score="s")
    scored, columns = score_frame(Unusable(), frame, cols)
    assert scored is frame and columns == cols


def test_a_declared_output_column_the_data_lack_is_filled_by_the_model_under_its_name() -> None:
    """The reference may lack the predictions production stores: the model fills them, as `p`."""
    frame = pd.DataFrame({"a": [1.0, -2.0, 0.5], "b": [0.5, -1.0, -3.0], "y": [1, 0, 0]})
    given = {"label": "y", "prediction": "p", "score": "s"}
    with pytest.raises(CheckInputError, match=r"\['p', 's'\] named in the column roles are not in the data"):
        infer_columns(frame, given)
    roles = roles_for_model(frame, given)
    assert (roles.prediction, roles.score, roles.features) == ("p", "s", ("a", "b"))
    scored, columns = score_frame(load(), frame, roles)
    np.testing.assert_array_equal(scored["p"], load().predict(frame[["a", "b"]].to_numpy()))
    np.testing.assert_allclose(scored["s"], load().predict_proba(frame[["a", "b"]].to_numpy())[:, 1])
    assert columns == roles


def test_a_declared_score_a_regressor_cannot_fill_is_named() -> None:
    from sklearn.linear_model import LinearRegression

    model = LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0])
    frame = pd.DataFrame({"a": [0.5]})
    with pytest.raises(ModelError, match=r"columns.score 's' is not in the data and the model \(model:\)"):
        score_frame(model, frame, Columns(numeric=("a",), score="s"))
    scored, columns = score_frame(model, frame, Columns(numeric=("a",)))
    assert scored["prediction"].tolist() == pytest.approx([0.5]) and columns.score is None


@pytest.mark.parametrize(
    ("columns", "role", "other"),
    [
        (Columns(numeric=("a", "b"), ignore=("prediction",)), "prediction", "ignore"),
        (Columns(numeric=("a", "b", "score")), "score", "numeric"),
    ],
)
def test_a_model_output_column_another_role_names_is_refused(columns: Columns, role: str, other: str) -> None:
    """The model (trained on `a` and `b` by name) must not overwrite a column that plays another role."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression().fit(pd.DataFrame({"a": [0.0, 1.0], "b": [1.0, 0.0]}), [0, 1])
    frame = pd.DataFrame({"a": [1.0], "b": [0.0], "prediction": [1], "score": [0.3]})
    message = rf"model: the model's {role} is written to column '{role}', which columns.{other} already names"
    with pytest.raises(ModelError, match=message + rf".*columns.{role}"):
        score_frame(model, frame, columns)


def test_a_feature_named_score_is_no_conflict_for_a_model_without_scores() -> None:
    from sklearn.linear_model import LinearRegression

    model = LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0])
    frame = pd.DataFrame({"score": [0.5, 2.0]})
    scored, columns = score_frame(model, frame, Columns(numeric=("score",)))
    assert scored["prediction"].tolist() == pytest.approx([0.5, 2.0]) and columns.score is None


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
