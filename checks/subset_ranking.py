"""Subset performance of ranking models: rank correlation, NDCG and MRR per subset, each graded on its
change from the same subset in the reference (`driftline.checks.subset`).

A ranked list is the documents of one query id (`columns.query_id`) ordered by the score (else the
prediction), with the label as graded relevance (higher is more relevant). Inside a subset, each
query's list keeps only the subset's documents. Every metric is computed per list and then averaged
over lists; lists of one document, and lists where the metric is undefined, are left out. The
subset's standard error is the spread of its per-list values over the square root of their count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.base import Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError
from driftline.checks.registry import register
from driftline.checks.slicing import (
    divide,
    group_sum,
    grouped_moments,
    mean_se,
    sort_within_groups,
    tie_runs,
    within_group_ranks,
)
from driftline.checks.subset import (
    Prepared,
    SubsetCheck,
    SubsetValues,
    numeric_values,
    require_rows,
    score_column,
    subset_metrics,
)


def _positions(sorted_lists: np.ndarray, n_lists: int) -> np.ndarray:
    """0-based position of each element inside its list, for arrays sorted by list id."""
    start = np.concatenate(([0], np.cumsum(np.bincount(sorted_lists, minlength=n_lists))[:-1]))
    return np.arange(len(sorted_lists)) - start[sorted_lists]


def list_spearman(score: np.ndarray, relevance: np.ndarray, lists: np.ndarray, n_lists: int) -> np.ndarray:
    """Spearman correlation of score and relevance inside each list (average ranks for ties)."""
    rank_s = within_group_ranks(score, lists, n_lists)
    rank_r = within_group_ranks(relevance, lists, n_lists)
    size = group_sum(lists, n_lists)
    middle = ((size + 1) / 2)[lists]  # the mean of average ranks is exactly (n + 1) / 2
    ds, dr = rank_s - middle, rank_r - middle
    cov = group_sum(lists, n_lists, ds * dr)
    spread = np.sqrt(group_sum(lists, n_lists, ds * ds) * group_sum(lists, n_lists, dr * dr))
    return np.where(spread > 1e-12, divide(cov, spread), np.nan)


def list_ndcg(score: np.ndarray, relevance: np.ndarray, lists: np.ndarray, n_lists: int) -> np.ndarray:
    """NDCG of each list: linear gain (the relevance), 1/log2(position + 1) discount, whole list.

    Documents with tied scores share the mean gain of their tie (as scikit-learn's `ndcg_score`); a
    list whose relevance is all zero has no ideal ordering and is NaN.
    """
    by_score = sort_within_groups(-score, lists, n_lists)
    sorted_lists = lists[by_score]
    discount = 1.0 / np.log2(_positions(sorted_lists, n_lists) + 2.0)
    runs = tie_runs(sorted_lists, score[by_score])
    tie_gain = np.bincount(runs, weights=relevance[by_score]) / np.bincount(runs)
    dcg = group_sum(sorted_lists, n_lists, tie_gain[runs] * discount)
    by_relevance = sort_within_groups(-relevance, lists, n_lists)
    ideal = group_sum(lists[by_relevance], n_lists, relevance[by_relevance] * discount)
    return divide(dcg, ideal)


def list_reciprocal_rank(
    score: np.ndarray, relevance: np.ndarray, lists: np.ndarray, n_lists: int
) -> np.ndarray:
    """1 / rank of the best-scored most relevant document of each list.

    The relevant documents are those with the list's highest relevance; ties in score are broken
    against the model (a non-relevant document scored equal to a relevant one ranks ahead of it).
    A list whose documents are all equally relevant is NaN.
    """
    top = np.full(n_lists, -np.inf)
    np.maximum.at(top, lists, relevance)
    relevant = relevance == top[lists]
    best = np.full(n_lists, -np.inf)
    np.maximum.at(best, lists[relevant], score[relevant])
    ahead = ~relevant & (score >= best[lists])
    rank = 1.0 + group_sum(lists[ahead], n_lists)
    has_other = group_sum(lists[~relevant], n_lists) > 0
    return np.where(has_other, 1.0 / rank, np.nan)


@dataclass(kw_only=True)
class RankingSubsetCheck(SubsetCheck):
    """A ranking metric per query list, averaged over the lists of each subset."""

    needs: ClassVar[frozenset[str]] = frozenset({"features", "label", "query_id"})
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics(
        "the spread of each subset's per-query values over the square root of their count"
    )
    nonnegative_relevance: ClassVar[bool] = False
    per_list: ClassVar[staticmethod[[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]]

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        name = score_column(columns)
        score = numeric_values(frame, name, "score")
        relevance = numeric_values(frame, columns.required("label"), "relevance label")
        queries, _ = pd.factorize(frame[columns.query_id], use_na_sentinel=True)
        mask = (queries >= 0) & np.isfinite(score) & np.isfinite(relevance)
        require_rows(mask, f"a query id, a finite {name!r} and a finite relevance in {columns.label!r}")
        if self.nonnegative_relevance and (relevance[mask] < 0).any():
            raise CheckInputError(
                f"{self.metric} needs relevance >= 0; label column {columns.label!r} has negatives"
            )
        return Prepared(mask, {"score": score[mask], "relevance": relevance[mask], "query": queries[mask]})

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        d = prepared.data
        n_queries = int(d["query"].max()) + 1
        lists, keys = pd.factorize(codes.astype(np.int64) * n_queries + d["query"])
        n_lists = len(keys)
        values = self.per_list(d["score"], d["relevance"], lists, n_lists)
        values[group_sum(lists, n_lists) < 2] = np.nan
        defined = np.isfinite(values)
        list_subset = (np.asarray(keys) // n_queries)[defined]
        count, mean, var, _ = grouped_moments(values[defined], list_subset, n_groups)
        return SubsetValues(mean, mean_se(var, count), group_sum(codes, n_groups))


@register
@dataclass(kw_only=True)
class SubsetRankCorrelation(RankingSubsetCheck):
    """Subset rank correlation: Spearman rho of score vs relevance per query, averaged over queries."""

    name: ClassVar[str] = "subset.rank_correlation"
    metric: ClassVar[str] = "rank_correlation"
    per_list = staticmethod(list_spearman)


@register
@dataclass(kw_only=True)
class SubsetNDCG(RankingSubsetCheck):
    """Subset NDCG: per-query NDCG (linear gain, log2 discount, full list) averaged over queries."""

    name: ClassVar[str] = "subset.ndcg"
    metric: ClassVar[str] = "ndcg"
    nonnegative_relevance: ClassVar[bool] = True
    per_list = staticmethod(list_ndcg)


@register
@dataclass(kw_only=True)
class SubsetMRR(RankingSubsetCheck):
    """Subset MRR: mean over queries of 1 / rank of the first most-relevant document by score."""

    name: ClassVar[str] = "subset.mrr"
    metric: ClassVar[str] = "mrr"
    per_list = staticmethod(list_reciprocal_rank)
