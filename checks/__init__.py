"""The driftline check catalog: pure computations on pandas/numpy, fitted on a reference, run per batch."""

from driftline.checks.base import Check, Metric
from driftline.checks.columns import Columns, infer_columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.mergeable import Mergeable
from driftline.checks.registry import create, describe, get, names, register
from driftline.checks.result import CheckResult, severity_for, worst_severity
from driftline.checks.runner import run_check

__all__ = [
    "Check",
    "CheckInputError",
    "CheckResult",
    "Columns",
    "Mergeable",
    "Metric",
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
