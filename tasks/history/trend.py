"""Trend helpers over a metric history (the frame `read_history` returns): robust baselines and streaks.

Pure functions of a DataFrame, no database access. A series is one (check, target, metric); runs are
ordered by batch time.

- Rolling baseline: each value is compared with the median and MAD (median absolute deviation from
  that median) of the previous `window` values of its series, giving the robust z-score
  `(value - median) / (MAD / Φ⁻¹(0.75))`. The band comes from `baseline.rolling_band`, the same code
  the alert rules (`alerts.rules`) use.
- Level shifts: the best single change point of each series' last `window` + 1 values
  (`baseline.level_shifts`, as the alert rules' `change_point`), kept when it began recently.
- Sustained drift: a (check, target) whose severity has been at least a given level for the last K
  consecutive runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from driftline.checks.result import SEVERITIES
from driftline.tasks.history.baseline import MAD_NORMAL_SCALE, level_shifts, recent_windows, rolling_band

SERIES = ["check", "target", "metric"]
RESULT = ["check", "target"]
__all__ = ["MAD_NORMAL_SCALE", "latest_zscores", "recent_shifts", "rolling_baseline", "sustained_drift"]
BASELINE_COLUMNS = ["baseline_median", "baseline_mad", "baseline_runs", "robust_z"]


def rolling_baseline(history: pd.DataFrame, window: int = 10, min_periods: int = 3) -> pd.DataFrame:
    """Each stored value with the median/MAD baseline of the previous `window` values of its series.

    Adds `baseline_median`, `baseline_mad` (unscaled), `baseline_runs` (values in the baseline) and
    `robust_z`, computed by `baseline.rolling_band(method="mad")` (the band the alert rules use).
    Rows without a value (skipped or error runs) are left out and never enter a baseline. Fewer than
    `min_periods` earlier values give NaN; a zero MAD gives z = 0 for a value equal to the median and
    ±inf otherwise (any change from a perfectly constant series stands out).
    """
    frame = rolling_band(history, window=window, method="mad", min_periods=min_periods, keys=SERIES)
    frame = frame.rename(
        columns={
            "baseline_center": "baseline_median",
            "baseline_spread": "baseline_mad",
            "baseline_z": "robust_z",
        }
    )
    return frame.drop(columns=["baseline_scale"])


def latest_zscores(history: pd.DataFrame, window: int = 10, min_periods: int = 3) -> pd.DataFrame:
    """The newest value of every series with its rolling baseline and robust z-score."""
    return rolling_baseline(history, window, min_periods).groupby(SERIES, sort=False).tail(1)


def recent_shifts(
    history: pd.DataFrame, window: int = 30, within: int = 3, min_strength: float = 15.0
) -> pd.DataFrame:
    """Series whose level shifted within their last `within` runs, strongest first.

    Over each series' last `window` + 1 values, the best single split (least-squares cost) is found;
    a series is kept when the new level covers at most `within` runs and the cost fall, in noise
    variances, exceeds `min_strength`. Columns: check, target, metric, runs_since (values after the
    split), strength, before and after (mean levels), last_batch.
    """
    if window < 3 or within < 1:
        raise ValueError(f"window must be at least 3 and within at least 1, got {window} and {within}")
    keys, matrix = recent_windows(history, window + 1, keys=SERIES)
    after, strength = level_shifts(matrix)
    columns = [*SERIES, "runs_since", "strength", "before", "after", "last_batch"]
    keep = (after > 0) & (after <= within) & (strength > min_strength)
    if not keep.any():
        return pd.DataFrame(columns=columns)
    rows = matrix[keep]
    since = after[keep]
    width = rows.shape[1]
    split = (width - since)[:, None]
    column = np.arange(width)[None, :]
    with np.errstate(invalid="ignore"):
        before_mean = np.nanmean(np.where(column < split, rows, np.nan), axis=1)
        after_mean = np.nanmean(np.where(column >= split, rows, np.nan), axis=1)
    last = (
        history.dropna(subset=["value"])
        .sort_values("batch_time")
        .groupby(SERIES, sort=False)["batch_id"]
        .last()
    )
    found = (
        keys[keep]
        .reset_index(drop=True)
        .assign(runs_since=since, strength=strength[keep], before=before_mean, after=after_mean)
    )
    found["last_batch"] = [last.loc[tuple(k)] for k in found[SERIES].itertuples(index=False)]
    return found.sort_values("strength", ascending=False, ignore_index=True)[columns]


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
