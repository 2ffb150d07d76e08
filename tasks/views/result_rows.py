"""Results as display rows: metrics with their thresholds in one short text, for tables in the CLI,
Prefect artifacts and report files alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driftline.checks.result import format_number


def format_metrics(
    metrics: Mapping[str, Any], thresholds: Mapping[str, Any] | None = None, limit: int = 4
) -> str:
    """`name=value` pairs, thresholded metrics first, with their thresholds in brackets."""
    thresholds = thresholds or {}
    names = sorted(metrics, key=lambda m: (m not in thresholds, m))[:limit]
    parts = []
    for name in names:
        text = f"{name}={format_number(metrics[name])}"
        if name in thresholds:
            text += " [" + "/".join(format_number(t) for t in thresholds[name]) + "]"
        parts.append(text)
    if len(metrics) > limit:
        parts.append(f"+{len(metrics) - limit} more")
    return ", ".join(parts)


def result_rows(results: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One table row per result, metrics shown with their thresholds."""
    return [
        {
            "check": r["check"],
            "target": r["target"],
            "status": r["status"],
            "severity": r["severity"],
            "metrics": format_metrics(r["metrics"], r["thresholds"], limit=6),
            "failing_rows": r["failing_rows"],
            "reason": r["reason"] or "",
        }
        for r in results
    ]
