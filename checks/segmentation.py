"""Honest decision-tree slicing of per-example values, and slicing the difference between two models.

A shallow regression tree on analyst-chosen dimensions predicts a per-example value (a normalised AUC
attribution, or the difference of two models' attributions); its leaves are the reported slices.
Honest estimation: the tree is grown on one part of the rows and every slice's mean is estimated on
the other part, so a split chasing noise does not also inflate its own estimate. A two-sample t-test
per slice between the two parts marks the slices whose parts disagree as false discoveries; a minimum
leaf size keeps the test's normal approximation valid.

The split is drawn from the rows themselves, not from their positions: each row's key (the pandas
hash of its id, or of its dimension values when there is no id) is mixed with the seed by splitmix64,
plus the row's occurrence among the rows sharing that key, mixed again; rows are ranked by that hash
and the first `split_fraction` of them grow the tree. Everything is then computed on the rows in that
ranked order, so the same rows give the same slices and numbers in any order.

Categorical dimensions are encoded by ordering their categories by mean value on the growing part:
a threshold on that order is the best binary partition of the categories for a squared-error tree,
and it reads back as a set of categories (`relationship in {Husband, Wife}`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import special

if TYPE_CHECKING:
    from sklearn.tree import DecisionTreeRegressor

from driftline.checks._attribution_kernels import MISSING_LABEL, auc, example_attribution
from driftline.checks.errors import CheckInputError
from driftline.checks.slicing import run_bounds

ALL_DATA = "all data"
FLOAT32_MAX = float(np.finfo(np.float32).max)
_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


@dataclass(frozen=True, kw_only=True)
class TreeSettings:
    """How slices are grown and tested.

    split_fraction: share of rows used to grow the tree; the rest estimate the slice means.
    min_leaf_size: fewest growing rows in a slice (keeps each slice's t-test valid).
    max_depth: depth of the tree (two levels give at most four slices).
    alpha: significance level of the per-slice t-test (p < alpha: a false discovery).
    equal_var: Student's pooled-variance t-test instead of Welch's.
    seed: seed mixed into every row's hash to draw the split.
    """

    split_fraction: float = 0.5
    min_leaf_size: int = 30
    max_depth: int = 2
    alpha: float = 0.05
    equal_var: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 < self.split_fraction < 1.0:
            raise CheckInputError(
                f"split_fraction must lie strictly between 0 and 1, got {self.split_fraction}"
            )
        if not 0.0 < self.alpha < 1.0:
            raise CheckInputError(f"alpha must lie strictly between 0 and 1, got {self.alpha}")
        if self.min_leaf_size < 1 or self.max_depth < 1:
            raise CheckInputError(
                f"min_leaf_size and max_depth must be at least 1, got {self.min_leaf_size}, {self.max_depth}"
            )


def _format_number(value: float) -> str:
    return f"{value:.6g}"


@dataclass(frozen=True)
class _Dimension:
    """One slicing column as the tree sees it: numbers, or categories in their encoded order."""

    name: str
    categories: tuple[str, ...] | None = None  # None: numeric; else the label of each code
    has_missing: bool = False

    def values(self, column: pd.Series) -> np.ndarray:
        """Floats for a numeric dimension (NaN: missing), category labels otherwise."""
        if self.categories is None:
            return _numbers(column)
        labels, codes = _category_codes(column)
        return np.asarray(labels, dtype=object)[codes]


def _numbers(column: pd.Series) -> np.ndarray:
    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _category_codes(column: pd.Series) -> tuple[list[str], np.ndarray]:
    """Category labels and each row's code; missing values get a `<missing>` label of their own."""
    codes, uniques = pd.factorize(column)
    labels = [str(u) for u in uniques]
    if (codes < 0).any():
        codes = np.where(codes < 0, len(labels), codes)
        labels.append(MISSING_LABEL)
    return labels, codes


def _is_numeric(column: pd.Series) -> bool:
    """Numbers, or text that parses entirely as numbers (a numeric column read as text)."""
    if isinstance(column.dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(column):
        return False
    if pd.api.types.is_numeric_dtype(column):
        return True
    present = column.notna()
    return bool(present.any()) and bool(pd.to_numeric(column[present], errors="coerce").notna().all())


@dataclass
class _Condition:
    """What one dimension must satisfy along a path: an interval (numeric) or a category set."""

    dimension: _Dimension
    low: float = -math.inf
    high: float = math.inf
    missing: bool = True
    allowed: frozenset[str] | None = None

    def narrowed(self, threshold: float, left: bool, missing_left: bool) -> _Condition:
        """This condition with one more split applied (left: value <= threshold)."""
        if self.dimension.categories is not None:
            codes = range(len(self.dimension.categories))
            side = {self.dimension.categories[c] for c in codes if (c <= threshold) == left}
            current = self.allowed if self.allowed is not None else frozenset(self.dimension.categories)
            return _Condition(self.dimension, allowed=current & side)
        low, high = (self.low, min(self.high, threshold)) if left else (max(self.low, threshold), self.high)
        return _Condition(self.dimension, low, high, self.missing and missing_left == left)

    def _excluded(self) -> list[str]:
        return sorted(set(self.dimension.categories or ()) - set(self.allowed or ()))

    def _reads_as_exclusion(self) -> bool:
        return len(self._excluded()) < len(self.allowed or ())

    def text(self) -> str:
        """The condition as a reader writes it: `age <= 29.5`, `sex != Male`, `race in {A, B}`."""
        name = self.dimension.name
        if self.allowed is not None:
            if self._reads_as_exclusion():
                excluded = self._excluded()
                return (
                    f"{name} != {excluded[0]}"
                    if len(excluded) == 1
                    else f"{name} not in {{{', '.join(excluded)}}}"
                )
            allowed = sorted(self.allowed)
            return f"{name} == {allowed[0]}" if len(allowed) == 1 else f"{name} in {{{', '.join(allowed)}}}"
        if math.isfinite(self.low) and math.isfinite(self.high):
            text = f"{_format_number(self.low)} < {name} <= {_format_number(self.high)}"
        elif math.isfinite(self.high):
            text = f"{name} <= {_format_number(self.high)}"
        else:
            text = f"{name} > {_format_number(self.low)}"
        return f"{text} or missing" if self.missing and self.dimension.has_missing else text

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Rows of `frame` meeting the condition exactly as `text()` reads."""
        values = self.dimension.values(frame[self.dimension.name])
        if self.allowed is not None:
            if self._reads_as_exclusion():
                return ~np.isin(values, self._excluded())
            return np.isin(values, sorted(self.allowed))
        inside = (values > self.low) & (values <= self.high)
        return inside | np.isnan(values) if self.missing else inside


@dataclass
class Rule:
    """A conjunction of conditions on the slicing dimensions (the path from the root to a node)."""

    conditions: dict[str, _Condition] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return ", ".join(c.text() for c in self.conditions.values()) or ALL_DATA

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Rows of `frame` inside the rule (a column the frame lacks is an error naming it)."""
        missing = [name for name in self.conditions if name not in frame.columns]
        if missing:
            raise CheckInputError(f"cannot apply rule {self.text!r}: no column(s) {missing}")
        inside = np.ones(len(frame), dtype=bool)
        for condition in self.conditions.values():
            inside &= condition.mask(frame)
        return inside


@dataclass(frozen=True)
class Slice:
    """One leaf of the tree: its rule, size, honest mean and that mean's standard error (over the
    estimating rows), and whether the t-test trusts it."""

    rule: str
    node: int
    rows: int
    fit_rows: int
    estimate_rows: int
    mean: float
    std_error: float
    fit_mean: float
    delta: float
    t: float
    p_value: float
    false_discovery: bool


@dataclass
class Segmentation:
    """The slices of one honest tree, with everything needed to draw the tree.

    `leaves` holds the leaf node of every segmented row and `grow` whether the row grew the tree (the
    others estimate the slice means); `mask` places the rows of any other frame.
    """

    overall: float
    rows: int
    slices: list[Slice]
    nodes: list[dict[str, Any]]
    rules: dict[int, Rule]
    settings: TreeSettings
    leaves: np.ndarray
    grow: np.ndarray

    def reordered(self, order: np.ndarray) -> Segmentation:
        """The same segmentation with the per-row arrays moved from `order`'s positions back to theirs."""
        leaves, grow = np.empty_like(self.leaves), np.empty_like(self.grow)
        leaves[order], grow[order] = self.leaves, self.grow
        return replace(self, leaves=leaves, grow=grow)

    def mask(self, slice_: Slice, frame: pd.DataFrame) -> np.ndarray:
        """Rows of another frame (same dimension columns) meeting the slice's rule."""
        return self.rules[slice_.node].mask(frame)

    def to_frame(self) -> pd.DataFrame:
        """One row per slice."""
        return pd.DataFrame([asdict(s) for s in self.slices])

    def to_details(self) -> dict[str, Any]:
        """Plain values for a result's details: the settings, the overall mean and the tree's nodes."""
        return {
            "overall": self.overall,
            "rows": self.rows,
            "settings": asdict(self.settings),
            "nodes": self.nodes,
        }


def two_sample_ttest(
    n1: np.ndarray,
    mean1: np.ndarray,
    var1: np.ndarray,
    n2: np.ndarray,
    mean2: np.ndarray,
    var2: np.ndarray,
    equal_var: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided two-sample t-test from counts, means and (ddof=1) variances, element-wise.

    Welch's test by default, Student's with `equal_var`. Fewer than two rows on a side gives NaN.
    Two constant samples give p = 1 when their means agree and p = 0 when they differ.
    """
    n1, n2 = np.asarray(n1, dtype=float), np.asarray(n2, dtype=float)
    mean1, mean2 = np.asarray(mean1, dtype=float), np.asarray(mean2, dtype=float)
    var1, var2 = np.asarray(var1, dtype=float), np.asarray(var2, dtype=float)
    testable = (n1 >= 2) & (n2 >= 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        t, p = _ttest_from_moments(n1, mean1, var1, n2, mean2, var2, equal_var)
    t, p = np.array(t, dtype=float, ndmin=1), np.array(p, dtype=float, ndmin=1)
    constant = testable & (var1 == 0) & (var2 == 0)
    same = np.isclose(mean1, mean2, rtol=1e-12, atol=1e-15)
    t = np.where(constant, np.where(same, 0.0, np.copysign(np.inf, mean1 - mean2)), t)
    p = np.where(constant, np.where(same, 1.0, 0.0), p)
    return np.where(testable, t, np.nan), np.where(testable, p, np.nan)


def _ttest_from_moments(
    n1: np.ndarray,
    mean1: np.ndarray,
    var1: np.ndarray,
    n2: np.ndarray,
    mean2: np.ndarray,
    var2: np.ndarray,
    equal_var: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """`scipy.stats.ttest_ind_from_stats` on standard deviations sqrt(var), in its operations and
    their order (so to the bit), with scipy.special's t distribution: scipy.stats costs 0.5-1 CPU s
    to import."""
    v1, v2 = np.sqrt(var1) ** 2, np.sqrt(var2) ** 2
    if equal_var:
        v1, v2 = np.where(n1 == 1, 0.0, v1), np.where(n2 == 1, 0.0, v2)
        df = n1 + n2 - 2.0
        denom = np.sqrt(((n1 - 1) * v1 + (n2 - 1) * v2) / df * (1.0 / n1 + 1.0 / n2))
    else:
        vn1, vn2 = v1 / n1, v2 / n2
        df = (vn1 + vn2) ** 2 / (vn1**2 / (n1 - 1) + vn2**2 / (n2 - 1))
        df = np.where(np.isnan(df), 1.0, df)  # both variances zero: any df
        denom = np.sqrt(vn1 + vn2)
    t = np.divide(mean1 - mean2, denom)
    return t, 2 * special.stdtr(df, -np.abs(t))


def _encode(frame: pd.DataFrame, values: np.ndarray, grow: np.ndarray) -> tuple[np.ndarray, list[_Dimension]]:
    """The tree's feature matrix: numbers as they are, categories as ranks of their growing-part mean."""
    matrix = np.empty((len(frame), frame.shape[1]))
    dimensions = []
    for j, name in enumerate(frame.columns):
        column = frame[name]
        if _is_numeric(column):
            matrix[:, j] = _tree_numbers(_numbers(column))
            dimensions.append(_Dimension(str(name), has_missing=bool(np.isnan(matrix[:, j]).any())))
            continue
        labels, codes = _category_codes(column)
        count = np.bincount(codes[grow], minlength=len(labels))
        total = np.bincount(codes[grow], weights=values[grow], minlength=len(labels))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(count > 0, total / np.maximum(count, 1), np.inf)  # unseen while growing: last
        order = sorted(range(len(labels)), key=lambda i: (mean[i], labels[i]))
        rank = np.empty(len(labels))
        rank[order] = np.arange(len(labels))
        matrix[:, j] = rank[codes]
        dimensions.append(_Dimension(str(name), categories=tuple(labels[i] for i in order)))
    return matrix, dimensions


def _tree_numbers(numbers: np.ndarray) -> np.ndarray:
    """Numbers the tree accepts (it works in float32, without inf): ±inf just beyond the finite range."""
    finite = numbers[np.isfinite(numbers)]
    top = float(np.abs(finite).max()) if len(finite) else 0.0
    beyond = min(2.0 * top + 1.0, FLOAT32_MAX)
    return np.clip(np.where(np.isinf(numbers), np.sign(numbers) * beyond, numbers), -beyond, beyond)


def _node_moments(
    path: Any, values: np.ndarray, part: np.ndarray, center: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, mean and ddof=1 variance of `values` over one part of the rows, at every tree node."""
    weight = part.astype(float)
    shifted = (values - center) * weight
    count = path.T @ weight
    total = path.T @ shifted
    squares = path.T @ (shifted * (values - center))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
        var = (squares - count * mean**2) / (count - 1)
    return count, mean + center, np.maximum(var, 0.0)


def _rules(
    tree: DecisionTreeRegressor, dimensions: Sequence[_Dimension]
) -> tuple[dict[int, Rule], dict[int, str]]:
    """The rule of every node, and the condition each node adds to its parent's rule."""
    structure = tree.tree_
    rules, steps = {0: Rule()}, {0: ALL_DATA}
    stack = [0]
    while stack:
        node = stack.pop()
        left, right = structure.children_left[node], structure.children_right[node]
        if left < 0:
            continue
        dimension = dimensions[structure.feature[node]]
        threshold = float(structure.threshold[node])
        missing_left = bool(structure.missing_go_to_left[node])
        for child, is_left in ((left, True), (right, False)):
            conditions = dict(rules[node].conditions)
            fresh = _Condition(dimension)
            current = conditions.get(dimension.name, fresh)
            conditions[dimension.name] = current.narrowed(threshold, is_left, missing_left)
            rules[child] = Rule(conditions)
            steps[child] = fresh.narrowed(threshold, is_left, missing_left).text()
            stack.append(child)
    return rules, steps


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser of unsigned 64-bit integers: every input bit moves every output bit."""
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + _GOLDEN_GAMMA
        z = (z ^ (z >> np.uint64(30))) * _MIX_1
        z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


def hashed_order(dimensions: pd.DataFrame, values: np.ndarray, ids: Any = None, seed: int = 0) -> np.ndarray:
    """Row positions ranked by a seeded hash of each row: its id (else its dimension values) and its
    occurrence among the rows sharing that key.

    A row's rank depends on the row only, never on its position: any reordering of the rows gives the
    same rows in the same ranked order. Rows sharing a key are counted in the order of their
    dimension-value hash, then value hash, so only identical rows can swap, which changes nothing.
    """
    contents = pd.util.hash_pandas_object(dimensions, index=False).to_numpy()
    keys = contents if ids is None else pd.util.hash_pandas_object(pd.Series(np.asarray(ids)), index=False)
    keys = np.asarray(keys, dtype=np.uint64)
    if len(keys) != len(contents):
        raise CheckInputError(f"{len(keys)} row ids for {len(contents)} rows")
    ties = pd.util.hash_array(np.asarray(values))
    salt = splitmix64(np.array([seed % 2**64], dtype=np.uint64))
    mixed = splitmix64(splitmix64(keys ^ salt) + _occurrence(keys, contents, ties))
    return _ranked(mixed, contents, ties)


def _occurrence(keys: np.ndarray, contents: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """Each row's position among the rows sharing its key, counted in (contents, ties) hash order."""
    occurrence = np.zeros(len(keys), dtype=np.uint64)
    shared = np.flatnonzero(pd.Series(keys).duplicated(keep=False).to_numpy())
    if len(shared):
        by_key = shared[np.lexsort((ties[shared], contents[shared], keys[shared]))]
        starts, lengths = run_bounds(keys[by_key])
        occurrence[by_key] = np.arange(len(by_key)) - np.repeat(starts, lengths)
    return occurrence


def _ranked(mixed: np.ndarray, contents: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """Positions in ascending `mixed` order; equal hashes (a 64-bit collision) settled by the contents."""
    ranked = np.argsort(mixed)
    ordered = mixed[ranked]
    if np.any(ordered[1:] == ordered[:-1]):
        ranked = np.lexsort((ties, contents, mixed))
    return ranked


def segment(dimensions: pd.DataFrame, values: Any, ids: Any = None, **settings: Any) -> Segmentation:
    """Slice `values` (one per row of `dimensions`) with an honest regression tree.

    `settings` are the fields of `TreeSettings`; `ids` (one per row) key the split, the row contents
    when absent (see the module docstring). Every column of `dimensions` is a candidate split:
    numeric columns split on thresholds (NaN as missing, inf as the extreme it is), other columns on
    category sets (missing values form a `<missing>` category).
    """
    config = TreeSettings(**settings)
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) != len(dimensions):
        raise CheckInputError(f"{values.size} values for {len(dimensions)} rows of dimensions")
    if not np.isfinite(values).all():
        raise CheckInputError("values to segment contain NaN or inf")
    if dimensions.shape[1] == 0:
        raise CheckInputError("no dimension to slice on")
    n = len(values)
    if n < 2:
        raise CheckInputError(f"segmenting needs at least 2 rows (one to grow, one to estimate), got {n}")
    order = hashed_order(dimensions, values, ids, config.seed)
    seg = _segment_ranked(dimensions.iloc[order], values[order], config)
    return seg.reordered(order)


def _segment_ranked(dimensions: pd.DataFrame, values: np.ndarray, config: TreeSettings) -> Segmentation:
    """The honest tree on rows already in hashed order: the first `split_fraction` of them grow it."""
    n = len(values)
    n_grow = min(max(round(config.split_fraction * n), 1), n - 1)
    grow = np.arange(n) < n_grow
    matrix, encoded = _encode(dimensions, values, grow)
    # Imported here: a run builds its plan (importing every check module) before its workers fork,
    # and only the worker that grows a tree needs scikit-learn's trees.
    from sklearn.tree import DecisionTreeRegressor

    tree = DecisionTreeRegressor(
        max_depth=config.max_depth, min_samples_leaf=config.min_leaf_size, random_state=config.seed
    )
    tree.fit(matrix[grow], values[grow])
    path = tree.decision_path(matrix)
    overall = float(values.mean())
    fit_n, fit_mean, fit_var = _node_moments(path, values, grow, overall)
    est_n, est_mean, est_var = _node_moments(path, values, ~grow, overall)
    t, p = two_sample_ttest(fit_n, fit_mean, fit_var, est_n, est_mean, est_var, config.equal_var)
    flagged = ~(p >= config.alpha)  # an untestable slice is not confirmed either
    rules, steps = _rules(tree, encoded)
    structure = tree.tree_
    nodes = [
        {
            "node": node,
            "rule": rules[node].text,
            "condition": steps[node],
            "children": [int(structure.children_left[node]), int(structure.children_right[node])],
            "rows": int(fit_n[node] + est_n[node]),
            "mean": float(est_mean[node]),
            "fit_mean": float(fit_mean[node]),
            "p_value": float(p[node]),
            "false_discovery": bool(flagged[node]),
        }
        for node in range(structure.node_count)
    ]
    slices = [
        Slice(
            rule=rules[node].text,
            node=node,
            rows=int(fit_n[node] + est_n[node]),
            fit_rows=int(fit_n[node]),
            estimate_rows=int(est_n[node]),
            mean=float(est_mean[node]),
            std_error=float(np.sqrt(est_var[node] / est_n[node])) if est_n[node] >= 2 else math.inf,
            fit_mean=float(fit_mean[node]),
            delta=float(est_mean[node] - overall),
            t=float(t[node]),
            p_value=float(p[node]),
            false_discovery=bool(flagged[node]),
        )
        for node in _leaves_left_to_right(structure)
    ]
    return Segmentation(overall, n, slices, nodes, rules, config, tree.apply(matrix), grow)


def _leaves_left_to_right(structure: Any) -> list[int]:
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        if structure.children_left[node] < 0:
            order.append(node)
        else:
            stack.extend((structure.children_right[node], structure.children_left[node]))
    return order


@dataclass
class Comparison:
    """Slices of the difference candidate minus baseline in normalised attribution."""

    baseline_auc: float
    candidate_auc: float
    segmentation: Segmentation

    @property
    def auc_gain(self) -> float:
        return self.candidate_auc - self.baseline_auc


def compare_models(
    y_true: Any,
    baseline_score: Any,
    candidate_score: Any,
    dimensions: pd.DataFrame,
    ids: Any = None,
    **settings: Any,
) -> Comparison:
    """Where a candidate model wins and loses against a baseline, on the same labelled examples.

    Each example's value is its normalised attribution under the candidate minus under the baseline;
    the overall mean of these differences is half the AUC gain. Positive slices: the candidate wins.
    """
    difference = example_attribution(y_true, candidate_score) - example_attribution(y_true, baseline_score)
    return Comparison(
        baseline_auc=auc(y_true, baseline_score),
        candidate_auc=auc(y_true, candidate_score),
        segmentation=segment(dimensions, difference, ids, **settings),
    )
