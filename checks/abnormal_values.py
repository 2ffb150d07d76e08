"""Abnormal numeric values: outliers beyond the supported bulk of the reference, and out-of-range values."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.abnormal import (
    FAILING_RATE_INCREASE,
    AbnormalPartial,
    Flags,
    RateCheck,
    column_of,
    rate_metric,
)
from driftline.checks.base import Metric
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.registry import register
from driftline.checks.slicing import run_bounds

# Relative accuracy of the batch median of `abnormal.out_of_range`: counted in logarithmic buckets
# (`ValueSummary`), it is within 0.5% of the batch's middle value at any scale, far finer than the
# factor of ten a unit change makes, and the buckets' counts add up across partitions.
MEDIAN_ACCURACY = 0.005
_GAMMA = (1 + MEDIAN_ACCURACY) / (1 - MEDIAN_ACCURACY)
_LOG_GAMMA = math.log(_GAMMA)
# Offset of the bucket index of a non-zero value, so that every finite double's key is positive:
# |log_γ x| stays below 75,000 from the smallest subnormal to the largest double.
_KEY_OFFSET = 100_000
# Details the range checks copy from their profile.
_RANGE_DETAILS = ("lower", "upper", "unit")


def numeric_values(values: pd.Series, column: str, where: str) -> np.ndarray:
    """The column as floats (NA -> NaN); a per-target error when it does not hold numbers."""
    if not pd.api.types.is_numeric_dtype(values):
        raise CheckInputError(f"column {column!r} is not numeric in the {where} (dtype {values.dtype})")
    return values.to_numpy(dtype=float, na_value=np.nan)


def finite_reference(values: pd.Series, column: str) -> np.ndarray:
    """The reference's finite values; NotApplicable when there are none."""
    x = numeric_values(values, column, "reference")
    x = x[np.isfinite(x)]
    if len(x) == 0:
        raise NotApplicable(f"column {column!r} has no finite value in the reference")
    return x


def sorted_quantile(x: np.ndarray, q: float) -> float:
    """Quantile `q` of sorted `x` by linear interpolation (numpy's default method), without re-sorting."""
    position = q * (len(x) - 1)
    low = int(position)
    high = min(low + 1, len(x) - 1)
    return float(x[low] + (position - low) * (x[high] - x[low]))


def bin_width(x: np.ndarray) -> float:
    """Freedman-Diaconis width 2·IQR·n^(-1/3) of sorted `x`; Scott's 3.49·σ·n^(-1/3) when the IQR is 0."""
    n = len(x)
    width = 2.0 * (sorted_quantile(x, 0.75) - sorted_quantile(x, 0.25)) * n ** (-1 / 3)
    return float(width if width > 0 else 3.49 * x.std() * n ** (-1 / 3))


def supported_range(x: np.ndarray, min_support: int) -> tuple[float, float, str, int] | None:
    """Smallest and largest sorted values lying in a unit with at least `min_support` values.

    A unit is a distinct value when values repeat (at least half of the distinct values occur
    `min_support` times: counts, ages, ratings), otherwise a bin of Freedman-Diaconis width anchored
    at the minimum. None when no unit has enough support. Returns (lower, upper, unit, left out):
    the last is how many values would fall outside the range fitted without them (leave-one-out: the
    values outside it, plus those of an edge unit holding exactly `min_support` values).
    """
    starts, counts = run_bounds(x)
    unit = "value"
    repeating = 2 * np.count_nonzero(counts >= min_support) >= len(counts)
    if not repeating and (width := bin_width(x)) > 0:
        starts, counts = run_bounds(np.floor((x - x[0]) / width))
        unit = "bin"
    supported = np.flatnonzero(counts >= min_support)
    if len(supported) == 0:
        return None
    first, last = supported[0], supported[-1]
    outside = len(x) - int(starts[last] + counts[last] - starts[first])
    edges = {first, last}
    left_out = outside + sum(int(counts[e]) for e in edges if counts[e] == min_support)
    return float(x[starts[first]]), float(x[starts[last] + counts[last] - 1]), unit, left_out


def bucket_keys(x: np.ndarray) -> np.ndarray:
    """Logarithmic bucket of each finite value, as keys ordered like the values: 0 for zero,
    `_KEY_OFFSET + ceil(log_γ x)` for x > 0 (x in (γ^(i-1), γ^i]), and minus the key of |x| for x < 0."""
    magnitude = np.abs(x)
    nonzero = magnitude > 0
    keys = np.zeros(len(x), dtype=np.int64)
    keys[nonzero] = _KEY_OFFSET + np.ceil(np.log(magnitude[nonzero]) / _LOG_GAMMA).astype(np.int64)
    return np.where(x < 0, -keys, keys)


def bucket_value(key: int) -> float:
    """The value standing for a bucket: 2γ^i / (γ + 1), within `MEDIAN_ACCURACY` of any value in it."""
    if key == 0:
        return 0.0
    index = abs(key) - _KEY_OFFSET
    return math.copysign(math.exp(index * _LOG_GAMMA + math.log(2 / (_GAMMA + 1))), key)


@dataclass(frozen=True)
class ValueSummary:
    """A partition's finite values as what merges exactly: their extremes, their counts per
    logarithmic bucket (`bucket_keys`, sorted), from which the median is read to `MEDIAN_ACCURACY`, and
    how many are not whole numbers."""

    minimum: float
    maximum: float
    keys: np.ndarray
    counts: np.ndarray
    fractional: int

    @classmethod
    def of(cls, x: np.ndarray) -> ValueSummary:
        """The summary of the finite values of `x` (NaN and ±inf left out)."""
        finite = x[np.isfinite(x)]
        if len(finite) == 0:
            return cls(math.inf, -math.inf, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), 0)
        keys = bucket_keys(finite)
        lowest = int(keys.min())
        counts = np.bincount(keys - lowest)
        present = np.flatnonzero(counts)
        fractional = int(np.count_nonzero(finite != np.floor(finite)))
        return cls(float(finite.min()), float(finite.max()), present + lowest, counts[present], fractional)

    def merge(self, other: ValueSummary) -> ValueSummary:
        """The summary of the union of two partitions."""
        keys, position = np.unique(np.r_[self.keys, other.keys], return_inverse=True)
        counts = np.zeros(len(keys), dtype=np.int64)
        np.add.at(counts, position, np.r_[self.counts, other.counts])
        return ValueSummary(
            min(self.minimum, other.minimum),
            max(self.maximum, other.maximum),
            keys,
            counts,
            self.fractional + other.fractional,
        )

    @property
    def value_range(self) -> list[float] | None:
        """[smallest, largest] finite value; None when there is none."""
        return [self.minimum, self.maximum] if self.minimum <= self.maximum else None

    @property
    def median(self) -> float | None:
        """The lower median (the value of rank ⌊(n - 1) / 2⌋ in sorted order) to within
        `MEDIAN_ACCURACY` of it, kept inside the extremes, and rounded when every value is a whole
        number (then exact below 100 in magnitude, where the error is under one half); None without
        finite values."""
        total = int(self.counts.sum())
        if total == 0:
            return None
        position = int(np.searchsorted(np.cumsum(self.counts), (total - 1) // 2, side="right"))
        estimate = min(max(bucket_value(int(self.keys[position])), self.minimum), self.maximum)
        return float(round(estimate)) if self.fractional == 0 else estimate


@dataclass(kw_only=True)
class _RangeCheck(RateCheck):
    """Flags batch values below `lower` or above `upper` of the fitted (finite) range.

    -inf and +inf lie beyond any finite range, so they fail like any value below or above it (and
    are counted in `details.inf_rows`); only nulls and NaN have no value to judge. A clean batch's
    rate is the reference's leave-one-out rate: the share of its values that would fall outside the
    range fitted without them.
    """

    kind: ClassVar[str] = "numeric"
    counts_only: ClassVar[bool] = True
    # Whether the flags carry a `ValueSummary` of the batch's values (its range and median).
    summarised: ClassVar[bool] = False

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, Any]) -> Flags:
        x = numeric_values(column_of(current, target), target, "batch")
        with np.errstate(invalid="ignore"):
            below = x < profile["lower"]
            above = x > profile["upper"]
        counts = {
            "below_rows": int(below.sum()),
            "above_rows": int(above.sum()),
            "inf_rows": int(np.isinf(x).sum()),
        }
        summary = ValueSummary.of(x) if self.summarised else None
        return Flags(failing=below | above, usable=~np.isnan(x), counts=counts, summary=summary)

    def _counted(
        self, part: AbnormalPartial, profile: dict[str, Any], rows: int
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """The fitted range and the rows below it, above it and infinite."""
        return {}, {**{k: profile[k] for k in _RANGE_DETAILS if k in profile}, **part.counts}


@register
@dataclass(kw_only=True)
class NumericOutliers(_RangeCheck):
    """Numeric outliers: batch values outside the range of the reference values with real support.

    Thresholds are the smallest and largest reference values whose unit (the value itself when values
    repeat, else a Freedman-Diaconis bin) holds at least `min_support` reference values, so values
    seen once beyond the bulk are outliers: ages 0..97 seen often plus 103 and 114 seen once give
    thresholds 0 and 97. Runs on numeric features that are neither unique (distinct integers, an id)
    nor ascending (a counter or a time).
    """

    name: ClassVar[str] = "abnormal.numeric_outliers"
    needs: ClassVar[frozenset[str]] = frozenset({"numeric"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: rate_metric(
            "the reference's leave-one-out rate: its values outside the supported range, plus an edge "
            "unit holding exactly min_support values"
        )
    }

    min_support: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_support < 1:
            raise CheckInputError(f"{self.name}: min_support must be at least 1, got {self.min_support}")

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any] | None:
        in_order = finite_reference(values, column)
        if len(in_order) > 1 and in_order[-1] > in_order[0] and np.all(np.diff(in_order) >= 0):
            return None
        x = np.sort(in_order)
        if len(x) > 1 and np.all(x[1:] != x[:-1]) and np.all(np.mod(x, 1) == 0):
            return None
        found = supported_range(x, self.min_support)
        if found is None:
            raise NotApplicable(
                f"column {column!r}: no reference value has the support of {self.min_support} values"
            )
        lower, upper, unit, left_out = found
        return {"lower": lower, "upper": upper, "unit": unit, "clean": (left_out, len(x))}

    def _no_target_reason(self) -> str:
        return "every numeric feature is unique or ascending in the reference"


@register
@dataclass(kw_only=True)
class OutOfRange(_RangeCheck):
    """Out of range: batch values outside the closed reference range [min, max] (boundaries pass).

    Details compare the batch with the reference: `reference_range` and `batch_range`, [min, max] of
    the finite values (None for a batch without any), `reference_median` (exact) and `batch_median`
    (the batch's lower median to within `MEDIAN_ACCURACY`, read from logarithmic bucket counts, so
    that a batch evaluated in partitions reports the same value).
    """

    name: ClassVar[str] = "abnormal.out_of_range"
    signature: ClassVar[str | None] = "range"
    needs: ClassVar[frozenset[str]] = frozenset({"numeric"})
    summarised: ClassVar[bool] = True
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: rate_metric(
            "the reference's leave-one-out rate: its minimum and maximum when they occur once"
        )
    }

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, Any]:
        x = finite_reference(values, column)
        lower, upper = float(x.min()), float(x.max())
        left_out = int(np.count_nonzero(x == lower) == 1) + int(np.count_nonzero(x == upper) == 1)
        return {
            "lower": lower,
            "upper": upper,
            "median": float(np.median(x)),
            "clean": (left_out if upper > lower else 0, len(x)),
        }

    def _counted(
        self, part: AbnormalPartial, profile: dict[str, Any], rows: int
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """The range details, and the reference's and the batch's ranges and medians side by side."""
        metrics, details = super()._counted(part, profile, rows)
        summary = part.summary
        assert isinstance(summary, ValueSummary)  # this check's `_flag` always sets one
        details.update(
            reference_range=[profile["lower"], profile["upper"]],
            batch_range=summary.value_range,
            reference_median=profile["median"],
            batch_median=summary.median,
        )
        return metrics, details
