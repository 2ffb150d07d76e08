"""What the operators push to XCom: compact, strict JSON (non-finite numbers become null)."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from driftline.checks.result import CheckResult
    from driftline.tasks.pipeline import RunSummary

# How many failing checks the monitor's XCom (and the retraining conf) lists, worst first.
MAX_FAILING = 20


def strict_json(value: Any) -> Any:
    """`value` with NaN and infinities replaced by None and numpy numbers made plain (XCom, DAG-run
    conf and the report's summary are strict JSON)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value


def failing_checks(summary: RunSummary, minimum: str) -> list[dict[str, Any]]:
    """The run's results at or above `minimum`, worst first: check, target, severity, metrics."""
    hits = summary.failing(minimum)[:MAX_FAILING]
    return [
        strict_json({"check": r.check, "target": r.target, "severity": r.severity, "metrics": r.metrics})
        for r in hits
    ]


def severity_counts(results: list[CheckResult]) -> dict[str, int]:
    """How many results have each status (`error`, `skipped`) or, when ok, each severity."""
    counts: dict[str, int] = {}
    for r in results:
        key = r.severity if r.status == "ok" else r.status
        counts[key] = counts.get(key, 0) + 1
    return counts
