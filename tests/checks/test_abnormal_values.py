"""Numeric outliers and out-of-range values, pinned against the document's examples and hand counts."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driftline.checks.abnormal_values import (
    MEDIAN_ACCURACY,
    NumericOutliers,
    OutOfRange,
    bucket_keys,
    bucket_value,
)
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from tests.golden import golden_cases

COLUMNS = Columns(numeric=("x",))


def flagged(check, reference: list[float], batch: list[float]) -> list[float]:
    """Batch values the check fails, read back through the failing ids (the index)."""
    current = pd.DataFrame({"x": batch})
    (result,) = check.run(pd.DataFrame({"x": reference}), current, COLUMNS)
    return current["x"].loc[result.details["failing_ids"]].tolist()


def ages_reference(seed: int = 0) -> np.ndarray:
    """Ages 0..97, each seen 10 times, plus 103 and 114 seen once, shuffled."""
    ages = np.r_[np.repeat(np.arange(98), 10), 103, 114]
    return np.random.default_rng(seed).permutation(ages).astype(float)


def test_outlier_thresholds_of_the_age_example() -> None:
    profile = NumericOutliers().fit(pd.DataFrame({"x": ages_reference()}), COLUMNS)
    assert profile["targets"]["x"]["lower"] == 0
    assert profile["targets"]["x"]["upper"] == 97
    assert profile["targets"]["x"]["unit"] == "value"


def test_age_outliers_are_flagged_in_the_batch() -> None:
    batch = [50, 97, 0, 103, 98, 114, -1, 60]
    assert flagged(NumericOutliers(), ages_reference().tolist(), batch) == [103, 98, 114, -1]


def test_min_support_sets_what_counts_as_support() -> None:
    # 103 is seen twice: with the default support of 2 it belongs to the range, with 3 it does not.
    reference = np.r_[ages_reference(), 103]
    assert NumericOutliers().fit(pd.DataFrame({"x": reference}), COLUMNS)["targets"]["x"]["upper"] == 103
    strict = NumericOutliers(min_support=3).fit(pd.DataFrame({"x": reference}), COLUMNS)
    assert strict["targets"]["x"]["upper"] == 97


def brute_force_binned_range(x: np.ndarray, min_support: int) -> tuple[float, float]:
    """Thresholds from Freedman-Diaconis bins anchored at the minimum, counted value by value."""
    width = 2 * stats.iqr(x) / len(x) ** (1 / 3)
    low = min(x)
    bins = [math.floor((v - low) / width) for v in x]
    support = Counter(bins)
    kept = [v for v, b in zip(x, bins, strict=True) if support[b] >= min_support]
    return min(kept), max(kept)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_continuous_thresholds_match_a_brute_force_binning(seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal(3000)
    profile = NumericOutliers().fit(pd.DataFrame({"x": x}), COLUMNS)["targets"]["x"]
    assert profile["unit"] == "bin"
    assert (profile["lower"], profile["upper"]) == pytest.approx(brute_force_binned_range(x, 2), abs=0)
    # The bulk is kept: the thresholds lie beyond the 1st and 99th percentiles.
    assert profile["lower"] < np.quantile(x, 0.01) and profile["upper"] > np.quantile(x, 0.99)


def test_isolated_continuous_values_are_outliers() -> None:
    x = np.r_[np.random.default_rng(3).standard_normal(5000), 25.0]
    profile = NumericOutliers().fit(pd.DataFrame({"x": x}), COLUMNS)["targets"]["x"]
    assert profile["upper"] < 6
    assert flagged(NumericOutliers(), x.tolist(), [0.0, 25.0, 1.0]) == [25.0]


def test_unique_and_ascending_features_are_not_checked() -> None:
    rng = np.random.default_rng(0)
    reference = pd.DataFrame(
        {
            "id": rng.permutation(1000).astype(float),
            "ts": np.arange(1000.0),
            "x": rng.integers(0, 10, 1000).astype(float),
        }
    )
    columns = Columns(numeric=("id", "ts", "x"))
    assert list(NumericOutliers().fit(reference, columns)["targets"]) == ["x"]
    results = run_check(NumericOutliers(), reference, Columns(numeric=("id", "ts")), reference=reference)
    assert results[0].status == "skipped" and "unique or ascending" in results[0].reason


@pytest.mark.parametrize("case", golden_cases("out_of_range"), ids=lambda c: c["id"])
def test_out_of_range_golden(case: dict) -> None:
    inputs = case["inputs"]
    reference = [inputs["ref_min"], (inputs["ref_min"] + inputs["ref_max"]) / 2, inputs["ref_max"]]
    assert flagged(OutOfRange(), reference, inputs["eval_values"]) == case["expected"]


def test_out_of_range_metrics_dropped_rows_and_infinite_values() -> None:
    """The range is the finite reference's; NaN is dropped, -inf and +inf are below and above it."""
    reference = pd.DataFrame({"x": [0.0, 5.0, 10.0, np.nan, np.inf]})
    current = pd.DataFrame({"x": [-1.0, 0.0, 3.0, 11.0, 12.0, np.nan, np.inf, -np.inf]})
    (result,) = OutOfRange().run(reference, current, COLUMNS)
    assert (result.details["lower"], result.details["upper"]) == (0.0, 10.0)
    assert result.rows == 7 and result.details["dropped_rows"] == 1 and result.details["inf_rows"] == 2
    assert result.failing_rows == 5 and result.details["failing_ids"] == [0, 3, 4, 6, 7]
    assert result.metrics["failing_share"] == pytest.approx(5 / 7)
    assert (result.details["below_rows"], result.details["above_rows"]) == (2, 3)
    # Left out of three values, the minimum and the maximum fall outside the other two: a clean
    # batch shows 2/3 of its rows out of range, and seven rows cannot tell 5/7 from that.
    assert result.details["clean_rate"] == pytest.approx(2 / 3)
    assert result.severity == "none"


def test_non_numeric_batch_column_is_an_error_for_that_column_only() -> None:
    reference = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]})
    current = pd.DataFrame({"x": ["a", "b"], "y": [2.0, 9.0]})
    results = {r.target: r for r in OutOfRange().run(reference, current, Columns(numeric=("x", "y")))}
    assert results["x"].status == "error" and "'x'" in results["x"].reason
    assert results["y"].status == "ok" and results["y"].failing_rows == 1


def test_all_nan_columns_are_skipped_by_name() -> None:
    reference = pd.DataFrame({"x": [np.nan, np.nan], "y": [1.0, 2.0]})
    current = pd.DataFrame({"x": [1.0, 2.0], "y": [np.nan, np.nan]})
    results = {r.target: r for r in OutOfRange().run(reference, current, Columns(numeric=("x", "y")))}
    assert results["x"].status == "skipped" and "'x'" in results["x"].reason
    assert results["y"].status == "skipped" and "'y'" in results["y"].reason


def test_invalid_min_support_is_rejected() -> None:
    with pytest.raises(ValueError, match="min_support"):
        NumericOutliers(min_support=0)


# --- the ranges and medians of out_of_range ---------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        np.random.default_rng(0).lognormal(10, 2, 5000),
        -np.random.default_rng(1).exponential(3e-7, 5000),
        np.r_[np.random.default_rng(2).normal(0, 1e6, 4999), 0.0],
        np.geomspace(5e-324, 1.7e308, 2001) * np.where(np.arange(2001) % 2, 1, -1),
    ],
    ids=["lognormal", "negative-tiny", "both-signs", "every-magnitude"],
)
def test_each_value_lies_within_the_accuracy_of_its_bucket(values: np.ndarray) -> None:
    keys = bucket_keys(values)
    standing_for = np.array([bucket_value(int(k)) for k in keys])
    assert np.all(np.abs(standing_for - values) <= MEDIAN_ACCURACY * np.abs(values) * (1 + 1e-9))
    # Keys are ordered like the values, so that counts per key give ranks.
    order = np.argsort(values, kind="stable")
    assert np.all(np.diff(keys[order]) >= 0)


def test_out_of_range_reports_the_ranges_and_medians_of_both_sides() -> None:
    rng = np.random.default_rng(5)
    reference = pd.DataFrame({"x": np.r_[rng.lognormal(11, 0.6, 3001), np.nan, np.inf]})
    batch_values = np.r_[rng.lognormal(11, 0.6, 1999) / 1000, np.nan, -np.inf, 0.0]
    (result,) = run_check(OutOfRange(), pd.DataFrame({"x": batch_values}), COLUMNS, reference=reference)
    details = result.details
    finite_reference = reference["x"][np.isfinite(reference["x"])]
    finite_batch = batch_values[np.isfinite(batch_values)]
    assert details["reference_range"] == [finite_reference.min(), finite_reference.max()]
    assert details["batch_range"] == [0.0, finite_batch.max()]
    assert details["reference_median"] == np.median(finite_reference)
    lower_median = np.quantile(finite_batch, 0.5, method="lower")
    assert details["batch_median"] == pytest.approx(lower_median, rel=MEDIAN_ACCURACY)
    # The stored form keeps them as plain JSON numbers.
    stored = json.loads(json.dumps(result.to_dict(), allow_nan=False))["details"]
    assert (
        stored["batch_range"] == details["batch_range"] and stored["batch_median"] == details["batch_median"]
    )


def test_a_constant_batch_has_its_value_as_median_and_an_infinite_one_has_none() -> None:
    reference = pd.DataFrame({"x": np.arange(100.0)})
    (constant,) = OutOfRange().run(reference, pd.DataFrame({"x": np.full(20, 7.25)}), COLUMNS)
    assert constant.details["batch_median"] == 7.25 and constant.details["batch_range"] == [7.25, 7.25]
    (infinite,) = OutOfRange().run(reference, pd.DataFrame({"x": np.full(20, np.inf)}), COLUMNS)
    assert infinite.details["batch_median"] is None and infinite.details["batch_range"] is None
    assert infinite.failing_rows == 20


def test_out_of_range_details_are_the_same_from_partitions() -> None:
    rng = np.random.default_rng(6)
    reference = pd.DataFrame({"x": rng.normal(50, 10, 2000)})
    current = pd.DataFrame({"x": np.r_[rng.normal(50, 10, 3000) * 100, rng.normal(-5, 1, 1000)]})
    check = OutOfRange()
    profile = check.fit(reference, COLUMNS)
    (whole,) = check.evaluate(current, profile, COLUMNS)
    shuffled = current.sample(frac=1.0, random_state=0)
    parts = [shuffled.iloc[rows] for rows in np.array_split(np.arange(len(shuffled)), 7)]
    (merged,) = check.finish(
        check.merge([check.partial(p, profile, COLUMNS) for p in parts]), profile, COLUMNS
    )
    keys = ("reference_range", "batch_range", "reference_median", "batch_median", "below_rows", "above_rows")
    assert {k: merged.details[k] for k in keys} == {k: whole.details[k] for k in keys}
    lower_median = np.quantile(current["x"], 0.5, method="lower")
    assert whole.details["batch_median"] == pytest.approx(lower_median, rel=MEDIAN_ACCURACY)


def test_the_median_of_whole_numbers_below_100_is_exact() -> None:
    rng = np.random.default_rng(7)
    reference = pd.DataFrame({"x": rng.integers(18, 90, 1000).astype(float)})
    for seed in range(20):
        ages = np.random.default_rng(seed).integers(-99, 100, 301).astype(float)
        (result,) = OutOfRange().run(reference, pd.DataFrame({"x": ages}), COLUMNS)
        assert result.details["batch_median"] == np.quantile(ages, 0.5, method="lower")
