"""Trend helpers, pinned against hand computations, numpy medians and scipy's MAD."""

from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kstwobign, median_abs_deviation

from driftline.checks.base import Metric
from driftline.tasks.history.trend import (
    KeyMetric,
    declared_metrics,
    key_metric,
    key_metrics,
    moved_results,
    noise_spread,
    rolling_baseline,
    sustained_drift,
    threshold_step,
)

T0 = pd.Timestamp("2024-05-01", tz="UTC")
PSI = {"psi": Metric((0.1, 0.2, 0.3))}
PSI_KEY = KeyMetric("psi", higher_is_worse=True, spread_floor=0.01)


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


def robust_z(previous: np.ndarray, value: float, floor: float) -> float:
    """By hand: (value - median) / max(MAD scaled to a normal sd, floor)."""
    spread = max(median_abs_deviation(previous, scale="normal"), floor)
    return (value - np.median(previous)) / spread


# --- rolling baseline (the report's bands) ------------------------------------------------------


def test_every_row_uses_only_earlier_values_within_the_window() -> None:
    frame = rolling_baseline(series([5, 1, 9, 2, 8, 3]), window=3, min_periods=2)
    # row 2 (value 9): previous 5, 1 -> median 3, MAD 2; row 5 (value 3): previous 9, 2, 8 -> median 8, MAD 1
    assert frame["baseline_median"][:2].isna().all()
    assert frame.loc[2, ["baseline_median", "baseline_mad"]].tolist() == [3.0, 2.0]
    assert frame.loc[5, ["baseline_median", "baseline_mad"]].tolist() == [8.0, 1.0]
    assert frame["baseline_runs"].tolist() == [0, 1, 2, 3, 3, 3]


def test_rolling_z_matches_scipy_normal_scaled_mad() -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(0.1, 0.02, size=30)
    frame = rolling_baseline(series(values), window=10)
    for i in (10, 17, 29):
        assert frame.loc[i, "robust_z"] == pytest.approx(robust_z(values[i - 10 : i], values[i], 0.0))


def test_missing_values_are_left_out_of_baselines() -> None:
    frame = rolling_baseline(series([1, 2, np.nan, 3, 10]), window=3)
    assert len(frame) == 4
    # the last value's baseline is 1, 2, 3 (the NaN run is skipped): median 2, MAD 1
    assert frame.iloc[-1][["baseline_median", "baseline_mad"]].tolist() == [2.0, 1.0]


@pytest.mark.parametrize("bad", [{"window": 0}, {"min_periods": 0}])
def test_bad_window_raises(bad: dict) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        rolling_baseline(series([1, 2]), **bad)


# --- the key metric of a result -----------------------------------------------------------------


def stored(metrics, thresholds, evidence=None, check="drift.numeric", target="age", failing_rows=40) -> dict:
    """A stored result in the result format of docs/design.md."""
    return {
        "check": check,
        "target": target,
        "status": "ok",
        "metrics": metrics,
        "thresholds": thresholds,
        "evidence": evidence or {},
        "failing_rows": failing_rows,
    }


def test_p_values_bounds_and_reported_values_are_never_the_key() -> None:
    result = stored(
        {"psi": 0.02, "psi_bound": 0.01, "psi_p": 1e-9, "ks_pvalue": 1e-12, "ks_statistic": 0.4},
        {"psi": [0.1, 0.2, 0.3]},
    )
    assert key_metric(result, PSI).metric == "psi"
    assert key_metric(result, None).metric == "psi"  # an undeclared check: its stored thresholds
    # a threshold stored on a metric the declaration does not grade does not make it an effect
    odd = stored({"psi": 0.02, "ks_pvalue": 0.001}, {"psi": [0.1, 0.2, 0.3], "ks_pvalue": [0.05]})
    assert key_metric(odd, PSI).metric == "psi"
    assert key_metric(stored({"ks_pvalue": 0.001}, {}), PSI) is None
    assert key_metric(stored({}, {}), PSI) is None  # a skipped result


def test_the_key_is_the_metric_whose_bound_decides_the_severity() -> None:
    declared = {"share_change": Metric((0.015, 0.03, 0.06)), "ks_statistic": Metric((0.1, 0.2, 0.3))}
    thresholds = {"share_change": [0.015, 0.03, 0.06], "ks_statistic": [0.1, 0.2, 0.3]}
    # share_change: estimate 0.09 (high) but bound 0.02 (low); ks_statistic: bound 0.25 (medium)
    metrics = {
        "share_change": 0.09,
        "share_change_bound": 0.02,
        "ks_statistic": 0.27,
        "ks_statistic_bound": 0.25,
    }
    assert key_metric(stored(metrics, thresholds), declared).metric == "ks_statistic"
    # equal severities (none): the first graded metric
    calm = {"share_change": 0.0, "share_change_bound": -0.01, "ks_statistic": 0.01, "ks_statistic_bound": 0.0}
    assert key_metric(stored(calm, thresholds), declared).metric == "share_change"


def test_a_lower_is_worse_metric_keeps_its_direction() -> None:
    declared = {"f1": Metric((0.75, 0.7, 0.65), higher_is_worse=False)}
    key = key_metric(stored({"f1": 0.8}, {"f1": [0.75, 0.7, 0.65]}, check="nlp.accuracy"), declared)
    # no evidence: a tenth of the smallest threshold step, |0.7 - 0.75| = 0.05
    assert (key.metric, key.higher_is_worse, key.spread_floor) == ("f1", False, pytest.approx(0.005))


@pytest.mark.parametrize(
    ("thresholds", "step"),
    [
        ((0.001, 0.01, 0.05), 0.001),
        ((1.1, 1.25, 1.5), 0.15),
        ((0.75, 0.7, 0.65), 0.05),
        ((0.2,), 0.2),
        ((0.0,), 0.0),
    ],
)
def test_threshold_step(thresholds: tuple, step: float) -> None:
    assert threshold_step(thresholds) == pytest.approx(step)


def test_noise_spread_of_each_noise_model() -> None:
    assert noise_spread({"noise": "normal", "scale": 0.004}) == 0.004
    # scale·χ²(df) has variance scale²·2·df
    assert noise_spread({"noise": "scaled_chi2", "scale": 0.000312, "df": 7.87}) == pytest.approx(
        0.000312 * math.sqrt(2 * 7.87)
    )
    assert noise_spread({"noise": "kolmogorov", "scale": 0.02}) == pytest.approx(
        0.02 * kstwobign.std(), rel=1e-9
    )
    assert noise_spread({"noise": "normal", "scale": math.inf}) == 0.0


def test_the_floor_is_the_larger_of_the_noise_and_the_threshold_step() -> None:
    thresholds = {"failing_rate_increase": [0.001, 0.01, 0.05]}
    noisy = {"failing_rate_increase": {"noise": "normal", "scale": 0.002, "higher_is_worse": True}}
    quiet = {"failing_rate_increase": {"noise": "normal", "scale": 0.00001, "higher_is_worse": True}}
    metrics = {"failing_rate_increase": 0.0}
    assert key_metric(stored(metrics, thresholds, noisy), None).spread_floor == 0.002
    assert key_metric(stored(metrics, thresholds, quiet), None).spread_floor == pytest.approx(0.0001)
    assert key_metric(stored(metrics, thresholds, failing_rows=1), None).tiny
    assert not key_metric(stored(metrics, thresholds, failing_rows=None), None).tiny


def test_key_metrics_are_keyed_by_result() -> None:
    results = [stored({"psi": 0.1}, {"psi": [0.1]}, target="a"), stored({}, {}, target="b")]
    assert set(key_metrics(results, {"drift.numeric": PSI})) == {("drift.numeric", "a")}


def test_declarations_come_from_the_catalog_and_never_import_a_named_module() -> None:
    found = declared_metrics(["drift.numeric", "drift.numeric", "no.such_check", "trend_probe_module:Check"])
    assert set(found) == {"drift.numeric"}
    assert found["drift.numeric"]["psi"].thresholds == (0.1, 0.2, 0.3)
    assert "trend_probe_module" not in sys.modules


# --- results that moved -------------------------------------------------------------------------


def test_the_newest_value_against_a_hand_computed_baseline() -> None:
    values = [0.10, 0.12, 0.11, 0.13, 0.10, 0.30]
    (row,) = moved_results(series(values), {("drift.numeric", "age"): PSI_KEY}).to_dict("records")
    previous = np.array(values[:-1])
    # median 0.11; |deviations| 0.01, 0.01, 0, 0.02, 0.01 -> MAD 0.01, over 0.6745 -> 0.014826 > floor 0.01
    assert row["baseline_median"] == pytest.approx(np.median(previous)) == pytest.approx(0.11)
    assert row["spread"] == pytest.approx(0.01 / 0.6744897501960817)
    assert row["robust_z"] == pytest.approx(robust_z(previous, 0.30, 0.01))
    assert (row["baseline_runs"], row["batch_id"], row["value"]) == (5, "b5", 0.30)
    assert row["change"].startswith("now 0.3, median of the 5 earlier runs 0.11")


def test_window_limits_the_baseline_and_its_count_is_reported() -> None:
    values = [0.5, 0.5, 0.5, 0.10, 0.12, 0.11, 0.13, 0.10, 0.30]
    (row,) = moved_results(series(values), {("drift.numeric", "age"): PSI_KEY}, window=5).to_dict("records")
    assert row["baseline_runs"] == 5
    assert row["robust_z"] == pytest.approx(robust_z(np.array(values[3:8]), 0.30, 0.01))


def test_a_constant_baseline_gives_a_finite_z_and_says_what_changed() -> None:
    values = [0.0] * 8 + [0.002]
    key = KeyMetric("failing_rate_increase", higher_is_worse=True, spread_floor=0.0002)
    history = series(values, check="abnormal.nulls", metric="failing_rate_increase")
    (row,) = moved_results(history, {("abnormal.nulls", "age"): key}).to_dict("records")
    assert row["robust_z"] == pytest.approx(0.002 / 0.0002)
    assert math.isfinite(row["robust_z"]) and row["baseline_constant"]
    assert row["change"] == "was 0 for 8 runs, now 0.002"


def test_one_out_of_range_row_is_not_an_anomaly() -> None:
    rows, reference_rows = 6000, 20000
    # Agresti–Caffo standard error of a rate change with no failing rows on either side, by hand
    se = math.sqrt(sum((1 / (n + 2)) * (1 - 1 / (n + 2)) / (n + 2) for n in (rows, reference_rows)))
    result = stored(
        {"failing_rate_increase": 1 / rows},
        {"failing_rate_increase": [0.001, 0.01, 0.05]},
        {"failing_rate_increase": {"noise": "normal", "scale": se, "higher_is_worse": True}},
        check="abnormal.out_of_range",
        failing_rows=1,
    )
    key = key_metric(result, None)
    history = series([0.0] * 8 + [1 / rows], check="abnormal.out_of_range", metric="failing_rate_increase")
    results = {("abnormal.out_of_range", "age"): key}
    assert moved_results(history, results, z=0.5).empty  # resting on one failing row
    untiny = {("abnormal.out_of_range", "age"): KeyMetric(key.metric, True, key.spread_floor)}
    (row,) = moved_results(history, untiny, z=0.5).to_dict("records")
    assert row["robust_z"] == pytest.approx((1 / rows) / se) and row["robust_z"] < 3


def test_one_row_per_result_and_p_values_never_enter() -> None:
    psi = [0.02, 0.03, 0.02, 0.03, 0.02, 0.60]
    history = pd.concat(
        [
            series(psi),
            series([v - 0.01 for v in psi], metric="psi_bound"),
            series([0.5, 0.4, 0.6, 0.5, 0.4, 1e-12], metric="psi_p"),
            series([0.5, 0.4, 0.6, 0.5, 0.4, 1e-12], metric="ks_pvalue"),
        ]
    )
    moved = moved_results(history, {("drift.numeric", "age"): PSI_KEY})
    assert moved[["check", "target", "metric"]].values.tolist() == [["drift.numeric", "age", "psi"]]
    # only the p-values move: nothing is flagged
    calm = pd.concat([series([*psi[:-1], 0.02]), series([0.5, 0.4, 0.6, 0.5, 0.4, 0.999], metric="psi_p")])
    assert moved_results(calm, {("drift.numeric", "age"): PSI_KEY}).empty


def test_only_moves_towards_worse_count() -> None:
    back_to_normal = series([0.5, 0.52, 0.49, 0.51, 0.5, 0.02])
    assert moved_results(back_to_normal, {("drift.numeric", "age"): PSI_KEY}).empty
    f1 = KeyMetric("f1", higher_is_worse=False, spread_floor=0.005)
    falling = series([0.80, 0.81, 0.79, 0.80, 0.70], check="nlp.accuracy", metric="f1")
    (row,) = moved_results(falling, {("nlp.accuracy", "age"): f1}).to_dict("records")
    # median 0.8, MAD 0.005 -> sd 0.0074; positive z towards worse (lower)
    assert row["robust_z"] == pytest.approx(-robust_z(np.array([0.80, 0.81, 0.79, 0.80]), 0.70, 0.005))
    rising = series([0.80, 0.81, 0.79, 0.80, 0.95], check="nlp.accuracy", metric="f1")
    assert moved_results(rising, {("nlp.accuracy", "age"): f1}).empty


def test_too_short_a_history_has_no_z() -> None:
    assert moved_results(series([0.01, 0.02, 0.9]), {("drift.numeric", "age"): PSI_KEY}).empty


def best_split(values: np.ndarray) -> tuple[int, float]:
    """By brute force: the split (values after it) with the largest least-squares cost fall."""
    n = len(values)
    total = np.sum((values - values.mean()) ** 2)
    falls = {
        n - k: total
        - np.sum((values[:k] - values[:k].mean()) ** 2)
        - np.sum((values[k:] - values[k:].mean()) ** 2)
        for k in range(2, n - 1)
    }
    after = max(falls, key=falls.get)
    return after, falls[after]


def test_a_recent_level_shift_against_brute_force() -> None:
    rng = np.random.default_rng(12)
    shifted = np.concatenate([rng.normal(0.10, 0.01, 28), [0.2, 0.21, 0.19]])
    calm = rng.normal(0.1, 0.01, 31)
    history = pd.concat([series(shifted, target="age"), series(calm, target="calm")])
    keys = {("drift.numeric", t): KeyMetric("psi", True, 0.001) for t in ("age", "calm")}
    (row,) = moved_results(history, keys, z=1e9, shift_window=30, within=3).to_dict("records")
    after, fall = best_split(shifted)
    noise = median_abs_deviation(np.diff(shifted), scale="normal") / math.sqrt(2)
    assert (row["target"], row["runs_since"], after) == ("age", 3, 3)
    assert row["before"] == pytest.approx(shifted[:28].mean()) and row["after"] == pytest.approx(0.2)
    assert row["strength"] == pytest.approx(fall / max(noise, 0.001) ** 2)
    assert row["change"] == f"level moved from {shifted[:28].mean():.4g} to 0.2 over the last 3 runs"
    assert moved_results(history, keys, z=1e9, within=2).empty  # the shift is three runs old


def test_a_tiny_step_from_a_flat_series_is_no_shift() -> None:
    values = [0.0] * 20 + [1e-4, 1e-4]
    flat = {("drift.numeric", "age"): KeyMetric("psi", True, 0.01)}
    assert moved_results(series(values), flat).empty
    # the same step against a floor far below it is a strong shift (and a large z)
    (row,) = moved_results(series(values), {("drift.numeric", "age"): KeyMetric("psi", True, 1e-6)}).to_dict(
        "records"
    )
    assert row["runs_since"] == 2 and row["robust_z"] == pytest.approx(1e-4 / 1e-6)


def test_moved_results_bad_arguments_and_no_keys() -> None:
    with pytest.raises(ValueError, match="shift_window at least 3"):
        moved_results(series([1.0, 2.0]), {}, shift_window=2)
    assert list(moved_results(series([1.0, 2.0, 3.0, 4.0]), {}).columns)[:3] == ["check", "target", "metric"]


# --- sustained drift ----------------------------------------------------------------------------


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


def test_unknown_severity_name_and_empty_history() -> None:
    with pytest.raises(ValueError, match="min_severity"):
        sustained_drift(series([1]), "severe")
    assert sustained_drift(series([])).empty
