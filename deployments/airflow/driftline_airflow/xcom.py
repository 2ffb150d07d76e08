"""What the operators push to XCom: compact, strict JSON (non-finite numbers become null)."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from driftline.checks.result import CheckResult
    from driftline.tasks.run.pipeline import RunSummary

# How many failing feature-level checks the monitor's XCom (and the retraining conf) lists beside the
# model-level ones, which are all listed; and how many the task's failure message names.
MAX_FAILING = 20
VERDICT_LISTED = 5


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


def listed_failures(summary: RunSummary, minimum: str, others: int) -> tuple[list[CheckResult], int]:
    """The run's results at or above `minimum` in the one order of every surface
    (`driftline.tasks.views.ranking`): every model-level result (output drift, performance, fairness), then
    up to `others` more; and how many were left out."""
    from driftline.tasks.views.ranking import model_level, ranked

    hits = ranked(summary.failing(minimum), lambda r: r.to_dict())
    model = [r for r in hits if model_level(r.check)]
    rest = [r for r in hits if not model_level(r.check)]
    return model + rest[:others], max(len(rest) - others, 0)


def failing_checks(summary: RunSummary, minimum: str) -> list[dict[str, Any]]:
    """The run's results at or above `minimum`, model-level ones all, then up to `MAX_FAILING` others:
    check, target, severity, metrics."""
    hits, _ = listed_failures(summary, minimum, MAX_FAILING)
    return [
        strict_json({"check": r.check, "target": r.target, "severity": r.severity, "metrics": r.metrics})
        for r in hits
    ]


def verdict(summary: RunSummary, fail_on: str) -> str:
    """Why the task fails, in one line: the worst severity, the model-level failures all, up to
    `VERDICT_LISTED` others, then how many more."""
    from driftline.tasks.tools.safe_text import printable

    hits, more = listed_failures(summary, fail_on, VERDICT_LISTED)
    names = [printable(f"{r.check}[{r.target}]").replace("\n", "\\n") for r in hits]
    names += [f"+{more} more"] if more else []
    return (
        f"{summary.monitor} batch {summary.batch_id}: worst severity {summary.worst_severity} "
        f"reached fail_on={fail_on} ({', '.join(names)})"
    )


def severity_counts(results: list[CheckResult]) -> dict[str, int]:
    """How many results have each status (`error`, `skipped`) or, when ok, each severity."""
    counts: dict[str, int] = {}
    for r in results:
        key = r.severity if r.status == "ok" else r.status
        counts[key] = counts.get(key, 0) + 1
    return counts
