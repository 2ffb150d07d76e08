"""Inconsistent value pairs of associated categorical features."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from itertools import combinations
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.abnormal import (
    FAILING_RATE_INCREASE,
    Flags,
    RateCheck,
    below,
    column_of,
    encode,
    rate_metric,
)
from driftline.checks.base import Metric
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError
from driftline.checks.registry import register
from driftline.checks.result import CheckResult, reaches

Positions = Callable[[str], tuple[np.ndarray, np.ndarray]]


def cramers_v(table: np.ndarray) -> float:
    """Bias-corrected Cramér's V (Bergsma 2013) of a contingency table; NaN when undefined.

    V = sqrt(max(0, φ² − (r−1)(c−1)/(n−1)) / min(r̃−1, c̃−1)) with φ² = χ²/n and
    r̃ = r − (r−1)²/(n−1), c̃ likewise; empty rows and columns are ignored.
    """
    table = np.asarray(table, dtype=float)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    n = table.sum()
    r, c = table.shape
    if n < 2 or min(r, c) < 2:
        return float("nan")
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    phi2 = ((table - expected) ** 2 / expected).sum() / n
    phi2 = max(0.0, phi2 - (r - 1) * (c - 1) / (n - 1))
    denominator = min(r - (r - 1) ** 2 / (n - 1), c - (c - 1) ** 2 / (n - 1)) - 1
    return float(np.sqrt(phi2 / denominator)) if denominator > 0 else float("nan")


def inconsistent_cells(table: np.ndarray, ratio: float) -> np.ndarray:
    """Cells whose joint frequency is below freq_a × freq_b × ratio (strictly)."""
    table = np.asarray(table, dtype=float)
    n = table.sum()
    expected = np.outer(table.sum(axis=1) / n, table.sum(axis=0) / n)
    return below(table / n, expected * ratio)


def compact(codes: np.ndarray, uniques: pd.Index) -> tuple[np.ndarray, pd.Index]:
    """Codes and values restricted to the values that occur (unused categories dropped)."""
    used = np.bincount(codes[codes >= 0], minlength=len(uniques)) > 0
    if used.all():
        return codes, uniques
    new_codes = np.where(used, np.cumsum(used) - 1, -1)
    return np.append(new_codes, -1)[codes], uniques[used]


@register
@dataclass(kw_only=True)
class Inconsistencies(RateCheck):
    """Inconsistencies: value pairs of associated features rarer than freq_a × freq_b × ratio.

    For each pair of categorical features whose bias-corrected Cramér's V in the reference reaches
    `min_association`, a batch row fails when its value pair has a reference joint frequency strictly
    below freq_a × freq_b × `ratio` (0.5 × 0.2 × 0.02 = 0.002). A pair never seen together has
    frequency 0; values unseen in the reference are not judged here. Targets are named "a|b". A
    clean batch shows the reference's share of rows in inconsistent cells.
    """

    name: ClassVar[str] = "abnormal.inconsistencies"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: rate_metric("the reference's share of rows in inconsistent cells")
    }

    min_association: float = 0.3
    ratio: float = 0.02
    max_categories: int = 100

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (0 <= self.min_association <= 1 and self.ratio > 0 and self.max_categories >= 2):
            raise CheckInputError(
                f"{self.name}: min_association must be in [0, 1], ratio > 0 and max_categories >= 2"
            )

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        encoded: dict[str, tuple[np.ndarray, pd.Index]] = {}
        issues: dict[str, tuple[str, str]] = {}
        for column in self.feature_columns(columns, "categorical"):
            if column not in reference.columns:
                issues[column] = ("error", f"column {column!r} is missing from the reference")
                continue
            codes, uniques = compact(*encode(reference[column]))
            if 2 <= len(uniques) <= self.max_categories:
                encoded[column] = (codes, uniques)
        targets = {}
        for a, b in combinations(encoded, 2):
            shape = (len(encoded[a][1]), len(encoded[b][1]))
            pair = self._fit_pair(encoded[a][0], encoded[b][0], shape)
            if pair is not None:
                targets[f"{a}|{b}"] = {"columns": (a, b), **pair}
        levels = {c: encoded[c][1] for pair in targets.values() for c in pair["columns"]}
        return {"targets": targets, "issues": issues, "levels": levels}

    def _fit_pair(self, a: np.ndarray, b: np.ndarray, shape: tuple[int, int]) -> dict[str, Any] | None:
        """The reference contingency table of two coded columns, kept when they are associated."""
        both = (a >= 0) & (b >= 0)
        cells = a[both].astype(np.int64) * shape[1] + b[both]
        table = np.bincount(cells, minlength=shape[0] * shape[1]).reshape(shape)
        association = cramers_v(table)
        if not (np.isfinite(association) and reaches(association, self.min_association)):
            return None
        inconsistent = inconsistent_cells(table, self.ratio)
        clean = (int(table[inconsistent].sum()), int(table.sum()))
        return {"inconsistent": inconsistent, "association": association, "clean": clean}

    def evaluate(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        @cache
        def positions(column: str) -> tuple[np.ndarray, np.ndarray]:
            codes, uniques = encode(column_of(current, column))
            lookup = np.append(profile["levels"][column].get_indexer(uniques), -1)
            return lookup[codes], codes >= 0

        return self._collect(
            current,
            profile,
            columns,
            lambda target, pair: self._pair_flags(positions, pair, profile["levels"]),
        )

    def _pair_flags(self, positions: Positions, pair: dict[str, Any], levels: dict[str, pd.Index]) -> Flags:
        a, b = pair["columns"]
        (pa, present_a), (pb, present_b) = positions(a), positions(b)
        judged = (pa >= 0) & (pb >= 0)
        matrix = pair["inconsistent"]
        failing = judged & matrix[np.maximum(pa, 0), np.maximum(pb, 0)]
        usable = present_a & present_b
        cells = np.bincount(pa[failing] * matrix.shape[1] + pb[failing], minlength=matrix.size)
        top = np.argsort(-cells, kind="stable")[:10]
        top_pairs = [
            [levels[a][i // matrix.shape[1]], levels[b][i % matrix.shape[1]], int(cells[i])]
            for i in top
            if cells[i] > 0
        ]
        details = {
            "association": pair["association"],
            "unjudged_rows": int(np.count_nonzero(usable & ~judged)),
            "top_failing_pairs": top_pairs,
        }
        return Flags(failing=failing, usable=usable, details=details)

    def _no_target_reason(self) -> str:
        return (
            f"no pair of categorical features (2 to {self.max_categories} categories each) has a "
            f"Cramér's V of at least {self.min_association} in the reference"
        )
