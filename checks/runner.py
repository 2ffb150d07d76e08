"""Run one check safely: missing roles and empty batches are skipped, failures become `error` results.

A feature missing from the batch or the reference stops only its own target: for checks whose targets
are features (`Check.per_feature`), the runner evaluates the others and adds one `error` result naming
the missing column.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import FEATURE_KINDS, LIST_ROLES, SINGLE_ROLES, Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import grade_results
from driftline.checks.result import CheckResult

log = logging.getLogger(__name__)

_FEATURE_NEEDS = ("features", *FEATURE_KINDS)

Fit = Callable[[Check, pd.DataFrame, Columns], Any]


def missing_role(check: Check, columns: Columns) -> str | None:
    """Why the check cannot run with these column roles, or None when every needed role is set."""
    for role in sorted(check.needs):
        if role == "features":
            if not check.feature_columns(columns):
                return "no feature columns"
        elif role in LIST_ROLES:
            if not getattr(columns, role):
                return f"no {role} columns (set columns.{role})"
        elif role in SINGLE_ROLES and not getattr(columns, role):
            return f"no {role} column (set columns.{role})"
    return None


def absent_columns(check: Check, columns: Columns, frame: pd.DataFrame) -> list[str]:
    """The needed role columns that the frame does not have (features excepted for per-feature checks)."""
    needed = [getattr(columns, r) for r in SINGLE_ROLES if r in check.needs]
    roles = set(LIST_ROLES) - set(FEATURE_KINDS) if check.per_feature else set(LIST_ROLES)
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


def failure_result(name: str, exc: BaseException, rows: int | None, target: str = "*") -> CheckResult:
    """The one result that stands for a check (or target) stopped by `exc`, wherever it was evaluated:
    `NotApplicable` is `skipped` and `CheckInputError` an `error`, each with its message; any other
    exception is an `error` naming its type."""
    if isinstance(exc, NotApplicable):
        return CheckResult.skipped(name, target, str(exc), rows=rows)
    if isinstance(exc, CheckInputError):
        return CheckResult.error(name, target, str(exc), rows=rows)
    return CheckResult.error(name, target, f"{type(exc).__name__}: {exc}", rows=rows)


@dataclass(frozen=True)
class Screened:
    """A check cleared to run: narrowed to the features both frames have, with one `error` result per
    feature target left out."""

    check: Check
    columns: Columns
    gaps: tuple[CheckResult, ...] = ()

    def completed(self, results: list[CheckResult]) -> list[CheckResult]:
        """The check's results with the left-out targets' errors in place of anything about them."""
        left_out = {g.target for g in self.gaps}
        return [r for r in results if r.target not in left_out] + list(self.gaps)


def screen(
    check: Check, columns: Columns, frames: Mapping[str, pd.DataFrame | None], rows: int
) -> list[CheckResult] | Screened:
    """Whether the check can run on `frames` (a batch of `rows` rows and the reference, either None
    when unknown): the results that stop it (a role unset, an empty or too small batch, a needed column
    absent), or the check cleared, narrowed to the features present."""
    try:
        stopped = _preflight(check, columns, frames, rows)
        gaps = {} if stopped else absent_features(check, columns, frames)
    except CheckInputError as exc:
        return [failure_result(check.name, exc, rows)]
    if stopped:
        return stopped
    errors = tuple(CheckResult.error(check.name, name, why, rows=rows) for name, why in gaps.items())
    if not gaps:
        return Screened(check, columns)
    narrowed = without_features(check, columns, gaps)
    return list(errors) if narrowed is None else Screened(*narrowed, errors)


def fitted_profile(
    check: Check, reference: pd.DataFrame | None, columns: Columns, fit: Fit | None = None
) -> Any:
    """The check's profile of the reference (`fit` replaces `check.fit`, e.g. with a cached lookup);
    an absent or empty reference is a `CheckInputError`."""
    if reference is None:
        raise CheckInputError("no reference data and no fitted profile")
    if len(reference) == 0:
        raise CheckInputError("the reference is empty")
    return fit(check, reference, columns) if fit else check.fit(reference, columns)


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

    `fit` replaces `check.fit(reference, columns)`, e.g. with a cached lookup. Exceptions become
    results (`failure_result`), unless `strict` is set and the exception is neither `CheckInputError`
    nor `NotApplicable` (the contract tests use it: an unexpected exception there is a bug in the check).
    """
    rows = len(current)
    screened = screen(check, columns, {"batch": current, "reference": reference}, rows)
    if isinstance(screened, list):
        return screened
    try:
        if profile is None:
            profile = fitted_profile(screened.check, reference, screened.columns, fit)
        results = screened.check.evaluate(current, profile, screened.columns)
    except Exception as exc:
        if strict and not isinstance(exc, CheckInputError | NotApplicable):
            raise
        if not isinstance(exc, CheckInputError | NotApplicable):
            log.exception("check %s failed", check.name)
        return [failure_result(check.name, exc, rows), *screened.gaps]
    results = results or [CheckResult.skipped(check.name, "*", "no target to evaluate", rows=rows)]
    return grade_results(screened.completed(results))


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
