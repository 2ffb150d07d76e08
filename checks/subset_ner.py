"""Subset performance of named-entity recognition: span precision and recall per subset of a feature.

Each row is a document with true spans (label column) and predicted spans (prediction column). Spans
are matched one to one (each span counted once) under one SemEval criterion (`criterion`, default
`strict`; see `driftline.checks.rubrics.matching`), and a subset's precision is sum(correct + partial/2) /
sum(actual) over its documents, recall the same over sum(possible). The standard error is the
ratio estimator's: sqrt(sum((c_i - R a_i)^2)) / sum(a_i) over the subset's documents, with c_i the
credited matches and a_i the denominator of document i. Subsets, the change against the same subset
in the reference, the reported subset and the grading are those of the other subset checks
(`driftline.checks.subset`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.base import Metric
from driftline.checks.columns import Columns
from driftline.checks.registry import register
from driftline.checks.rubrics.enums import MatchingMode
from driftline.checks.rubrics.frames import parse_criteria, row_counts
from driftline.checks.rubrics.matching import CORRECT, INCORRECT, MISSING, PARTIAL, SPURIOUS
from driftline.checks.slicing import divide, group_sum
from driftline.checks.subset import Prepared, SubsetCheck, SubsetValues, subset_metrics


def ratio_values(num: np.ndarray, den: np.ndarray, codes: np.ndarray, n_groups: int) -> SubsetValues:
    """sum(num) / sum(den) per subset with the ratio estimator's standard error; size = documents."""
    total_num, total_den = group_sum(codes, n_groups, num), group_sum(codes, n_groups, den)
    ratio = divide(total_num, total_den)
    residual = num - np.nan_to_num(ratio)[codes] * den
    se = divide(np.sqrt(group_sum(codes, n_groups, residual**2)), total_den)
    return SubsetValues(ratio, se, group_sum(codes, n_groups))


@dataclass(kw_only=True)
class NerSubsetCheck(SubsetCheck):
    """Span precision or recall per subset, from per-document MUC-5 counts."""

    needs: ClassVar[frozenset[str]] = frozenset({"features", "label", "prediction"})
    declared_metrics: ClassVar[dict[str, Metric]] = subset_metrics("the ratio estimator's for each side")
    denominator: ClassVar[tuple[int, ...]]

    criterion: str = "strict"

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_criteria([self.criterion], self.name)

    def prepare(self, frame: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> Prepared:
        (criterion,) = parse_criteria([self.criterion], self.name)
        counts = row_counts(frame, columns, (criterion,), MatchingMode.one_to_one)
        c = counts.counts[criterion]
        credit = c[:, CORRECT] + 0.5 * c[:, PARTIAL]
        den = c[:, [CORRECT, INCORRECT, PARTIAL]].sum(axis=1) + c[:, list(self.denominator)].sum(axis=1)
        return Prepared(counts.mask, {"num": credit, "den": den.astype(float)})

    def compute(self, prepared: Prepared, codes: np.ndarray, n_groups: int) -> SubsetValues:
        return ratio_values(prepared.data["num"], prepared.data["den"], codes, n_groups)


@register
@dataclass(kw_only=True)
class SubsetNerPrecision(NerSubsetCheck):
    """Subset NER precision: (correct + partial/2) / predicted spans per subset."""

    name: ClassVar[str] = "subset.ner_precision"
    metric: ClassVar[str] = "ner_precision"
    denominator: ClassVar[tuple[int, ...]] = (SPURIOUS,)


@register
@dataclass(kw_only=True)
class SubsetNerRecall(NerSubsetCheck):
    """Subset NER recall: (correct + partial/2) / true spans per subset."""

    name: ClassVar[str] = "subset.ner_recall"
    metric: ClassVar[str] = "ner_recall"
    denominator: ClassVar[tuple[int, ...]] = (MISSING,)
