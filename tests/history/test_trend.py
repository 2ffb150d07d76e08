"""Trend helpers, pinned against hand computations and scipy's MAD."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import median_abs_deviation

from driftline.tasks.history.trend import latest_zscores, recent_shifts, rolling_baseline, sustained_drift

T0 = pd.Timestamp("2024-05-01", tz="UTC")


def series(values, check="drift.numeric", target="age", metric="psi", severities=None) -> pd.DataFrame:
    """A history frame (read_history's columns) of one series, one run a day."""
    n = len(values)
    return pd.DataFrame(
        {
            "batch_id": [f"b{i}" for i in range(n)],
            "batch_time": [T0 + pd.Timedelta(days=i) for i in range(n)],
            "check": check,
            "target": target,
            "metric": metric,
            "value": np.asarray(values, dtype=float),
            "severity": severities or ["none"] * n,
            "status": "ok",
        }
    )


def test_latest_value_against_a_hand_computed_baseline() -> None:
    # previous four values 1, 2, 3, 4: median 2.5; |deviations| 1.5, 0.5, 0.5, 1.5 -> MAD 1.0
    (row,) = latest_zscores(series([1, 2, 3, 4, 100]), window=4).to_dict("records")
    assert row["baseline_median"] == 2.5
    assert row["baseline_mad"] == 1.0
    assert row["baseline_runs"] == 4
    assert row["robust_z"] == pytest.approx((100 - 2.5) / 1.482602218505602)


def test_every_row_uses_only_earlier_values_within_the_window() -> None:
    frame = rolling_baseline(series([5, 1, 9, 2, 8, 3]), window=3, min_periods=2)
    # row 2 (value 9): previous 5, 1 -> median 3, MAD 2; row 5 (value 3): previous 9, 2, 8 -> median 8, MAD 1
    assert frame["baseline_median"][:2].isna().all()
    assert frame.loc[2, ["baseline_median", "baseline_mad"]].tolist() == [3.0, 2.0]
    assert frame.loc[5, ["baseline_median", "baseline_mad"]].tolist() == [8.0, 1.0]
    assert frame["baseline_runs"].tolist() == [0, 1, 2, 3, 3, 3]


def test_z_matches_scipy_normal_scaled_mad() -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(0.1, 0.02, size=30)
    frame = rolling_baseline(series(values), window=10)
    for i in (10, 17, 29):
        previous = values[i - 10 : i]
        expected = (values[i] - np.median(previous)) / median_abs_deviation(previous, scale="normal")
        assert frame.loc[i, "robust_z"] == pytest.approx(expected, rel=1e-12)


def test_too_short_history_gives_nan() -> None:
    frame = rolling_baseline(series([1.0, 2.0, 3.0]), window=10, min_periods=3)
    assert frame[["baseline_median", "baseline_mad", "robust_z"]].isna().all().all()


def test_constant_baseline_gives_zero_or_infinite_z() -> None:
    frame = rolling_baseline(series([0.2, 0.2, 0.2, 0.2, 0.5, 0.2]), window=3)
    assert frame.loc[3, "robust_z"] == 0.0
    assert frame.loc[4, "robust_z"] == math.inf
    # row 5: previous 0.2, 0.2, 0.5 -> median 0.2, MAD 0 again, value equals the median
    assert frame.loc[5, "robust_z"] == 0.0


def test_missing_values_are_left_out_of_baselines() -> None:
    frame = rolling_baseline(series([1, 2, np.nan, 3, 10]), window=3)
    assert len(frame) == 4
    # the last value's baseline is 1, 2, 3 (the NaN run is skipped): median 2, MAD 1
    assert frame.iloc[-1][["baseline_median", "baseline_mad"]].tolist() == [2.0, 1.0]


def test_series_do_not_mix_and_order_by_time() -> None:
    a = series([1, 2, 3, 4], target="age")
    b = series([10, 10, 10, 50], target="income")
    shuffled = pd.concat([a, b]).sample(frac=1.0, random_state=3)
    latest = latest_zscores(shuffled, window=3).set_index("target")
    assert latest.loc["age", "baseline_median"] == 2.0
    assert latest.loc["income", "robust_z"] == math.inf


def test_empty_history() -> None:
    assert latest_zscores(series([])).empty
    assert sustained_drift(series([])).empty


@pytest.mark.parametrize("bad", [{"window": 0}, {"min_periods": 0}])
def test_bad_window_raises(bad: dict) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        rolling_baseline(series([1, 2]), **bad)


def test_sustained_drift_counts_the_trailing_streak() -> None:
    severities = ["high", "none", "medium", "high", "medium"]
    (row,) = sustained_drift(series([0] * 5, severities=severities), "medium", runs=3).to_dict("records")
    assert row["streak"] == 3
    assert row["since_batch"] == "b2"
    assert row["last_batch"] == "b4"
    assert row["last_severity"] == "medium"
    assert bool(row["sustained"])


def test_a_streak_shorter_than_required_or_broken_is_not_sustained() -> None:
    history = pd.concat(
        [
            series([0] * 4, target="short", severities=["none", "none", "high", "high"]),
            series([0] * 4, target="broken", severities=["high", "high", "high", "low"]),
        ]
    )
    result = sustained_drift(history, "medium", runs=3).set_index("target")
    assert result.loc["short", ["streak", "since_batch", "sustained"]].tolist() == [2, "b2", False]
    assert result.loc["broken", ["streak", "since_batch", "sustained"]].tolist() == [0, None, False]


def test_metric_rows_of_one_run_count_once() -> None:
    psi = series([0.3, 0.3, 0.3], metric="psi", severities=["high"] * 3)
    ks = series([0.01, 0.01, 0.01], metric="ks_pvalue", severities=["high"] * 3)
    (row,) = sustained_drift(pd.concat([psi, ks]), "high", runs=3).to_dict("records")
    assert row["streak"] == 3


def test_unknown_severity_name_raises() -> None:
    with pytest.raises(ValueError, match="min_severity"):
        sustained_drift(series([1]), "severe")


def test_recent_shifts_keep_a_new_level_and_its_means() -> None:
    rng = np.random.default_rng(12)
    shifted = np.concatenate([rng.normal(0.10, 0.01, 28), [0.2, 0.21, 0.19]])
    history = pd.concat([series(shifted, target="age"), series(rng.normal(0.1, 0.01, 31), target="calm")])
    (row,) = recent_shifts(history, window=30, within=3).to_dict("records")
    assert (row["target"], row["runs_since"], row["last_batch"]) == ("age", 3, "b30")
    assert row["before"] == pytest.approx(shifted[:28].mean()) and row["after"] == pytest.approx(0.2)
    assert row["strength"] > 100
    assert recent_shifts(history, window=30, within=2).empty  # the shift is three runs old


def test_recent_shifts_bad_arguments() -> None:
    with pytest.raises(ValueError, match="window must be at least 3"):
        recent_shifts(series([1.0, 2.0]), window=2)
