"""Metric trends for the report: one series per (check, target, metric) with its baseline band.

The band of a run is the median of the previous `window` values of its series ± `k` robust standard
deviations (MAD / Φ⁻¹(0.75)), from `driftline.tasks.history.trend.rolling_baseline`, the spread never
below the series' floor (its metric's own noise, a tenth of its smallest threshold step: the floor
`driftline trend` uses), so a series that never moved does not make its first wiggle "outside". A
series with fewer than `min_periods` earlier values has no band yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks import registry
from driftline.tasks.history.trend import MAD_NORMAL_SCALE, rolling_baseline, spread_floor
from driftline.tasks.history.trend import key_metric as trend_key_metric

BAND_K = 3.0
BAND_WINDOW = 10
BAND_MIN_PERIODS = 3


@dataclass(frozen=True)
class Trend:
    """One metric over the last runs, oldest first, with the band each value was judged against."""

    check: str
    target: str
    metric: str
    batches: list[str]
    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    severities: list[str]

    @property
    def latest_outside(self) -> bool:
        """True when the newest value lies outside its band (False without a band)."""
        if len(self.values) == 0 or np.isnan(self.lower[-1]):
            return False
        return bool(self.values[-1] < self.lower[-1] or self.values[-1] > self.upper[-1])


def key_metric(result: Mapping[str, Any]) -> str | None:
    """The metric that stands for a result: the graded effect metric that decides its severity (as
    `driftline trend` picks it), else its first one."""
    known = registry.known(str(result["check"]))
    key = trend_key_metric(result, known.declared_metrics if known is not None else None)
    return key.metric if key is not None else next(iter(result.get("metrics") or {}), None)


def band_floors(results: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], float]:
    """The least band spread of every graded series of `results` (`trend.spread_floor`)."""
    return {
        (r["check"], str(r["target"]), metric): spread_floor(r, metric)
        for r in results
        for metric in (r.get("thresholds") or {})
    }


def graded_metrics(result: Mapping[str, Any]) -> list[str]:
    """The metrics a result's severity comes from (its first metric when none is thresholded)."""
    metrics = result.get("metrics") or {}
    graded = [m for m in (result.get("thresholds") or {}) if m in metrics]
    return graded or list(metrics)[:1]


def baseline_bands(
    history: pd.DataFrame,
    series: set[tuple[str, str, str]] | None = None,
    *,
    window: int = BAND_WINDOW,
    k: float = BAND_K,
    min_periods: int = BAND_MIN_PERIODS,
    floors: Mapping[tuple[str, str, str], float] | None = None,
) -> dict[tuple[str, str, str], Trend]:
    """Trends of the wanted (check, target, metric) series (all when None), keyed by series; `floors`
    are the least robust standard deviations of the series that have one (`band_floors`)."""
    frame = history
    if series is not None:
        keys = pd.MultiIndex.from_frame(history[["check", "target", "metric"]])
        frame = history[keys.isin(list(series))] if len(series) else history.iloc[0:0]
    banded = rolling_baseline(frame, window=window, min_periods=min_periods)
    keys = zip(banded["check"], banded["target"], banded["metric"], strict=True)
    floor = [(floors or {}).get(key, 0.0) for key in keys]
    spread = k * np.maximum(banded["baseline_mad"].to_numpy(dtype=float) / MAD_NORMAL_SCALE, floor)
    median = banded["baseline_median"].to_numpy(dtype=float)
    banded = banded.assign(lower=median - spread, upper=median + spread)
    trends = {}
    for key, group in banded.groupby(["check", "target", "metric"], sort=False):
        check, target, metric = (str(part) for part in key)
        trends[(check, target, metric)] = Trend(
            check=check,
            target=target,
            metric=metric,
            batches=[str(b) for b in group["batch_id"]],
            values=group["value"].to_numpy(dtype=float),
            lower=group["lower"].to_numpy(dtype=float),
            upper=group["upper"].to_numpy(dtype=float),
            severities=[str(s) for s in group["severity"]],
        )
    return trends
