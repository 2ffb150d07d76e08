"""Column roles (label, prediction, score, features, ...) and their inference from a frame."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from driftline.checks.errors import CheckInputError

Task = Literal["binary", "multiclass", "regression"]

LABEL_NAMES = ("label", "target", "y", "y_true", "ground_truth", "actual")
PREDICTION_NAMES = ("prediction", "predicted_label", "y_pred", "pred")
SCORE_NAMES = ("score", "predicted_probability", "probability", "proba", "y_score")
ID_NAMES = ("id", "row_id", "uid", "rownames", "row_names", "row.names", "index", "unnamed: 0", "level_0")
TIMESTAMP_NAMES = ("timestamp", "ts", "event_time", "date")
_NAME_GUESSES = {
    "label": LABEL_NAMES,
    "prediction": PREDICTION_NAMES,
    "score": SCORE_NAMES,
    "id": ID_NAMES,
    "timestamp": TIMESTAMP_NAMES,
}
SINGLE_ROLES = ("id", "timestamp", "label", "prediction", "score", "query_id")
# `time` lists the date and time columns: never features, so out of drift unless declared as one.
# `ignore` lists the columns kept out of every role (inference never gives them one).
LIST_ROLES = ("categorical", "numeric", "text", "time", "protected", "class_scores", "ignore")
FEATURE_KINDS = ("numeric", "categorical", "text")
# Every key `columns:` accepts.
ROLE_KEYS = (*SINGLE_ROLES, *LIST_ROLES, "task")
# Values of Parquet list, map and struct columns as pandas reads them.
NESTED_TYPES = (list, tuple, dict, set, frozenset, np.ndarray)
MIXED_KINDS = ("mixed", "mixed-integer")  # what `infer_dtype` says of a column holding such values
# A categorical column looks like an identifier (`identifier_note`) with at least this many distinct
# values making at least this share of its reference rows, or with this many rows all distinct.
IDENTIFIER_LEVELS = 1000
IDENTIFIER_SHARE = 0.5
IDENTIFIER_UNIQUE_ROWS = 100
# ISO 8601 dates, with an optional time of day and offset, as text (a CSV's dates).
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")


@dataclass(frozen=True)
class Columns:
    """Which column plays which role. Features are `numeric` + `categorical` (+ `text`); `time` lists
    the date and time columns (no feature, so no drift); `ignore` lists the columns that were kept out
    of every role."""

    id: str | None = None
    timestamp: str | None = None
    label: str | None = None
    prediction: str | None = None
    score: str | None = None
    query_id: str | None = None
    categorical: tuple[str, ...] = ()
    numeric: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    time: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    class_scores: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    task: Task | None = None

    @property
    def features(self) -> tuple[str, ...]:
        """Numeric then categorical feature columns."""
        return self.numeric + self.categorical

    def required(self, role: str) -> str:
        """The column of a single-column role a check needs (its `needs` screen a missing one out first)."""
        column = getattr(self, role)
        if column is None:
            raise CheckInputError(f"no {role} column is declared")
        return column

    def role_columns(self) -> tuple[str, ...]:
        """Every column named by a single-column role."""
        return tuple(c for c in (getattr(self, r) for r in SINGLE_ROLES) if c)

    def all_columns(self) -> tuple[str, ...]:
        """Every column the roles put to use (not the ignored ones), without duplicates, in a stable order."""
        names = list(self.role_columns())
        for role in LIST_ROLES:
            if role != "ignore":
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

    def without(self, names: Collection[str]) -> Columns:
        """The same roles with the feature columns `names` left out of numeric, categorical and text."""
        drop = set(names)
        kept: dict[str, Any] = {k: tuple(c for c in getattr(self, k) if c not in drop) for k in FEATURE_KINDS}
        return replace(self, **kept)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (lists for the multi-column roles)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Columns:
        """The roles of a `to_dict` form (lists back to tuples)."""
        roles: dict[str, Any] = {k: tuple(v) if k in LIST_ROLES else v for k, v in data.items()}
        return cls(**roles)


def _find(frame_columns: Sequence[str], candidates: Sequence[str]) -> str | None:
    """The first column whose lower-cased name is one of `candidates`, in their order."""
    lowered = {str(c).lower(): c for c in frame_columns}
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

    Given roles win: a column named in a declared role (other than `protected`, which marks a
    feature without taking it) is never inferred into another role, and `ignore` columns into none.
    Label, prediction, score, id and timestamp are found by common names; the id may also be an
    integer column that is unique and monotonic (a row number). Row numbers, id-like names, dates and
    times (`time`) and nested values (lists, arrays, mappings) never become features; the remaining
    columns become numeric (number dtypes) or categorical (the rest). Unknown role names, absent
    columns and a column declared under two feature kinds are errors.
    """
    given = _validated_roles(frame, given or {})
    claimed = _claimed(given)
    free = [c for c in frame.columns if c not in claimed]
    roles: dict[str, Any] = {role: given.get(role) for role in SINGLE_ROLES}
    for role, names in _NAME_GUESSES.items():
        if role not in given:
            roles[role] = _find(free, names)
    if "id" not in given and roles["id"] is None:
        roles["id"] = next((c for c in free if is_row_number(frame[c])), None)
    for role in LIST_ROLES:
        roles[role] = tuple(given.get(role) or ())
    taken = {c for c in roles.values() if isinstance(c, str)}
    rest = [c for c in free if c not in taken and not _is_id_like(frame[c]) and not is_nested(frame[c])]
    times = tuple(c for c in rest if is_time(frame[c]))
    if "time" not in given:
        roles["time"] = times
    rest = [c for c in rest if c not in times]
    if "numeric" not in given:
        roles["numeric"] = tuple(c for c in rest if _is_number(frame[c]))
    if "categorical" not in given:
        roles["categorical"] = tuple(c for c in rest if c not in roles["numeric"])
    task = given.get("task")
    if task is None and roles["label"] and not is_nested(frame[roles["label"]]):
        task = infer_task(frame[roles["label"]])
    return Columns(**roles, task=task)


def split_roles(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(check parameters, column roles) of one flat mapping: `label=...`, `numeric=[...]` and the like
    are column roles, the rest configure the check (as `driftline evaluate --param` takes them)."""
    return (
        {k: v for k, v in params.items() if k not in ROLE_KEYS},
        {k: v for k, v in params.items() if k in ROLE_KEYS},
    )


def is_row_number(values: pd.Series) -> bool:
    """True for an integer column of unique values in increasing or decreasing order (a row number)."""
    if not pd.api.types.is_integer_dtype(values) or len(values) < 2 or values.hasnans:
        return False
    return values.is_unique and (values.is_monotonic_increasing or values.is_monotonic_decreasing)


def is_nested(values: pd.Series) -> bool:
    """True for a column holding lists, arrays or mappings (a Parquet list, map or struct column):
    such values have no order, categories or hash, so no feature check can take them."""
    if values.dtype != object or pd.api.types.infer_dtype(values, skipna=True) not in MIXED_KINDS:
        return False  # values of one plain kind, told apart without a Python loop
    return any(isinstance(v, NESTED_TYPES) for v in values)


def nested_text(value: Any) -> Any:
    """A nested value as JSON text (keys sorted), so that it can be hashed the same in every process;
    other values unchanged."""
    return json.dumps(value, sort_keys=True, default=_json_form) if isinstance(value, NESTED_TYPES) else value


def _json_form(value: Any) -> Any:
    """What `json` cannot write itself: arrays and numpy scalars as lists and numbers, sets sorted."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return str(value)


def is_time(values: pd.Series) -> bool:
    """True for dates and times: a datetime dtype, `datetime`/`date` objects (a Parquet date column) or
    text that is all ISO 8601 dates (a CSV's); each value would otherwise be a category of its own."""
    if pd.api.types.is_datetime64_any_dtype(values):
        return True
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind in ("datetime", "date"):
        return True
    present = values.dropna()
    if kind != "string" or present.empty:
        return False
    head = present.iloc[:100]  # most text columns fail on their first values: skip the full scan
    return bool(head.str.fullmatch(ISO_DATE).all() and present.str.fullmatch(ISO_DATE).all())


def identifier_note(column: str, distinct: int, rows: int) -> str | None:
    """Why a categorical column looks like an identifier (near-unique with many values, or every
    value unique): its categories say nothing a drift check can grade; None when it does not."""
    many = distinct >= IDENTIFIER_LEVELS and distinct >= IDENTIFIER_SHARE * rows
    unique = rows >= IDENTIFIER_UNIQUE_ROWS and distinct == rows
    if not (many or unique):
        return None
    return (
        f"column {column!r} looks like an identifier: {distinct:,} distinct values in {rows:,} reference "
        f"rows; leave it out of drift checks with `columns: ignore: [{column!r}]`"
    )


def _is_id_like(values: pd.Series) -> bool:
    """A row identifier by name (`rownames`, `Unnamed: 0`, ...) or by content (a row number)."""
    return str(values.name).strip().lower() in ID_NAMES or is_row_number(values)


def _is_number(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _validated_roles(frame: pd.DataFrame, given: Mapping[str, Any]) -> dict[str, Any]:
    """`given` with list roles as tuples; unknown roles, absent columns and double kinds are errors."""
    unknown = sorted(set(given) - set(ROLE_KEYS))
    if unknown:
        raise CheckInputError(f"unknown column role(s) {unknown}; known roles: {sorted(ROLE_KEYS)}")
    roles = dict(given)
    for role in LIST_ROLES:
        if role in roles:
            value = roles[role]
            roles[role] = (value,) if isinstance(value, str) else tuple(value or ())
    missing = [c for c in _mentioned(roles) if c not in frame.columns]
    if missing:
        raise CheckInputError(f"column(s) {missing} named in the column roles are not in the data")
    _reject_double_kinds(roles)
    return roles


def _reject_double_kinds(roles: Mapping[str, Any]) -> None:
    """A column declared under two of numeric, categorical and text is an error naming both."""
    seen: dict[str, str] = {}
    for kind in FEATURE_KINDS:
        for name in roles.get(kind) or ():
            if name in seen and seen[name] != kind:
                raise CheckInputError(f"column {name!r} is declared both {seen[name]} and {kind}; pick one")
            seen[name] = kind


def _claimed(given: Mapping[str, Any]) -> set[str]:
    """Columns a declared role has taken: no inference may give them another role."""
    return set(_mentioned({k: v for k, v in given.items() if k != "protected"}))


def _mentioned(given: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    for role in SINGLE_ROLES:
        if given.get(role):
            names.append(given[role])
    for role in LIST_ROLES:
        names.extend(given.get(role) or ())
    return names
