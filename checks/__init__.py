"""The driftline check catalog: pure computations on pandas/numpy, fitted on a reference, run per batch."""

from checks.base import Check
from checks.columns import Columns, infer_columns
from checks.errors import CheckInputError, NotApplicable
from checks.registry import create, describe, get, names, register
from checks.result import CheckResult, severity_for, worst_severity
from checks.runner import run_check

__all__ = [
    "Check",
    "CheckInputError",
    "CheckResult",
    "Columns",
    "NotApplicable",
    "create",
    "describe",
    "get",
    "infer_columns",
    "names",
    "register",
    "run_check",
    "severity_for",
    "worst_severity",
]
