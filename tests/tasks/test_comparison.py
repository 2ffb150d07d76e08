"""The one-line comparison of a stored result: reference and batch values, the graded change, its bound
and the threshold it crossed; every number pinned by hand."""

from __future__ import annotations

from typing import Any

import pytest
from sklearn.metrics import accuracy_score

from driftline.tasks.views.comparison import comparison, comparison_line, deciding_metric


def stored(
    check: str,
    target: str,
    graded: str,
    estimate: float,
    bound: float,
    thresholds: list[float],
    metrics: dict[str, Any] | None = None,
    details: dict[str, Any] | None = None,
    higher_is_worse: bool = True,
) -> dict[str, Any]:
    """A graded result as the history stores it (metrics with the bound, evidence, details)."""
    return {
        "check": check,
        "target": target,
        "status": "ok",
        "severity": "high",
        "metrics": {graded: estimate, f"{graded}_bound": bound, **(metrics or {})},
        "thresholds": {graded: thresholds},
        "rows": 2000,
        "details": details or {},
        "evidence": {
            graded: {
                "estimate": estimate,
                "noise": "normal",
                "scale": 0.01,
                "higher_is_worse": higher_is_worse,
            }
        },
    }


def test_an_estimated_drop_is_shown_as_batch_minus_reference() -> None:
    # degradation = 0.83 - 0.71 = 0.12 (a drop), lower bound 0.09 >= 0.05: high; shown the other way.
    result = stored(
        "performance.estimated",
        "roc_auc",
        "degradation",
        0.12,
        0.09,
        [0.01, 0.02, 0.05],
        metrics={"estimated": 0.71, "estimated_reference": 0.83, "sampling_error": 0.01},
    )
    assert comparison_line(result) == (
        "roc_auc: estimate 0.71 vs reference 0.83, change −0.12 (bound −0.09; high threshold −0.05)"
    )


def test_out_of_range_shows_both_ranges_and_the_share_outside() -> None:
    # every row outside: failing share 1, the clean rate 0.0004, so the increase is 0.9996.
    result = stored(
        "abnormal.out_of_range",
        "LIMIT_BAL",
        "failing_rate_increase",
        0.9996,
        0.998,
        [0.001, 0.01, 0.05],
        metrics={"failing_share": 1.0},
        details={"reference_range": [10, 1000], "batch_range": [0.01, 1.0], "clean_rate": 0.0004},
    )
    assert comparison_line(result) == (
        "range: batch [0.01, 1] vs reference [10, 1000]; 100% of rows outside, "
        "change +0.9996 (bound +0.998; high threshold +0.05)"
    )


def test_fairness_shows_the_index_against_the_reference_and_the_groups_compared() -> None:
    result = stored(
        "fairness.statistical_parity",
        "SEX",
        "disparity_change",
        0.2492,
        0.2048,
        [0.05, 0.1, 0.2],
        metrics={"value": 0.264, "reference_value": 0.0036},
        details={
            "records": [
                {
                    "subgroup": {"SEX": 2},
                    "other": "rest",
                    "rows": 1200,
                    "other_rows": 800,
                    "disparity": 0.264,
                    "statistical_parity": 0.75,
                    "other_statistical_parity": 0.486,
                }
            ]
        },
    )
    assert comparison_line(result) == (
        "disparity: batch 0.264 vs reference 0.0036; largest gap: SEX=2 vs rest, "
        "statistical_parity 0.75 vs 0.486, change +0.2492 (bound +0.2048; high threshold +0.2)"
    )


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        ([0.25, 0.6, 0.15], "share of rows with AGE in (0, 1]: batch 60% vs reference 40%"),  # |0.2| largest
        ([0.2, 0.3, 0.5], "share of rows with AGE > 1: batch 50% vs reference 30%"),
        ([0.5, 0.3, 0.2], "share of rows with AGE ≤ 0: batch 50% vs reference 30%"),
    ],
)
def test_numeric_drift_names_the_bin_whose_share_moved_most(current: list[float], expected: str) -> None:
    result = stored(
        "drift.numeric",
        "AGE",
        "psi",
        0.35,
        0.31,
        [0.1, 0.2, 0.3],
        details={"edges": [0.0, 1.0], "reference_shares": [0.3, 0.4, 0.3], "current_shares": current},
    )
    assert comparison_line(result) == f"{expected}, psi 0.35 (bound 0.31; high threshold 0.3)"


def test_categorical_drift_names_the_category_whose_share_moved_most() -> None:
    result = stored(
        "drift.categorical",
        "EDUCATION",
        "psi",
        0.5,
        0.45,
        [0.1, 0.2, 0.3],
        details={
            "largest_changes": {
                "4": {"reference": 0.1, "current": 0.4},
                "1": {"reference": 0.5, "current": 0.3},
            }
        },
    )
    assert comparison_line(result) == (
        "share of EDUCATION = 4: batch 40% vs reference 10%, psi 0.5 (bound 0.45; high threshold 0.3)"
    )


def test_a_subset_that_got_worse_and_a_label_share_that_fell_show_their_direction() -> None:
    subset = stored(
        "subset.accuracy",
        "SEX",
        "change",
        0.1,
        0.06,
        [0.05, 0.1, 0.15],
        metrics={"subset_value": 0.6, "reference_value": 0.7, "batch_value": 0.68},
        details={"metric": "accuracy", "subset": "2", "kind": "categorical", "compare_to": "reference"},
    )
    assert comparison_line(subset) == (
        "accuracy for SEX = 2: batch 0.6 vs reference 0.7, change −0.1 (bound −0.06; low threshold −0.05)"
    )
    label = stored(
        "drift.label",
        "default",
        "share_change",
        0.2,
        0.15,
        [0.015, 0.03, 0.06],
        details={"changed_class": "1", "reference_share": 0.5, "current_share": 0.3},
    )
    assert comparison_line(label) == (
        "share of class 1: batch 30% vs reference 50%, change −0.2 (bound −0.15; high threshold −0.06)"
    )


def test_a_numeric_label_location_shows_both_levels_and_moves_with_the_label() -> None:
    """A mean delay from 5.8 to −8 minutes (reference standard deviation 30): the change, graded as
    an absolute value in standard deviations, is shown with the sign the label moved by."""
    mean = stored(
        "drift.label",
        "delay",
        "mean_change",
        0.46,
        0.34,
        [0.1, 0.25, 0.5],
        details={"mean": -8.0, "reference_mean": 5.8, "reference_std": 30.0},
    )
    assert comparison_line(mean) == (
        "mean of delay: batch −8 vs reference 5.8; in reference standard deviations (30), "
        "mean_change −0.46 (bound −0.34; medium threshold −0.25)"
    )
    p90 = stored(
        "drift.label",
        "delay",
        "p90_change",
        0.6,
        0.52,
        [0.1, 0.25, 0.5],
        details={"quantiles": {"p90": 70.0}, "reference_quantiles": {"p90": 52.0}, "reference_std": 30.0},
    )
    assert comparison_line(p90).startswith("90th percentile of delay: batch 70 vs reference 52;")


def test_the_metric_whose_bound_reaches_the_worst_severity_decides() -> None:
    result = stored(
        "abnormal.nulls",
        "PAY_0",
        "null_rate_increase",
        0.0,
        -0.001,
        [0.001, 0.01, 0.05],
        metrics={"inf_rate_increase": 0.029, "inf_rate_increase_bound": 0.015, "reference_inf_rate": 0.001},
        details={"null_rows": 0, "inf_rows": 60},
    )
    result["thresholds"]["inf_rate_increase"] = [0.001, 0.01, 0.05]
    result["evidence"]["inf_rate_increase"] = {"estimate": 0.029, "noise": "normal", "scale": 0.005}
    assert deciding_metric(result) == "inf_rate_increase"
    # 60 of 2000 rows are infinite: 3%, against the reference's 0.1%.
    assert comparison_line(result) == (
        "inf rate: batch 3% vs reference 0.1%, change +0.029 (bound +0.015; medium threshold +0.01)"
    )


def test_results_without_evidence_or_that_did_not_run_have_no_comparison() -> None:
    headline = {"check": "run.drifted_features", "target": "*", "status": "ok", "metrics": {"drifted": 3}}
    assert comparison(headline) is None
    failed = {**stored("drift.numeric", "x", "psi", 0.5, 0.4, [0.3]), "status": "error", "reason": "r"}
    assert comparison(failed) is None


def test_a_real_performance_result_compares_the_accuracies_sklearn_computes() -> None:
    import numpy as np
    import pandas as pd

    from driftline.checks import registry
    from driftline.checks.columns import Columns
    from driftline.checks.evidence import grade_results

    rng = np.random.default_rng(3)

    def frame(n: int, noise: float) -> pd.DataFrame:
        label = rng.integers(0, 2, n)
        flipped = rng.random(n) < noise
        return pd.DataFrame({"label": label, "prediction": np.where(flipped, 1 - label, label)})

    reference, batch = frame(4000, 0.1), frame(3000, 0.3)
    columns = Columns(label="label", prediction="prediction")
    results = grade_results(registry.create("performance.overall", {}).run(reference, batch, columns))
    accuracy = next(r.to_dict() for r in results if r.target == "accuracy")
    before = accuracy_score(reference["label"], reference["prediction"])
    after = accuracy_score(batch["label"], batch["prediction"])
    line = comparison_line(accuracy)
    change = f"{after - before:+.4g}".replace("-", "−")
    assert line is not None
    assert line.startswith(f"accuracy: batch {after:.4g} vs reference {before:.4g}, change {change} (bound −")
