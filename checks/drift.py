"""Distribution drift of features, labels and predictions between the reference and a batch.

Every check here grades the population stability index (PSI, defined in `checks.binning`: add-one
smoothing by default, `smoothing=0` for the plain formula) with thresholds (0.1, 0.2, 0.3) for
low/medium/high, except `drift.label`, which grades the largest change of a class share (classes)
or the Kolmogorov–Smirnov statistic and the changes of the mean, median and 90th percentile (a
numeric label, `checks.label_location`). Grades are taken on confidence bounds
(`checks.evidence`): the PSI's no-change noise is simulated at the batch's and the reference's sizes
(`checks.binning.psi_evidence`), a share change `checks.evidence.rate_change` as the best of every
class's rise and fall, the KS statistic the Kolmogorov distribution; other statistics (KS and
Wasserstein of features, chi-square) are reported, not graded.

Each target (a feature, the label, the score) gets its own result; a target that cannot be computed
gets an `error` or `skipped` result naming the column while the others go on. Nulls and NaN are
dropped and counted in `details["dropped_rows"]`; -inf and +inf are values beyond every edge: they
count in the first and last (open) bins and in the KS statistic, and `details["inf_rows"]` says how
many there are (the Wasserstein distance is over the finite values).

A batch is compared with the reference through its counts in the reference's bins or categories
(`checks.mergeable`): the counts of partitions add up, so a partitioned batch gets the results of the
whole one; only the Wasserstein distance, which needs every value, and the label checks, whose classes
depend on the whole label column, do not merge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from driftline.checks.base import Metric
from driftline.checks.binning import (
    DEFAULT_SMOOTHING,
    MIN_CATEGORY_ROWS,
    RARE_OR_UNSEEN,
    UNSEEN,
    CategoryCounts,
    ImpactRows,
    ImpactSums,
    NumericCounts,
    NumericSketch,
    RowGroups,
    capped_bins,
    category_psi_evidence,
    chi_square,
    expected_pooled,
    keyed_counts,
    present_values,
    psi,
    psi_evidence,
)
from driftline.checks.columns import Columns, identifier_note, infer_task
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import Evidence, best_of, kolmogorov, rate_change
from driftline.checks.label_location import LabelSketch, location_metrics
from driftline.checks.mergeable import Mergeable
from driftline.checks.registry import register
from driftline.checks.result import CheckResult
from driftline.checks.shares import SHARE_SCORES, share_scores

PSI_METRIC = Metric(
    (0.1, 0.2, 0.3),
    change="PSI of the batch's shares against the reference's, over the reference's bins or categories",
    uncertainty=(
        "simulated: the PSI of both samples redrawn at their sizes from the pooled shares, matched to a "
        "scaled chi-square; the bound subtracts that no-change noise"
    ),
    figure="distribution",
    divergence=True,
)
CATEGORY_PSI_METRIC = replace(
    PSI_METRIC,
    change=(
        "PSI of the batch's shares against the reference's, over the reference's categories of at least "
        "`min_category_rows` rows and one bin for the rare and unseen ones"
    ),
    uncertainty=(
        "simulated: the PSI of the rows of both samples exchanged at random, the bins chosen again from "
        "each draw's reference, matched to a scaled chi-square; the bound subtracts that no-change noise"
    ),
)
SHARE_METRIC = Metric(
    (0.015, 0.03, 0.06),
    change="largest absolute change of a class's share of the labels (batch share − reference share)",
    uncertainty=(
        "normal, with the Agresti–Caffo standard error of the difference of the class's two shares, "
        "graded as the best of every class's rise and fall (two for a binary label): the class and "
        "the side are chosen by the batch"
    ),
    figure="distribution",
)
KS_METRIC = Metric(
    (0.1, 0.2, 0.3),
    change="two-sample Kolmogorov–Smirnov distance between the batch's and the reference's label",
    uncertainty="Kolmogorov distribution of the distance under no change, K / sqrt(n m / (n + m))",
    figure="distribution",
)
NUMERIC_TESTS = frozenset({"ks", "wasserstein"})
DETAIL_CATEGORIES = 10


@dataclass(frozen=True)
class _Unusable:
    """A target whose reference could not be summarised; evaluated as an error or skipped result."""

    reason: str
    skipped: bool


@dataclass(frozen=True)
class Comparison:
    """One target's batch against its reference summary: metrics, details and the evidence of the
    metrics the check grades."""

    metrics: dict[str, float]
    details: dict[str, Any]
    evidence: dict[str, Evidence] = field(default_factory=dict)


@dataclass(frozen=True)
class CategoryTally:
    """A batch's category counts (string keys, in order of first appearance; a categorical column's in
    the order of its categories) and missing values."""

    counts: pd.Series
    dropped: int

    @classmethod
    def from_series(cls, values: pd.Series) -> tuple[CategoryTally, RowGroups]:
        """The tally of a batch column, and its rows grouped by key for the impact sums."""
        counts, groups = keyed_counts(values)
        return cls(counts, int(groups.sizes[-1])), groups

    def merge(self, other: CategoryTally) -> CategoryTally:
        """Counts of the union of two partitions, first-appearance order kept."""
        counts = pd.concat([self.counts, other.counts]).groupby(level=0, sort=False).sum()
        return CategoryTally(counts, self.dropped + other.dropped)

    def grown(self, summary: CategoryCounts) -> list[str]:
        """The categories whose share grew from the reference's."""
        ref_share = pd.Series(summary.counts / summary.n, index=list(summary.categories))
        cur_share = self.counts / self.counts.sum()
        grew = cur_share.to_numpy() > ref_share.reindex(cur_share.index, fill_value=0).to_numpy()
        return list(cur_share.index[grew])


@dataclass(frozen=True)
class TargetPartial:
    """One target's state over one or more partitions of a batch: the row count, the batch counts, the
    model-impact sums per bin or category, or the problem that stops the target. `values` holds every
    present batch value, only for a statistic that needs them all (so not mergeable: Wasserstein)."""

    rows: int
    counts: NumericCounts | CategoryTally | None = None
    impact: ImpactSums | None = None
    problem: tuple[str, str] | None = None
    values: np.ndarray | None = None

    def merge(self, other: TargetPartial) -> TargetPartial:
        """State of the union of two partitions; the first problem met wins."""
        problem = self.problem or other.problem
        both = problem is None and self.counts is not None and other.counts is not None
        kept = both and self.values is not None and other.values is not None
        return TargetPartial(
            rows=self.rows + other.rows,
            counts=self._merged_counts(other) if both else (self.counts or other.counts),
            impact=self.impact.merge(other.impact) if both and self.impact and other.impact else None,
            problem=problem,
            values=np.concatenate([self.values, other.values]) if kept else None,
        )

    def _merged_counts(self, other: TargetPartial) -> NumericCounts | CategoryTally | None:
        """Both partitions' counts added up (of one kind: both follow the target's reference summary)."""
        mine, theirs = self.counts, other.counts
        if isinstance(mine, NumericCounts) and isinstance(theirs, NumericCounts):
            return mine.merge(theirs)
        if isinstance(mine, CategoryTally) and isinstance(theirs, CategoryTally):
            return mine.merge(theirs)
        return mine or theirs

    def numeric(self) -> NumericCounts:
        """The counts of a target the reference summarised as a numeric sketch."""
        if not isinstance(self.counts, NumericCounts):
            raise TypeError(f"expected the counts of a numeric target, got {type(self.counts).__name__}")
        return self.counts

    def categories(self) -> CategoryTally:
        """The counts of a target the reference summarised by category."""
        if not isinstance(self.counts, CategoryTally):
            raise TypeError(f"expected the counts of a categorical target, got {type(self.counts).__name__}")
        return self.counts

    def kept_values(self) -> np.ndarray:
        """Every present batch value, kept for a check whose `keeps_values` says so."""
        if self.values is None:
            raise TypeError("the batch values were not kept (`keeps_values` is false)")
        return self.values


@dataclass(kw_only=True)
class _DistributionDrift(Mergeable):
    """Shared machinery: one reference summary per target; per partition of the batch, each target's
    counts in the reference's bins or categories, compared with the reference once merged."""

    family: ClassVar[str] = "drift"
    role: ClassVar[str] = "feature_drift"
    declared_metrics: ClassVar[Mapping[str, Metric]] = {"psi": PSI_METRIC}

    bins: int = 10
    smoothing: float = DEFAULT_SMOOTHING
    min_rows: int = 10
    sketch_size: int = 10_000

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bins < 2:
            raise CheckInputError(f"{self.name}: bins must be at least 2, got {self.bins}")
        if self.smoothing < 0:
            raise CheckInputError(f"{self.name}: smoothing must be >= 0, got {self.smoothing}")
        if self.sketch_size < self.bins:
            raise CheckInputError(f"{self.name}: sketch_size must be at least bins ({self.bins})")

    # --- hooks -------------------------------------------------------------------------------------

    def targets(self, columns: Columns) -> list[str]:
        """Names of the targets, in result order."""
        raise NotImplementedError

    def values(self, frame: pd.DataFrame, target: str, columns: Columns) -> pd.Series:
        """The target's values in `frame`."""
        if target not in frame.columns:
            raise CheckInputError(f"column {target!r} is not in the data")
        return frame[target]

    def summarise(self, values: pd.Series, target: str, columns: Columns) -> Any:
        """Reference summary of one target."""
        raise NotImplementedError

    def compare(self, summary: Any, part: TargetPartial, target: str) -> Comparison:
        """One target's batch counts against its summary: by default the PSI against whichever summary
        the reference got, category counts or a numeric sketch."""
        if isinstance(summary, CategoryCounts):
            return self.compare_categories(summary, part.categories(), target)
        return self.compare_numeric(summary, part, target)

    def impact_values(self, current: pd.DataFrame, columns: Columns) -> ImpactRows | None:
        """The per-row values whose sums per bin or category give the model impact of the drifted rows;
        None for a check that reports no impact."""
        return None

    def keeps_values(self) -> bool:
        """Whether a statistic needs every present batch value of a numeric target."""
        return False

    # --- interface ---------------------------------------------------------------------------------

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        targets = self.targets(columns)
        if not targets:
            raise NotApplicable(f"{self.name}: no column to compare")
        return {t: self._fit_target(reference, t, columns) for t in targets}

    def _fit_target(self, reference: pd.DataFrame, target: str, columns: Columns) -> Any:
        try:
            return self.summarise(self.values(reference, target, columns), target, columns)
        except CheckInputError as exc:
            return _Unusable(f"reference: {exc}", skipped=False)
        except NotApplicable as exc:
            return _Unusable(f"reference: {exc}", skipped=True)

    def partial(
        self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns
    ) -> dict[str, TargetPartial]:
        """Per target, the counts of one partition of the batch, or the problem that stops the target."""
        impact_rows = self.impact_values(current, columns)
        return {
            t: self._partial_target(current, t, summary, columns, impact_rows)
            for t, summary in profile.items()
        }

    def _partial_target(
        self,
        current: pd.DataFrame,
        target: str,
        summary: Any,
        columns: Columns,
        impact_rows: ImpactRows | None,
    ) -> TargetPartial:
        rows = len(current)
        if isinstance(summary, _Unusable):
            return TargetPartial(rows)
        try:
            return self._tally(summary, self.values(current, target, columns), target, rows, impact_rows)
        except CheckInputError as exc:
            return TargetPartial(rows, problem=("error", str(exc)))
        except NotApplicable as exc:
            return TargetPartial(rows, problem=("skipped", str(exc)))

    def _tally(
        self,
        summary: NumericSketch | CategoryCounts,
        values: pd.Series,
        target: str,
        rows: int,
        impact_rows: ImpactRows | None,
    ) -> TargetPartial:
        """One partition's counts of a target in the reference's categories or bins, with the model
        impact sums per category or bin when the check reports impact."""
        if isinstance(summary, CategoryCounts):
            tally, groups = CategoryTally.from_series(values)
            impact = ImpactSums.from_groups(impact_rows, groups) if impact_rows else None
            return TargetPartial(rows, tally, impact)
        present, dropped = present_values(values, target)
        counts = NumericCounts.from_values(present, dropped, summary)
        impact = (
            ImpactSums.from_groups(impact_rows, counts.row_groups(summary, values)) if impact_rows else None
        )
        return TargetPartial(rows, counts, impact, values=present if self.keeps_values() else None)

    def merge(self, states: list[dict[str, TargetPartial]]) -> dict[str, TargetPartial]:
        """Target by target, in partition order."""
        merged = dict(states[0])
        for state in states[1:]:
            for target, part in state.items():
                merged[target] = merged[target].merge(part)
        return merged

    def finish(
        self, state: dict[str, TargetPartial], profile: dict[str, Any], columns: Columns
    ) -> list[CheckResult]:
        """One result per target, from its merged counts."""
        return [self._finish_target(t, summary, state[t]) for t, summary in profile.items()]

    def _finish_target(self, target: str, summary: Any, part: TargetPartial) -> CheckResult:
        rows = part.rows
        if isinstance(summary, _Unusable):
            make = CheckResult.skipped if summary.skipped else CheckResult.error
            return make(self.name, target, summary.reason, rows=rows)
        if part.problem is not None:
            make = CheckResult.skipped if part.problem[0] == "skipped" else CheckResult.error
            return make(self.name, target, part.problem[1], rows=rows)
        try:
            comparison = self.compare(summary, part, target)
        except CheckInputError as exc:
            return CheckResult.error(self.name, target, str(exc), rows=rows)
        except NotApplicable as exc:
            return CheckResult.skipped(self.name, target, str(exc), rows=rows)
        result = self.graded(target, comparison, rows)
        if result.severity != "none" and part.impact is not None and part.counts is not None:
            grown = part.counts.grown(summary)
            result.failing_rows = part.impact.failing_rows(grown)
            result.model_impact = part.impact.impact(grown)
        return result

    def graded(self, target: str, comparison: Comparison, rows: int) -> CheckResult:
        """The target's result, graded on the bounds of its evidence (at this target's own level: the
        runner grades the check's targets again as one family)."""
        return self.result(
            target, comparison.metrics, rows=rows, details=comparison.details, evidence=comparison.evidence
        )

    def grades(self, metric: str) -> bool:
        """Whether the check grades `metric` (so the metric needs evidence)."""
        return metric in self.default_thresholds

    def psi_of(
        self, reference: np.ndarray, current: np.ndarray
    ) -> tuple[dict[str, float], dict[str, Evidence]]:
        """The PSI metric, with its evidence when the check grades it."""
        if not self.grades("psi"):
            return {"psi": psi(reference, current, self.smoothing)}, {}
        evidence = psi_evidence(reference, current, self.smoothing)
        return {"psi": evidence.estimate}, {"psi": evidence}

    def ks_evidence(self, statistic: float, rows: int, reference_rows: int) -> dict[str, Evidence]:
        """The KS distance's evidence when the check grades it (a reported statistic needs none)."""
        if not self.grades("ks_statistic"):
            return {}
        return {"ks_statistic": kolmogorov(statistic, rows, reference_rows)}

    def require_rows(self, n: int, target: str, side: str = "batch") -> None:
        if n < self.min_rows:
            raise NotApplicable(
                f"column {target!r} has {n} usable value(s) in the {side} (min_rows={self.min_rows})"
            )

    # --- shared summaries --------------------------------------------------------------------------

    def numeric_summary(self, values: pd.Series, target: str) -> NumericSketch:
        present, _ = present_values(values, target)
        self.require_rows(int(np.isfinite(present).sum()), target, "reference")
        return NumericSketch.from_values(present, self.bins, self.sketch_size)

    def category_summary(self, values: pd.Series, target: str) -> CategoryCounts:
        summary = CategoryCounts.from_series(values)
        self.require_rows(summary.n, target, "reference")
        return summary

    def compare_numeric(
        self, sketch: NumericSketch, part: TargetPartial, target: str, tests: frozenset[str] = frozenset()
    ) -> Comparison:
        """PSI on the reference bins (plus KS / Wasserstein when asked) from the batch's counts."""
        counts = part.numeric()
        self.require_rows(counts.present, target)
        metrics, evidence = self.psi_of(sketch.counts, counts.bins)
        if "ks" in tests:
            metrics["ks_statistic"], metrics["ks_pvalue"] = counts.ks(sketch)
            evidence.update(self.ks_evidence(metrics["ks_statistic"], counts.present, sketch.n))
        if "wasserstein" in tests:
            metrics["wasserstein"] = sketch.wasserstein(part.kept_values())
        details = {
            "bins": len(sketch.counts),
            "edges": sketch.edges.tolist(),
            "reference_shares": (sketch.counts / sketch.n).tolist(),
            "current_shares": (counts.bins / counts.present).tolist(),
            "out_of_range_share": float((counts.below + counts.above) / counts.present),
            "reference_range": _finite_range(sketch.points),
            "current_range": counts.finite_range,
            "reference_rows": sketch.n,
            "dropped_rows": counts.dropped,
            "inf_rows": counts.inf_rows,
        }
        if "ks" in tests:
            details["ks_exact"] = sketch.exact
        return Comparison(metrics, details, evidence)

    def compare_categories(self, summary: CategoryCounts, tally: CategoryTally, target: str) -> Comparison:
        """PSI over the reference categories plus a pooled bin for unseen ones. Its no-change noise is
        drawn by exchanging rows between the two samples, the bins chosen again from each draw's
        reference (`checks.binning.category_psi_evidence`, every category a reference row holds keeping
        its bin): drawn from the pooled shares instead, the reference took rows in the unseen bin it can
        never hold, and clean batches of a label or prediction with hundreds of classes were graded."""
        self.require_rows(int(tally.counts.sum()), target)
        ref, cur, unseen_names, unseen = summary.align(tally.counts)
        evidence: dict[str, Evidence] = {}
        if self.grades("psi"):
            reference, current, _ = summary.levels(tally.counts)
            evidence["psi"] = category_psi_evidence(reference, current, 1, self.smoothing)
        metrics = {"psi": evidence["psi"].estimate if evidence else psi(ref, cur, self.smoothing)}
        names = [*summary.categories, UNSEEN][: len(ref)]
        details = category_details(summary, tally, (names, ref, cur), unseen_names, unseen)
        return Comparison(metrics, details, evidence)


def category_details(
    summary: CategoryCounts,
    tally: CategoryTally,
    bins: tuple[list[str], np.ndarray, np.ndarray],
    unseen_names: list[str],
    unseen: int,
) -> dict[str, Any]:
    """What a categorical comparison reports beside its metrics: the bins (names, reference and batch
    counts) whose share moved most, the batch's share of categories the reference never had, rows, and
    each frequent bin's signed share score (`checks.shares`), the evidence the sustained layer sums."""
    return {
        "categories": len(summary.categories),
        "largest_changes": _largest_changes(*bins, DETAIL_CATEGORIES),
        "unseen_share": unseen / int(tally.counts.sum()),
        "unseen_examples": unseen_names[:DETAIL_CATEGORIES],
        "reference_rows": summary.n,
        "dropped_rows": tally.dropped,
        SHARE_SCORES: share_scores(bins[1], bins[2], bins[0]),
    }


def _finite_range(ordered: np.ndarray) -> list[float] | None:
    """[smallest, largest] finite value of sorted values (the outer bins' extent in a report's
    histogram), None when there is none."""
    finite = ordered[np.isfinite(ordered)]
    return [float(finite[0]), float(finite[-1])] if len(finite) else None


def _largest_changes(
    names: list[str], ref: np.ndarray, cur: np.ndarray, limit: int
) -> dict[str, dict[str, float]]:
    """Reference and current shares of the bins (named `names`) whose share moved most."""
    ref_share, cur_share = ref / ref.sum(), cur / cur.sum()
    order = np.argsort(-np.abs(cur_share - ref_share), kind="stable")[:limit]
    return {names[i]: {"reference": float(ref_share[i]), "current": float(cur_share[i])} for i in order}


@dataclass(kw_only=True)
class _FeatureDrift(_DistributionDrift):
    """Feature drift with model impact: the performance gap of the rows in the bins or categories
    whose share grew from the reference."""

    per_feature: ClassVar[bool] = True

    compute_impact: bool = True

    def impact_values(self, current: pd.DataFrame, columns: Columns) -> ImpactRows | None:
        return ImpactRows.of(current, columns) if self.compute_impact else None


@register
@dataclass(kw_only=True)
class NumericDrift(_FeatureDrift):
    """Numeric feature drift: PSI on reference-quantile bins, two-sample KS test (and Wasserstein).

    Interior bin edges are the reference quantiles at k / bins; duplicate edges from ties are merged and
    the outer bins are open, so out-of-range values land in the first or last bin. `tests` adds
    statistics beside PSI: "ks" (statistic and asymptotic p-value) and "wasserstein".
    """

    name: ClassVar[str] = "drift.numeric"
    needs: ClassVar[frozenset[str]] = frozenset({"numeric"})

    tests: tuple[str, ...] = ("ks",)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.tests = tuple(self.tests)
        unknown = sorted(set(self.tests) - NUMERIC_TESTS)
        if unknown:
            raise CheckInputError(
                f"{self.name}: unknown test(s) {unknown}; choose from {sorted(NUMERIC_TESTS)}"
            )

    def targets(self, columns: Columns) -> list[str]:
        return list(self.feature_columns(columns, "numeric"))

    def summarise(self, values: pd.Series, target: str, columns: Columns) -> NumericSketch:
        return self.numeric_summary(values, target)

    def compare(self, summary: NumericSketch, part: TargetPartial, target: str) -> Comparison:
        return self.compare_numeric(summary, part, target, frozenset(self.tests))

    def keeps_values(self) -> bool:
        return "wasserstein" in self.tests

    def merge_limit(self) -> str | None:
        if self.keeps_values():
            return "the Wasserstein distance needs every batch value: it is not mergeable across partitions"
        return None


@register
@dataclass(kw_only=True)
class CategoricalDrift(_FeatureDrift):
    """Categorical feature drift: PSI over the reference's categories of at least `min_category_rows`
    rows, the others (rare in the reference or unseen) pooled in one bin, and Pearson's chi-square
    test of homogeneity (categories expected fewer than 5 times in the smaller sample pooled).

    The bins come from the reference, so the PSI's no-change noise is simulated by exchanging rows
    between the two samples and choosing the bins again from each draw's reference
    (`checks.binning.category_psi_evidence`): a reference of a few thousand rows over thousands of
    categories misses many that a clean batch holds, and its draws miss as many. A column that looks
    like an identifier (`checks.columns.identifier_note`) is skipped unless `skip_identifiers` is off.
    """

    name: ClassVar[str] = "drift.categorical"
    needs: ClassVar[frozenset[str]] = frozenset({"categorical"})
    declared_metrics: ClassVar[Mapping[str, Metric]] = {"psi": CATEGORY_PSI_METRIC}

    min_category_rows: int = MIN_CATEGORY_ROWS
    skip_identifiers: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_category_rows < 1:
            raise CheckInputError(
                f"{self.name}: min_category_rows must be at least 1, got {self.min_category_rows}"
            )

    def targets(self, columns: Columns) -> list[str]:
        return list(self.feature_columns(columns, "categorical"))

    def summarise(self, values: pd.Series, target: str, columns: Columns) -> CategoryCounts:
        summary = self.category_summary(values, target)
        note = identifier_note(target, len(summary.categories), summary.n)
        if note and self.skip_identifiers:
            raise NotApplicable(note)
        return summary

    def compare(self, summary: CategoryCounts, part: TargetPartial, target: str) -> Comparison:
        tally = part.categories()
        self.require_rows(int(tally.counts.sum()), target)
        reference, current, unseen_names = summary.levels(tally.counts)
        frequent, ref, cur = capped_bins(reference, current, self.min_category_rows)
        evidence: dict[str, Evidence] = {}
        if self.grades("psi"):
            evidence["psi"] = category_psi_evidence(
                reference, current, self.min_category_rows, self.smoothing
            )
        metrics = {"psi": evidence["psi"].estimate if evidence else psi(ref, cur, self.smoothing)}
        metrics["chi2_statistic"], metrics["chi2_pvalue"] = chi_square(*expected_pooled(reference, current))
        seen = len(summary.categories)
        pooled = seen - int(np.count_nonzero(frequent[:seen]))
        names = [name for name, own in zip(summary.categories, frequent, strict=False) if own]
        names = [*names, RARE_OR_UNSEEN if pooled else UNSEEN][: len(ref)]
        unseen = int(current[seen:].sum())
        details = category_details(summary, tally, (names, ref, cur), unseen_names, unseen)
        details.update(pooled_categories=pooled, min_category_rows=self.min_category_rows)
        return Comparison(metrics, details, evidence)


def _is_discrete(values: pd.Series, columns: Columns) -> bool:
    """Classification targets are compared class by class, regression targets on quantile bins."""
    if not pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        return True
    return (columns.task or infer_task(values)) != "regression"


def class_labels(values: pd.Series) -> pd.Series:
    """Float labels that are all whole numbers as nullable integers, so that 1 and 1.0 name one class."""
    if not pd.api.types.is_float_dtype(values.dtype):
        return values
    present = values.dropna().to_numpy(dtype=float)
    whole = np.isfinite(present) & (present == np.round(present)) & (np.abs(present) < 2.0**53)
    if not whole.all():
        return values
    return values.astype("Int64")


def share_change(summary: CategoryCounts, counts: pd.Series) -> tuple[Evidence, dict[str, Any]]:
    """The class whose share of the labels moved most (the unseen classes pooled; on a tie, as a binary
    label's two classes always are, the one that rose), with the evidence of the absolute change: the
    rise of its share, or of the other classes' together when it fell, graded as the best of every
    class's rise and fall (`share_tests`), since the class and the side are read off the batch."""
    ref, cur, _, _ = summary.align(counts)
    change = cur / cur.sum() - ref / ref.sum()
    k = max(range(len(change)), key=lambda i: (round(abs(change[i]), 12), change[i]))
    hits, ref_hits = (cur[k], ref[k]) if change[k] >= 0 else (cur.sum() - cur[k], ref.sum() - ref[k])
    rise = rate_change(float(hits), int(cur.sum()), float(ref_hits), int(ref.sum()))
    evidence = best_of(rise.estimate, rise.scale, share_tests(len(change)))
    details = {
        "changed_class": [*summary.categories, UNSEEN][k],
        "reference_share": float(ref[k] / ref.sum()),
        "current_share": float(cur[k] / cur.sum()),
    }
    return evidence, details


def share_tests(classes: int) -> int:
    """How many one-sided changes the largest share change is the best of: each class's rise and fall,
    two for a binary label (one class's rise is the other's fall)."""
    return 2 if classes <= 2 else 2 * classes


@dataclass(kw_only=True)
class _LabelDistribution(_DistributionDrift):
    """Drift of the label column: classes for classification, quantile bins for regression."""

    needs: ClassVar[frozenset[str]] = frozenset({"label"})

    def targets(self, columns: Columns) -> list[str]:
        return [columns.label] if columns.label else []

    def values(self, frame: pd.DataFrame, target: str, columns: Columns) -> pd.Series:
        return class_labels(super().values(frame, target, columns))

    def summarise(self, values: pd.Series, target: str, columns: Columns) -> NumericSketch | CategoryCounts:
        if _is_discrete(values, columns):
            return self.category_summary(values, target)
        return self.numeric_summary(values, target)

    def merge_limit(self) -> str | None:
        return (
            "a label's classes are read from the whole batch column (whole-number floats name integer "
            "classes): it is not mergeable across partitions"
        )


@register
@dataclass(kw_only=True)
class LabelDrift(_LabelDistribution):
    """Label drift: the largest change of a class's share of the labels (classification), or the
    two-sample Kolmogorov–Smirnov distance and the changes of the mean, median and 90th percentile of
    a numeric label (regression); PSI reported alongside.

    A binary label's share change is its rate's change (a default rate going from 0.219 to 0.281 is
    0.062). Thresholds in share units, 0.015 / 0.03 / 0.06 (1.5, 3 and 6 percentage points): a rate
    moving by 3 points (0.219 to 0.249, a seventh more defaults) shifts the average a model calibrated
    on the reference should predict by as much, and 6 points is a new regime. A KS distance of a 0/1
    label equals its share change, so the KS thresholds 0.1 / 0.2 / 0.3 were 10 to 30 points.

    A numeric label's mean, median and 90th percentile changes are in reference standard deviations,
    either way, thresholds 0.1 / 0.25 / 0.5 (`checks.label_location`): a KS distance alone misses a
    mean that moves with the shape kept, and says nothing of how far.
    """

    name: ClassVar[str] = "drift.label"
    role: ClassVar[str] = "label_drift"
    declared_metrics: ClassVar[Mapping[str, Metric]] = {
        "share_change": SHARE_METRIC,
        "ks_statistic": KS_METRIC,
        **location_metrics(),
    }

    def summarise(self, values: pd.Series, target: str, columns: Columns) -> LabelSketch | CategoryCounts:
        summary = super().summarise(values, target, columns)
        if isinstance(summary, CategoryCounts):
            return summary
        return LabelSketch.of(summary, present_values(values, target)[0])

    def keeps_values(self) -> bool:
        return True

    def compare(self, summary: LabelSketch | CategoryCounts, part: TargetPartial, target: str) -> Comparison:
        if isinstance(summary, NumericSketch):
            comparison = self.compare_numeric(summary, part, target, frozenset({"ks"}))
            metrics, details, evidence = summary.location(part.kept_values())
            return Comparison(
                {**comparison.metrics, **metrics},
                {**comparison.details, **details},
                {**comparison.evidence, **evidence},
            )
        comparison = self.compare_categories(summary, part.categories(), target)
        share, details = share_change(summary, part.categories().counts)
        return Comparison(
            {"share_change": share.estimate, **comparison.metrics},
            {**details, **comparison.details},
            {"share_change": share},
        )


@register
@dataclass(kw_only=True)
class LabelPSIDrift(_LabelDistribution):
    """Label drift by PSI: over the classes for classification, on reference-quantile bins for regression."""

    name: ClassVar[str] = "drift.label_psi"
    role: ClassVar[str] = "label_drift"


@register
@dataclass(kw_only=True)
class PredictionDrift(_DistributionDrift):
    """Prediction drift: PSI of the score on reference-quantile bins (one result per class-score column
    for multiclass; the prediction column when there is no score, by class if it is not numeric)."""

    name: ClassVar[str] = "drift.prediction"
    role: ClassVar[str] = "output_drift"

    def targets(self, columns: Columns) -> list[str]:
        if columns.score:
            return [columns.score]
        if columns.class_scores:
            return list(columns.class_scores)
        return [columns.prediction] if columns.prediction else []

    def summarise(self, values: pd.Series, target: str, columns: Columns) -> NumericSketch | CategoryCounts:
        if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
            return self.numeric_summary(values, target)
        return self.category_summary(values, target)


def predicted_labels(frame: pd.DataFrame, columns: Columns, threshold: float) -> pd.Series:
    """Predicted classes: the prediction column, else score >= threshold as 0/1 (binary), else the name
    of the class-score column with the highest score."""
    needed = (
        [columns.prediction or columns.score] if columns.prediction or columns.score else columns.class_scores
    )
    absent = [c for c in needed if c not in frame.columns]
    if absent:
        raise CheckInputError(f"column(s) {absent} are not in the data")
    if columns.prediction:
        return frame[columns.prediction]
    if columns.score:
        score = frame[columns.score]
        if not pd.api.types.is_numeric_dtype(score.dtype):
            raise CheckInputError(f"score column {columns.score!r} is not numeric (dtype {score.dtype})")
        return (score >= threshold).astype("Int64").where(score.notna())
    if not columns.class_scores:
        raise NotApplicable("no prediction, score or class_scores column")
    scores = frame[list(columns.class_scores)].apply(pd.to_numeric, errors="coerce")
    best = scores.fillna(-np.inf).to_numpy(dtype=float).argmax(axis=1)
    labels = pd.Series(np.asarray(columns.class_scores, dtype=object)[best], index=frame.index)
    return labels.where(scores.notna().all(axis=1).to_numpy())


@register
@dataclass(kw_only=True)
class PredictedLabelDrift(_DistributionDrift):
    """Predicted-label drift: PSI over the predicted class frequencies (prediction column, or the score
    thresholded at `threshold`, or the arg-max of the class scores)."""

    name: ClassVar[str] = "drift.predicted_label"
    role: ClassVar[str] = "output_drift"

    threshold: float = 0.5

    def targets(self, columns: Columns) -> list[str]:
        if columns.prediction or columns.score or columns.class_scores:
            return ["predicted_label"]
        return []

    def values(self, frame: pd.DataFrame, target: str, columns: Columns) -> pd.Series:
        return predicted_labels(frame, columns, self.threshold)

    def summarise(self, values: pd.Series, target: str, columns: Columns) -> CategoryCounts:
        return self.category_summary(values, target)
