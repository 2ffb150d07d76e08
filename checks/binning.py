"""Distribution summaries shared by the drift checks: the PSI, reference-quantile sketches, category counts.

PSI (one definition for the whole project). For reference counts r_i and current counts c_i over the
same K bins, with a smoothing pseudo-count a added to every bin:

    p_i = (r_i + a) / (R + K a),   q_i = (c_i + a) / (C + K a),   PSI = sum_i (q_i - p_i) ln(q_i / p_i)

which equals KL(p || q) + KL(q || p), so it is symmetric. The default is add-one smoothing
(`DEFAULT_SMOOTHING = 1.0`): it keeps bins that are empty on one side finite and reproduces the 0.201
of the source document's worked example ([100, 200] against [25, 150]: 0.2009). `smoothing=0` gives
the plain formula (0.2093 on the same counts); there an empty bin's proportion is raised to
`EMPTY_BIN_SHARE` so the value stays finite.

Numeric columns are binned on reference quantiles: the interior edges are the reference values at
probabilities k / bins (k = 1 .. bins - 1, the inverted-CDF quantile, so every edge is an observed value),
bins are right-closed (e_{i-1}, e_i], and the two outer bins are open-ended, so values below or above
the reference range fall into the first or last bin (their share is reported separately). Tied
quantiles give duplicate edges, which are merged: a column with heavy ties gets fewer bins. Edges come
from the finite reference values; -inf and +inf are counted like any value, in the first and last bin.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import special

from driftline.checks.errors import CheckInputError
from driftline.checks.evidence import NULL_DRAWS, Evidence, divergence_evidence, split_evidence
from driftline.checks.kolmogorov import kolmogorov_sf

DEFAULT_SMOOTHING = 1.0
EMPTY_BIN_SHARE = 1e-6
UNSEEN = "<unseen>"
# The pooled bin of `capped_bins` when it holds rare reference categories (else it is UNSEEN).
RARE_OR_UNSEEN = "<rare or unseen>"
# A reference category has its own bin in a categorical PSI from this many reference rows.
MIN_CATEGORY_ROWS = 5
# The chi-square test pools the categories expected fewer times than this in the smaller sample.
MIN_EXPECTED = 5.0
KS_EXACT_LIMIT = 10_000
# Bins of at most this many edges are found by comparing values with each edge (`bin_codes`).
COUNTED_EDGES = 64
# No-change draws of a divergence over hundreds of cells (a text column's terms, a pair's joint table),
# where each draw is costly: 200 fit the scaled chi-square about as well as the default 400 (the
# fitted far-tail margin varies by about 3% between seeds instead of 2%) in half the time.
LARGE_TABLE_DRAWS = 200
# A categorical PSI draws its no-change noise `LARGE_TABLE_DRAWS` times above this many categories.
LARGE_TABLE_CELLS = 1000


def psi(
    reference_counts: ArrayLike, current_counts: ArrayLike, smoothing: float = DEFAULT_SMOOTHING
) -> float:
    """Population stability index of two count vectors over the same bins (see the module docstring)."""
    ref = np.asarray(reference_counts, dtype=float)
    cur = np.asarray(current_counts, dtype=float)
    if ref.shape != cur.shape or ref.ndim != 1 or len(ref) == 0:
        raise CheckInputError(
            f"PSI needs two count vectors of the same length, got {ref.shape} and {cur.shape}"
        )
    if smoothing < 0:
        raise CheckInputError(f"PSI smoothing must be >= 0, got {smoothing}")
    if ref.sum() <= 0 or cur.sum() <= 0:
        raise CheckInputError("PSI needs at least one count on each side")
    return float(psi_rows(ref, cur, smoothing))


def psi_rows(
    reference_counts: np.ndarray, current_counts: np.ndarray, smoothing: float = DEFAULT_SMOOTHING
) -> np.ndarray:
    """PSI of each pair of rows of two (rows x bins) count arrays, unchecked: the vectorised form the
    no-change simulations of `psi_evidence` evaluate."""
    p = _shares(np.asarray(reference_counts, dtype=float), smoothing)
    q = _shares(np.asarray(current_counts, dtype=float), smoothing)
    return np.sum((q - p) * np.log(q / p), axis=-1)


def psi_evidence(
    reference_counts: ArrayLike,
    current_counts: ArrayLike,
    smoothing: float = DEFAULT_SMOOTHING,
    draws: int = NULL_DRAWS,
) -> Evidence:
    """The PSI of two count vectors with its no-change noise: both samples redrawn at their sizes from
    the pooled shares and the same smoothing (`checks.evidence.divergence_evidence`, seeded, so equal
    counts give equal evidence); its estimate is `psi(...)`."""
    value = psi(reference_counts, current_counts, smoothing)
    statistic = partial(psi_rows, smoothing=smoothing)
    return divergence_evidence(statistic, reference_counts, current_counts, value, draws)


def capped_bins(
    reference: np.ndarray, current: np.ndarray, min_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which categories keep a bin of their own (at least `min_rows` reference rows), and the
    reference and current counts over those bins plus one pooled bin for all the others, rare in the
    reference or unseen (only when it holds a row on either side)."""
    frequent = reference >= min_rows
    ref, cur = reference[frequent], current[frequent]
    other = (int(reference[~frequent].sum()), int(current[~frequent].sum()))
    if sum(other) == 0:
        return frequent, ref, cur
    return frequent, np.r_[ref, other[0]], np.r_[cur, other[1]]


def capped_psi_rows(
    reference: np.ndarray, current: np.ndarray, candidates: np.ndarray, min_rows: int, smoothing: float
) -> np.ndarray:
    """PSI of each pair of rows of two (draws x categories) count arrays over the bins `capped_bins`
    makes of that row's reference (only `candidates` may keep a bin): the statistic whose no-change
    draws `category_psi_evidence` simulates."""
    frequent = candidates & (reference >= min_rows)
    other_ref = np.where(frequent, 0, reference).sum(axis=-1)
    other_cur = np.where(frequent, 0, current).sum(axis=-1)
    pooled = (other_ref + other_cur) > 0
    bins = frequent.sum(axis=-1) + pooled
    ref_total = reference.sum(axis=-1) + smoothing * bins
    cur_total = current.sum(axis=-1) + smoothing * bins
    p = _floored((reference + smoothing) / ref_total[:, None])
    q = _floored((current + smoothing) / cur_total[:, None])
    total = np.where(frequent, (q - p) * np.log(q / p), 0.0).sum(axis=-1)
    p_other = _floored((other_ref + smoothing) / ref_total)
    q_other = _floored((other_cur + smoothing) / cur_total)
    return total + np.where(pooled, (q_other - p_other) * np.log(q_other / p_other), 0.0)


def category_psi_evidence(
    reference: np.ndarray,
    current: np.ndarray,
    min_rows: int = MIN_CATEGORY_ROWS,
    smoothing: float = DEFAULT_SMOOTHING,
    draws: int = NULL_DRAWS,
) -> Evidence:
    """The PSI of category counts over `capped_bins`, with its no-change noise: the rows of both
    samples exchanged at random (`checks.evidence.split_evidence`) and the bins chosen again from each
    draw's reference, so that a reference whose categories are sparse (thousands of categories, a few
    rows each) is compared with draws just as sparse. Categories with fewer than `min_rows` rows on
    both sides together never keep a bin: they are drawn as one; above `LARGE_TABLE_CELLS` others,
    `LARGE_TABLE_DRAWS` draws are made."""
    _, ref_bins, cur_bins = capped_bins(reference, current, min_rows)
    value = psi(ref_bins, cur_bins, smoothing)
    candidates = (reference + current) >= min_rows
    ref = np.r_[reference[candidates], reference[~candidates].sum()]
    cur = np.r_[current[candidates], current[~candidates].sum()]
    draws = min(draws, LARGE_TABLE_DRAWS) if len(ref) > LARGE_TABLE_CELLS else draws
    statistic = partial(
        capped_psi_rows,
        candidates=np.r_[np.ones(len(ref) - 1, dtype=bool), False],
        min_rows=min_rows,
        smoothing=smoothing,
    )
    return split_evidence(statistic, (ref, cur), value, draws=draws)


def expected_pooled(
    reference: np.ndarray, current: np.ndarray, min_expected: float = MIN_EXPECTED
) -> tuple[np.ndarray, np.ndarray]:
    """Reference and current counts with the categories expected fewer than `min_expected` times in
    the smaller sample (from the two samples' pooled counts, which a no-change split leaves alone)
    pooled into one bin: the table on which the chi-square distribution holds (Cochran's rule)."""
    pooled = reference + current
    smaller = min(reference.sum(), current.sum())
    kept = pooled * smaller / max(pooled.sum(), 1) >= min_expected
    ref, cur = reference[kept], current[kept]
    if kept.all():
        return ref, cur
    return np.r_[ref, reference[~kept].sum()], np.r_[cur, current[~kept].sum()]


def _floored(shares: np.ndarray) -> np.ndarray:
    """Shares with empty ones raised to `EMPTY_BIN_SHARE` (unsmoothed PSI), as `_shares` does."""
    return np.where(shares > 0, shares, EMPTY_BIN_SHARE)


def _shares(counts: np.ndarray, smoothing: float) -> np.ndarray:
    """Smoothed shares of each row of counts (the last axis holds the bins)."""
    total = counts.sum(axis=-1, keepdims=True) + smoothing * counts.shape[-1]
    shares = (counts + smoothing) / total
    return np.where(shares > 0, shares, EMPTY_BIN_SHARE)


def present_values(series: pd.Series, name: str) -> tuple[np.ndarray, int]:
    """A numeric column as float64 without nulls/NaN (±inf kept), and how many values were dropped."""
    if not pd.api.types.is_numeric_dtype(series.dtype):
        raise CheckInputError(f"column {name!r} is not numeric (dtype {series.dtype})")
    values = series.to_numpy(dtype=float, na_value=np.nan)
    keep = ~np.isnan(values)
    if keep.all():
        return values, 0
    return values[keep], int(len(values) - keep.sum())


def quantile_edges(sorted_values: np.ndarray, bins: int) -> np.ndarray:
    """Distinct interior bin edges: the inverted-CDF quantiles at k / bins of already sorted values."""
    n = len(sorted_values)
    k = np.arange(1, bins)
    positions = (k * n + bins - 1) // bins - 1
    return np.unique(sorted_values[positions])


def ks_pvalue(statistic: float, n_reference: int, n_current: int) -> float:
    """Two-sided asymptotic p-value of the two-sample KS statistic.

    Up to an effective size m n / (m + n) of KS_EXACT_LIMIT this is scipy's `ks_2samp(method="asymp")`
    (the Kolmogorov distribution for that size, `kolmogorov_sf`, without importing scipy.stats); above
    it the limiting distribution of sqrt(size) D,
    which differs by a few percent of the p-value at most and costs microseconds instead of up to half
    a second per column.
    """
    larger, smaller = max(n_reference, n_current), min(n_reference, n_current)
    effective = round(larger * smaller / (larger + smaller))
    if effective <= KS_EXACT_LIMIT:
        value = kolmogorov_sf(statistic, effective)
    else:
        value = special.kolmogorov(statistic * np.sqrt(effective))
    return float(np.clip(value, 0.0, 1.0))


@dataclass(frozen=True)
class NumericSketch:
    """Reference summary of one numeric column: PSI bins and an ECDF sketch for the KS test.

    `points` are all distinct reference values when there are at most `sketch_size` of them (the KS
    statistic is then exact), otherwise the reference quantiles at j / sketch_size plus the minimum;
    the KS statistic is then within about 1 / sketch_size of the exact one. `count_le`/`count_lt`
    are the numbers of reference values <= and < each point.
    """

    edges: np.ndarray
    counts: np.ndarray
    points: np.ndarray
    count_le: np.ndarray
    count_lt: np.ndarray
    n: int
    exact: bool

    @classmethod
    def from_values(cls, values: np.ndarray, bins: int, sketch_size: int) -> NumericSketch:
        """Summarise reference values without NaN (any order; edges from the finite ones)."""
        ordered = np.sort(values)
        n = len(ordered)
        finite = ordered[np.isfinite(ordered)]
        edges = quantile_edges(finite, bins) if len(finite) else np.empty(0)
        distinct = ordered[np.r_[True, ordered[1:] != ordered[:-1]]]
        exact = len(distinct) <= sketch_size
        if exact:
            points = distinct
        else:
            j = np.arange(1, sketch_size + 1)
            points = np.unique(np.r_[ordered[0], ordered[(j * n + sketch_size - 1) // sketch_size - 1]])
        return cls(
            edges=edges,
            counts=bin_counts(ordered, edges),
            points=points,
            count_le=np.searchsorted(ordered, points, side="right"),
            count_lt=np.searchsorted(ordered, points, side="left"),
            n=n,
            exact=exact,
        )

    @property
    def minimum(self) -> float:
        return float(self.points[0])

    @property
    def maximum(self) -> float:
        return float(self.points[-1])

    def wasserstein(self, values: np.ndarray) -> float:
        """First Wasserstein distance to the reference over the finite values (±inf would make it
        infinite; they are counted apart), the sketch standing for the reference; NaN without any."""
        weights = np.diff(np.r_[0, self.count_le])
        kept, current = np.isfinite(self.points), values[np.isfinite(values)]
        if not kept.any() or len(current) == 0:
            return float("nan")
        return wasserstein_1d(self.points[kept], weights[kept].astype(float), current)


def bin_codes(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The right-closed bin of each value (see `bin_counts`): how many edges lie below it. Up to
    `COUNTED_EDGES` edges, comparing the values with each edge in turn is several times faster than a
    binary search per value."""
    if len(edges) > COUNTED_EDGES:
        return np.searchsorted(edges, values, side="left")
    codes = np.zeros(len(values), dtype=np.uint8)
    for edge in edges:
        codes += values > edge
    return codes


def bin_counts(ordered: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of sorted values in the right-closed bins (-inf, e_1], (e_1, e_2], ..., (e_last, inf)."""
    return np.diff(np.r_[0, np.searchsorted(ordered, edges, side="right"), len(ordered)])


def encode(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes (-1 for null) and the distinct values they index, without a pass per value (a
    categorical column's in the order of its categories, others in order of first appearance)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy(), values.cat.categories
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return codes, pd.Index(uniques)


def keyed_counts(values: pd.Series) -> tuple[pd.Series, RowGroups]:
    """Counts of the non-missing values keyed by their string form (in `encode` order), and the rows
    grouped by key, the missing ones last (as None)."""
    codes, uniques = encode(values)
    missing = codes < 0
    groups = np.where(missing, len(uniques), codes) if missing.any() else codes
    sizes = np.bincount(groups, minlength=len(uniques) + 1)
    keys = uniques.astype(str)
    counts = pd.Series(sizes[:-1], index=keys)[sizes[:-1] > 0]
    if counts.index.has_duplicates:
        counts = counts.groupby(level=0, sort=False).sum()
    return counts, RowGroups(groups, [*keys, None], sizes)


def value_counts(series: pd.Series) -> tuple[pd.Series, int]:
    """Counts of the non-missing values keyed by their string form, and the number of missing values."""
    counts, groups = keyed_counts(series)
    return counts, int(groups.sizes[-1])


@dataclass(frozen=True)
class CategoryCounts:
    """Reference frequencies of one categorical column (string keys), mergeable across partitions."""

    categories: tuple[str, ...]
    counts: np.ndarray

    @classmethod
    def from_series(cls, series: pd.Series) -> CategoryCounts:
        """Count the non-missing values of a reference column."""
        counts, _ = value_counts(series)
        return cls(categories=tuple(counts.index), counts=counts.to_numpy(dtype=np.int64))

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def merge(self, other: CategoryCounts) -> CategoryCounts:
        """Counts of the union of two partitions of the reference."""
        total = pd.Series(self.counts, index=list(self.categories)).add(
            pd.Series(other.counts, index=list(other.categories)), fill_value=0
        )
        return CategoryCounts(categories=tuple(total.index), counts=total.to_numpy(dtype=np.int64))

    def levels(self, current: pd.Series) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Reference and current counts of every category either side holds (the reference's, then
        those only the batch has) and the names of the latter."""
        position = pd.Index(self.categories).get_indexer(current.index)
        seen, counts = position >= 0, current.to_numpy(dtype=np.int64)
        cur = np.zeros(len(self.categories), dtype=np.int64)
        cur[position[seen]] = counts[seen]
        unseen = counts[~seen]
        ref = np.r_[self.counts, np.zeros(len(unseen), dtype=np.int64)]
        return ref, np.r_[cur, unseen], list(current.index[~seen])

    def align(self, current: pd.Series) -> tuple[np.ndarray, np.ndarray, list[str], int]:
        """Reference and current counts over the reference categories, plus one pooled bin for
        categories the reference never saw (only when the batch has some); also their names and count."""
        _, counts, unseen_names = self.levels(current)
        seen = len(self.categories)
        cur, unseen = counts[:seen], int(counts[seen:].sum())
        if unseen == 0:
            return self.counts, cur, unseen_names, 0
        return np.r_[self.counts, 0], np.r_[cur, unseen], unseen_names, unseen


def chi_square(reference_counts: np.ndarray, current_counts: np.ndarray) -> tuple[float, float]:
    """Pearson chi-square test of homogeneity on the 2 x K table (no continuity correction).

    Bins empty on both sides are left out; with fewer than two bins left there is nothing to test.
    """
    table = np.vstack([reference_counts, current_counts]).astype(float)
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 0.0, 1.0
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    statistic = float(np.sum((table - expected) ** 2 / expected))
    return statistic, float(special.chdtrc(table.shape[1] - 1, statistic))


def wasserstein_1d(points: np.ndarray, weights: np.ndarray, values: np.ndarray) -> float:
    """First Wasserstein distance between `points` weighted by `weights` and the sample `values`:
    the area between the two cumulative distribution functions (as `scipy.stats.wasserstein_distance`)."""
    order = np.argsort(points, kind="stable")
    points, cumulative = points[order], np.cumsum(weights[order])
    values = np.sort(values)
    grid = np.sort(np.concatenate([points, values]))
    steps = np.diff(grid)
    at = grid[:-1]
    cdf_points = np.r_[0.0, cumulative][np.searchsorted(points, at, side="right")] / cumulative[-1]
    cdf_values = np.searchsorted(values, at, side="right") / len(values)
    return float(np.sum(np.abs(cdf_points - cdf_values) * steps))


# --- mergeable batch summaries (partitioned batches) ---------------------------------------------------


@dataclass(frozen=True)
class NumericCounts:
    """What the PSI, the KS statistic and the range details of one numeric column need of a batch,
    as counts that add up across partitions: counts in the reference bins, counts <= and < each
    sketch point, values below the reference minimum or above its maximum, the finite extremes.
    """

    bins: np.ndarray
    count_le: np.ndarray
    count_lt: np.ndarray
    below: int
    above: int
    present: int
    dropped: int
    inf_rows: int
    finite_min: float
    finite_max: float

    @classmethod
    def from_values(cls, present: np.ndarray, dropped: int, sketch: NumericSketch) -> NumericCounts:
        """Count one partition's present values (NaN already removed) against the reference sketch."""
        ordered = np.sort(present)
        # Sorted, -inf and +inf stand at the two ends: the finite values are ordered[lo:hi].
        lo = int(np.searchsorted(ordered, -np.inf, side="right"))
        hi = int(np.searchsorted(ordered, np.inf, side="left"))
        return cls(
            bins=bin_counts(ordered, sketch.edges),
            count_le=np.searchsorted(ordered, sketch.points, side="right"),
            count_lt=np.searchsorted(ordered, sketch.points, side="left"),
            below=int(np.searchsorted(ordered, sketch.minimum, side="left")),
            above=int(len(ordered) - np.searchsorted(ordered, sketch.maximum, side="right")),
            present=len(ordered),
            dropped=dropped,
            inf_rows=lo + len(ordered) - hi,
            finite_min=float(ordered[lo]) if hi > lo else np.inf,
            finite_max=float(ordered[hi - 1]) if hi > lo else -np.inf,
        )

    def merge(self, other: NumericCounts) -> NumericCounts:
        """Counts of the union of two partitions."""
        return NumericCounts(
            bins=self.bins + other.bins,
            count_le=self.count_le + other.count_le,
            count_lt=self.count_lt + other.count_lt,
            below=self.below + other.below,
            above=self.above + other.above,
            present=self.present + other.present,
            dropped=self.dropped + other.dropped,
            inf_rows=self.inf_rows + other.inf_rows,
            finite_min=min(self.finite_min, other.finite_min),
            finite_max=max(self.finite_max, other.finite_max),
        )

    def ks(self, sketch: NumericSketch) -> tuple[float, float]:
        """KS statistic and asymptotic p-value of the batch against the reference sketch.

        Between two consecutive points the reference ECDF is flat (exact mode), so the supremum of
        |F_ref - F_cur| is reached at a point or just below one: both are evaluated, from the counts.
        """
        m = self.present
        stat = max(
            float(np.max(np.abs(sketch.count_le / sketch.n - self.count_le / m))),
            float(np.max(np.abs(sketch.count_lt / sketch.n - self.count_lt / m))),
        )
        return stat, ks_pvalue(stat, sketch.n, m)

    def row_groups(self, sketch: NumericSketch, values: pd.Series) -> RowGroups:
        """The rows these counts were counted from (`values`) by PSI bin, then the missing ones."""
        raw = values.to_numpy(dtype=float, na_value=np.nan)
        bins = len(sketch.counts)
        codes = bin_codes(raw, sketch.edges)
        codes[np.isnan(raw)] = bins
        return RowGroups(codes, [*range(bins), None], np.r_[self.bins, self.dropped])

    def grown(self, sketch: NumericSketch) -> list[int]:
        """The bins whose share grew from the reference's."""
        grew = self.bins / max(self.present, 1) > sketch.counts / sketch.n
        return np.flatnonzero(grew).tolist()

    @property
    def finite_range(self) -> list[float] | None:
        """[smallest, largest] finite value, None when there is none."""
        return [self.finite_min, self.finite_max] if self.finite_min <= self.finite_max else None


@dataclass(frozen=True)
class RowGroups:
    """The rows of a partition in groups (bins, categories, failing or passing): row i in group
    `labels[codes[i]]`, `sizes` rows per group (labels may repeat: their sums are added)."""

    codes: np.ndarray
    labels: list[Any]
    sizes: np.ndarray


@dataclass(frozen=True)
class ImpactRows:
    """The per-row values whose sums per group give `checks.impact.model_impact`, read once per
    partition: the mode (see `ImpactSums`), each row's loss or prediction with 0 where it is missing,
    and 1.0 where it is not (None when no row misses it), so that sums per group select no rows."""

    mode: str
    values: np.ndarray | None = None
    usable: np.ndarray | None = None

    @classmethod
    def of(cls, frame: pd.DataFrame, columns: Any) -> ImpactRows:
        """The losses when the frame has labels, else its numeric prediction, else nothing."""
        from driftline.checks.impact import _row_loss

        loss = _row_loss(frame, columns)
        if loss is not None:
            return cls.read("loss", loss)
        pred_col = columns.score or columns.prediction
        if pred_col and pred_col in frame and pd.api.types.is_numeric_dtype(frame[pred_col]):
            return cls.read("prediction", frame[pred_col].to_numpy(dtype=float))
        return cls("none")

    @classmethod
    def read(cls, mode: str, values: np.ndarray) -> ImpactRows:
        """Per-row values with NaN as missing."""
        missing = np.isnan(values)
        if not missing.any():
            return cls(mode, values)
        return cls(mode, np.where(missing, 0.0, values), (~missing).astype(float))


@dataclass(frozen=True)
class ImpactSums:
    """Per-group sums behind `checks.impact.model_impact`, mergeable across partitions.

    `mode` is "loss" (labels present: per-row 0/1 error or absolute error), "prediction" (no labels:
    the mean prediction) or "none". `table` is indexed by group key with columns `rows` (all rows),
    `count` (rows with a usable loss or prediction) and `total` (their sum).
    """

    mode: str
    table: pd.DataFrame

    @classmethod
    def from_groups(cls, rows: ImpactRows, groups: RowGroups) -> ImpactSums:
        """Sums of one partition's rows by group."""
        k, codes = len(groups.labels), groups.codes
        data: dict[str, np.ndarray] = {"rows": np.asarray(groups.sizes, dtype=np.int64)}
        if rows.values is None:
            data["count"], data["total"] = np.zeros(k, dtype=np.int64), np.zeros(k)
        else:
            usable = rows.usable
            counted = groups.sizes if usable is None else np.bincount(codes, weights=usable, minlength=k)
            data["count"] = np.asarray(counted, dtype=np.int64)
            data["total"] = np.bincount(codes, weights=rows.values, minlength=k)
        table = pd.DataFrame(data, index=pd.Index(groups.labels, dtype=object))
        if table.index.has_duplicates:
            table = table.groupby(level=0, sort=False, dropna=False).sum()
        return cls(rows.mode, table)

    def merge(self, other: ImpactSums) -> ImpactSums:
        """Sums of the union of two partitions (the mode of the first with data)."""
        table = pd.concat([self.table, other.table]).groupby(level=0, sort=False, dropna=False).sum()
        return ImpactSums(self.mode if self.mode != "none" else other.mode, table)

    def impact(self, failing_keys: Any) -> float | None:
        """`model_impact` of the rows whose group is in `failing_keys` against all other rows."""
        failing = self.table.index.isin(list(failing_keys))
        rows = self.table["rows"].to_numpy()
        n_fail, n_all = int(rows[failing].sum()), int(rows.sum())
        if n_fail == 0 or n_fail == n_all or self.mode == "none":
            return None
        count, total = self.table["count"].to_numpy(), self.table["total"].to_numpy()
        fail_n, pass_n = int(count[failing].sum()), int(count[~failing].sum())
        if self.mode == "loss":
            if fail_n == 0 or pass_n == 0:
                return None
            return float(total[failing].sum() / fail_n - total[~failing].sum() / pass_n)
        fail_mean = total[failing].sum() / fail_n if fail_n else np.nan
        pass_mean = total[~failing].sum() / pass_n if pass_n else np.nan
        return float(abs(fail_mean - pass_mean))

    def failing_rows(self, failing_keys: Any) -> int:
        """Rows in the groups `failing_keys`."""
        return int(self.table["rows"].to_numpy()[self.table.index.isin(list(failing_keys))].sum())
