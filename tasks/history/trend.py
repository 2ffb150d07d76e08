"""Trend helpers over a metric history (the frame `read_history` returns): robust baselines and streaks.

Pure functions of a DataFrame, no database access. A series is one (check, target, metric); runs are
ordered by batch time.

- Rolling baseline: each value is compared with the median and MAD (median absolute deviation from
  that median) of the previous `window` values of its series, giving the robust z-score
  `(value - median) / (MAD / Φ⁻¹(0.75))`; the 1/Φ⁻¹(0.75) ≈ 1.4826 factor makes the MAD estimate the
  standard deviation of normal data.
- Sustained drift: a (check, target) whose severity has been at least a given level for the last K
  consecutive runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from driftline.checks.result import SEVERITIES

SERIES = ["check", "target", "metric"]
RESULT = ["check", "target"]
# Divide a MAD by this to estimate a normal standard deviation (scipy's `scale="normal"`).
MAD_NORMAL_SCALE = float(norm.ppf(0.75))
BASELINE_COLUMNS = ["baseline_median", "baseline_mad", "baseline_runs", "robust_z"]


def rolling_baseline(history: pd.DataFrame, window: int = 10, min_periods: int = 3) -> pd.DataFrame:
    """Each stored value with the baseline of the previous `window` values of its series.

    Adds `baseline_median`, `baseline_mad` (unscaled), `baseline_runs` (values in the baseline) and
    `robust_z`. Rows without a value (skipped or error runs) are left out and never enter a baseline.
    Fewer than `min_periods` earlier values give NaN; a zero MAD gives z = 0 for a value equal to the
    median and ±inf otherwise (any change from a perfectly constant series stands out).
    """
    if window < 1 or min_periods < 1:
        raise ValueError(f"window and min_periods must be at least 1, got {window} and {min_periods}")
    frame = history.dropna(subset=["value"]).sort_values([*SERIES, "batch_time", "batch_id"], kind="stable")
    frame = frame.reset_index(drop=True)
    previous = _previous_values(frame, window)
    runs = np.sum(~np.isnan(previous), axis=1)
    enough = runs >= min_periods
    median = np.full(len(frame), np.nan)
    mad = np.full(len(frame), np.nan)
    if enough.any():
        median[enough] = np.nanmedian(previous[enough], axis=1)
        mad[enough] = np.nanmedian(np.abs(previous[enough] - median[enough, None]), axis=1)
    frame["baseline_median"] = median
    frame["baseline_mad"] = mad
    frame["baseline_runs"] = runs
    frame["robust_z"] = _robust_z(frame["value"].to_numpy(dtype=float), median, mad)
    return frame


def latest_zscores(history: pd.DataFrame, window: int = 10, min_periods: int = 3) -> pd.DataFrame:
    """The newest value of every series with its rolling baseline and robust z-score."""
    return rolling_baseline(history, window, min_periods).groupby(SERIES, sort=False).tail(1)


def sustained_drift(history: pd.DataFrame, min_severity: str = "medium", runs: int = 3) -> pd.DataFrame:
    """For every (check, target): how many of its latest consecutive runs reached `min_severity`.

    One row per (check, target) with `last_batch`, `last_severity`, `streak` (consecutive runs ending
    with the newest at or above `min_severity`), `since_batch` (the first batch of that streak, None
    when the streak is 0) and `sustained` (streak >= `runs`). The metric rows of a result share its
    severity, so each run counts once.
    """
    if min_severity not in SEVERITIES or runs < 1:
        raise ValueError(
            f"min_severity must be one of {SEVERITIES} and runs >= 1, got {min_severity!r}, {runs}"
        )
    rank = history["severity"].map({name: i for i, name in enumerate(SEVERITIES)})
    per_run = (
        history.assign(rank=rank.fillna(0).astype(int))
        .groupby([*RESULT, "batch_time", "batch_id"], as_index=False, sort=False)["rank"]
        .max()
        .sort_values([*RESULT, "batch_time", "batch_id"], kind="stable", ignore_index=True)
    )
    hit = per_run["rank"] >= SEVERITIES.index(min_severity)
    keys = [per_run[name] for name in RESULT]
    block = (~hit).groupby(keys).cumsum()
    per_run["streak"] = hit.astype(int).groupby([*keys, block]).cumsum()
    per_run["since_batch"] = per_run["batch_id"].where(hit).groupby([*keys, block]).transform("first")
    latest = per_run.groupby(RESULT, sort=False).tail(1).reset_index(drop=True)
    return pd.DataFrame(
        {
            "check": latest["check"],
            "target": latest["target"],
            "last_batch": latest["batch_id"],
            "last_severity": [SEVERITIES[r] for r in latest["rank"]],
            "streak": latest["streak"].astype(int),
            "since_batch": latest["since_batch"].astype(object).where(latest["streak"] > 0, None),
            "sustained": latest["streak"] >= runs,
        }
    )


def _previous_values(frame: pd.DataFrame, window: int) -> np.ndarray:
    """A (rows, window) matrix: column k holds the value k+1 runs earlier in the same series (or NaN)."""
    if frame.empty:
        return np.empty((0, window))
    grouped = frame.groupby(SERIES, sort=False)["value"]
    return np.column_stack([grouped.shift(k).to_numpy(dtype=float) for k in range(1, window + 1)])


def _robust_z(value: np.ndarray, median: np.ndarray, mad: np.ndarray) -> np.ndarray:
    """(value - median) / (mad / Φ⁻¹(0.75)), with 0 or ±inf where the MAD is zero, NaN without baseline."""
    deviation = value - median
    with np.errstate(divide="ignore", invalid="ignore"):
        z = deviation / (mad / MAD_NORMAL_SCALE)
    constant = mad == 0
    z[constant] = np.where(deviation[constant] == 0, 0.0, np.copysign(np.inf, deviation[constant]))
    return z
