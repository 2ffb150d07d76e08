"""Schema check: the batch has the reference's columns, with the same kind of values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.registry import register
from driftline.checks.result import CheckResult, worst_severity


def value_kind(series: pd.Series) -> str:
    """Coarse kind of a column: bool, numeric, datetime or categorical (strings and categories)."""
    if pd.api.types.is_bool_dtype(series):
        return "bool"
    if pd.api.types.is_numeric_dtype(series):
        return "numeric"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "datetime"
    return "categorical"


@register
@dataclass(kw_only=True)
class SchemaCheck(Check):
    """Batch schema against the reference: a missing column or a changed value kind is high severity,
    an extra column is low. Integer/float and string/category changes are not kind changes.

    `arrive_later` names columns that are expected to be missing from a batch because they come later
    (the label of a monitor with a `labels:` source): their absence is reported with severity none.
    """

    name: ClassVar[str] = "schema.columns"
    family: ClassVar[str] = "schema"

    arrive_later: list[str] = field(default_factory=list)

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, str]:
        return {str(c): value_kind(reference[c]) for c in reference.columns}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, str], columns: Columns) -> list[CheckResult]:
        rows = len(current)
        problems = []
        for column, kind in profile.items():
            if column not in current.columns and column in self.arrive_later:
                details = {"problem": "not in the batch yet: it arrives later", "expected": kind}
                problems.append(
                    self.result(column, {"arrives_later": 1.0}, rows=rows, severity="none", details=details)
                )
            elif column not in current.columns:
                problems.append(
                    self._problem(column, rows, "missing_columns", "missing from the batch", expected=kind)
                )
            elif (found := value_kind(current[column])) != kind:
                message = f"values changed from {kind} to {found} (dtype {current[column].dtype})"
                problems.append(
                    self._problem(column, rows, "changed_kinds", message, expected=kind, found=found)
                )
        for column in map(str, current.columns):
            if column not in profile:
                found = value_kind(current[column])
                problems.append(
                    self._problem(column, rows, "extra_columns", "not in the reference", found=found)
                )
        summary = {key: float(sum(key in p.metrics for p in problems)) for key in _SEVERITY}
        worst = worst_severity(p.severity for p in problems)
        return [
            self.result("*", summary, rows=rows, severity=worst, details={"columns": len(profile)}),
            *problems,
        ]

    def _problem(self, column: str, rows: int, key: str, message: str, **details: Any) -> CheckResult:
        return self.result(
            column, {key: 1.0}, rows=rows, severity=_SEVERITY[key], details={"problem": message, **details}
        )


_SEVERITY = {"missing_columns": "high", "changed_kinds": "high", "extra_columns": "low"}
