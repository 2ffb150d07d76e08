"""The check interface: configured once, fitted on the reference to a profile, evaluated per batch."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError
from driftline.checks.evidence import Evidence, grade_results
from driftline.checks.result import CheckResult, severity_for, worst_severity
from driftline.checks.roles import ROLES

# The pictures the report draws (`Metric.figure`): reference vs batch distribution, subsets beside
# their baselines, calibration curves, and the attribution's slice tree and pair cross matrix.
FIGURES = ("distribution", "subsets", "calibration", "tree", "matrix")

# Fault signatures a check's evidence carries (`Check.signature`), read by `tasks.views.diagnosis`: a column
# gone null, a batch outside the reference range (unit change, sign flip), new categories.
SIGNATURES = ("nulls", "range", "unseen")
# (batch metric, reference metric, batch label): the levels a result reports beside its change, the
# first pair present shown (`Check.level_pairs`).
LEVEL_PAIRS: tuple[tuple[str, str, str], ...] = (
    ("estimated", "estimated_reference", "estimate"),
    ("current", "reference", "batch"),
    ("calibration_error", "reference_calibration_error", "batch"),
    ("reconstruction_error", "reference_error", "batch"),
    ("mean_attribution", "reference_mean_attribution", "batch"),
)


@dataclass(frozen=True)
class Metric:
    """A metric as its check declares it, once: grading, the report and alert rules read this.
    `change` says how its change against the reference is measured, `uncertainty` how its confidence
    bound is computed (see `checks.evidence`), `figure` which picture the report draws for a result
    carrying it (None: none). A metric without thresholds is reported, not graded: it is declared for
    its direction. A `divergence` (PSI, Jensen–Shannon) compares two distributions and
    has no sign. An `audit` grades a level of the batch alone, not a change against the reference,
    so its evidence does not accumulate over batches (`checks.sequential`)."""

    thresholds: tuple[float, ...]
    higher_is_worse: bool = True
    change: str = "its value, against absolute thresholds"
    uncertainty: str = "none: graded on its value"
    figure: str | None = None
    audit: bool = False
    divergence: bool = False  # a divergence between two distributions: never negative, shown unsigned

    def __post_init__(self) -> None:
        if self.figure is not None and self.figure not in FIGURES:
            raise ValueError(f"figure {self.figure!r} is not one the report draws: {FIGURES}")


@dataclass(kw_only=True)
class Check(ABC):
    """Base class of every catalog check.

    Subclasses are keyword-only dataclasses whose fields are the check's parameters. `fit` turns the
    reference into a small picklable profile (computed once per reference snapshot and cached by the
    caller); `evaluate` compares one batch with that profile in one vectorised pass. Checks never
    import Prefect, SQLAlchemy or Slack. Raise `CheckInputError` for unusable data and
    `NotApplicable` when the check does not apply; the runner turns both into results.
    """

    name: ClassVar[str]
    family: ClassVar[str]
    # What its results are about, one of `ROLES`: model-level roles rank before the features.
    role: ClassVar[str] = "other"
    # For an `estimate`: the check whose realised value it estimates, kept beside it when labels land.
    estimates: ClassVar[str | None] = None
    # What its levels are when not the target's own name (None: the target for performance and
    # estimates, the level's metric otherwise), and the (batch, reference, label) metric pairs it reports.
    subject: ClassVar[str | None] = None
    level_pairs: ClassVar[tuple[tuple[str, str, str], ...]] = LEVEL_PAIRS
    # The fault signature its evidence carries, one of `SIGNATURES` (None: none).
    signature: ClassVar[str | None] = None
    needs: ClassVar[frozenset[str]] = frozenset()
    # The metrics, declared once (the graded ones with their thresholds); the two below are read
    # from it.
    declared_metrics: ClassVar[Mapping[str, Metric]] = {}
    default_thresholds: ClassVar[Mapping[str, tuple[float, ...]]] = {}
    lower_is_worse: ClassVar[frozenset[str]] = frozenset()
    # Below this many batch rows no verdict is possible: the check is `skipped`, naming the minimum.
    min_verdict_rows: ClassVar[int] = 1
    # Targets are features (or feature pairs): a feature missing from the data becomes one error
    # result of its own while the runner still evaluates the others.
    per_feature: ClassVar[bool] = False
    # Slow to start (a heavy optional dependency imported when it runs): a run starts it before the
    # others, so it overlaps them instead of finishing last.
    slow_start: ClassVar[bool] = False
    # Modules its evaluation imports (itself or through a library) that a plain run has not loaded:
    # a run imports the ones two or more of its checks name before its workers fork, so the workers
    # share one copy instead of importing it each (`tasks.run.driver.import_shared`).
    worker_imports: ClassVar[tuple[str, ...]] = ()

    thresholds: dict[str, list[float]] | None = None
    features: list[str] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Check the class's declarations and derive `default_thresholds` and `lower_is_worse` from
        `declared_metrics` (thresholds of the graded ones, directions of all), so they stay one fact."""
        super().__init_subclass__(**kwargs)
        for attribute in ("default_thresholds", "lower_is_worse"):
            if attribute in cls.__dict__:
                raise TypeError(f"{cls.__qualname__}: declare metrics in `declared_metrics`, not {attribute}")
        if cls.role not in ROLES:
            raise TypeError(f"{cls.__qualname__}: role {cls.role!r} is not one of {sorted(ROLES)}")
        if (cls.estimates is not None) != (cls.role == "estimate"):
            raise TypeError(f"{cls.__qualname__}: an `estimate` names the check it `estimates`, and only it")
        if cls.signature is not None and cls.signature not in SIGNATURES:
            raise TypeError(f"{cls.__qualname__}: signature {cls.signature!r} is not one of {SIGNATURES}")
        cls.default_thresholds = {m: d.thresholds for m, d in cls.declared_metrics.items() if d.thresholds}
        cls.lower_is_worse = frozenset(m for m, d in cls.declared_metrics.items() if not d.higher_is_worse)

    def __post_init__(self) -> None:
        if isinstance(self.features, str):  # `features=AGEP` on the command line: one feature, not letters
            self.features = [self.features]
        unknown = sorted(set(self.thresholds or {}) - set(self.default_thresholds))
        if unknown:
            raise CheckInputError(
                f"{self.name}: no threshold for metric(s) {unknown}; "
                f"thresholded metrics: {sorted(self.default_thresholds) or 'none'}"
            )
        for metric, values in (self.thresholds or {}).items():
            if isinstance(values, (int, float)):
                self.thresholds[metric] = [float(values)]
            elif not 1 <= len(values) <= 3:
                raise CheckInputError(f"{self.name}: thresholds.{metric} takes one to three numbers")

    @abstractmethod
    def fit(self, reference: pd.DataFrame, columns: Columns) -> Any:
        """Summarise the reference into the profile `evaluate` needs."""

    @abstractmethod
    def evaluate(self, current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
        """Compare one batch with the fitted profile; one result per target."""

    def slice_definitions(self, profile: Any) -> Mapping[str, Mapping[str, Any]]:
        """Subset definitions per feature whose batch codes a run may compute once and share between
        checks (`checks.slice_codes`); none unless the check cuts features into subsets."""
        return {}

    def run(self, reference: pd.DataFrame, current: pd.DataFrame, columns: Columns) -> list[CheckResult]:
        """Fit and evaluate in one call (no caching, no error handling: see `driftline.checks.runner`)."""
        return self.evaluate(current, self.fit(reference, columns), columns)

    @classmethod
    def summary(cls) -> str:
        """First paragraph of the class docstring, on one line (a sentence may wrap over several)."""
        first = (cls.__doc__ or "").strip().split("\n\n", 1)[0]
        return " ".join(first.split())

    @classmethod
    def parameters(cls) -> dict[str, Any]:
        """Parameter names and their defaults."""
        out = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
            else:
                out[f.name] = None
        return out

    def params(self) -> dict[str, Any]:
        """This instance's parameter values (used in cache keys and run records)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def effective_thresholds(self) -> dict[str, list[float]]:
        """Default thresholds with the user's overrides applied."""
        merged = {k: list(v) for k, v in self.default_thresholds.items()}
        merged.update({k: list(v) for k, v in (self.thresholds or {}).items()})
        return merged

    def grade(self, metrics: Mapping[str, float | None]) -> str:
        """Worst severity over the thresholded metrics present in `metrics`."""
        thresholds = self.effective_thresholds()
        return worst_severity(
            severity_for(metrics.get(m), t, lower_is_worse=m in self.lower_is_worse)
            for m, t in thresholds.items()
            if m in metrics
        )

    def result(
        self,
        target: str,
        metrics: Mapping[str, float | None],
        *,
        rows: int | None,
        failing_rows: int | None = None,
        model_impact: float | None = None,
        details: Mapping[str, Any] | None = None,
        severity: str | None = None,
        evidence: Mapping[str, Evidence] | None = None,
    ) -> CheckResult:
        """An `ok` result graded with this check's thresholds (or with an explicit `severity`); with
        `evidence`, graded on the confidence bounds of the metrics it covers (`checks.evidence`)."""
        thresholds = {m: t for m, t in self.effective_thresholds().items() if m in metrics}
        result = CheckResult(
            check=self.name,
            target=target,
            severity="none" if evidence else self.grade(metrics) if severity is None else severity,
            metrics=dict(metrics),
            thresholds=thresholds,
            rows=rows,
            failing_rows=failing_rows,
            model_impact=model_impact,
            details=dict(details or {}),
            evidence={m: e.to_dict() for m, e in (evidence or {}).items()},
        )
        return grade_results([result])[0] if evidence else result

    def feature_columns(self, columns: Columns, kind: str = "features") -> tuple[str, ...]:
        """The features of one kind (numeric, categorical, text, features), narrowed by `features`."""
        selected = columns.restrict(self.features) if self.features else columns
        return getattr(selected, kind)
