"""Scoring a batch with the monitored model when the data has no prediction columns."""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks.columns import Columns


class ModelError(ValueError):
    """The model import path cannot be loaded or the model cannot score the data."""


def load_model(import_path: str) -> Any:
    """Call `package.module:callable` and return the fitted estimator it gives."""
    module_name, _, attribute = import_path.partition(":")
    if not module_name or not attribute:
        raise ModelError(f"model {import_path!r}: expected the form package.module:callable")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ModelError(f"model {import_path!r}: {exc}") from exc
    return factory() if callable(factory) and not hasattr(factory, "predict") else factory


def score_frame(model: Any, frame: pd.DataFrame, columns: Columns) -> tuple[pd.DataFrame, Columns]:
    """Add `prediction` (and `score` for a binary classifier) columns the roles lack, from `model`."""
    if columns.prediction and columns.prediction in frame:
        return frame, columns
    features = list(columns.features)
    try:
        predicted = np.asarray(model.predict(frame[features]))
        frame = frame.assign(prediction=predicted)
        columns = replace(columns, prediction="prediction")
        if hasattr(model, "predict_proba") and columns.score is None:
            proba = np.asarray(model.predict_proba(frame[features]))
            if proba.ndim == 2 and proba.shape[1] == 2:
                frame = frame.assign(score=proba[:, 1])
                columns = replace(columns, score="score")
    except Exception as exc:
        raise ModelError(f"the model could not score the data: {type(exc).__name__}: {exc}") from exc
    return frame, columns
