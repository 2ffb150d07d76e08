"""Baseline bands pinned against pandas rolling windows, scipy's MAD, a NannyML-style hand computation
and ruptures run directly."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import ruptures
from scipy.stats import median_abs_deviation

from driftline.tasks.history import baseline
from driftline.tasks.history.baseline import (
    band_limits,
    chunk_band,
    level_shifts,
    outside_band,
    recent_windows,
    rolling_band,
)

T0 = pd.Timestamp("2025-01-01", tz="UTC")


def history(values_by_target: dict[str, np.ndarray], metric: str = "psi") -> pd.DataFrame:
    """A history frame with one series per target, hourly runs."""
    frames = []
    for target, values in values_by_target.items():
        n = len(values)
        frames.append(
            pd.DataFrame(
                {
                    "batch_id": [f"b{i:05d}" for i in range(n)],
                    "batch_time": [T0 + pd.Timedelta(hours=i) for i in range(n)],
                    "check": "drift.numeric",
                    "target": target,
                    "metric": metric,
                    "value": np.asarray(values, dtype=float),
                    "severity": "none",
                    "status": "ok",
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def test_std_band_matches_pandas_rolling_on_the_previous_values() -> None:
    rng = np.random.default_rng(1)
    values = {"age": rng.normal(0.1, 0.03, 200), "income": rng.gamma(2.0, 0.05, 200)}
    frame = rolling_band(history(values), window=30, method="std", min_periods=5)
    for target, series in values.items():
        got = frame[frame["target"] == target]
        shifted = pd.Series(series).shift(1).rolling(30, min_periods=5)
        np.testing.assert_allclose(got["baseline_center"], shifted.mean(), rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(got["baseline_scale"], shifted.std(ddof=1), rtol=1e-10, equal_nan=True)
        expected_z = (series - shifted.mean()) / shifted.std(ddof=1)
        np.testing.assert_allclose(got["baseline_z"], expected_z, rtol=1e-9, equal_nan=True)


def test_mad_band_matches_scipy_median_abs_deviation() -> None:
    rng = np.random.default_rng(2)
    values = rng.standard_t(3, 120)
    frame = rolling_band(history({"age": values}), window=20, method="mad")
    for i in (3, 20, 21, 77, 119):
        previous = values[max(0, i - 20) : i]
        row = frame.iloc[i]
        assert row["baseline_center"] == pytest.approx(np.median(previous), rel=1e-12)
        assert row["baseline_spread"] == pytest.approx(median_abs_deviation(previous), rel=1e-12)
        assert row["baseline_scale"] == pytest.approx(
            median_abs_deviation(previous, scale="normal"), rel=1e-12
        )
        assert row["baseline_runs"] == len(previous)


def test_blocks_of_rows_give_the_same_bands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Long histories are processed in blocks; a window that straddles two blocks is still whole."""
    rng = np.random.default_rng(3)
    frame = history({"a": rng.normal(size=97), "b": rng.normal(size=61), "c": rng.normal(size=5)})
    whole = rolling_band(frame, window=12, method="mad")
    monkeypatch.setattr(baseline, "ROW_BLOCK", 7)
    pieces = rolling_band(frame, window=12, method="mad")
    pd.testing.assert_frame_equal(whole, pieces)


def test_series_never_borrow_values_from_each_other() -> None:
    frame = rolling_band(history({"a": [1.0, 2, 3, 4], "b": [100.0, 100, 100, 100]}), window=5, method="std")
    first_b = frame[frame["target"] == "b"].iloc[0]
    assert first_b["baseline_runs"] == 0 and math.isnan(first_b["baseline_center"])
    assert frame[frame["target"] == "b"]["baseline_z"].iloc[-1] == 0.0  # constant series, same value


def test_missing_values_never_enter_a_band() -> None:
    frame = rolling_band(history({"a": [1.0, np.nan, 3.0, 5.0]}), window=3, method="std", min_periods=2)
    assert len(frame) == 3
    assert frame["baseline_center"].iloc[-1] == 2.0  # mean of 1 and 3


def test_band_limits_and_outside() -> None:
    lower, upper = band_limits(np.array([1.0]), np.array([0.5]), above=3, below=None)
    assert upper[0] == 2.5 and lower[0] == -np.inf
    z = np.array([3.5, 2.0, -4.0, np.nan, np.inf])
    assert outside_band(z, above=3, below=None).tolist() == [True, False, False, False, True]
    assert outside_band(z, above=None, below=3).tolist() == [False, False, True, False, False]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"window": 0}, "at least 1"), ({"method": "iqr"}, "method must be one of")],
)
def test_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rolling_band(history({"a": [1.0, 2.0]}), **kwargs)


def test_missing_column_is_named() -> None:
    with pytest.raises(ValueError, match="value"):
        rolling_band(history({"a": [1.0]}).drop(columns="value"))


# --- reference chunks -----------------------------------------------------------------------------


def test_chunk_band_is_mean_plus_minus_three_population_std_of_chunk_statistics() -> None:
    rng = np.random.default_rng(4)
    reference = pd.Series(rng.normal(5.0, 2.0, 10_000))
    band = chunk_band(reference, np.mean, chunks=10)
    per_chunk = reference.to_numpy().reshape(10, 1000).mean(axis=1)
    assert band.center == pytest.approx(per_chunk.mean(), rel=1e-12)
    assert band.scale == pytest.approx(np.std(per_chunk, ddof=0), rel=1e-12)
    assert band.upper == pytest.approx(per_chunk.mean() + 3 * np.std(per_chunk), rel=1e-12)
    assert band.size == 10
    # the chunk means of N(5, 2) over 1,000 rows have a standard deviation of about 2/sqrt(1000)
    assert band.scale == pytest.approx(2.0 / math.sqrt(1000), rel=0.5)


def test_chunk_size_drops_the_incomplete_last_chunk() -> None:
    frame = pd.DataFrame({"x": np.arange(25.0)})
    band = chunk_band(frame, lambda chunk: chunk["x"].sum(), chunk_size=10)
    assert band.size == 2 and band.center == pytest.approx((45 + 145) / 2)


def test_chunk_band_errors() -> None:
    with pytest.raises(ValueError, match="at least 2 are needed"):
        chunk_band(np.arange(5.0), np.mean, chunk_size=5)
    with pytest.raises(ValueError, match="not finite on reference chunk"):
        chunk_band(np.array([1.0, 2, np.nan, 4]), np.mean, chunks=2)


# --- change points --------------------------------------------------------------------------------


def three_levels(seed: int = 5) -> np.ndarray:
    """A level shift of 4 noise units after 25 runs, in unit-variance noise (scaled like a PSI)."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0, 1, 25), rng.normal(4, 1, 6)]) * 0.02 + 0.1


def test_best_split_and_cost_fall_agree_with_ruptures() -> None:
    rng = np.random.default_rng(8)
    rows = [three_levels(s) for s in range(5)] + [rng.normal(size=31) for _ in range(5)]
    after, strength = level_shifts(np.array(rows))
    for row, got_after, got_strength in zip(rows, after, strength, strict=True):
        (split, end) = ruptures.Dynp(model="l2", min_size=2, jump=1).fit(row).predict(n_bkps=1)
        assert (got_after, end) == (31 - split, 31)
        cost = ruptures.costs.CostL2().fit(row)
        fall = cost.error(0, 31) - cost.error(0, split) - cost.error(split, 31)
        noise = median_abs_deviation(np.diff(row), scale="normal") / math.sqrt(2)
        assert got_strength == pytest.approx(fall / noise**2, rel=1e-9)


def test_shorter_rows_are_padded_on_the_left() -> None:
    row = three_levels()[-12:]
    padded = np.concatenate([np.full(19, np.nan), row])
    after, strength = level_shifts(np.array([padded, np.concatenate([row[:0], three_levels()[-31:]])]))
    split, _ = ruptures.Dynp(model="l2", min_size=2, jump=1).fit(row).predict(n_bkps=1)
    assert after[0] == 12 - split == 6
    assert np.isfinite(strength).all()


def test_pure_noise_rarely_passes_the_default_penalty() -> None:
    rng = np.random.default_rng(6)
    after, strength = level_shifts(rng.normal(size=(2000, 31)))
    recent = (after <= 2) & (strength > 15)
    assert recent.mean() < 0.01
    assert (strength > 15).mean() < 0.05


def test_recent_windows_keeps_the_last_runs_oldest_first() -> None:
    frame = history({"a": np.arange(10.0), "b": np.arange(3.0) + 100})
    keys, matrix = recent_windows(frame.sample(frac=1.0, random_state=1), runs=4)
    assert keys["target"].tolist() == ["a", "b"]
    np.testing.assert_array_equal(matrix[0], [6, 7, 8, 9])
    np.testing.assert_array_equal(matrix[1], [np.nan, 100, 101, 102])


def test_constant_rows_and_rows_too_short_to_split() -> None:
    after, strength = level_shifts(np.array([[0.2] * 8, [np.nan] * 5 + [1.0, 2.0, 3.0]]))
    assert after[0] > 0 and strength[0] == 0.0
    assert (after[1], math.isnan(strength[1])) == (0, True)
