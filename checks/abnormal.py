"""Abnormal-input checks on tabular features: shared machinery, and the null-rate check.

An abnormal check flags the batch rows whose value is abnormal with respect to the reference (an
outlier, an unseen or rare category, an inconsistent pair of values, ...). Every target's result
carries `failing_rows`, the failing share, the model impact of the failing rows (performance on
passing minus failing rows, or the change in predictions without labels) and the ids of the first
failing rows. The concrete checks live in `abnormal_values` (numeric), `abnormal_categories`,
`abnormal_pairs` and `abnormal_strings`.

A clean batch has abnormal rows too (a value the reference happened not to hold, a row beyond its
extremes), so the tabular checks (`RateCheck`) grade `failing_rate_increase`: the batch's failing
rate minus the rate a clean batch shows, estimated from the reference by each check, on its
confidence bound (`checks.evidence.rate_change`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, Protocol, Self

import numpy as np
import pandas as pd

from driftline.checks.base import Metric
from driftline.checks.binning import ImpactRows, ImpactSums, RowGroups, encode
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import Evidence, rate_change
from driftline.checks.mergeable import Mergeable
from driftline.checks.registry import register
from driftline.checks.result import THRESHOLD_TOLERANCE, CheckResult, worst_severity

FAILING_SHARE = "failing_share"
FAILING_RATE_INCREASE = "failing_rate_increase"
IMPACT = "model_impact"
# Presence and impact thresholds of the checks graded on presence (two values: medium, high).
DEFAULT_METRICS: dict[str, Metric] = {FAILING_SHARE: Metric((0.01, 0.05)), IMPACT: Metric((0.05, 0.1))}
# Thresholds of a rate's increase over a clean batch's rate (low, medium, high), in rate units.
RATE_THRESHOLDS = (0.001, 0.01, 0.05)
RATE_UNCERTAINTY = (
    "normal: Agresti–Caffo standard error of the difference of two proportions, never below the "
    "no-change one, plus Yates's continuity correction (rate_change)"
)
# Below this many batch rows a rate says nothing: the rate-graded checks are skipped.
MIN_RATE_ROWS = 10


def rate_metric(clean_rate: str) -> Metric:
    """A failing rate graded on its increase over `clean_rate` (how a clean batch's rate is known)."""
    change = f"batch rate minus the rate a clean batch shows ({clean_rate})"
    return Metric(RATE_THRESHOLDS, change=change, uncertainty=RATE_UNCERTAINTY)


class Summary(Protocol):
    """A summary of a partition's values beyond counts (extremes, a histogram) that merges exactly."""

    def merge(self, other: Self) -> Self:
        """The summary of the union of two partitions (this one first)."""
        ...


@dataclass
class Flags:
    """What one target's evaluation found in a batch or one partition of it: failing rows and rows
    that could be judged; `counts`, numbers that add up across partitions, and `summary`, a summary
    of the values that merges (`AbnormalCheck._counted` reads metrics and details from both); and
    `metrics` and `details` that do not merge."""

    failing: np.ndarray
    usable: np.ndarray
    metrics: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    summary: Summary | None = None


# How a batch's targets are flagged: `flag(target, target profile) -> Flags`.
Flagger = Callable[[str, Any], Flags]


@dataclass(kw_only=True)
class AbnormalCheck(Mergeable):
    """Base of the abnormal-input checks: per-target profiles, failing rows, graded results.

    Checks that estimate a clean batch's rate grade on evidence (`_evidence`, see `RateCheck`);
    the others combine the presence of abnormal rows with their impact on the model: it is the worse
    of the failing share graded against `thresholds.failing_share` and the model impact graded
    against `thresholds.model_impact`, and at least "low" as soon as one row fails (any abnormal
    value is worth a warning). The impact only counts once `min_impact_rows` rows fail, so that a
    couple of rows cannot raise the severity by chance (it is reported either way). Rows without a
    value a check can judge (null or NaN; inf for the checks that cannot place it) are left out of
    the share and counted in `details.dropped_rows`.

    A batch is evaluated as one partition (`checks.mergeable`): per target, the flags' row counts,
    first failing ids and model-impact sums, graded in `finish`. Partitions merge when the flags
    report only counts and a summary that merges (`counts_only`).
    """

    family: ClassVar[str] = "abnormal"
    role: ClassVar[str] = "data_quality"
    per_feature: ClassVar[bool] = True
    # Whether the flags report only what merges (`Flags.counts`, `Flags.summary`), so partitions merge.
    counts_only: ClassVar[bool] = False
    declared_metrics: ClassVar[dict[str, Metric]] = DEFAULT_METRICS
    # Feature kind the default `fit` iterates over ("numeric", "categorical" or "features").
    kind: ClassVar[str] = "categorical"

    max_failing_ids: int = 100
    min_impact_rows: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_failing_ids < 0 or self.min_impact_rows < 1:
            raise CheckInputError(f"{self.name}: max_failing_ids must be >= 0 and min_impact_rows >= 1")

    # -- fitting ---------------------------------------------------------------------------------

    def fit(self, reference: pd.DataFrame, columns: Columns) -> dict[str, Any]:
        """Profile every candidate column; columns that do not qualify are left out, broken ones noted."""
        targets: dict[str, Any] = {}
        issues: dict[str, tuple[str, str]] = {}
        for column in self.target_columns(columns):
            if column not in reference.columns:
                issues[column] = ("error", f"column {column!r} is missing from the reference")
                continue
            try:
                profile = self._fit_column(reference[column], column)
            except NotApplicable as exc:
                issues[column] = ("skipped", str(exc))
            except CheckInputError as exc:
                issues[column] = ("error", str(exc))
            else:
                if profile is not None:
                    targets[column] = profile
        return {"targets": targets, "issues": issues}

    def target_columns(self, columns: Columns) -> tuple[str, ...]:
        """The candidate columns: the features of this check's kind."""
        return self.feature_columns(columns, self.kind)

    def _fit_column(self, values: pd.Series, column: str) -> Any:
        """One column's profile, or None when the column is not a target of this check."""
        raise NotImplementedError

    # -- evaluation: partial -> merge -> finish ---------------------------------------------------

    def merge_limit(self) -> str | None:
        """None when the flags report counts only."""
        if self.counts_only:
            return None
        return f"{self.name} reports details of the batch's values that do not add up across partitions"

    def partial(self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns) -> dict[str, Any]:
        """The state of one partition of the batch: its rows and what each target's flags found."""
        return self._state(current, profile, columns, partial(self._flag, current))

    def _collect(
        self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns, flag: Flagger
    ) -> list[CheckResult]:
        """The results of a batch whose targets `flag(target, target profile)` flags its own way."""
        return self.finish(self._state(current, profile, columns, flag), profile, columns)

    def _state(
        self, current: pd.DataFrame, profile: dict[str, Any], columns: Columns, flag: Flagger
    ) -> dict[str, Any]:
        """Per profiled target, what `flag` found in `current`, or the problem that stops the target."""
        impact_rows = ImpactRows.of(current, columns)
        targets = {}
        for target, target_profile in profile["targets"].items():
            try:
                flags = flag(target, target_profile)
            except NotApplicable as exc:
                targets[target] = AbnormalPartial(problem=("skipped", str(exc)))
            except CheckInputError as exc:
                targets[target] = AbnormalPartial(problem=("error", str(exc)))
            else:
                ids = first_failing_ids(current, flags.failing, columns, self.max_failing_ids)
                targets[target] = AbnormalPartial.found(flags, ids, impact_rows)
        return {"rows": len(current), "targets": targets}

    def _flag(self, current: pd.DataFrame, target: str, profile: Any) -> Flags:
        """Failing and usable rows of one target in the batch."""
        raise NotImplementedError

    def _counted(
        self, part: AbnormalPartial, profile: Any, rows: int
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """The metrics and details of a target's (merged) `Flags.counts` and `Flags.summary` over
        `rows` batch rows."""
        return {}, {}

    def merge(self, states: list[dict[str, Any]]) -> dict[str, Any]:
        """Target by target, in partition order (the first failing ids kept)."""
        targets = dict(states[0]["targets"])
        for state in states[1:]:
            for target, part in state["targets"].items():
                targets[target] = targets[target].merge(part, self.max_failing_ids)
        return {"rows": sum(s["rows"] for s in states), "targets": targets}

    def finish(self, state: dict[str, Any], profile: dict[str, Any], columns: Columns) -> list[CheckResult]:
        """The profile's noted issues, then one graded result per profiled target."""
        rows = state["rows"]
        return self._per_target(
            profile, rows, lambda target, tp: self._graded(target, tp, state["targets"][target], rows)
        )

    def _per_target(
        self, profile: dict[str, Any], rows: int, grade: Callable[[str, Any], CheckResult]
    ) -> list[CheckResult]:
        """The profile's noted issues, then `grade(target, target profile)` of every profiled target;
        a target that does not apply or has bad input gets its own skipped or error result."""
        results = [
            CheckResult(check=self.name, target=target, status=status, reason=reason, rows=rows)
            for target, (status, reason) in profile["issues"].items()
        ]
        for target, target_profile in profile["targets"].items():
            try:
                results.append(grade(target, target_profile))
            except NotApplicable as exc:
                results.append(CheckResult.skipped(self.name, target, str(exc), rows=rows))
            except CheckInputError as exc:
                results.append(CheckResult.error(self.name, target, str(exc), rows=rows))
        if not results:
            raise NotApplicable(self._no_target_reason())
        return results

    def _no_target_reason(self) -> str:
        return f"no feature qualifies for {self.name}"

    def _graded(self, target: str, profile: Any, part: AbnormalPartial, rows: int) -> CheckResult:
        """One target's result from its (merged) state over a batch of `rows` rows."""
        if part.problem is not None:
            error = NotApplicable if part.problem[0] == "skipped" else CheckInputError
            raise error(part.problem[1])
        if part.usable == 0:
            raise NotApplicable(f"{target!r} has no usable value in the batch (all null or NaN)")
        counted_metrics, counted_details = self._counted(part, profile, rows)
        metrics: dict[str, float] = {
            FAILING_SHARE: part.failing / part.usable,
            **part.metrics,
            **counted_metrics,
        }
        impact = part.impact.impact([True]) if part.failing and part.impact is not None else None
        if impact is not None:
            metrics[IMPACT] = impact
        details = {
            "dropped_rows": rows - part.usable,
            **part.details,
            **counted_details,
            "failing_ids": part.ids,
            "failing_ids_total": part.failing,
        }
        return self._verdict(target, profile, metrics, details, part.usable, part.failing, impact)

    def _verdict(
        self,
        target: str,
        profile: Any,
        metrics: dict[str, float],
        details: dict[str, Any],
        usable_rows: int,
        failing_rows: int,
        impact: float | None,
    ) -> CheckResult:
        """One target's result: graded on evidence when the check gives some, else on presence."""
        evidence = self._evidence(profile, usable_rows, failing_rows, details)
        if evidence:
            metrics.update({metric: e.estimate for metric, e in evidence.items()})
        return self.result(
            target,
            metrics,
            rows=usable_rows,
            failing_rows=failing_rows,
            model_impact=impact,
            details=details,
            severity=None if evidence else self._severity(metrics, failing_rows),
            evidence=evidence,
        )

    def _evidence(
        self, profile: Any, usable_rows: int, failing_rows: int, details: dict[str, Any]
    ) -> dict[str, Evidence] | None:
        """Evidence of the graded metrics against a clean batch; None when graded on presence."""
        return None

    def _severity(self, metrics: dict[str, float], failing_rows: int) -> str:
        impact_counts = self._impact_counts(metrics, failing_rows)
        graded = self.grade({k: v for k, v in metrics.items() if k != IMPACT or impact_counts})
        return worst_severity([graded, "low"]) if self._warns(metrics, failing_rows) else graded

    def _impact_counts(self, metrics: dict[str, float], failing_rows: int) -> bool:
        return failing_rows >= self.min_impact_rows

    def _warns(self, metrics: dict[str, float], failing_rows: int) -> bool:
        return failing_rows > 0


@dataclass(frozen=True)
class AbnormalPartial:
    """One target's state over partitions of a batch: usable and failing rows, the flags' counts and
    summary, the first failing ids, the impact sums of failing against passing rows, or the problem
    that stops the target. `metrics` and `details` are what the flags reported that does not add up
    (a check whose partitions merge has none)."""

    usable: int = 0
    failing: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    ids: list[Any] = field(default_factory=list)
    impact: ImpactSums | None = None
    problem: tuple[str, str] | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    summary: Summary | None = None

    @classmethod
    def found(cls, flags: Flags, ids: list[Any], impact_rows: ImpactRows) -> AbnormalPartial:
        """The state of what `flags` found, `ids` naming the first failing rows."""
        usable, failing = int(np.count_nonzero(flags.usable)), int(np.count_nonzero(flags.failing))
        groups = RowGroups(
            flags.failing.astype(np.uint8), [False, True], np.array([len(flags.failing) - failing, failing])
        )
        impact = ImpactSums.from_groups(impact_rows, groups)
        return cls(
            usable,
            failing,
            flags.counts,
            ids,
            impact,
            metrics=flags.metrics,
            details=flags.details,
            summary=flags.summary,
        )

    def merge(self, other: AbnormalPartial, cap: int) -> AbnormalPartial:
        """State of the union of two partitions (this one first); the first problem met wins."""
        if self.problem or other.problem:
            return AbnormalPartial(problem=self.problem or other.problem)
        return AbnormalPartial(
            usable=self.usable + other.usable,
            failing=self.failing + other.failing,
            counts={
                k: self.counts.get(k, 0) + other.counts.get(k, 0) for k in {**self.counts, **other.counts}
            },
            ids=(self.ids + other.ids)[: max(cap, 0)],
            impact=self.impact.merge(other.impact) if self.impact and other.impact else None,
            summary=self.summary.merge(other.summary) if self.summary and other.summary else None,
        )


@dataclass(kw_only=True)
class RateCheck(AbnormalCheck):
    """An abnormal check graded on evidence: `failing_rate_increase`, the batch's failing rate minus
    the rate a clean batch shows, on its confidence bound. Each check's profile holds `clean`, the
    reference's (expected) abnormal rows and the rows they are counted over; the model impact of the
    failing rows is reported, not graded (it compares rows within the batch, not a change)."""

    declared_metrics: ClassVar[dict[str, Metric]] = {
        FAILING_RATE_INCREASE: rate_metric("estimated from the reference")
    }
    min_verdict_rows: ClassVar[int] = MIN_RATE_ROWS

    def _evidence(
        self, profile: dict[str, Any], usable_rows: int, failing_rows: int, details: dict[str, Any]
    ) -> dict[str, Evidence]:
        """The failing rate's increase over the clean rate (which `details.clean_rate` reports)."""
        hits, rows = profile["clean"]
        details["clean_rate"] = hits / rows
        return {FAILING_RATE_INCREASE: rate_change(failing_rows, usable_rows, hits, rows)}


def first_failing_ids(frame: pd.DataFrame, failing: np.ndarray, columns: Columns, cap: int) -> list[Any]:
    """The first `cap` failing row ids (the `id` role column if present, else the index)."""
    positions = np.flatnonzero(failing)
    ids = frame[columns.id] if columns.id and columns.id in frame.columns else frame.index
    return ids.take(positions[: max(cap, 0)]).tolist()


# -- value encoding shared by the categorical and string checks -----------------------------------


def member(values: pd.Index | pd.Series, vocabulary: pd.Index) -> np.ndarray:
    """Which `values` are in `vocabulary` (unique), by hash lookup: the cost grows with `values` only."""
    return vocabulary.get_indexer(pd.Index(values)) >= 0


def spread(flags: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per-row booleans from per-distinct-value booleans; null rows (code -1) are False."""
    return np.append(np.asarray(flags, dtype=bool), False)[codes]


def code_flags(
    current: pd.DataFrame, column: str, flag_values: Callable[[pd.Index], Any], top: int = 10
) -> Flags:
    """Flags of one column from a predicate on its distinct values (`flag_values(uniques) -> bools`).

    `details.top_failing_values` lists the most frequent failing values with their row counts.
    """
    codes, uniques = encode(column_of(current, column))
    failing = spread(flag_values(uniques), codes)
    counts = np.bincount(codes[failing], minlength=len(uniques))
    order = np.argsort(-counts, kind="stable")[:top]
    top_values = [[uniques[i], int(counts[i])] for i in order if counts[i] > 0]
    return Flags(failing=failing, usable=codes >= 0, details={"top_failing_values": top_values})


def column_of(frame: pd.DataFrame, column: str) -> pd.Series:
    """The batch column, or a per-target error naming it when it is absent."""
    if column not in frame.columns:
        raise CheckInputError(f"column {column!r} is missing from the batch")
    return frame[column]


def below(values: np.ndarray, threshold: np.ndarray | float) -> np.ndarray:
    """`values < threshold`, strictly, allowing for floating-point rounding (0.02 is not below 0.02)."""
    return values < threshold - THRESHOLD_TOLERANCE * np.maximum(1.0, np.abs(threshold))


def is_text(uniques: pd.Index) -> bool:
    """True when every distinct non-null value is a string."""
    return pd.api.types.infer_dtype(uniques, skipna=True) in ("string", "empty")


def text_values(uniques: pd.Index, column: str) -> pd.Series:
    """Distinct values as a string Series; a per-target error when the batch holds non-strings."""
    if not is_text(uniques):
        kind = pd.api.types.infer_dtype(uniques, skipna=True)
        raise CheckInputError(f"column {column!r} holds {kind} values, not strings")
    return pd.Series(uniques, dtype=str)


# -- nulls and infinite values -------------------------------------------------------------------


def nulls_and_infinities(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per row: is the value null (None, NaN, NaT), and is it -inf or +inf (number columns only)."""
    nulls = values.isna().to_numpy()
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return nulls, np.zeros(len(values), dtype=bool)
    return nulls, np.isinf(values.to_numpy(dtype=float, na_value=np.nan))


@register
@dataclass(kw_only=True)
class NullRate(RateCheck):
    """Nulls and infinite values of each feature and model output against the reference.

    Failing rows are the batch's nulls (None, NaN, NaT) and, in number columns, its -inf and +inf:
    values the model cannot use. Targets are the features and the model outputs (score, prediction,
    class scores), since a null or infinite score is a broken prediction. Graded on
    `null_rate_increase` and `inf_rate_increase`, the batch's rates minus the reference's, on their
    confidence bounds; the model impact of the failing rows is reported. `details.null_rate` is the
    batch's share of null rows (`metrics.reference_null_rate` the reference's).
    """

    name: ClassVar[str] = "abnormal.nulls"
    signature: ClassVar[str | None] = "nulls"
    needs: ClassVar[frozenset[str]] = frozenset({"features"})
    declared_metrics: ClassVar[dict[str, Metric]] = {
        f"{kind}_rate_increase": rate_metric(f"the reference's {kind} rate") for kind in ("null", "inf")
    }
    kind: ClassVar[str] = "features"
    counts_only: ClassVar[bool] = True

    def target_columns(self, columns: Columns) -> tuple[str, ...]:
        outputs = [c for c in (columns.score, columns.prediction, *columns.class_scores) if c]
        return tuple(dict.fromkeys([*super().target_columns(columns), *outputs]))

    def _fit_column(self, values: pd.Series, column: str) -> dict[str, float]:
        nulls, infinite = nulls_and_infinities(values)
        return {"null_rate": float(nulls.mean()), "inf_rate": float(infinite.mean()), "rows": len(values)}

    def _flag(self, current: pd.DataFrame, target: str, profile: dict[str, float]) -> Flags:
        nulls, infinite = nulls_and_infinities(column_of(current, target))
        counts = {"null_rows": int(nulls.sum()), "inf_rows": int(infinite.sum())}
        return Flags(failing=nulls | infinite, usable=np.ones(len(nulls), dtype=bool), counts=counts)

    def _counted(
        self, part: AbnormalPartial, profile: dict[str, float], rows: int
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """The rates' increases over the reference's; the batch's null rate in `details.null_rate`."""
        counts = part.counts
        rates = (counts["null_rows"] / rows, counts["inf_rows"] / rows) if rows else (0.0, 0.0)
        metrics = {
            "reference_null_rate": profile["null_rate"],
            "null_rate_increase": rates[0] - profile["null_rate"],
            "reference_inf_rate": profile["inf_rate"],
            "inf_rate_increase": rates[1] - profile["inf_rate"],
        }
        details = {"null_rows": counts["null_rows"], "inf_rows": counts["inf_rows"], "null_rate": rates[0]}
        return metrics, details

    def _evidence(
        self, profile: dict[str, float], usable_rows: int, failing_rows: int, details: dict[str, Any]
    ) -> dict[str, Evidence]:
        reference_rows = int(profile["rows"])
        return {
            f"{kind}_rate_increase": rate_change(
                details[f"{kind}_rows"], usable_rows, profile[f"{kind}_rate"] * reference_rows, reference_rows
            )
            for kind in ("null", "inf")
        }
