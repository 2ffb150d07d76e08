"""Severity grading, result validation and JSON safety of the result format."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from driftline.checks.result import CheckResult, reaches, severity_for, worst_severity
from tests.golden import golden_cases


@pytest.mark.parametrize("case", golden_cases("psi_severity"), ids=lambda c: c["id"])
def test_golden_severity(case: dict) -> None:
    inputs = case["inputs"]
    assert severity_for(inputs["psi"], inputs["thresholds"]) == case["expected"]


@pytest.mark.parametrize("case", golden_cases("threshold_fail", "threshold_pass"), ids=lambda c: c["id"])
def test_golden_threshold_rule(case: dict) -> None:
    inputs = case["inputs"]
    value = inputs.get("value", inputs.get("eval_score"))
    assert reaches(value, inputs["threshold"]) is case["expected"]


@pytest.mark.parametrize("case", golden_cases("drift_diff_fail"), ids=lambda c: c["id"])
def test_float_trap_difference_reaches_threshold(case: dict) -> None:
    inputs = case["inputs"]
    diff = abs(inputs["eval"] - inputs["ref"])
    assert diff < inputs["diff_threshold"]  # the trap: 0.7 - 0.5 is 0.19999999999999996
    assert reaches(diff, inputs["diff_threshold"]) is True


@pytest.mark.parametrize(
    ("value", "thresholds", "expected"),
    [
        (0.05, [0.1, 0.2, 0.3], "none"),
        (0.1, [0.1, 0.2, 0.3], "low"),
        (0.25, [0.1, 0.2, 0.3], "medium"),
        (5.0, [0.1, 0.2, 0.3], "high"),
        (0.15, [0.1, 0.2], "medium"),
        (0.3, [0.1, 0.2], "high"),
        (0.5, [0.5], "high"),
        (0.49, [0.5], "none"),
        (math.nan, [0.1], "none"),
        (None, [0.1], "none"),
        (math.inf, [0.1, 0.2, 0.3], "high"),
        (-math.inf, [0.1, 0.2, 0.3], "none"),
    ],
)
def test_thresholds_align_with_the_top(value, thresholds, expected) -> None:
    assert severity_for(value, thresholds) == expected


def test_lower_is_worse_grades_downward() -> None:
    assert severity_for(0.04, [0.05, 0.01, 0.001], lower_is_worse=True) == "low"
    assert severity_for(0.0005, [0.05, 0.01, 0.001], lower_is_worse=True) == "high"
    assert severity_for(0.2, [0.05], lower_is_worse=True) == "none"


def test_more_than_three_thresholds_is_an_error() -> None:
    with pytest.raises(ValueError, match="at most three"):
        severity_for(1.0, [1, 2, 3, 4])


def test_worst_severity() -> None:
    assert worst_severity(["low", "high", "none"]) == "high"
    assert worst_severity([]) == "none"
    with pytest.raises(ValueError, match="unknown severity"):
        worst_severity(["urgent"])


def test_result_needs_reason_unless_ok() -> None:
    with pytest.raises(ValueError, match="needs a reason"):
        CheckResult(check="x", target="t", status="error")
    with pytest.raises(ValueError, match="status must be"):
        CheckResult(check="x", target="t", status="fine")


def test_to_dict_is_plain_json() -> None:
    result = CheckResult(
        check="drift.numeric",
        target="age",
        metrics={"psi": np.float32(0.25), "ks": np.nan, "n": np.int64(3)},
        details={"edges": np.array([0.0, np.inf]), "flag": np.bool_(True)},
        rows=np.int64(10),
    )
    data = result.to_dict()
    text = json.dumps(data, allow_nan=False)
    assert data["metrics"] == {"psi": pytest.approx(0.25), "ks": None, "n": 3}
    assert data["details"] == {"edges": [0.0, None], "flag": True}
    assert CheckResult.from_dict(json.loads(text)).metrics["n"] == 3
