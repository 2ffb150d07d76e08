"""Run one check safely: missing roles and empty batches are skipped, failures become `error` results.

A feature missing from the batch or the reference stops only its own target: for checks whose targets
are features (`Check.per_feature`), the runner evaluates the others and adds one `error` result naming
the missing column.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import FEATURE_KINDS, Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import grade_results
from driftline.checks.result import CheckResult

log = logging.getLogger(__name__)

_SINGLE_ROLES = ("label", "prediction", "score", "query_id")
_LIST_ROLES = {"class_scores", "protected", "numeric", "categorical", "text"}
_FEATURE_NEEDS = ("features", *FEATURE_KINDS)

Fit = Callable[[Check, pd.DataFrame, Columns], Any]


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
    """The needed role columns that the frame does not have (features excepted for per-feature checks)."""
    needed = [getattr(columns, r) for r in _SINGLE_ROLES if r in check.needs]
    roles = _LIST_ROLES - set(FEATURE_KINDS) if check.per_feature else _LIST_ROLES
    for role in sorted(roles & check.needs):
        needed.extend(getattr(columns, role))
    return [c for c in needed if c and c not in frame.columns]


def feature_targets(check: Check, columns: Columns) -> list[str]:
    """The feature columns of the kinds the check needs, in role order."""
    names = [
        c for kind in _FEATURE_NEEDS if kind in check.needs for c in check.feature_columns(columns, kind)
    ]
    return list(dict.fromkeys(names))


def absent_features(
    check: Check, columns: Columns, frames: Mapping[str, pd.DataFrame | None]
) -> dict[str, str]:
    """Each feature target of a per-feature check that a frame lacks, with the reason naming the frame."""
    if not check.per_feature:
        return {}
    gaps: dict[str, str] = {}
    for label, frame in frames.items():
        for name in feature_targets(check, columns):
            if frame is not None and name not in frame.columns:
                gaps.setdefault(name, f"the {label} has no column {name!r}")
    return gaps


def without_features(check: Check, columns: Columns, names: Collection[str]) -> tuple[Check, Columns] | None:
    """The check and roles with the features `names` left out; None when no feature target remains."""
    narrowed = columns.without(names)
    if check.features:
        kept = [f for f in check.features if f not in names]
        if not kept:
            return None
        check = dataclasses.replace(check, features=kept)
    return (check, narrowed) if feature_targets(check, narrowed) else None


def run_check(
    check: Check,
    current: pd.DataFrame,
    columns: Columns,
    *,
    reference: pd.DataFrame | None = None,
    profile: Any = None,
    fit: Fit | None = None,
    strict: bool = False,
) -> list[CheckResult]:
    """Fit (unless `profile` is given) and evaluate `check`, never raising for bad data.

    `fit` replaces `check.fit(reference, columns)`, e.g. with a cached lookup.

    `CheckInputError` becomes an `error` result and `NotApplicable` a `skipped` one, each with the
    message as reason. Any other exception also becomes an `error` result, unless `strict` is set
    (the contract tests use it: an unexpected exception there is a bug in the check).
    """
    rows = len(current)
    frames = {"batch": current, "reference": reference}
    try:
        stopped = _preflight(check, columns, frames, rows)
        gaps = {} if stopped else absent_features(check, columns, frames)
    except CheckInputError as exc:
        return [CheckResult.error(check.name, "*", str(exc), rows=rows)]
    if stopped:
        return stopped
    errors = [CheckResult.error(check.name, name, why, rows=rows) for name, why in gaps.items()]
    if gaps:
        narrowed = without_features(check, columns, gaps)
        if narrowed is None:
            return errors
        check, columns = narrowed
    results = _evaluate(check, current, columns, reference, profile, fit, strict)
    return grade_results([r for r in results if r.target not in gaps] + errors)


def _preflight(
    check: Check, columns: Columns, frames: Mapping[str, pd.DataFrame | None], rows: int
) -> list[CheckResult] | None:
    """The one result that stops the check before it runs (a role unset, an empty batch, a needed
    non-feature column absent), or None when it can run."""
    reason = missing_role(check, columns)
    if reason:
        return [CheckResult.skipped(check.name, "*", reason, rows=rows)]
    if rows == 0:
        return [CheckResult.skipped(check.name, "*", "the batch is empty", rows=0)]
    if rows < check.min_verdict_rows:
        reason = f"{rows} row(s): {check.name} needs at least {check.min_verdict_rows} for a verdict"
        return [CheckResult.skipped(check.name, "*", reason, rows=rows)]
    for label, frame in frames.items():
        absent = [] if frame is None else absent_columns(check, columns, frame)
        if absent:
            return [CheckResult.error(check.name, "*", f"the {label} has no column(s) {absent}", rows=rows)]
    return None


def _evaluate(
    check: Check,
    current: pd.DataFrame,
    columns: Columns,
    reference: pd.DataFrame | None,
    profile: Any,
    fit: Fit | None,
    strict: bool,
) -> list[CheckResult]:
    """Fit when needed and evaluate; exceptions become one `skipped` or `error` result for the check."""
    rows, target = len(current), "*"
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
