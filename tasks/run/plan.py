"""The checks of a run, planned once from the spec, and the one way every evaluation goes through
them: whole batch, gathered partitions, late-labelled rows and `evaluate` on two tables each supply a
frame (an `Evaluation`); the plan turns its checks into jobs with their limits and the driver fans
them out, so isolation, time and memory limits and the mapping of exceptions to results live in one
place (`CheckJob`, `checks.runner`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from driftline.checks import registry
from driftline.checks.base import Check
from driftline.checks.catalog_index import DATA_SUMMARY
from driftline.checks.columns import Columns
from driftline.checks.result import CheckResult
from driftline.checks.runner import missing_role
from driftline.tasks.config.spec import CheckSpec, ExecutionSpec, MonitorSpec
from driftline.tasks.references.model import with_model
from driftline.tasks.references.profiles import ProfileCache
from driftline.tasks.references.reference import LazyReference
from driftline.tasks.run.driver import CheckJob, Driver
from driftline.tasks.run.steps import evaluate_check
from driftline.tasks.views.attribution_plots import write_figures

SCHEMA_CHECK = "schema.columns"
WAITING_FOR_LABELS = "the batch has no labels yet: this check runs when they land (see `labels:`)"
log = logging.getLogger(__name__)

Evaluate = Callable[[Check], list[CheckResult]]


def waiting_for_labels(check: Check, rows: int) -> list[CheckResult]:
    """The result of a label check on a batch whose labels have not landed: skipped until they do."""
    return [CheckResult.skipped(check.name, "*", WAITING_FOR_LABELS, rows=rows)]


@dataclass(frozen=True)
class PlannedCheck:
    """One check of the plan: configured, named for an orchestrator's UI, with its time limit."""

    check: Check
    label: str
    timeout_s: float | None = None


def check_label(check: Check, entry: CheckSpec | None) -> str:
    """The name a check's task carries in an orchestrator's UI: the check and its targets when listed."""
    features = entry.features if entry is not None else None
    return f"{check.name}[{','.join(features)}]" if features else check.name


@dataclass(frozen=True)
class CheckPlan:
    """The checks of a run in order, each with its limits, and how they execute."""

    checks: tuple[PlannedCheck, ...]
    execution: ExecutionSpec = field(default_factory=ExecutionSpec)

    @classmethod
    def from_spec(cls, spec: MonitorSpec, model: Any = None, arrive_later: str | None = None) -> CheckPlan:
        """The schema check first (unless listed; told that the `arrive_later` label lands later), the
        data summary after it (unless listed or the spec turns it off), then the spec's checks in order;
        checks that call the model themselves are given `model`."""
        entries: list[tuple[str, dict[str, Any], CheckSpec | None]] = [
            (e.check, e.check_params(), e) for e in spec.checks
        ]
        listed = {name for name, _, _ in entries}
        if SCHEMA_CHECK not in listed:
            entries.insert(0, (SCHEMA_CHECK, {"arrive_later": [arrive_later]} if arrive_later else {}, None))
        if spec.summary and DATA_SUMMARY not in listed:
            after_schema = 1 + next(i for i, (name, _, _) in enumerate(entries) if name == SCHEMA_CHECK)
            entries.insert(after_schema, (DATA_SUMMARY, {}, None))
        planned = []
        for name, params, entry in entries:
            check = with_model(registry.create(name, params, spec.base_dir), model)
            timeout = entry.timeout_s if entry is not None and entry.timeout_s else None
            planned.append(PlannedCheck(check, check_label(check, entry), timeout))
        return cls(tuple(planned), spec.execution)

    @classmethod
    def of(cls, checks: Iterable[Check], execution: ExecutionSpec | None = None) -> CheckPlan:
        """A plan of configured checks (no spec), e.g. for `evaluate` on two tables."""
        return cls(tuple(PlannedCheck(c, c.name) for c in checks), execution or ExecutionSpec())

    def select(self, keep: Callable[[Check], bool]) -> CheckPlan:
        """The plan narrowed to the checks `keep` accepts, in the same order."""
        return replace(self, checks=tuple(p for p in self.checks if keep(p.check)))

    def time_limit(self, planned: PlannedCheck) -> float:
        """A check's time limit: its own `timeout_s`, else the run's."""
        return planned.timeout_s or self.execution.timeout_s

    def jobs(self, evaluate: Evaluate) -> list[CheckJob]:
        """One job per check, evaluating it with `evaluate` under the plan's isolation and limits."""
        execution = self.execution
        return [
            CheckJob(
                check=p.check,
                label=p.label,
                evaluate=partial(evaluate, p.check),
                isolation=execution.isolation,
                timeout_s=self.time_limit(p),
                memory_mb=execution.memory_mb,
            )
            for p in self.checks
        ]

    def run(self, driver: Driver, evaluate: Evaluate) -> list[CheckResult]:
        """Every check's results in plan order, fanned out by the driver."""
        if not self.checks:
            return []
        outcomes = driver.fan_out(self.jobs(evaluate), self.execution.workers)
        return [r for outcome in outcomes for r in outcome]


@dataclass(frozen=True)
class Evaluation:
    """One frame every check of a run is evaluated on against the reference (a whole batch, gathered
    partitions or late-labelled rows), and where its figures go (none when `figure_dir` is None).
    When the batch's labels land later (`awaited`), the checks that need them wait for them."""

    current: pd.DataFrame
    columns: Columns
    reference: pd.DataFrame
    ref_hash: str
    cache: ProfileCache
    figure_dir: Path | None = None
    awaited: bool = False
    rows: int | None = None

    def fitting(self, plan: CheckPlan) -> list[Check]:
        """The plan's checks whose evaluation fits (or looks up) a profile: their roles are set and
        they are not waiting for labels."""
        return [
            p.check
            for p in plan.checks
            if missing_role(p.check, self.columns) is None and not (self.awaited and "label" in p.check.needs)
        ]

    def read_reference_if_fitting(self, plan: CheckPlan) -> None:
        """Read a lazy reference now, once, when a profile of the plan is still to be fitted, so the
        workers share the rows instead of each reading them."""
        reference, columns = self.reference, self.columns
        if isinstance(reference, LazyReference) and not all(
            self.cache.has(c, columns, self.ref_hash) for c in self.fitting(plan)
        ):
            reference.read()

    def __call__(self, check: Check) -> list[CheckResult]:
        """One check's results, its figures drawn in the same worker (in parallel with the other
        checks); a figure that cannot be drawn never costs a result."""
        if self.awaited and "label" in check.needs:
            return waiting_for_labels(check, len(self.current) if self.rows is None else self.rows)
        results = evaluate_check(check, self.current, self.columns, self.reference, self.ref_hash, self.cache)
        if self.figure_dir is not None:
            try:
                write_figures(results, self.figure_dir)
            except Exception as exc:
                log.warning("figures of %s not drawn: %s: %s", check.name, type(exc).__name__, exc)
        return results
