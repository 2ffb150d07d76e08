"""Run one check safely: missing roles and empty batches are skipped, failures become `error` results."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.result import CheckResult

log = logging.getLogger(__name__)

_SINGLE_ROLES = ("label", "prediction", "score", "query_id")
_LIST_ROLES = {"class_scores", "protected", "numeric", "categorical", "text"}


def missing_role(check: Check, columns: Columns) -> str | None:
    """Why the check cannot run with these column roles, or None when every needed role is set."""
    for role in sorted(check.needs):
        if role == "features":
            if not check.feature_columns(columns):
                return "no feature columns"
        elif role in _LIST_ROLES:
            if not getattr(columns, role):
                return f"no {role} columns (set columns.{role})"
        elif role in _SINGLE_ROLES and not getattr(columns, role):
            return f"no {role} column (set columns.{role})"
    return None


def absent_columns(check: Check, columns: Columns, frame: pd.DataFrame) -> list[str]:
    """The needed role columns that the frame does not have."""
    needed = [getattr(columns, r) for r in _SINGLE_ROLES if r in check.needs]
    for role in _LIST_ROLES & check.needs:
        needed.extend(getattr(columns, role))
    return [c for c in needed if c and c not in frame.columns]


def run_check(
    check: Check,
    current: pd.DataFrame,
    columns: Columns,
    *,
    reference: pd.DataFrame | None = None,
    profile: Any = None,
    fit: Callable[[Check, pd.DataFrame, Columns], Any] | None = None,
    strict: bool = False,
) -> list[CheckResult]:
    """Fit (unless `profile` is given) and evaluate `check`, never raising for bad data.

    `fit` replaces `check.fit(reference, columns)`, e.g. with a cached lookup.

    `CheckInputError` becomes an `error` result and `NotApplicable` a `skipped` one, each with the
    message as reason. Any other exception also becomes an `error` result, unless `strict` is set
    (the contract tests use it: an unexpected exception there is a bug in the check).
    """
    rows = len(current)
    target = "*"
    reason = missing_role(check, columns)
    if reason:
        return [CheckResult.skipped(check.name, target, reason, rows=rows)]
    if rows == 0:
        return [CheckResult.skipped(check.name, target, "the batch is empty", rows=0)]
    for label, frame in (("batch", current), ("reference", reference)):
        absent = [] if frame is None else absent_columns(check, columns, frame)
        if absent:
            return [
                CheckResult.error(check.name, target, f"the {label} has no column(s) {absent}", rows=rows)
            ]
    try:
        if profile is None:
            if reference is None:
                raise CheckInputError("no reference data and no fitted profile")
            if len(reference) == 0:
                raise CheckInputError("the reference is empty")
            profile = fit(check, reference, columns) if fit else check.fit(reference, columns)
        results = check.evaluate(current, profile, columns)
    except NotApplicable as exc:
        return [CheckResult.skipped(check.name, target, str(exc), rows=rows)]
    except CheckInputError as exc:
        return [CheckResult.error(check.name, target, str(exc), rows=rows)]
    except Exception as exc:
        if strict:
            raise
        log.exception("check %s failed", check.name)
        return [CheckResult.error(check.name, target, f"{type(exc).__name__}: {exc}", rows=rows)]
    return results or [CheckResult.skipped(check.name, target, "no target to evaluate", rows=rows)]
