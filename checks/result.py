"""The result every check returns: one per target, JSON-serialisable, graded by severity."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

SEVERITIES: tuple[str, ...] = ("none", "low", "medium", "high")
STATUSES: tuple[str, ...] = ("ok", "skipped", "error")

# Relative slack when comparing a metric with a threshold: 0.7 - 0.5 must reach 0.2.
THRESHOLD_TOLERANCE = 1e-9


def severity_rank(severity: str) -> int:
    """Position of a severity in none < low < medium < high; unknown names raise ValueError."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        raise ValueError(f"unknown severity {severity!r}; expected one of {', '.join(SEVERITIES)}") from None


def worst_severity(severities: Iterable[str]) -> str:
    """The highest severity among `severities` ("none" when empty)."""
    return max(severities, key=severity_rank, default="none")


def reaches(value: float, threshold: float) -> bool:
    """True when `value >= threshold`, allowing for floating-point rounding in `value`."""
    return value >= threshold - THRESHOLD_TOLERANCE * max(1.0, abs(threshold))


def severity_for(value: float | None, thresholds: Sequence[float], lower_is_worse: bool = False) -> str:
    """Grade one metric value against ascending thresholds.

    Thresholds are aligned with the top of the scale: three values mean low/medium/high, two mean
    medium/high, one means high. A NaN or missing value grades as "none"; an infinite one crosses
    every threshold on its side. With `lower_is_worse`
    (p-values, accuracies), thresholds are descending and a value at or below one reaches it.
    """
    if value is None or math.isnan(value) or not thresholds:
        return "none"
    if len(thresholds) > 3:
        raise ValueError(f"at most three thresholds (low, medium, high), got {list(thresholds)}")
    if lower_is_worse:
        crossed = sum(reaches(-value, -t) for t in thresholds)
    else:
        crossed = sum(reaches(value, t) for t in thresholds)
    if crossed == 0:
        return "none"
    return SEVERITIES[len(SEVERITIES) - len(thresholds) + crossed - 1]


def format_number(value: Any, missing: str = "–") -> str:
    """A metric value for people: floats to 4 significant digits, None as `missing`."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def json_safe(value: Any) -> Any:
    """Convert numpy scalars/arrays, dataclass instances (to dicts of their fields) and non-finite
    floats into plain JSON values (NaN/inf -> None); builds new containers, so nothing is shared."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_safe(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return _numpy_safe(value)


def _numpy_safe(value: Any) -> Any:
    """A numpy array or scalar as plain JSON values, anything else as its text. numpy is imported only
    here: a numpy value exists only once numpy is, and plain values never reach this."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return json_safe(value.item())
    return str(value)


@dataclass
class CheckResult:
    """One target's outcome of one check (see docs/design.md, "A check result")."""

    check: str
    target: str
    status: str = "ok"
    severity: str = "none"
    metrics: dict[str, float | None] = field(default_factory=dict)
    thresholds: dict[str, list[float]] = field(default_factory=dict)
    rows: int | None = None
    failing_rows: int | None = None
    model_impact: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        severity_rank(self.severity)
        if self.status != "ok" and not self.reason:
            raise ValueError(f"a {self.status!r} result needs a reason")

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form: numpy values become Python ones, NaN and inf become null (one walk: no
        deep copy first, which cost a wide batch milliseconds a result)."""
        return json_safe(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        """Inverse of `to_dict`."""
        return cls(**dict(data))

    @classmethod
    def skipped(cls, check: str, target: str, reason: str, rows: int | None = None) -> CheckResult:
        """A result for a check that does not apply to this data."""
        return cls(check=check, target=target, status="skipped", reason=reason, rows=rows)

    @classmethod
    def error(cls, check: str, target: str, reason: str, rows: int | None = None) -> CheckResult:
        """A result for a check that could not be computed."""
        return cls(check=check, target=target, status="error", reason=reason, rows=rows)
