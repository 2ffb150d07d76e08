"""Builders shared by the alerting tests."""

from __future__ import annotations

from typing import Any

TOKEN = "xoxb-1111-2222-stand-in-token"


def result(
    check: str,
    target: str,
    severity: str = "none",
    *,
    status: str = "ok",
    metrics: dict[str, Any] | None = None,
    thresholds: dict[str, list[float]] | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """A check result in the result format of docs/design.md."""
    return {
        "check": check,
        "target": target,
        "status": status,
        "severity": severity,
        "metrics": metrics if metrics is not None else {"psi": 0.0},
        "thresholds": thresholds if thresholds is not None else {"psi": [0.1, 0.2, 0.3]},
        "rows": 1000,
        "failing_rows": None,
        "model_impact": None,
        "details": {},
        "reason": reason if reason is not None or status == "ok" else f"{status} reason",
    }
