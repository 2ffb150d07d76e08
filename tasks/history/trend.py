"""Trend helpers over a metric history (the frame `read_history` returns): which results moved, and streaks.

Pure functions of a DataFrame and stored results, no database access. A series is one (check, target,
metric); runs are ordered by batch time.

- Key metric: a result enters the trend through one metric only, the graded effect metric that decides
  its severity (`key_metric`). Effect metrics are the ones its check declares with thresholds
  (`checks.base.Metric`); p-values, confidence bounds (`<metric>_p`, `<metric>_bound`, added by grading),
  counts and other reported values never enter the z-score or level-shift analysis.
- Moved results (`moved_results`): the newest key value against the median and MAD of up to `window`
  earlier values (`baseline.window_stats`, the code the alert rules use), and the best single level
  shift of the last `shift_window` + 1 values (`baseline.level_shifts`). The spread is never below a
  floor: the metric's own noise at the newest run when its evidence is stored, and a tenth of the
  smallest step its thresholds distinguish, so a baseline that never moved gives a finite z and a
  change of a few rows does not look like an anomaly. Only moves towards worse count.
- Rolling baseline: every value with the median/MAD of the previous `window` values of its series
  (`baseline.rolling_band`), for the report's trend bands.
- Sustained drift: a (check, target) whose severity has been at least a given level for the last K
  consecutive runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks.base import Metric
from driftline.checks.result import SEVERITIES, format_number, severity_for
from driftline.tasks.history.baseline import (
    MAD_NORMAL_SCALE,
    level_shifts,
    noise_levels,
    recent_windows,
    rolling_band,
    window_stats,
)

SERIES = ["check", "target", "metric"]
RESULT = ["check", "target"]
__all__ = [
    "MAD_NORMAL_SCALE",
    "KeyMetric",
    "declared_metrics",
    "key_metric",
    "key_metrics",
    "moved_results",
    "rolling_baseline",
    "spread_floor",
    "sustained_drift",
]
# Standard deviation of the Kolmogorov distribution (the limit of √n·KS under no change):
# √(π²/12 − (π/2)·ln²2), scipy's `kstwobign.std()`.
KOLMOGOROV_SD = math.sqrt(math.pi**2 / 12 - math.pi / 2 * math.log(2) ** 2)
# The least spread a baseline is given, as a share of the smallest step its thresholds distinguish.
STEP_SHARE = 0.1
# A worse move resting on fewer failing rows than this (one out-of-range row) is not flagged on its own.
MIN_FAILING_ROWS = 2
MOVED_COLUMNS = [
    *SERIES,
    "batch_id",
    "value",
    "baseline_median",
    "baseline_runs",
    "baseline_constant",
    "spread",
    "robust_z",
    "runs_since",
    "before",
    "after",
    "strength",
    "change",
]


@dataclass(frozen=True)
class KeyMetric:
    """The effect metric that stands for one result in the trend: which way is worse, the least spread
    its baseline is given, and `tiny` when its newest run rests on fewer than `MIN_FAILING_ROWS`
    failing rows."""

    metric: str
    higher_is_worse: bool
    spread_floor: float
    tiny: bool = False


def declared_metrics(checks: Iterable[str]) -> dict[str, Mapping[str, Metric]]:
    """The metric declarations of the named checks the catalog knows (built-in, or registered by this
    process). Names it does not know are left out: a name read from the history is data, never
    imported (`registry.known`)."""
    from driftline.checks import registry

    found = {name: registry.known(name) for name in set(checks)}
    return {name: cls.declared_metrics for name, cls in found.items() if cls is not None}


def noise_spread(evidence: Mapping[str, Any]) -> float:
    """Standard deviation of a stored evidence's no-change noise (`checks.evidence`): the standard error
    (`normal`), scale·√(2·df) (`scaled_chi2`), or scale times the Kolmogorov distribution's (`kolmogorov`)."""
    scale = float(evidence.get("scale") or 0.0)
    if not math.isfinite(scale) or scale <= 0:
        return 0.0
    noise = evidence.get("noise")
    if noise == "scaled_chi2":
        return scale * math.sqrt(2 * float(evidence.get("df", 1.0)))
    if noise == "kolmogorov":
        return scale * KOLMOGOROV_SD
    return scale


def threshold_step(thresholds: Sequence[float]) -> float:
    """The smallest step thresholds distinguish: the first threshold's distance from zero or the gap
    between two neighbours, whichever is smaller and not zero (0.0 when none is)."""
    values = [abs(float(thresholds[0]))] if thresholds else []
    values += [abs(float(b) - float(a)) for a, b in pairwise(thresholds)]
    steps = [v for v in values if v > 0 and math.isfinite(v)]
    return min(steps, default=0.0)


def key_metric(result: Mapping[str, Any], declared: Mapping[str, Metric] | None) -> KeyMetric | None:
    """The graded effect metric that decides a stored result's severity (None when it has none).

    Candidates are the metrics the result was graded on (its `thresholds`) that carry a value and, when
    its check's declaration is known, that it declares with thresholds. The one whose bound (or value,
    without evidence) reaches the highest severity wins; ties go to the first.
    """
    metrics = result.get("metrics") or {}
    thresholds = result.get("thresholds") or {}
    evidence = result.get("evidence") or {}
    candidates = [
        m
        for m in thresholds
        if _finite(metrics.get(m)) and (declared is None or (m in declared and declared[m].thresholds))
    ]
    if not candidates:
        return None

    def higher_is_worse(metric: str) -> bool:
        if metric in evidence:
            return bool(evidence[metric].get("higher_is_worse", True))
        return declared[metric].higher_is_worse if declared is not None else True

    def rank(metric: str) -> int:
        graded = metrics.get(f"{metric}_bound", metrics[metric])
        value = float(graded) if _finite(graded) else float(metrics[metric])
        severity = severity_for(value, thresholds[metric], lower_is_worse=not higher_is_worse(metric))
        return SEVERITIES.index(severity)

    metric = max(candidates, key=rank)
    failing = result.get("failing_rows")
    return KeyMetric(
        metric,
        higher_is_worse(metric),
        spread_floor(result, metric),
        failing is not None and failing < MIN_FAILING_ROWS,
    )


def spread_floor(result: Mapping[str, Any], metric: str) -> float:
    """The least spread a baseline of a stored result's `metric` is given: the metric's own noise at
    that run (from its evidence), and a tenth of the smallest step its thresholds distinguish."""
    evidence = (result.get("evidence") or {}).get(metric)
    noise = noise_spread(evidence) if evidence else 0.0
    return max(noise, STEP_SHARE * threshold_step((result.get("thresholds") or {}).get(metric) or ()))


def key_metrics(
    results: Iterable[Mapping[str, Any]], declarations: Mapping[str, Mapping[str, Metric]]
) -> dict[tuple[str, str], KeyMetric]:
    """`key_metric` of every stored result that has one, keyed by (check, target); `declarations` maps
    check names to their declared metrics (a check missing from it is judged on its stored thresholds)."""
    keys = {}
    for result in results:
        key = key_metric(result, declarations.get(result["check"]))
        if key is not None:
            keys[(result["check"], result["target"])] = key
    return keys


def moved_results(
    history: pd.DataFrame,
    keys: Mapping[tuple[str, str], KeyMetric],
    *,
    z: float = 3.0,
    window: int = 10,
    min_periods: int = 3,
    shift_window: int = 30,
    within: int = 3,
    min_strength: float = 15.0,
) -> pd.DataFrame:
    """One row per result whose key metric moved towards worse at its newest value, strongest first.

    A result moved when its newest value lies at least `z` spreads on the worse side of the median of
    up to `window` earlier values (at least `min_periods` of them), or when the best level shift of
    its last `shift_window` + 1 values began within its last `within` runs, goes towards worse, and
    its least-squares cost fall exceeds `min_strength` noise variances. Spreads and noise are never
    below the key's `spread_floor`; a key marked `tiny` is never flagged. Columns: `MOVED_COLUMNS`
    (`robust_z` is positive towards worse; `runs_since`, `before`, `after` and `strength` describe a
    flagged shift, else 0 and NaN; `change` says it in words).
    """
    if window < 1 or min_periods < 1 or shift_window < 3 or within < 1:
        raise ValueError(
            "window and min_periods must be at least 1, shift_window at least 3 and within at least 1, "
            f"got {window}, {min_periods}, {shift_window} and {within}"
        )
    table = pd.DataFrame(
        [(c, t, k.metric, k.higher_is_worse, k.spread_floor, k.tiny) for (c, t), k in keys.items()],
        columns=[*SERIES, "higher_is_worse", "spread_floor", "tiny"],
    )
    frame = history.dropna(subset=["value"]).merge(table[SERIES], on=SERIES)
    if frame.empty:
        return pd.DataFrame(columns=MOVED_COLUMNS)
    index, matrix = recent_windows(frame, max(window, shift_window) + 1, keys=SERIES)
    found = index.merge(table, on=SERIES, how="left")
    sign = np.where(found["higher_is_worse"].to_numpy(dtype=bool), 1.0, -1.0)
    floor = found["spread_floor"].to_numpy(dtype=float)
    newest = matrix[:, -1]
    baseline = _newest_baseline(matrix[:, -(window + 1) : -1], floor, min_periods)
    with np.errstate(divide="ignore", invalid="ignore"):
        robust_z = np.where(
            baseline["spread"] > 0, sign * (newest - baseline["center"]) / baseline["spread"], np.nan
        )
    shift = _worse_shifts(matrix[:, -(shift_window + 1) :], sign, floor, within, min_strength)
    moved = ~found["tiny"].to_numpy(dtype=bool) & ((robust_z >= z) | shift["flagged"])
    last = (
        frame.sort_values(["batch_time", "batch_id"], kind="stable")
        .groupby(SERIES, sort=False)["batch_id"]
        .last()
    )
    out = found[SERIES].assign(
        batch_id=[last.loc[tuple(k)] for k in found[SERIES].itertuples(index=False)],
        value=newest,
        baseline_median=baseline["center"],
        baseline_runs=baseline["runs"],
        baseline_constant=baseline["constant"],
        spread=baseline["spread"],
        robust_z=robust_z,
        runs_since=np.where(shift["flagged"], shift["after"], 0),
        before=np.where(shift["flagged"], shift["before"], np.nan),
        after=np.where(shift["flagged"], shift["after_mean"], np.nan),
        strength=np.where(shift["flagged"], shift["strength"], np.nan),
    )[moved]
    out["change"] = [_change_words(row, z) for row in out.itertuples(index=False)]
    order = out.assign(_z=out["robust_z"].fillna(-np.inf), _s=out["strength"].fillna(-np.inf))
    return out.loc[order.sort_values(["_z", "_s"], ascending=False).index].reset_index(drop=True)[
        MOVED_COLUMNS
    ]


def _newest_baseline(previous: np.ndarray, floor: np.ndarray, min_periods: int) -> dict[str, np.ndarray]:
    """Median, floored robust spread (MAD / Φ⁻¹(0.75), at least `floor`), count and constancy of each
    row's earlier values; NaN centre and spread with fewer than `min_periods` of them."""
    center, _, scale, runs = window_stats(previous, "mad")
    short = runs < min_periods
    with np.errstate(invalid="ignore"):
        constant = (
            np.nanmax(previous, axis=1, initial=-np.inf) == np.nanmin(previous, axis=1, initial=np.inf)
        ) & ~short
    spread = np.fmax(scale, floor)
    return {
        "center": np.where(short, np.nan, center),
        "spread": np.where(short, np.nan, spread),
        "runs": runs,
        "constant": constant,
    }


def _worse_shifts(
    matrix: np.ndarray, sign: np.ndarray, floor: np.ndarray, within: int, min_strength: float
) -> dict[str, np.ndarray]:
    """The best level shift of each row (`baseline.level_shifts`) with its strength against the floored
    noise: the least-squares cost fall n₁·n₂/n·(mean₂ − mean₁)² over max(noise, floor)²; flagged when it
    began within `within` runs, goes towards worse and exceeds `min_strength`."""
    after, _ = level_shifts(matrix)
    width = matrix.shape[1]
    count = np.sum(~np.isnan(matrix), axis=1)
    right = np.arange(width)[None, :] >= (width - after)[:, None]
    filled = np.where(np.isnan(matrix), 0.0, matrix)
    left = count - after
    with np.errstate(invalid="ignore", divide="ignore"):
        before_mean = np.where(right, 0.0, filled).sum(axis=1) / left
        after_mean = np.where(right, filled, 0.0).sum(axis=1) / after
        gain = left * after / count * (after_mean - before_mean) ** 2
        strength = gain / np.fmax(noise_levels(matrix), floor) ** 2
    worse = sign * (after_mean - before_mean) > 0
    flagged = (after > 0) & (after <= within) & worse & (strength > min_strength)
    return {
        "after": after,
        "before": before_mean,
        "after_mean": after_mean,
        "strength": strength,
        "flagged": flagged,
    }


def _change_words(row: Any, z: float) -> str:
    """What changed, for people: the baseline it left (and for how many runs) and any new level."""
    parts = []
    if row.robust_z >= z:
        runs = int(row.baseline_runs)
        if row.baseline_constant:
            was = format_number(float(row.baseline_median))
            parts.append(f"was {was} for {runs} runs, now {format_number(float(row.value))}")
        else:
            parts.append(
                f"now {format_number(float(row.value))}, median of the {runs} earlier runs "
                f"{format_number(float(row.baseline_median))} (spread {format_number(float(row.spread))})"
            )
    if row.runs_since > 0:
        parts.append(
            f"level moved from {format_number(float(row.before))} to {format_number(float(row.after))} "
            f"over the last {int(row.runs_since)} runs"
        )
    return "; ".join(parts)


def _finite(value: Any) -> bool:
    """True for a real, finite number (not None, NaN or infinite)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def rolling_baseline(history: pd.DataFrame, window: int = 10, min_periods: int = 3) -> pd.DataFrame:
    """Each stored value with the median/MAD baseline of the previous `window` values of its series.

    Adds `baseline_median`, `baseline_mad` (unscaled), `baseline_runs` (values in the baseline) and
    `robust_z`, computed by `baseline.rolling_band(method="mad")` (the band the alert rules use).
    Rows without a value (skipped or error runs) are left out and never enter a baseline. Fewer than
    `min_periods` earlier values give NaN; a zero MAD gives z = 0 for a value equal to the median and
    ±inf otherwise (the report draws the band, it does not print z).
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
