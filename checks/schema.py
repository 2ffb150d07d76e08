"""Schema check: the batch has the reference's columns, with the same kind of values, and its label,
prediction and score hold values of the reference's domains (`checks.domains`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns, identifier_note, is_nested
from driftline.checks.domains import Domains, domain_problems, fit_domains
from driftline.checks.registry import register
from driftline.checks.result import CheckResult, worst_severity


def value_kind(series: pd.Series) -> str:
    """Coarse kind of a column: bool, numeric, datetime, nested (lists, arrays, mappings) or categorical
    (strings and categories)."""
    if pd.api.types.is_bool_dtype(series):
        return "bool"
    if pd.api.types.is_numeric_dtype(series):
        return "numeric"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "datetime"
    return "nested" if is_nested(series) else "categorical"


@dataclass(frozen=True)
class SchemaProfile:
    """The reference's value kind per column, the domains of its label and model outputs, and why
    each categorical feature that looks like an identifier does (`checks.columns.identifier_note`)."""

    kinds: dict[str, str]
    domains: Domains
    identifiers: dict[str, str] = field(default_factory=dict)


@register
@dataclass(kw_only=True)
class SchemaCheck(Check):
    """Batch schema against the reference: a missing column or a changed value kind is high severity,
    an extra column is low. Integer/float and string/category changes are not kind changes.

    A label, prediction or score outside the reference's domain (`checks.domains`) is high severity,
    one result per column, whose `problem` the run gives as the reason of the checks it stops. A
    column of nested values that no role names is `skipped`: no check reads it.

    `arrive_later` names columns that are expected to be missing from a batch because they come later
    (the label of a monitor with a `labels:` source): their absence is reported with severity none.

    A categorical feature that looks like an identifier (near-unique with many values) gets a result
    of severity none whose reason recommends leaving it out (`columns: ignore:`): its categories say
    nothing a drift check can grade, and `drift.categorical` skips it.
    """

    name: ClassVar[str] = "schema.columns"
    family: ClassVar[str] = "schema"
    role: ClassVar[str] = "data_quality"

    arrive_later: list[str] = field(default_factory=list)

    def fit(self, reference: pd.DataFrame, columns: Columns) -> SchemaProfile:
        kinds = {str(c): value_kind(reference[c]) for c in reference.columns}
        return SchemaProfile(kinds, fit_domains(reference, columns), identifiers(reference, columns, kinds))

    def evaluate(self, current: pd.DataFrame, profile: SchemaProfile, columns: Columns) -> list[CheckResult]:
        rows = len(current)
        found = {str(c): value_kind(current[c]) for c in current.columns}
        problems = list(self._column_problems(profile.kinds, found, current))
        for bad in domain_problems(profile.domains, current, columns):
            problems.append(self._problem(bad.column, rows, "out_of_domain", bad.problem, role=bad.role))
        summary = {key: float(sum(key in p.metrics for p in problems)) for key in _SEVERITY}
        worst = worst_severity(p.severity for p in problems)
        named = set(map(str, columns.all_columns()))
        unread = "nested values (lists, arrays or mappings): no check reads this column"
        return [
            self.result("*", summary, rows=rows, severity=worst, details={"columns": len(profile.kinds)}),
            *problems,
            *(self._identifier(column, note, rows) for column, note in profile.identifiers.items()),
            *(
                CheckResult.skipped(self.name, c, unread, rows=rows)
                for c, kind in found.items()
                if kind == "nested" and c not in named
            ),
        ]

    def _column_problems(
        self, kinds: dict[str, str], found: dict[str, str], current: pd.DataFrame
    ) -> Iterable[CheckResult]:
        """Missing, changed and extra columns (and those that arrive later), from the reference's
        value kinds and the batch's (`found`)."""
        rows = len(current)
        for column, kind in kinds.items():
            if column not in found and column in self.arrive_later:
                details = {"problem": "not in the batch yet: it arrives later", "expected": kind}
                yield self.result(column, {"arrives_later": 1.0}, rows=rows, severity="none", details=details)
            elif column not in found:
                yield self._problem(column, rows, "missing_columns", "missing from the batch", expected=kind)
            elif found[column] != kind:
                message = f"values changed from {kind} to {found[column]} (dtype {current[column].dtype})"
                yield self._problem(
                    column, rows, "changed_kinds", message, expected=kind, found=found[column]
                )
        for column, kind in found.items():
            if column not in kinds:
                yield self._problem(column, rows, "extra_columns", "not in the reference", found=kind)

    def _identifier(self, column: str, note: str, rows: int) -> CheckResult:
        result = self.result(
            column, {"identifier_like": 1.0}, rows=rows, severity="none", details={"note": note}
        )
        result.reason = note
        return result

    def _problem(self, column: str, rows: int, key: str, message: str, **details: Any) -> CheckResult:
        return self.result(
            column, {key: 1.0}, rows=rows, severity=_SEVERITY[key], details={"problem": message, **details}
        )


def identifiers(reference: pd.DataFrame, columns: Columns, kinds: dict[str, str]) -> dict[str, str]:
    """Column -> why it looks like an identifier, for the categorical features that do."""
    found: dict[str, str] = {}
    for column in columns.categorical:
        if kinds.get(str(column)) == "categorical":
            values = reference[column]
            note = identifier_note(str(column), int(values.nunique()), int(values.notna().sum()))
            if note:
                found[str(column)] = note
    return found


def stopping_problems(results: Iterable[CheckResult]) -> dict[str, str]:
    """Role -> problem of the out-of-domain results of a schema run (the first per role)."""
    found: dict[str, str] = {}
    for result in results:
        role = result.details.get("role")
        if result.check == SchemaCheck.name and role and "out_of_domain" in result.metrics:
            found.setdefault(role, result.details["problem"])
    return found


_SEVERITY = {
    "missing_columns": "high",
    "changed_kinds": "high",
    "extra_columns": "low",
    "out_of_domain": "high",
}
