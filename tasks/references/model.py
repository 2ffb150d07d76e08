"""The monitored model (`model:`, `--model`, `evaluate(model=...)`): loaded from an import path and
scoring the reference and every batch alike, filling the output roles the data do not carry."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns, infer_columns
from driftline.checks.custom import ImportPathError, imported


class ModelError(ValueError):
    """The model import path cannot be loaded or the model cannot score the data."""


MODEL_CONTRACT = (
    "`model:` names `package.module:attribute`, either a fitted estimator (an object with `predict`) "
    "or a callable taking no arguments that returns one"
)
# The roles the model's outputs fill, each with the column it is written to when `columns:` names none:
# `prediction` from `predict`, `score` (the second class's probability) from a binary `predict_proba`.
OUTPUT_COLUMNS = {"prediction": "prediction", "score": "score"}
# Roles that name a column without taking it from the other roles (`protected` marks a feature).
NON_CLAIMING_ROLES = frozenset({"protected", "task"})


def load_model(import_path: str, base_dir: Path | None = None) -> Any:
    """The fitted estimator `package.module:attribute` names (see MODEL_CONTRACT).

    The module is looked up in `base_dir` (the spec's folder, or the working directory) first, then on
    the usual import path.
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


def resolved_model(model: Any, base_dir: Path | None = None) -> Any:
    """`model` itself, or the model its import path names (`load_model`); None stays None."""
    return load_model(model, base_dir) if isinstance(model, str) else model


def with_model(check: Check, model: Any) -> Check:
    """The check given `model` when it calls the model itself (`attach_model`); others unchanged."""
    return check.attach_model(model) if model is not None and hasattr(check, "attach_model") else check


def output_column_taken(roles: Mapping[str, Any], role: str) -> str | None:
    """The role (`numeric`, `ignore`, ...) that already names the column the model's `role` output
    would be written to when `columns:` leaves `role` out; None when it is free or `role` is named."""
    if roles.get(role):
        return None
    column = OUTPUT_COLUMNS[role]
    for other, value in roles.items():
        if other == role or other in NON_CLAIMING_ROLES:
            continue
        if column in ([value] if isinstance(value, str) else list(value or ())):
            return other
    return None


def output_conflict(role: str, other: str) -> str:
    """Why the model's `role` output cannot be written, its column being `other`'s, and the way out."""
    column = OUTPUT_COLUMNS[role]
    return (
        f"the model's {role} is written to column {column!r}, which columns.{other} already "
        f"names; name the model's column with columns.{role} (e.g. `{role}: model_{role}`)"
    )


def roles_for_model(frame: pd.DataFrame, given: Mapping[str, Any] | None) -> Columns:
    """The roles `infer_columns` gives, except that a declared prediction or score column the frame
    lacks is no error: the model fills it (`score_frame`)."""
    given = dict(given or {})
    filled = {
        role: given[role]
        for role in OUTPUT_COLUMNS
        if isinstance(given.get(role), str) and given[role] not in frame.columns
    }
    return replace(infer_columns(frame, {**given, **dict.fromkeys(filled)}), **filled)


def model_features(model: Any, columns: Columns) -> list[str]:
    """The columns the model was trained on (`feature_names_in_`), else the monitored features."""
    names = getattr(model, "feature_names_in_", None)
    return [str(n) for n in names] if names is not None else list(columns.features)


def scores_text(model: Any, columns: Columns) -> bool:
    """Whether the model scores the raw strings of the one text column: it records no
    `feature_names_in_` while `columns.text` is set."""
    return bool(columns.text) and getattr(model, "feature_names_in_", None) is None


def model_input_columns(model: Any, columns: Columns) -> list[str]:
    """The columns the model is called on: the text column of a text model, else its features."""
    if scores_text(model, columns):
        if len(columns.text) != 1:
            raise ModelError(f"a text model scores one text column; columns.text lists {list(columns.text)}")
        return [columns.text[0]]
    return model_features(model, columns)


def model_input(model: Any, frame: pd.DataFrame, columns: Columns) -> Any:
    """What the model is called on: the raw strings of the text column for a text model (see
    `scores_text`), else the feature columns."""
    names = model_input_columns(model, columns)
    if scores_text(model, columns):
        return frame[names[0]].fillna("").astype(str).tolist()
    absent = [c for c in names if c not in frame.columns]
    if absent:
        raise ModelError(f"the model was trained on column(s) {absent}, which the data does not have")
    return frame[names]


def output_columns(columns: Columns) -> dict[str, str]:
    """Each output role and its column: the one `columns` names, else `OUTPUT_COLUMNS`'."""
    return {role: getattr(columns, role) or column for role, column in OUTPUT_COLUMNS.items()}


def score_frame(model: Any, frame: pd.DataFrame, columns: Columns) -> tuple[pd.DataFrame, Columns]:
    """`frame` with the model's outputs in the output roles' columns it lacks, and the roles naming them.

    A role's column the data carry is the data's; the model fills the others: `prediction` always,
    `score` for a binary classifier (`predict_proba`'s second column). A declared score column the data
    lack and the model cannot fill, or an output column another role already names, is a ModelError.
    """
    roles = columns.to_dict()
    taken = {role: other for role in OUTPUT_COLUMNS if (other := output_column_taken(roles, role))}
    targets = output_columns(columns)
    wanted = {
        role: column
        for role, column in targets.items()
        if (role in taken or column not in frame.columns)
        and (role != "score" or columns.score or hasattr(model, "predict_proba"))
    }
    outputs = model_outputs(model, model_input(model, frame, columns), wanted) if wanted else {}
    if "score" in wanted and "score" not in outputs and columns.score:
        raise ModelError(
            f"columns.score {columns.score!r} is not in the data and the model (model:) gives no score: "
            "only a binary classifier's predict_proba does; leave `score` out of `columns:`"
        )
    conflict = next((role for role in outputs if role in taken), None)
    if conflict:
        raise ModelError(f"model: {output_conflict(conflict, taken[conflict])}")
    if outputs:
        frame = frame.assign(**{wanted[role]: values for role, values in outputs.items()})
    named: dict[str, Any] = {
        role: column for role, column in targets.items() if role not in taken and column in frame
    }
    return frame, replace(columns, **named)


def model_outputs(model: Any, inputs: Any, wanted: Mapping[str, str]) -> dict[str, np.ndarray]:
    """The model's values of the `wanted` roles it gives (`score` only from a binary `predict_proba`)."""
    outputs: dict[str, np.ndarray] = {}
    try:
        if "prediction" in wanted:
            outputs["prediction"] = np.asarray(model.predict(inputs))
        if "score" in wanted and hasattr(model, "predict_proba"):
            proba = np.asarray(model.predict_proba(inputs))
            if proba.ndim == 2 and proba.shape[1] == 2:
                outputs["score"] = proba[:, 1]
    except Exception as exc:
        raise ModelError(f"the model could not score the data: {type(exc).__name__}: {exc}") from exc
    return outputs
