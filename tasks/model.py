"""Scoring a batch with the monitored model when the data has no prediction columns."""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks.columns import Columns
from driftline.checks.custom import ImportPathError, imported


class ModelError(ValueError):
    """The model import path cannot be loaded or the model cannot score the data."""


MODEL_CONTRACT = (
    "`model:` names `package.module:attribute`, either a fitted estimator (an object with `predict`) "
    "or a callable taking no arguments that returns one"
)


def load_model(import_path: str, base_dir: Path | None = None) -> Any:
    """The fitted estimator `package.module:attribute` names (see MODEL_CONTRACT).

    The module is looked up in the spec's folder (`base_dir`) first, then on the usual import path.
    """
    try:
        factory = imported(import_path, base_dir, "package.module:callable")
    except ImportPathError as exc:
        raise ModelError(f"model {import_path!r}: {exc}") from exc
    if hasattr(factory, "predict"):
        return factory
    if not callable(factory):
        raise ModelError(
            f"model {import_path!r}: {type(factory).__name__} is neither an estimator nor callable"
        )
    _require_no_arguments(factory, import_path)
    model = factory()
    if not hasattr(model, "predict"):
        raise ModelError(f"model {import_path!r}: returned {type(model).__name__}, which has no predict()")
    return model


def _require_no_arguments(factory: Any, import_path: str) -> None:
    """A factory that needs arguments is a user mistake named with the expected contract."""
    try:
        inspect.signature(factory).bind()
    except TypeError as exc:
        raise ModelError(f"model {import_path!r}: {exc}; {MODEL_CONTRACT}") from None
    except ValueError:  # builtins without a signature: let the call itself decide
        return


def model_features(model: Any, columns: Columns) -> list[str]:
    """The columns the model was trained on (`feature_names_in_`), else the monitored features."""
    names = getattr(model, "feature_names_in_", None)
    return [str(n) for n in names] if names is not None else list(columns.features)


def model_input(model: Any, frame: pd.DataFrame, columns: Columns) -> Any:
    """What the model is called on: the raw strings of the one text column for a text model (one that
    records no `feature_names_in_` while `columns.text` is set), else the feature columns."""
    if columns.text and getattr(model, "feature_names_in_", None) is None:
        if len(columns.text) != 1:
            raise ModelError(f"a text model scores one text column; columns.text lists {list(columns.text)}")
        return frame[columns.text[0]].fillna("").astype(str).tolist()
    features = model_features(model, columns)
    absent = [c for c in features if c not in frame.columns]
    if absent:
        raise ModelError(f"the model was trained on column(s) {absent}, which the data does not have")
    return frame[features]


def score_frame(model: Any, frame: pd.DataFrame, columns: Columns) -> tuple[pd.DataFrame, Columns]:
    """Add `prediction` (and `score` for a binary classifier) columns the roles lack, from `model`."""
    if columns.prediction and columns.prediction in frame:
        return frame, columns
    inputs = model_input(model, frame, columns)
    try:
        predicted = np.asarray(model.predict(inputs))
        frame = frame.assign(prediction=predicted)
        columns = replace(columns, prediction="prediction")
        if hasattr(model, "predict_proba") and columns.score is None:
            proba = np.asarray(model.predict_proba(inputs))
            if proba.ndim == 2 and proba.shape[1] == 2:
                frame = frame.assign(score=proba[:, 1])
                columns = replace(columns, score="score")
    except Exception as exc:
        raise ModelError(f"the model could not score the data: {type(exc).__name__}: {exc}") from exc
    return frame, columns
