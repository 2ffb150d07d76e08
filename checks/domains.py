"""The values the label and the model's outputs may hold, learnt from the reference.

Labels {2, -1} or "yes"/"no" where the reference has 0/1, predictions "0"/"1" as text, or
probability scores outside [0, 1] would otherwise be scored as if nothing were wrong: every row a
negative, a log loss of clipped values. The schema check names such a column once, before the other
checks run, and the checks that read it are stopped with that problem as their reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns, infer_task, is_nested

MODEL_OUTPUTS = ("prediction", "score", "class_scores")
SHOWN = 5  # values quoted in a problem


@dataclass(frozen=True)
class Domains:
    """What the reference says: the task, the label's classes (classification) and which score
    columns are probabilities (every finite reference value in [0, 1])."""

    task: str | None = None
    classes: tuple[Any, ...] = ()
    probabilities: tuple[str, ...] = ()


@dataclass(frozen=True)
class DomainProblem:
    """A role's column holding values outside the reference's domain, in one line."""

    role: str
    column: str
    problem: str


def fit_domains(reference: pd.DataFrame, columns: Columns) -> Domains:
    """The domains of `reference` (scored by the model when there is one). A regression model's
    score is its prediction, never a probability, however its values fall."""
    label = columns.label
    known = bool(label) and label in reference.columns and not is_nested(reference[label])
    values = reference[label].dropna() if known else pd.Series()
    task = columns.task or (infer_task(values) if len(values) else None)
    if task == "regression":
        return Domains(task)
    scores = [c for c in _score_columns(columns) if c in reference.columns]
    probabilities = tuple(c for c in scores if _is_probability(reference[c]))
    return Domains(task, _sorted(values.unique()) if task else (), probabilities)


def domain_problems(domains: Domains, frame: pd.DataFrame, columns: Columns) -> list[DomainProblem]:
    """Every label, prediction and score column of `frame` that holds values outside `domains`."""
    found = []
    for role, column in _output_columns(columns):
        if column not in frame.columns or len(frame) == 0:
            continue
        values = frame[column]
        if role in ("label", "prediction"):
            problem = _class_problem(values, domains)
        else:
            problem = _score_problem(values, column in domains.probabilities)
        if problem:
            found.append(DomainProblem(role, str(column), f"{role} {column!r}: {problem}"))
    return found


def stopping_problem(check: Check, problems: Mapping[str, str]) -> str | None:
    """The problem (of `problems`, role -> problem) that stops `check`: one of the label when it
    needs the label; one of a model output when it needs that output or, outside the drift family
    (whose checks compare only the columns they need), the label it scores the outputs against."""
    scores_outputs = "label" in check.needs and check.family != "drift"
    for role, problem in problems.items():
        if role in check.needs or (scores_outputs and role in MODEL_OUTPUTS):
            return problem
    return None


def _score_columns(columns: Columns) -> list[str]:
    return [c for c in (columns.score, *columns.class_scores) if c]


def _output_columns(columns: Columns) -> list[tuple[str, str]]:
    """(role, column) of the label, the prediction and every score column that is set."""
    pairs = [(role, getattr(columns, role)) for role in ("label", "prediction", "score")]
    pairs += [("class_scores", c) for c in columns.class_scores]
    return [(role, column) for role, column in pairs if column]


def _is_number(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _is_probability(values: pd.Series) -> bool:
    """Numbers whose finite values (at least one) all lie in [0, 1]."""
    if not _is_number(values):
        return False
    x = values.to_numpy(dtype=float, na_value=np.nan)
    x = x[np.isfinite(x)]
    return len(x) > 0 and bool(((x >= 0) & (x <= 1)).all())


def _class_problem(values: pd.Series, domains: Domains) -> str | None:
    """Why a label or prediction column does not fit the reference's task and classes, or None. A
    binary column may hold only the reference's two classes; any other (or a reference with fewer
    classes) at least one of them (a new class is drift, which the drift checks grade); a regression
    one numbers."""
    if domains.task == "regression":
        return None if _is_number(values) else f"values are not numbers (dtype {values.dtype}) for regression"
    if not domains.classes or is_nested(values):
        return None  # no reference labels to compare with, or span lists (NER) that their checks read
    present = values.dropna()
    counts = present.value_counts()
    counts = counts[counts > 0]  # a categorical dtype counts its unused categories too
    outside = counts[~counts.index.isin(domains.classes)]
    strict = domains.task == "binary" and len(domains.classes) == 2
    if outside.empty or (not strict and len(outside) < len(counts)):
        return None
    return (
        f"{int(outside.sum())} of {len(present)} value(s) {_quoted(_sorted(outside.index))} are not among "
        f"the reference's {domains.task} classes {_quoted(domains.classes)}"
    )


def _score_problem(values: pd.Series, probability: bool) -> str | None:
    """Why a score column cannot be read as the reference's score, or None: not numbers, no finite
    value at all, or (for a probability) finite values outside [0, 1]."""
    if not _is_number(values):
        return f"values are not numbers (dtype {values.dtype})"
    x = values.to_numpy(dtype=float, na_value=np.nan)
    finite = np.isfinite(x)
    if not finite.any():
        infinite = int(np.isinf(x).sum())
        return f"no finite value: {infinite} infinite, {len(x) - infinite} missing"
    outside = finite & ((x < 0) | (x > 1))
    if not probability or not outside.any():
        return None
    low, high = x[outside].min(), x[outside].max()
    return (
        f"{int(outside.sum())} of {len(x)} value(s) outside [0, 1] (from {low:.4g} to {high:.4g}), "
        "where the reference's are probabilities"
    )


def _sorted(values: Any) -> tuple[Any, ...]:
    """Plain Python values, sorted (by text when their types do not compare)."""
    plain = [v.item() if isinstance(v, np.generic) else v for v in values]
    try:
        return tuple(sorted(plain))
    except TypeError:
        return tuple(sorted(plain, key=repr))


def _quoted(values: tuple[Any, ...]) -> str:
    """At most SHOWN values as a list, with how many more there are."""
    more = f" and {len(values) - SHOWN} more" if len(values) > SHOWN else ""
    return f"{list(values[:SHOWN])}{more}"
