"""The run's drift headline counts each feature once, at its worst grade."""

from __future__ import annotations

from driftline.checks.result import CheckResult
from driftline.tasks.views.drift_overview import OVERVIEW_CHECK, drift_overview


def _result(check: str, target: str, severity: str, status: str = "ok") -> CheckResult:
    reason = None if status == "ok" else "why"
    return CheckResult(check=check, target=target, severity=severity, status=status, reason=reason)


def test_counts_drifted_features_out_of_the_graded_ones() -> None:
    results = [
        _result("drift.numeric", "AGEP", "medium"),
        _result("drift.categorical", "SCHL", "none"),
        _result("drift.categorical", "MAR", "low"),
        _result("drift.categorical", "RELP", "none", status="error"),  # not graded: not counted
        _result("drift.prediction", "score", "high"),  # not a feature
        _result("performance.overall", "*", "high"),
    ]
    overview = drift_overview(results)
    assert overview is not None and overview.check == OVERVIEW_CHECK
    assert overview.metrics == {"drifted": 2, "features": 3, "share": 2 / 3}
    assert overview.reason == "2 of 3 features drifted: AGEP, MAR"
    assert overview.severity == "none"


def test_no_overview_without_per_feature_drift() -> None:
    assert drift_overview([_result("performance.overall", "*", "high")]) is None
    assert drift_overview([_result("my_module:Custom", "x", "high")]) is None
