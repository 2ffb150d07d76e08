"""Great Expectations suites as a check, counted against pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from driftline.checks import create
from driftline.checks.columns import infer_columns
from driftline.checks.errors import CheckInputError
from driftline.checks.runner import run_check

FRAME = pd.DataFrame({"age": [25.0, np.nan, 140.0, 33.0, -1.0], "city": ["a", "b", "b", None, "c"]})


def test_suite_counts_match_pandas() -> None:
    check = create(
        "expectations.suite",
        {
            "expectations": [
                {
                    "type": "expect_column_values_to_be_between",
                    "column": "age",
                    "min_value": 0,
                    "max_value": 120,
                },
                {"type": "expect_column_values_to_not_be_null", "column": "city"},
                {"type": "expect_column_to_exist", "column": "city"},
            ],
            "failure_severity": "high",
        },
    )
    results = {r.target: r for r in run_check(check, FRAME, infer_columns(FRAME), reference=FRAME)}
    between = results["expect_column_values_to_be_between(age)"]
    ages = FRAME["age"].dropna()
    outside = int(((ages < 0) | (ages > 120)).sum())
    assert between.failing_rows == outside == 2
    assert between.metrics["unexpected_share"] == pytest.approx(outside / len(ages))
    assert between.severity == "high" and sorted(between.details["unexpected_index"]) == [2, 4]
    nulls = results["expect_column_values_to_not_be_null(city)"]
    assert nulls.failing_rows == FRAME["city"].isna().sum() == 1
    exists = results["expect_column_to_exist(city)"]
    assert exists.severity == "none" and exists.metrics["failed"] == 0.0


def test_bad_expectations_are_clear_errors() -> None:
    with pytest.raises(CheckInputError, match=r"expectations\.0 needs `type: expect_"):
        create("expectations.suite", {"expectations": [{"column": "age"}]})
    check = create("expectations.suite", {"expectations": [{"type": "expect_the_moon", "column": "age"}]})
    [result] = run_check(check, FRAME, infer_columns(FRAME), reference=FRAME)
    assert result.status == "error" and "unknown expectation type 'expect_the_moon'" in result.reason


def test_no_expectations_is_skipped() -> None:
    [result] = run_check(create("expectations.suite"), FRAME, infer_columns(FRAME), reference=FRAME)
    assert result.status == "skipped" and "no expectations" in result.reason


def test_a_validation_logs_nothing_below_warning(caplog: pytest.LogCaptureFixture) -> None:
    """Great Expectations' housekeeping (a temporary docs folder at INFO on every validation) stays out
    of a run's log."""
    check = create(
        "expectations.suite",
        {"expectations": [{"type": "expect_column_values_to_not_be_null", "column": "city"}]},
    )
    with caplog.at_level("INFO"):
        run_check(check, FRAME, infer_columns(FRAME), reference=FRAME)
        run_check(check, FRAME, infer_columns(FRAME), reference=FRAME)
    chatter = [r for r in caplog.records if r.name.startswith("great_expectations") and r.levelno < 30]
    assert chatter == [], [r.getMessage() for r in chatter]
