"""The run's drift headline: how many of the monitored features drifted, in one result."""

from __future__ import annotations

from collections.abc import Sequence

from driftline.checks import registry
from driftline.checks.result import CheckResult, severity_rank

OVERVIEW_CHECK = "run.drifted_features"


def _per_feature_drift(check: str) -> bool:
    """Whether `check` declares feature drift with one result per feature (`Check.role`, `per_feature`)."""
    cls = registry.known(check)
    return cls is not None and cls.role == "feature_drift" and cls.per_feature


def drift_overview(results: Sequence[CheckResult]) -> CheckResult | None:
    """One informational result saying "3 of 21 features drifted" (graded low or worse on their
    confidence bounds), naming them worst first; None when the run has no per-feature drift check."""
    graded = [r for r in results if r.status == "ok" and _per_feature_drift(r.check)]
    if not graded:
        return None
    worst: dict[str, str] = {}
    for r in graded:
        target = str(r.target)
        if target not in worst or severity_rank(r.severity) > severity_rank(worst[target]):
            worst[target] = r.severity
    drifted = sorted((t for t, s in worst.items() if s != "none"), key=lambda t: -severity_rank(worst[t]))
    shown = ", ".join(drifted[:10]) + (f" and {len(drifted) - 10} more" if len(drifted) > 10 else "")
    reason = f"{len(drifted)} of {len(worst)} features drifted" + (f": {shown}" if drifted else "")
    return CheckResult(
        check=OVERVIEW_CHECK,
        target="*",
        metrics={"drifted": len(drifted), "features": len(worst), "share": len(drifted) / len(worst)},
        rows=graded[0].rows,
        details={"drifted": {t: worst[t] for t in drifted}},
        reason=reason,
    )
