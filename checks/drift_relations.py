"""Drift of the relations between columns: Pearson correlation and mutual information, per pair.

A pair drifts when the absolute change of its dependence score between the reference and the batch
is known to reach the difference threshold (0.2 by default, compared with the rounding tolerance of
`driftline.checks.result.reaches`, so 0.7 - 0.5 counts as 0.2): the grade is taken on the change's
lower confidence bound (`checks.evidence`). A correlation's change has the delta-method standard
error of Fisher's z; a mutual information's change its no-change noise, simulated by redrawing both
joint tables at their sizes from the pooled one. The Fisher z-test p-value of a correlation change is
reported alongside. Rows where either column of a pair is NaN or inf are left out of that pair and
counted in `details["dropped_rows"]`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import special

from driftline.checks.base import Check, Metric
from driftline.checks.binning import LARGE_TABLE_DRAWS, quantile_edges, value_counts
from driftline.checks.columns import Columns, infer_task
from driftline.checks.errors import CheckInputError
from driftline.checks.evidence import Evidence, divergence_evidence, normal
from driftline.checks.registry import register
from driftline.checks.result import CheckResult

CORRELATION_METRIC = Metric(
    (0.2,),
    change="absolute change of the pair's Pearson correlation, |r_batch − r_reference|",
    uncertainty=(
        "normal, with the delta-method standard error of Fisher's z on each side, "
        "sqrt((1 − r_reference²)² / (n_reference − 3) + (1 − r_batch²)² / (n_batch − 3))"
    ),
)
MUTUAL_INFO_METRIC = Metric(
    (0.2,),
    change="absolute change of the pair's mutual information (nats), |MI_batch − MI_reference|",
    uncertainty=(
        "simulated: both joint tables redrawn at their sizes from the pooled table, the change's "
        "no-change distribution matched to a scaled chi-square; the bound subtracts that noise"
    ),
)
CHUNK_ROWS = 100_000
RANKING_ROWS = 100_000
PAIR_SEPARATOR = " ~ "


def correlation_change(r_reference: float, n_reference: int, r_current: float, n_current: int) -> Evidence:
    """Evidence of |r_batch − r_reference|: each correlation's delta-method standard error of Fisher's z,
    (1 − r²) / sqrt(n − 3), combined as independent samples."""
    se = np.hypot(
        (1.0 - r_reference**2) / np.sqrt(n_reference - 3), (1.0 - r_current**2) / np.sqrt(n_current - 3)
    )
    return normal(abs(r_current - r_reference), float(se))


def fisher_z_pvalue(r_reference: float, n_reference: int, r_current: float, n_current: int) -> float:
    """Two-sided p-value of the difference of two independent Pearson correlations (Fisher z-test)."""
    bound = 1.0 - 1e-12
    z = np.arctanh(np.clip([r_reference, r_current], -bound, bound))
    se = np.sqrt(1.0 / (n_reference - 3) + 1.0 / (n_current - 3))
    return float(2.0 * special.ndtr(-(abs(z[1] - z[0]) / se)))  # scipy.stats.norm.sf, without its import


def pair_name(a: str, b: str) -> str:
    return f"{a}{PAIR_SEPARATOR}{b}"


# --- correlation --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorrelationProfile:
    """Reference correlations of the tracked pairs, their complete-row counts and the centring shift."""

    names: tuple[str, ...]
    shift: np.ndarray
    pairs: tuple[tuple[int, int], ...]
    correlation: np.ndarray
    count: np.ndarray
    problems: dict[str, str]


def _numeric_matrix(frame: pd.DataFrame, names: tuple[str, ...]) -> tuple[np.ndarray, dict[str, str]]:
    """Columns as a float matrix with NaN for missing/inf values; unusable columns are all NaN and
    explained in the returned problems."""
    matrix = np.full((len(frame), len(names)), np.nan, order="F")  # column-major: columns are contiguous
    problems: dict[str, str] = {}
    for j, name in enumerate(names):
        if name not in frame.columns:
            problems[name] = f"column {name!r} is not in the data"
        elif not pd.api.types.is_numeric_dtype(frame[name].dtype):
            problems[name] = f"column {name!r} is not numeric (dtype {frame[name].dtype})"
        else:
            matrix[:, j] = frame[name].to_numpy(dtype=float, na_value=np.nan)
    matrix[~np.isfinite(matrix)] = np.nan
    return matrix, problems


def _finite_mean(column: np.ndarray) -> float:
    finite = column[~np.isnan(column)]
    return float(finite.mean()) if len(finite) else 0.0


def pairwise_correlation(matrix: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson correlation of every column pair over the rows where both are finite, and those counts.

    Sums of the shifted values, their squares and cross products are accumulated by matrix products
    over row chunks, so memory stays bounded and no pair is looped over.
    """
    k = matrix.shape[1]
    count, total, squares, cross = (np.zeros((k, k)) for _ in range(4))
    for start in range(0, len(matrix), CHUNK_ROWS):
        block = matrix[start : start + CHUNK_ROWS] - shift
        valid = ~np.isnan(block)
        ones = valid.astype(float)
        z = np.where(valid, block, 0.0)
        count += ones.T @ ones
        total += z.T @ ones
        squares += (z * z).T @ ones
        cross += z.T @ z
    with np.errstate(invalid="ignore", divide="ignore"):
        var = squares - total**2 / count
        corr = (cross - total * total.T / count) / np.sqrt(var * var.T)
    flat = ~(var > 1e-12 * squares)  # column i (nearly) constant on the rows it shares with column j
    corr[flat | flat.T] = np.nan
    return np.clip(corr, -1.0, 1.0), count


@register
@dataclass(kw_only=True)
class CorrelationDrift(Check):
    """Correlation drift: Pearson correlation per pair of numeric features (and feature ~ label when the
    label is numeric), reference against batch; drifts when |r_batch - r_ref| is known to reach the
    threshold (its lower confidence bound does); the Fisher z-test p-value is reported.

    With more candidate pairs than `max_pairs`, the pairs with the strongest reference correlation are
    tracked (chosen once, at fit).
    """

    name: ClassVar[str] = "drift.correlation"
    subject: ClassVar[str | None] = "correlation"
    family: ClassVar[str] = "drift"
    role: ClassVar[str] = "feature_drift"
    per_feature: ClassVar[bool] = True
    needs: ClassVar[frozenset[str]] = frozenset({"numeric"})
    declared_metrics: ClassVar[Mapping[str, Metric]] = {"abs_diff": CORRELATION_METRIC}

    include_label: bool = True
    max_pairs: int | None = 1000

    def _names(self, reference: pd.DataFrame, columns: Columns) -> tuple[str, ...]:
        """Numeric features, plus the label when it is numeric in the reference."""
        names = self.feature_columns(columns, "numeric")
        label = columns.label
        usable = label in reference.columns and pd.api.types.is_numeric_dtype(reference[label].dtype)
        return (*names, label) if self.include_label and label and label not in names and usable else names

    def fit(self, reference: pd.DataFrame, columns: Columns) -> CorrelationProfile:
        names = self._names(reference, columns)
        if len(names) < 2:
            raise CheckInputError(f"{self.name}: needs at least two numeric columns, got {list(names)}")
        matrix, problems = _numeric_matrix(reference, names)
        shift = np.array([_finite_mean(matrix[:, j]) for j in range(len(names))])
        corr, count = pairwise_correlation(matrix, shift)
        pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
        if self.max_pairs is not None and len(pairs) > self.max_pairs:
            strength = np.nan_to_num(np.abs([corr[i, j] for i, j in pairs]), nan=-1.0)
            pairs = [pairs[p] for p in sorted(np.argsort(-strength, kind="stable")[: self.max_pairs])]
        return CorrelationProfile(
            names=names,
            shift=shift,
            pairs=tuple(pairs),
            correlation=np.array([corr[i, j] for i, j in pairs]),
            count=np.array([count[i, j] for i, j in pairs], dtype=np.int64),
            problems={k: f"reference: {v}" for k, v in problems.items()},
        )

    def evaluate(
        self, current: pd.DataFrame, profile: CorrelationProfile, columns: Columns
    ) -> list[CheckResult]:
        matrix, problems = _numeric_matrix(current, profile.names)
        problems = {**problems, **profile.problems}
        corr, count = pairwise_correlation(matrix, profile.shift)
        rows = len(current)
        results = []
        for (i, j), r_ref, n_ref in zip(profile.pairs, profile.correlation, profile.count, strict=True):
            a, b = profile.names[i], profile.names[j]
            target = pair_name(a, b)
            reason = (
                problems.get(a)
                or problems.get(b)
                or _pair_problem(a, b, r_ref, n_ref, corr[i, j], count[i, j])
            )
            if reason:
                results.append(CheckResult.skipped(self.name, target, reason, rows=rows))
                continue
            results.append(
                self._pair(target, float(r_ref), int(n_ref), float(corr[i, j]), int(count[i, j]), rows)
            )
        return results

    def _pair(
        self, target: str, r_ref: float, n_ref: int, r_cur: float, n_cur: int, rows: int
    ) -> CheckResult:
        change = correlation_change(r_ref, n_ref, r_cur, n_cur)
        metrics = {
            "reference": r_ref,
            "current": r_cur,
            "abs_diff": change.estimate,
            "p_value": fisher_z_pvalue(r_ref, n_ref, r_cur, n_cur),
        }
        details = {"reference_rows": n_ref, "pair_rows": n_cur, "dropped_rows": rows - n_cur}
        return self.result(target, metrics, rows=rows, details=details, evidence={"abs_diff": change})


def _pair_problem(a: str, b: str, r_ref: float, n_ref: int, r_cur: float, n_cur: float) -> str | None:
    """Why a pair's correlation change cannot be tested (constant column, too few complete rows)."""
    if min(n_ref, n_cur) < 4:
        return f"columns {a!r} and {b!r}: under 4 complete rows (reference {int(n_ref)}, batch {int(n_cur)})"
    if np.isnan(r_ref) or np.isnan(r_cur):
        side = "reference" if np.isnan(r_ref) else "batch"
        return f"column {a!r} or {b!r} is constant in the {side}: the correlation is undefined"
    return None


# --- mutual information -------------------------------------------------------------------------------


@dataclass(frozen=True)
class NumericCoder:
    """Codes a numeric column by its reference-quantile bin (-1 for NaN/inf)."""

    edges: np.ndarray

    @property
    def size(self) -> int:
        return len(self.edges) + 1

    def codes(self, series: pd.Series, name: str) -> np.ndarray:
        if not pd.api.types.is_numeric_dtype(series.dtype):
            raise CheckInputError(f"column {name!r} is not numeric (dtype {series.dtype})")
        values = series.to_numpy(dtype=float, na_value=np.nan)
        codes = np.searchsorted(self.edges, values, side="left").astype(np.int32)
        codes[~np.isfinite(values)] = -1
        return codes


@dataclass(frozen=True)
class CategoryCoder:
    """Codes a column by its most frequent reference categories; all others (and unseen ones) share the
    last code, missing values get -1."""

    categories: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.categories) + 1

    def codes(self, series: pd.Series, name: str) -> np.ndarray:
        codes, uniques = pd.factorize(series, use_na_sentinel=True)
        lookup = pd.Index(self.categories).get_indexer(pd.Index(uniques).astype(str))
        lookup = np.r_[np.where(lookup < 0, len(self.categories), lookup), -1].astype(np.int32)
        return lookup[codes]  # the sentinel -1 of a missing value picks the trailing -1


def joint_counts(x: np.ndarray, kx: int, y: np.ndarray, ky: int) -> np.ndarray:
    """The kx x ky table of counts of two code arrays over the rows where both are >= 0."""
    keep = (x >= 0) & (y >= 0)
    return np.bincount(x[keep] * ky + y[keep], minlength=kx * ky).reshape(kx, ky)


def table_information(tables: np.ndarray) -> np.ndarray:
    """Mutual information (nats) of each joint count table (the last two axes), NaN for an empty one."""
    with np.errstate(divide="ignore", invalid="ignore"):
        joint = tables / tables.sum(axis=(-2, -1), keepdims=True)
        independent = joint.sum(axis=-1, keepdims=True) * joint.sum(axis=-2, keepdims=True)
        terms = np.where(joint > 0, joint * np.log(joint / independent), 0.0)
    return np.where(np.isnan(joint).any(axis=(-2, -1)), np.nan, terms.sum(axis=(-2, -1)))


def information_change(reference: np.ndarray, current: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """|MI(current) − MI(reference)| of each pair of rows of flattened (rows x cells) joint tables."""
    return np.abs(
        table_information(current.reshape(-1, *shape)) - table_information(reference.reshape(-1, *shape))
    )


def mutual_info_change(reference: np.ndarray, current: np.ndarray) -> Evidence:
    """Evidence of a pair's MI change from its two joint tables: the change's no-change noise simulated
    by `checks.evidence.divergence_evidence` (seeded: equal tables give equal evidence; up to
    (max_categories + 1)² cells, hence `LARGE_TABLE_DRAWS`)."""
    observed = float(information_change(reference.ravel(), current.ravel(), reference.shape)[0])
    statistic = partial(information_change, shape=reference.shape)
    return divergence_evidence(statistic, reference.ravel(), current.ravel(), observed, LARGE_TABLE_DRAWS)


@dataclass(frozen=True)
class MutualInfoProfile:
    """Coders of the columns involved, the tracked pairs and their reference joint count tables."""

    coders: dict[str, NumericCoder | CategoryCoder]
    problems: dict[str, str]
    pairs: tuple[tuple[str, str], ...]
    reference: dict[tuple[str, str], np.ndarray]


@dataclass(kw_only=True)
class _MutualInfoDrift(Check):
    """Mutual information of column pairs, discretised: numeric columns on `bins` reference-quantile
    bins, categorical ones on their `max_categories` most frequent reference values plus an "other" bin."""

    family: ClassVar[str] = "drift"
    role: ClassVar[str] = "feature_drift"
    declared_metrics: ClassVar[Mapping[str, Metric]] = {"abs_diff": MUTUAL_INFO_METRIC}
    per_feature: ClassVar[bool] = True

    bins: int = 10
    max_categories: int = 20
    max_pairs: int | None = None

    def candidate_pairs(self, columns: Columns) -> list[tuple[str, str]]:
        raise NotImplementedError

    def discrete(self, series: pd.Series, name: str, columns: Columns) -> bool:
        """Whether a column is coded by category rather than by quantile bin."""
        return name in columns.categorical or not pd.api.types.is_numeric_dtype(series.dtype)

    def fit(self, reference: pd.DataFrame, columns: Columns) -> MutualInfoProfile:
        pairs = self.candidate_pairs(columns)
        if not pairs:
            raise CheckInputError(f"{self.name}: no pair of columns to compare")
        names = list(dict.fromkeys(n for pair in pairs for n in pair))
        coders, problems = {}, {}
        for name in names:
            try:
                coders[name] = self._coder(reference, name, columns)
            except CheckInputError as exc:
                problems[name] = f"reference: {exc}"
        codes = {n: c.codes(reference[n], n) for n, c in coders.items()}
        usable = [p for p in pairs if p[0] in codes and p[1] in codes]
        kept = set(self._strongest(usable, codes, coders))
        pairs = [p for p in pairs if p in kept or p not in usable]
        tables = {p: self._table(p, codes, coders) for p in pairs if p in kept}
        return MutualInfoProfile(coders=coders, problems=problems, pairs=tuple(pairs), reference=tables)

    def _coder(self, reference: pd.DataFrame, name: str, columns: Columns) -> NumericCoder | CategoryCoder:
        if name not in reference.columns:
            raise CheckInputError(f"column {name!r} is not in the data")
        series = reference[name]
        if self.discrete(series, name, columns):
            counts, _ = value_counts(series)
            if counts.empty:
                raise CheckInputError(f"column {name!r} has no non-missing value")
            top = counts.sort_values(ascending=False, kind="stable").index[: self.max_categories]
            return CategoryCoder(categories=tuple(top))
        values = series.to_numpy(dtype=float, na_value=np.nan)
        values = np.sort(values[np.isfinite(values)])
        if len(values) == 0:
            raise CheckInputError(f"column {name!r} has no finite value")
        return NumericCoder(edges=quantile_edges(values, self.bins))

    @staticmethod
    def _table(pair: tuple[str, str], codes: dict[str, np.ndarray], coders: dict[str, Any]) -> np.ndarray:
        a, b = pair
        return joint_counts(codes[a], coders[a].size, codes[b], coders[b].size)

    def _strongest(
        self, pairs: list[tuple[str, str]], codes: dict[str, np.ndarray], coders: dict[str, Any]
    ) -> list[tuple[str, str]]:
        """At most `max_pairs` pairs, those with the highest mutual information on an evenly spaced sample
        of at most RANKING_ROWS reference rows."""
        if self.max_pairs is None or len(pairs) <= self.max_pairs:
            return pairs
        n = len(next(iter(codes.values())))
        step = max(1, n // RANKING_ROWS)
        sample = {k: v[::step] for k, v in codes.items()}
        strength = np.nan_to_num([table_information(self._table(p, sample, coders)) for p in pairs], nan=-1.0)
        return [pairs[i] for i in np.argsort(-strength, kind="stable")[: self.max_pairs]]

    def evaluate(
        self, current: pd.DataFrame, profile: MutualInfoProfile, columns: Columns
    ) -> list[CheckResult]:
        problems = dict(profile.problems)
        codes = {}
        for name, coder in profile.coders.items():
            if name not in current.columns:
                problems[name] = f"column {name!r} is not in the data"
                continue
            try:
                codes[name] = coder.codes(current[name], name)
            except CheckInputError as exc:
                problems[name] = str(exc)
        return [self._pair(current, pair, profile, codes, problems) for pair in profile.pairs]

    def _pair(
        self,
        current: pd.DataFrame,
        pair: tuple[str, str],
        profile: MutualInfoProfile,
        codes: dict[str, np.ndarray],
        problems: dict[str, str],
    ) -> CheckResult:
        target, rows = pair_name(*pair), len(current)
        reason = problems.get(pair[0]) or problems.get(pair[1])
        if reason:
            return CheckResult.error(self.name, target, reason, rows=rows)
        table, reference = self._table(pair, codes, profile.coders), profile.reference[pair]
        n = int(table.sum())
        if n == 0:
            return CheckResult.skipped(self.name, target, "no row where both columns are present", rows=rows)
        if reference.sum() == 0:
            return CheckResult.skipped(
                self.name, target, "no reference row where both columns are present", rows=rows
            )
        change = mutual_info_change(reference, table)
        metrics = {
            "reference": float(table_information(reference)),
            "current": float(table_information(table)),
            "abs_diff": change.estimate,
        }
        details = {"pair_rows": n, "dropped_rows": rows - n, "bins": [profile.coders[c].size for c in pair]}
        return self.result(target, metrics, rows=rows, details=details, evidence={"abs_diff": change})


@register
@dataclass(kw_only=True)
class MutualInfoFeatureDrift(_MutualInfoDrift):
    """Feature-to-feature mutual information drift: MI (nats) of each pair of features on discretised
    values, reference against batch; drifts when |MI_batch - MI_ref| reaches the threshold.

    All feature pairs by default up to `max_pairs` (100); beyond it the pairs with the highest
    reference MI (ranked on a sample of the reference) are tracked.
    """

    name: ClassVar[str] = "drift.mutual_info_features"
    subject: ClassVar[str | None] = "mutual information"
    needs: ClassVar[frozenset[str]] = frozenset({"features"})

    max_pairs: int | None = 100

    def candidate_pairs(self, columns: Columns) -> list[tuple[str, str]]:
        names = self.feature_columns(columns, "features")
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


@register
@dataclass(kw_only=True)
class MutualInfoLabelDrift(_MutualInfoDrift):
    """Feature-to-label mutual information drift: MI (nats) between each feature and the label
    (classes, or quantile bins for regression), reference against batch; drifts when the change
    reaches the threshold. Every feature by default (`max_pairs` caps them by reference MI)."""

    name: ClassVar[str] = "drift.mutual_info_label"
    subject: ClassVar[str | None] = "mutual information"
    needs: ClassVar[frozenset[str]] = frozenset({"features", "label"})

    def candidate_pairs(self, columns: Columns) -> list[tuple[str, str]]:
        label = columns.required("label")
        return [(f, label) for f in self.feature_columns(columns, "features") if f != label]

    def discrete(self, series: pd.Series, name: str, columns: Columns) -> bool:
        if name != columns.label or not pd.api.types.is_numeric_dtype(series.dtype):
            return super().discrete(series, name, columns)
        return (columns.task or infer_task(series)) != "regression"
