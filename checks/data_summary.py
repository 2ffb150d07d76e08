"""A summary of every column of the batch beside the reference's: count, missing share, numeric
statistics and quantiles, distinct values and top categories. Reported with every run, never graded.

Every statistic merges across partitions of the batch: counts, extremes and moments exactly (Chan's
pairwise update of mean and squared deviations), category counts exactly, and quantiles exactly (numpy's
linear interpolation) while the batch has at most `exact_quantile_rows` finite values of a column,
beyond that from a log-bucket sketch whose buckets are fixed by the values alone, so any partitioning
gives the same sketch; each order statistic it yields is within `relative_accuracy` of the true one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.base import Metric
from driftline.checks.binning import value_counts
from driftline.checks.catalog_index import DATA_SUMMARY
from driftline.checks.columns import Columns, is_nested
from driftline.checks.errors import CheckInputError
from driftline.checks.mergeable import Mergeable
from driftline.checks.registry import register
from driftline.checks.result import CheckResult

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
QUANTILE_METRICS = ("q05", "q25", "q50", "q75", "q95")
COMMON_METRICS = ("missing_share", "count")
NUMERIC_METRICS = (*COMMON_METRICS, "infinite_share", "min", "max", "mean", "std", *QUANTILE_METRICS)
CATEGORICAL_METRICS = (*COMMON_METRICS, "distinct", "top_share")
NOT_GRADED = "not graded: a statistic of the batch, shown beside the reference's"
# Values nearer zero than this fall in the sketch's zero bucket (an absolute error below it).
MIN_INDEXABLE = 1e-12


@dataclass(frozen=True)
class Buckets:
    """Values counted and summed per integer bucket key, keys ascending."""

    keys: np.ndarray
    counts: np.ndarray
    sums: np.ndarray

    @classmethod
    def of(cls, keys: np.ndarray, values: np.ndarray) -> Buckets:
        """Count and sum of `values` per key, in one vectorised pass."""
        if len(keys) == 0:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        first = int(keys.min())
        slots = keys - first
        counts = np.bincount(slots)
        present = np.flatnonzero(counts)
        return cls(present + first, counts[present], np.bincount(slots, weights=values)[present])

    def merge(self, other: Buckets) -> Buckets:
        """The buckets of the union: counts and sums added key by key."""
        keys, slots = np.unique(np.concatenate([self.keys, other.keys]), return_inverse=True)
        counts = np.bincount(slots, weights=np.concatenate([self.counts, other.counts]))
        sums = np.bincount(slots, weights=np.concatenate([self.sums, other.sums]))
        return Buckets(keys, counts.astype(np.int64), sums)


@dataclass(frozen=True)
class LogSketch:
    """Values in log buckets, |x| in (γ^(k-1), γ^k] with γ = 1 + accuracy, per sign, and one bucket
    for values within `MIN_INDEXABLE` of zero. The buckets depend on the values only, so sketches of
    partitions merge to the sketch of the whole. An order statistic is its bucket's mean: within the
    accuracy of the true value (relative), and exact in a bucket of equal integers."""

    log_gamma: float
    negative: Buckets
    zero: Buckets
    positive: Buckets

    @classmethod
    def of(cls, values: np.ndarray, log_gamma: float) -> LogSketch:
        """The sketch of finite values."""
        near_zero = np.abs(values) <= MIN_INDEXABLE
        negative, positive = values[values < -MIN_INDEXABLE], values[values > MIN_INDEXABLE]
        return cls(
            log_gamma,
            Buckets.of(np.ceil(np.log(-negative) / log_gamma).astype(np.int64), negative),
            Buckets.of(np.zeros(int(near_zero.sum()), np.int64), values[near_zero]),
            Buckets.of(np.ceil(np.log(positive) / log_gamma).astype(np.int64), positive),
        )

    def merge(self, other: LogSketch) -> LogSketch:
        """The sketch of the union of two sets of values."""
        return LogSketch(
            self.log_gamma,
            self.negative.merge(other.negative),
            self.zero.merge(other.zero),
            self.positive.merge(other.positive),
        )

    def order_statistics(self, ranks: np.ndarray) -> np.ndarray:
        """The values at 0-based `ranks` of the sorted values, each its bucket's mean."""
        counts = np.concatenate([self.negative.counts[::-1], self.zero.counts, self.positive.counts])
        sums = np.concatenate([self.negative.sums[::-1], self.zero.sums, self.positive.sums])
        at = np.searchsorted(np.cumsum(counts), ranks, side="right")
        return sums[at] / counts[at]


@dataclass
class NumericState:
    """One numeric column of a batch (or a partition): missing and infinite values, and of the finite
    ones their count, extremes, mean, sum of squared deviations, and their values while few, else
    their sketch."""

    missing: int
    infinite: int
    count: int
    minimum: float
    maximum: float
    mean: float
    squares: float
    values: np.ndarray | None
    sketch: LogSketch | None

    @classmethod
    def of(cls, series: pd.Series, exact_rows: int, log_gamma: float) -> NumericState:
        values = series.to_numpy(dtype=float, na_value=np.nan)
        finite_mask = np.isfinite(values)
        finite = values if finite_mask.all() else values[finite_mask]
        missing = int(np.isnan(values).sum())
        n = len(finite)
        mean = float(finite.mean()) if n else 0.0
        deviations = finite - mean
        few = n <= exact_rows
        return cls(
            missing=missing,
            infinite=len(values) - n - missing,
            count=n,
            minimum=float(finite.min()) if n else math.inf,
            maximum=float(finite.max()) if n else -math.inf,
            mean=mean,
            squares=float(deviations @ deviations),
            values=finite if few else None,
            sketch=None if few else LogSketch.of(finite, log_gamma),
        )

    def merge(self, other: NumericState, exact_rows: int, log_gamma: float) -> NumericState:
        n = self.count + other.count
        delta = other.mean - self.mean
        few = n <= exact_rows
        return NumericState(
            missing=self.missing + other.missing,
            infinite=self.infinite + other.infinite,
            count=n,
            minimum=min(self.minimum, other.minimum),
            maximum=max(self.maximum, other.maximum),
            mean=self.mean + delta * other.count / n if n else 0.0,
            squares=self.squares + other.squares + delta * delta * self.count * other.count / n if n else 0.0,
            values=np.concatenate([self.values, other.values]) if few else None,
            sketch=None if few else self._sketch(log_gamma).merge(other._sketch(log_gamma)),
        )

    def _sketch(self, log_gamma: float) -> LogSketch:
        return self.sketch if self.sketch is not None else LogSketch.of(self.values, log_gamma)  # type: ignore[arg-type]

    def summary(self, rows: int, accuracy: float) -> dict[str, Any]:
        n = self.count
        stats: dict[str, float | None] = dict.fromkeys(NUMERIC_METRICS[2:])
        if n:
            stats.update(
                min=self.minimum,
                max=self.maximum,
                mean=self.mean,
                std=math.sqrt(self.squares / (n - 1)) if n > 1 else None,
                **dict(zip(QUANTILE_METRICS, self._quantiles(), strict=True)),
            )
        stats["infinite_share"] = self.infinite / rows if rows else None
        method = (
            "exact (linear interpolation)" if self.sketch is None else f"sketch (±{accuracy:.2%} relative)"
        )
        return _summary("numeric", rows, self.missing, stats, quantiles=method)

    def _quantiles(self) -> list[float]:
        """numpy's linear-interpolation quantiles, of the sketch's order statistics beyond the exact
        limit."""
        if self.sketch is None:
            return [float(q) for q in np.quantile(self.values, QUANTILES)]  # type: ignore[arg-type]
        position = (self.count - 1) * np.asarray(QUANTILES)
        low, high = np.floor(position).astype(np.int64), np.ceil(position).astype(np.int64)
        values = self.sketch.order_statistics(np.concatenate([low, high]))
        below, above = values[: len(low)], values[len(low) :]
        return [float(q) for q in below + (position - low) * (above - below)]


@dataclass
class CategoryState:
    """One categorical column: its missing values and the count of each value (by its string form)."""

    missing: int
    counts: pd.Series

    @classmethod
    def of(cls, series: pd.Series) -> CategoryState:
        counts, missing = value_counts(series)
        return cls(missing, counts.astype(np.int64))

    def merge(self, other: CategoryState) -> CategoryState:
        counts = pd.concat([self.counts, other.counts]).groupby(level=0, sort=False).sum()
        return CategoryState(self.missing + other.missing, counts.astype(np.int64))

    def summary(self, rows: int, top: int, min_count: int) -> dict[str, Any]:
        """Its statistics, and the `top` values seen at least `min_count` times (a rarer value, such as
        an id, would show one row's data)."""
        present = int(self.counts.sum())
        ranked = self._top(top)
        stats = {
            "distinct": float(len(self.counts)),
            "top_share": ranked[0][1] / present if ranked else None,
        }
        listed = [[value, count, count / present] for value, count in ranked if count >= min_count]
        return _summary("categorical", rows, self.missing, stats, top=listed)

    def _top(self, top: int) -> list[tuple[str, int]]:
        """The `top` most frequent values, ties by value, whatever the order of the rows."""
        if self.counts.empty:
            return []
        counts = self.counts.to_numpy()
        kept = min(top, len(counts))
        floor = np.partition(counts, -kept)[-kept]
        candidates = self.counts[counts >= floor]
        order = np.lexsort((candidates.index.to_numpy(dtype=object), -candidates.to_numpy()))[:top]
        return [(str(candidates.index[i]), int(candidates.iloc[i])) for i in order]


@dataclass
class DateState:
    """A column of dates or times: its missing values, first and last value."""

    missing: int
    first: Any = None
    last: Any = None

    @classmethod
    def of(cls, series: pd.Series) -> DateState:
        missing = int(series.isna().sum())
        return cls(missing) if missing == len(series) else cls(missing, series.min(), series.max())

    def merge(self, other: DateState) -> DateState:
        firsts = [v for v in (self.first, other.first) if v is not None]
        lasts = [v for v in (self.last, other.last) if v is not None]
        return DateState(self.missing + other.missing, min(firsts, default=None), max(lasts, default=None))

    def summary(self, rows: int) -> dict[str, Any]:
        """First and last as ISO text, as results store them, so a reference's summary is plain data
        in the profile cache."""
        first, last = (None if v is None else pd.Timestamp(v).isoformat() for v in (self.first, self.last))
        return _summary("datetime", rows, self.missing, {}, first=first, last=last)


# A column's state; None for a column of nested values, which no check reads (see `schema.columns`).
State = NumericState | CategoryState | DateState | None


def _summary(kind: str, rows: int, missing: int, stats: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A column's summary: its kind, metrics (missing share and count first) and what else it shows."""
    metrics = {"missing_share": missing / rows if rows else None, "count": float(rows - missing), **stats}
    return {"kind": kind, "rows": rows, "metrics": metrics, **extra}


def summary_kind(series: pd.Series) -> str:
    """How a column is summarised: numeric (real numbers), datetime, nested, or categorical (strings,
    categories, booleans and anything else)."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "categorical"
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        return "numeric"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    return "nested" if is_nested(series) else "categorical"


@register
@dataclass(kw_only=True)
class DataSummary(Mergeable):
    """Every column of the batch summarised beside the reference: count, missing share, min, max, mean,
    std and 5/25/50/75/95% quantiles of numbers, distinct values and top categories of the others.

    Never graded: it shows a person the batch without opening it, and its numbers feed the history's
    trends. Dates and times get their first and last value; columns of nested values are left to the
    schema check, which names them. `features` narrows it to the columns listed; `top` is the number
    of categories kept, each seen at least `min_count` times (rarer values, ids say, are not shown);
    quantiles are exact up to `exact_quantile_rows` finite values of a column and within
    `relative_accuracy` of exact beyond. Infinite values are counted (`infinite_share`) and
    left out of the statistics.
    """

    name: ClassVar[str] = DATA_SUMMARY
    family: ClassVar[str] = "data"
    role: ClassVar[str] = "summary"
    declared_metrics: ClassVar[dict[str, Metric]] = {
        m: Metric((), change=NOT_GRADED) for m in dict.fromkeys((*NUMERIC_METRICS, *CATEGORICAL_METRICS))
    }

    top: int = 10
    min_count: int = 5
    exact_quantile_rows: int = 20_000
    relative_accuracy: float = 0.001

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.top, bool) or not isinstance(self.top, int) or self.top < 1:
            raise CheckInputError(f"{self.name}: top must be a whole number >= 1, got {self.top!r}")
        if isinstance(self.min_count, bool) or not isinstance(self.min_count, int) or self.min_count < 1:
            raise CheckInputError(
                f"{self.name}: min_count must be a whole number >= 1, got {self.min_count!r}"
            )
        if isinstance(self.exact_quantile_rows, bool) or not isinstance(self.exact_quantile_rows, int):
            raise CheckInputError(f"{self.name}: exact_quantile_rows must be a whole number")
        if self.exact_quantile_rows < 0:
            raise CheckInputError(f"{self.name}: exact_quantile_rows must be >= 0")
        if not 0 < self.relative_accuracy <= 0.1:
            raise CheckInputError(f"{self.name}: relative_accuracy must be in (0, 0.1]")

    @property
    def _log_gamma(self) -> float:
        """The sketch's bucket width, log γ with γ = 1 + accuracy."""
        return math.log1p(self.relative_accuracy)

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, dict[str, Any]]:
        """The reference's summary of each column (the same statistics as a batch's)."""
        state = self.partial(reference, {}, columns)
        return {name: self._summarised(s, state["rows"]) for name, s in state["columns"].items() if s}

    def partial(self, current: pd.DataFrame, profile: Any, columns: Columns) -> dict[str, Any]:
        """The state of one partition: its rows and each column's state."""
        if current.columns.has_duplicates:
            duplicated = sorted(map(str, current.columns[current.columns.duplicated()]))
            raise CheckInputError(f"duplicate column name(s) {duplicated}: each column needs its own name")
        chosen = self._chosen(current.columns)
        return {"rows": len(current), "columns": {str(c): self._state(current[c]) for c in chosen}}

    def _chosen(self, names: pd.Index) -> list[Any]:
        """The frame's columns to summarise: all, or those `features` lists, in the frame's order."""
        if not self.features:
            return list(names)
        wanted = set(self.features)
        return [c for c in names if str(c) in wanted]

    def _state(self, series: pd.Series) -> State:
        kind = summary_kind(series)
        if kind == "numeric":
            return NumericState.of(series, self.exact_quantile_rows, self._log_gamma)
        if kind == "categorical":
            return CategoryState.of(series)
        return DateState.of(series) if kind == "datetime" else None

    def merge(self, states: list[dict[str, Any]]) -> dict[str, Any]:
        """Column by column, in partition order."""
        merged = dict(states[0]["columns"])
        for state in states[1:]:
            for name, part in state["columns"].items():
                merged[name] = self._merged(name, merged[name], part)
        return {"rows": sum(s["rows"] for s in states), "columns": merged}

    def _merged(self, name: str, one: State, other: State) -> State:
        if type(one) is not type(other):
            raise CheckInputError(f"column {name!r} holds values of different kinds in different partitions")
        if one is None:  # nested values in both
            return None
        if isinstance(one, NumericState):
            return one.merge(other, self.exact_quantile_rows, self._log_gamma)  # type: ignore[arg-type]
        return one.merge(other)  # type: ignore[arg-type]

    def _summarised(self, state: NumericState | CategoryState | DateState, rows: int) -> dict[str, Any]:
        if isinstance(state, NumericState):
            return state.summary(rows, self.relative_accuracy)
        if isinstance(state, CategoryState):
            return state.summary(rows, self.top, self.min_count)
        return state.summary(rows)

    def finish(self, state: dict[str, Any], profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        """One ungraded result per column of the batch (nested ones left out), its reference summary
        in its details; a column only the reference has is skipped, naming it, with that summary."""
        rows = state["rows"]
        results = []
        for name, column in state["columns"].items():
            if column is None:
                continue
            summary = self._summarised(column, rows)
            details = {k: v for k, v in summary.items() if k not in ("metrics", "rows")}
            details["reference"] = profile.get(name)
            results.append(self.result(name, summary["metrics"], rows=rows, severity="none", details=details))
        listed = [str(f) for f in self.features or []]
        for name in dict.fromkeys([*profile, *listed]):
            if name in state["columns"]:
                continue
            in_reference = name in profile
            where = (
                "in the reference, not in the batch"
                if in_reference
                else "in neither the batch nor the reference"
            )
            results.append(
                CheckResult(
                    check=self.name,
                    target=name,
                    status="skipped" if in_reference else "error",
                    rows=rows,
                    reason=f"column {name!r} is {where}",
                    details={"reference": profile.get(name)},
                )
            )
        return results
