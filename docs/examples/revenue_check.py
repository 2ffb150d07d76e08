"""Revenue at risk: the share of a batch's revenue in the rows the model scores above a cut-off (churn,
fraud, default), graded on its change from the reference's share. A custom check: docs/custom_checks.md."""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import astuple, dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from driftline.checks import CheckInputError, CheckResult, Columns, Mergeable, Metric, NotApplicable
from driftline.checks.evidence import normal


@dataclass(frozen=True)
class RevenueSums:
    """The sums behind one frame's share of revenue at risk and its standard error. Sums of two
    partitions add up to the sums of both, which makes the check mergeable."""

    rows: int  # every row
    used: int  # rows with a revenue (finite, not negative) and a finite score
    flagged: int  # used rows scored above the cut-off
    revenue: float  # sum of r over used rows
    at_risk: float  # sum of r over flagged rows
    squares: float  # sum of r² over used rows
    squares_at_risk: float  # sum of r² over flagged rows

    def __add__(self, other: RevenueSums) -> RevenueSums:
        return RevenueSums(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def share(self) -> float:
        """Share of revenue at risk: sum of r over flagged rows / sum of r."""
        return self.at_risk / self.revenue

    def standard_error(self) -> float:
        """Delta-method standard error of a ratio of sums, sqrt(sum of r² (h - share)²) / sum of r
        with h = 1 on flagged rows, expanded into the sums kept (h² = h)."""
        p = self.share()
        variance = (1 - 2 * p) * self.squares_at_risk + p * p * self.squares
        return math.sqrt(max(variance, 0.0)) / self.revenue


def numeric(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column as floats; a missing or non-numeric column is a `CheckInputError` naming it."""
    if name not in frame.columns:
        raise CheckInputError(f"no column {name!r}")
    if not pd.api.types.is_numeric_dtype(frame[name].dtype):
        raise CheckInputError(f"column {name!r} is not numeric (dtype {frame[name].dtype})")
    return frame[name].to_numpy(dtype=float, na_value=np.nan)


@dataclass(kw_only=True)
class RevenueAtRisk(Mergeable):
    """Share of revenue in rows scored above a cut-off, against the reference's share.

    Rows without a finite, non-negative revenue or a finite score are left out (`dropped_rows`). The
    change is graded on its confidence bound: the two shares' delta-method standard errors added in
    quadrature, a normal noise model.
    """

    name: ClassVar[str] = "business.revenue_at_risk"
    family: ClassVar[str] = "business"
    role: ClassVar[str] = "output_drift"  # what the model flags: ranked with its outputs, before features
    needs: ClassVar[frozenset[str]] = frozenset({"score"})
    min_verdict_rows: ClassVar[int] = 30
    declared_metrics: ClassVar[dict[str, Metric]] = {
        "share_change": Metric(
            thresholds=(0.02, 0.05, 0.1),
            change="the batch's share of revenue at risk minus the reference's",
            uncertainty="delta-method standard errors of the two shares, added in quadrature",
        )
    }
    revenue: str = "revenue"
    cutoff: float = 0.5

    def fit(self, reference: pd.DataFrame, columns: Columns) -> RevenueSums:
        sums = self.partial(reference, None, columns)
        if not sums.revenue > 0:
            raise CheckInputError(f"the reference has no revenue in column {self.revenue!r}")
        return sums

    def partial(self, current: pd.DataFrame, profile: RevenueSums | None, columns: Columns) -> RevenueSums:
        revenue, score = numeric(current, self.revenue), numeric(current, columns.score)
        used = np.isfinite(revenue) & (revenue >= 0) & np.isfinite(score)
        r, flagged = revenue[used], score[used] > self.cutoff
        return RevenueSums(
            rows=len(current),
            used=int(used.sum()),
            flagged=int(flagged.sum()),
            revenue=float(r.sum()),
            at_risk=float(r[flagged].sum()),
            squares=float((r * r).sum()),
            squares_at_risk=float((r * r)[flagged].sum()),
        )

    def merge(self, states: list[RevenueSums]) -> RevenueSums:
        return functools.reduce(operator.add, states)

    def finish(self, state: RevenueSums, profile: RevenueSums, columns: Columns) -> list[CheckResult]:
        if not state.revenue > 0:
            raise NotApplicable(f"no batch row with a revenue in {self.revenue!r} and a score")
        change = normal(
            state.share() - profile.share(), math.hypot(state.standard_error(), profile.standard_error())
        )
        metrics = {
            "share_at_risk": state.share(),
            "reference_share_at_risk": profile.share(),
            "share_change": change.estimate,
        }
        details = {
            "cutoff": self.cutoff,
            "revenue_at_risk": state.at_risk,
            "dropped_rows": state.rows - state.used,
        }
        return [
            self.result(
                self.revenue,
                metrics,
                rows=state.rows,
                failing_rows=state.flagged,
                details=details,
                evidence={"share_change": change},
            )
        ]
