"""Baseline bands of metric series, shared by `driftline trend` and the alert rules.

- Rolling band from history: each value is compared with the previous `window` values of its series
  (never itself): centre and scale are the mean and standard deviation (`std`, ddof 1), or the median
  and the MAD divided by Φ⁻¹(0.75) ≈ 0.6745 (`mad`, which estimates the standard deviation of normal
  data and ignores a few outliers). The band is centre ± k·scale; `z = (value − centre) / scale`.
- Band from reference chunks (NannyML's approach): the reference is cut into consecutive chunks, a
  statistic is computed on each, and the band is the chunks' mean ± k·std (ddof 0, as NannyML).
- Change points: the best single mean shift in a recent window of each series, by the least-squares
  cost ruptures calls `l2` (the squared CUSUM statistic), measured in units of the series' noise
  (estimated from first differences, so the shift itself does not inflate it). Computed for all
  series at once with cumulative sums: ruptures' PELT took 12 ms for one 31-run series here, which
  for 500 series is far beyond the alert step's budget; the tests pin this against ruptures.

Pure numpy/pandas on a history frame (the columns `read_history` returns); no database access.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy.special import ndtri

SERIES = ("check", "target", "metric")
# A MAD divided by this estimates a normal standard deviation (scipy's `scale="normal"`).
MAD_NORMAL_SCALE = float(ndtri(0.75))
BAND_COLUMNS = ("baseline_center", "baseline_spread", "baseline_scale", "baseline_runs", "baseline_z")
# Rows of the (rows, window) matrix built at a time: bounds memory on long histories.
ROW_BLOCK = 65_536
Method = Literal["mad", "std"]
METHODS: tuple[str, ...] = ("mad", "std")


@dataclass(frozen=True)
class Band:
    """A band around a centre: `lower` and `upper` are centre ∓ k·scale."""

    center: float
    scale: float
    lower: float
    upper: float
    size: int


def _previous_windows(values: np.ndarray, position: np.ndarray, window: int) -> np.ndarray:
    """A (rows, window) matrix: row i holds the `window` values before i in its series (NaN where the
    series has fewer), oldest first. `position` is each row's index within its series."""
    padded = np.concatenate([np.full(window, np.nan), values])
    matrix = np.lib.stride_tricks.sliding_window_view(padded, window)[: len(values)].copy()
    # column j holds the value (window - j) rows earlier: it belongs to the series when that is <= position
    matrix[(window - np.arange(window))[None, :] > position[:, None]] = np.nan
    return matrix


def _nan_median(matrix: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Row medians ignoring NaN (sorted NaN-last, middle of the `count` valid values); NaN for count 0."""
    ordered = np.sort(matrix, axis=1)
    safe = np.maximum(count, 1)
    low = np.take_along_axis(ordered, ((safe - 1) // 2)[:, None], axis=1)[:, 0]
    high = np.take_along_axis(ordered, (safe // 2)[:, None], axis=1)[:, 0]
    return np.where(count > 0, (low + high) / 2.0, np.nan)


def window_stats(matrix: np.ndarray, method: Method) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(centre, spread, scale, count) of each row's non-NaN values.

    `std`: mean, standard deviation (ddof 1), the same as scale. `mad`: median, raw MAD, MAD / Φ⁻¹(0.75).
    Rows with too few values (none for `mad`, fewer than two for `std`) give NaN.
    """
    count = np.sum(~np.isnan(matrix), axis=1)
    if method == "mad":
        center = _nan_median(matrix, count)
        spread = _nan_median(np.abs(matrix - center[:, None]), count)
        return center, spread, spread / MAD_NORMAL_SCALE, count
    if method != "std":
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    filled = np.where(np.isnan(matrix), 0.0, matrix)
    safe = np.maximum(count, 1)
    center = np.where(count > 0, filled.sum(axis=1) / safe, np.nan)
    squares = np.where(np.isnan(matrix), 0.0, (matrix - center[:, None]) ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.where(count > 1, np.sqrt(squares / (count - 1)), np.nan)
    return center, spread, spread, count


def z_scores(value: np.ndarray, center: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(value − centre) / scale; a zero scale gives 0 for a value at the centre and ±inf otherwise (any
    change from a perfectly constant series stands out); NaN where there is no baseline."""
    deviation = np.asarray(value, dtype=float) - center
    with np.errstate(divide="ignore", invalid="ignore"):
        z = deviation / scale
    constant = scale == 0
    z[constant] = np.where(deviation[constant] == 0, 0.0, np.copysign(np.inf, deviation[constant]))
    return z


def rolling_band(
    history: pd.DataFrame,
    *,
    window: int = 30,
    method: Method = "mad",
    min_periods: int = 3,
    keys: Sequence[str] = SERIES,
) -> pd.DataFrame:
    """Each stored value with the band of the previous `window` values of its series.

    Rows without a value are left out and never enter a baseline. Rows come back sorted by series,
    then batch time, with `BAND_COLUMNS` added: centre, spread (std, or the raw MAD), scale (the
    standard-deviation estimate the band is built from), the number of earlier values used, and z.
    Fewer than `min_periods` earlier values give NaN.
    """
    if window < 1 or min_periods < 1:
        raise ValueError(f"window and min_periods must be at least 1, got {window} and {min_periods}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    missing = [c for c in (*keys, "batch_time", "batch_id", "value") if c not in history.columns]
    if missing:
        raise ValueError(f"history frame lacks column(s) {missing}")
    order = [*keys, "batch_time", "batch_id"]
    frame = history.dropna(subset=["value"]).sort_values(order, kind="stable").reset_index(drop=True)
    values = frame["value"].to_numpy(dtype=float)
    n = len(frame)
    position = frame.groupby(list(keys), sort=False).cumcount().to_numpy() if n else np.zeros(0, int)
    center, spread, scale = (np.full(n, np.nan) for _ in range(3))
    runs = np.zeros(n, dtype=int)
    for start in range(0, n, ROW_BLOCK):
        stop = min(start + ROW_BLOCK, n)
        # a block needs the `window` values before it, which may sit in the previous block
        lead = min(start, window)
        matrix = _previous_windows(values[start - lead : stop], position[start - lead : stop], window)[lead:]
        c, s, sc, k = window_stats(matrix, method)
        center[start:stop], spread[start:stop], scale[start:stop], runs[start:stop] = c, s, sc, k
    short = runs < min_periods
    center[short] = spread[short] = scale[short] = np.nan
    frame["baseline_center"] = center
    frame["baseline_spread"] = spread
    frame["baseline_scale"] = scale
    frame["baseline_runs"] = runs
    frame["baseline_z"] = z_scores(values, center, scale)
    return frame


def band_limits(
    center: np.ndarray | float,
    scale: np.ndarray | float,
    above: float | None,
    below: float | None,
) -> tuple[Any, Any]:
    """(lower, upper): centre − below·scale and centre + above·scale; ∓inf for a side without k."""
    lower = center - below * scale if below is not None else -np.inf * np.ones_like(center)
    upper = center + above * scale if above is not None else np.inf * np.ones_like(center)
    return lower, upper


def outside_band(z: np.ndarray, above: float | None, below: float | None) -> np.ndarray:
    """True where z lies beyond +above (when set) or below −below (when set); NaN z is never outside."""
    z = np.asarray(z, dtype=float)
    hit = np.zeros(len(z), dtype=bool)
    if above is not None:
        hit |= z > above
    if below is not None:
        hit |= z < -below
    return hit


def chunk_band(
    reference: pd.DataFrame | pd.Series | np.ndarray,
    statistic: Callable[[Any], float],
    *,
    chunks: int | None = 10,
    chunk_size: int | None = None,
    k: float = 3.0,
) -> Band:
    """The band of a statistic over reference chunks: mean ± k·std (ddof 0) of its chunk values.

    The reference is cut in order into `chunks` near-equal parts, or into parts of `chunk_size` rows
    (an incomplete last part is dropped, so every chunk has the same sampling noise). At least two
    chunks are needed, and every chunk value must be finite.
    """
    n = len(reference)
    if chunk_size is not None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        bounds = [(i, i + chunk_size) for i in range(0, n - chunk_size + 1, chunk_size)]
    elif chunks is not None:
        if chunks < 2:
            raise ValueError(f"chunks must be at least 2, got {chunks}")
        edges = np.linspace(0, n, chunks + 1).round().astype(int)
        bounds = [(a, b) for a, b in pairwise(edges) if b > a]
    else:
        raise ValueError("give chunks or chunk_size")
    if len(bounds) < 2:
        raise ValueError(f"the reference ({n} rows) makes {len(bounds)} chunk(s); at least 2 are needed")
    take = reference.iloc if isinstance(reference, pd.DataFrame | pd.Series) else reference
    values = np.array([float(statistic(take[a:b])) for a, b in bounds])
    if not np.all(np.isfinite(values)):
        bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
        raise ValueError(f"the statistic is not finite on reference chunk(s) {bad}")
    center, scale = float(values.mean()), float(values.std())
    return Band(center, scale, center - k * scale, center + k * scale, len(values))


def noise_levels(matrix: np.ndarray) -> np.ndarray:
    """A robust noise standard deviation per row: MAD of the first differences / Φ⁻¹(0.75) / √2.

    Differencing removes a level shift (it adds one large difference, which the MAD ignores); the
    plain standard deviation is the fallback when more than half the differences are equal. NaN
    entries (a row shorter than the matrix) must lead the row.
    """
    diffs = np.diff(matrix, axis=1)
    count = np.sum(~np.isnan(diffs), axis=1)
    center = _nan_median(diffs, count)
    mad = _nan_median(np.abs(diffs - center[:, None]), count)
    noise = mad / MAD_NORMAL_SCALE / math.sqrt(2)
    fallback = np.nanstd(matrix, axis=1) if matrix.size else np.zeros(len(matrix))
    return np.where(noise > 0, noise, fallback)


def level_shifts(matrix: np.ndarray, min_size: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """The best single change point of each row and its strength, for all rows at once.

    For a split of a row's n values into a left part of n₁ and a right part of n₂ values, the
    least-squares cost falls by n₁·n₂/n·(mean₁ − mean₂)² (ruptures' `l2` cost; the squared CUSUM
    statistic); the split with the largest fall is returned as the count of values after it (1 = only
    the newest value is new), with the fall divided by the row's squared noise level
    (`noise_levels`): about a χ² value with one degree of freedom for pure noise at a fixed split.
    Rows hold a series oldest first, NaN only before its first value; both parts have at least
    `min_size` values. Rows without a valid split give (0, NaN).
    """
    rows, width = matrix.shape
    count = np.sum(~np.isnan(matrix), axis=1)
    # centred on the row median, so a constant row is exactly zero and shows no shift at all
    matrix = matrix - _nan_median(matrix, count)[:, None]
    filled = np.where(np.isnan(matrix), 0.0, matrix)
    cumulative = np.cumsum(filled, axis=1)
    total = cumulative[:, -1] if width else np.zeros(rows)
    columns = np.arange(1, width)  # a split after column j - 1: the right part starts at column j
    left_n = columns[None, :] - (width - count)[:, None]
    right_n = width - columns[None, :]
    left_sum = cumulative[:, :-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        left_mean = left_sum / left_n
        right_mean = (total[:, None] - left_sum) / right_n
        gain = left_n * right_n / count[:, None] * (left_mean - right_mean) ** 2
    valid = (left_n >= min_size) & (right_n >= min_size)
    gain = np.where(valid, gain, -np.inf)
    if gain.size == 0:
        return np.zeros(rows, dtype=int), np.full(rows, np.nan)
    best = np.argmax(gain, axis=1)
    best_gain = gain[np.arange(rows), best]
    noise = noise_levels(matrix)
    with np.errstate(divide="ignore", invalid="ignore"):
        strength = np.where(np.isfinite(best_gain), best_gain / noise**2, np.nan)
    strength = np.where(np.isfinite(best_gain) & (noise == 0), np.where(best_gain > 0, np.inf, 0.0), strength)
    after = np.where(np.isfinite(best_gain), width - columns[best], 0)
    return after.astype(int), strength


def recent_windows(
    history: pd.DataFrame, runs: int, keys: Sequence[str] = SERIES
) -> tuple[pd.DataFrame, np.ndarray]:
    """The last `runs` values of every series: (one row of keys per series, a (series, runs) matrix
    oldest first, NaN-padded on the left where a series has fewer values); rows without a value are
    left out."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    order = [*keys, "batch_time", "batch_id"]
    frame = history.dropna(subset=["value"]).sort_values(order, kind="stable")
    frame = frame.groupby(list(keys), sort=False).tail(runs)
    grouped = frame.groupby(list(keys), sort=False)
    row = grouped.ngroup().to_numpy()
    back = grouped.cumcount(ascending=False).to_numpy()
    index = frame[list(keys)].drop_duplicates().reset_index(drop=True)
    matrix = np.full((len(index), runs), np.nan)
    matrix[row, runs - 1 - back] = frame["value"].to_numpy(dtype=float)
    return index, matrix
