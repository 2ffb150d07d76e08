"""Column roles (label, prediction, score, features, ...) and their inference from a frame."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from driftline.checks.errors import CheckInputError

Task = Literal["binary", "multiclass", "regression"]

LABEL_NAMES = ("label", "target", "y", "y_true", "ground_truth", "actual")
PREDICTION_NAMES = ("prediction", "predicted_label", "y_pred", "pred")
SCORE_NAMES = ("score", "predicted_probability", "probability", "proba", "y_score")
ID_NAMES = ("id", "row_id", "uid")
TIMESTAMP_NAMES = ("timestamp", "ts", "event_time", "date")
SINGLE_ROLES = ("id", "timestamp", "label", "prediction", "score", "query_id")
LIST_ROLES = ("categorical", "numeric", "text", "protected", "class_scores")


@dataclass(frozen=True)
class Columns:
    """Which column plays which role. Features are `numeric` + `categorical` (+ `text`)."""

    id: str | None = None
    timestamp: str | None = None
    label: str | None = None
    prediction: str | None = None
    score: str | None = None
    query_id: str | None = None
    categorical: tuple[str, ...] = ()
    numeric: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    class_scores: tuple[str, ...] = ()
    task: Task | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def features(self) -> tuple[str, ...]:
        """Numeric then categorical feature columns."""
        return self.numeric + self.categorical

    def role_columns(self) -> tuple[str, ...]:
        """Every column named by a single-column role."""
        return tuple(c for c in (getattr(self, r) for r in SINGLE_ROLES) if c)

    def all_columns(self) -> tuple[str, ...]:
        """Every column the roles mention, without duplicates, in a stable order."""
        names = list(self.role_columns())
        for role in LIST_ROLES:
            names.extend(getattr(self, role))
        return tuple(dict.fromkeys(names))

    def restrict(self, names: Sequence[str]) -> Columns:
        """The same roles with the feature lists narrowed to `names` (unknown names are an error)."""
        known = set(self.numeric) | set(self.categorical) | set(self.text)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise CheckInputError(f"column(s) {unknown} are not numeric, categorical or text features")
        keep = set(names)
        return replace(
            self,
            numeric=tuple(c for c in self.numeric if c in keep),
            categorical=tuple(c for c in self.categorical if c in keep),
            text=tuple(c for c in self.text if c in keep),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (lists for the multi-column roles)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


def _find(frame_columns: Sequence[str], candidates: Sequence[str]) -> str | None:
    lowered = {c.lower(): c for c in frame_columns}
    return next((lowered[n] for n in candidates if n in lowered), None)


def infer_task(label: pd.Series) -> Task:
    """binary for two classes, multiclass for a few discrete classes, regression for many floats."""
    values = label.dropna()
    n_unique = values.nunique()
    if n_unique <= 2:
        return "binary"
    if pd.api.types.is_float_dtype(values) and not np.all(np.mod(values.to_numpy(), 1) == 0):
        return "regression"
    if pd.api.types.is_numeric_dtype(values) and n_unique > 20:
        return "regression"
    return "multiclass"


def infer_columns(frame: pd.DataFrame, given: Mapping[str, Any] | None = None) -> Columns:
    """Fill the roles not in `given` from column names and dtypes.

    Given roles win. Label, prediction, score, id and timestamp are found by common names;
    the remaining columns become numeric (number dtypes) or categorical (everything else).
    Columns in `given["text"]` stay text. Unknown role names and absent columns are errors.
    """
    given = dict(given or {})
    allowed = set(SINGLE_ROLES) | set(LIST_ROLES) | {"task", "extra"}
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise CheckInputError(f"unknown column role(s) {unknown}; known roles: {sorted(allowed)}")
    for role in LIST_ROLES:
        if isinstance(given.get(role), str):
            given[role] = [given[role]]
    missing = [c for c in _mentioned(given) if c not in frame.columns]
    if missing:
        raise CheckInputError(f"column(s) {missing} named in the column roles are not in the data")

    names = list(frame.columns)
    guesses = {
        "label": LABEL_NAMES,
        "prediction": PREDICTION_NAMES,
        "score": SCORE_NAMES,
        "id": ID_NAMES,
        "timestamp": TIMESTAMP_NAMES,
    }
    roles: dict[str, Any] = {}
    for role in SINGLE_ROLES:
        roles[role] = (
            given.get(role) if role in given else (_find(names, guesses[role]) if role in guesses else None)
        )
    for role in LIST_ROLES:
        roles[role] = tuple(given.get(role) or ())

    taken = (
        {c for c in roles.values() if isinstance(c, str)} | set(roles["text"]) | set(roles["class_scores"])
    )
    rest = [c for c in names if c not in taken]
    if "numeric" not in given:
        roles["numeric"] = tuple(
            c
            for c in rest
            if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
        )
    if "categorical" not in given:
        roles["categorical"] = tuple(c for c in rest if c not in roles["numeric"])
    if not given.get("protected"):
        roles["protected"] = ()
    task = given.get("task")
    if task is None and roles["label"]:
        task = infer_task(frame[roles["label"]])
    return Columns(**roles, task=task, extra=given.get("extra") or {})


def _mentioned(given: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    for role in SINGLE_ROLES:
        if given.get(role):
            names.append(given[role])
    for role in LIST_ROLES:
        names.extend(given.get(role) or ())
    return names
