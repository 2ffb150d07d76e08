"""The message of a failed Prefect flow run: model-level failures first and never cut, then the most
important features up to a limit and how many more; a check that only errored named in one short line;
a failure event identified once per request and flow run."""

from __future__ import annotations

from typing import Any

from driftline.checks.result import CheckResult
from driftline.flows import prefect_driver
from driftline.flows.prefect_driver import errored_message, failure_event_id, failure_message
from driftline.tasks.retraining.actions import RetrainRequest


def result(check: str, target: str, severity: str, share: float | None = None) -> dict[str, Any]:
    details = {} if share is None else {"importance": {"share": share, "rank": 1, "of": 9}}
    return {"check": check, "target": target, "status": "ok", "severity": severity, "details": details}


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"monitor": "m", "batch_id": "b", "worst_severity": "high", "results": results}


def test_model_level_failures_come_first_and_features_are_cut_with_a_count(monkeypatch: Any) -> None:
    monkeypatch.setattr(prefect_driver, "NAMED_FEATURES", 2)
    results = [
        result("drift.numeric", "AGE", "high", share=0.1),
        result("drift.numeric", "INCOME", "high", share=0.5),
        result("drift.categorical", "CITY", "medium"),
        result("drift.numeric", "HEIGHT", "high"),
        result("performance.overall", "auc", "medium"),
        result("drift.numeric", "WEIGHT", "low"),  # below fail_on: not named
        result("fairness.statistical_parity", "SEX", "high"),
        result("drift.prediction", "score", "high"),
    ]
    assert failure_message(summary(results), "medium") == (
        "m batch b: worst severity high (fail_on medium); failing checks: "
        "fairness.statistical_parity[SEX] high, drift.prediction[score] high, "
        "performance.overall[auc] medium, "
        "drift.numeric[INCOME] high, drift.numeric[AGE] high, +2 more"
    )


def test_a_short_failure_list_names_everything_without_a_count() -> None:
    results = [result("drift.numeric", "AGE", "high"), result("performance.overall", "f1", "high")]
    assert failure_message(summary(results), "high").endswith(
        "failing checks: performance.overall[f1] high, drift.numeric[AGE] high"
    )


def check_result(status: str, reason: str | None = None) -> CheckResult:
    return CheckResult(check="drift.numeric", target="X", status=status, reason=reason)


def test_only_a_check_with_nothing_but_errors_is_failed_and_its_message_is_one_line() -> None:
    error = check_result("error", "column X is missing")
    assert errored_message("drift.numeric[X]", [error]) == "drift.numeric[X]: column X is missing"
    assert errored_message("drift.numeric[X]", [error, error]) == (
        "drift.numeric[X]: column X is missing (+1 more error(s))"
    )
    assert errored_message("drift.numeric[X]", [error, check_result("ok")]) is None
    assert errored_message("drift.numeric[X]", []) is None


def test_a_failure_event_is_one_per_request_and_flow_run() -> None:
    request = RetrainRequest("m", "b", "ref", "high", [], None)
    first = failure_event_id(request, "run-1")
    assert failure_event_id(request, "run-1") == first  # a retried step of the same run: one event
    assert failure_event_id(request, "run-2") != first  # a later run of the same batch: a new event
    other_batch = RetrainRequest("m", "c", "ref", "high", [], None)
    assert failure_event_id(other_batch, "run-1") != first
