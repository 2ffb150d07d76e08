"""`evaluate`: checks on a reference and a current table, outside any monitor, through the same check
plan and driver as a monitor run (`driftline evaluate` and the Airflow check operator call it).

`evaluate_files` does the same on two Parquet files without holding either: feature drift is evaluated
a group of columns at a time, each group a job of the plan whose worker reads only its columns, so that
a table of a thousand columns costs (workers × group) columns of memory, not the table.

With a model (an estimator or its `module:attribute` import path), the reference and the current table
are scored before any check runs, as a monitor run scores its reference and batch
(`tasks/references/model.py`): the model fills the prediction and score roles the data do not carry,
and checks that call the model are given it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from driftline.checks import registry
from driftline.checks.base import Check
from driftline.checks.columns import Columns, infer_columns, infer_task
from driftline.checks.drift import CategoricalDrift, NumericDrift
from driftline.checks.result import CheckResult
from driftline.checks.runner import Screened, feature_targets, screen
from driftline.tasks.alerts.config import AlertConfig
from driftline.tasks.config.spec import ExecutionSpec
from driftline.tasks.references.model import (
    model_input_columns,
    output_columns,
    resolved_model,
    roles_for_model,
    score_frame,
    with_model,
)
from driftline.tasks.references.profiles import ProfileCache
from driftline.tasks.run.driver import CheckJob, Driver
from driftline.tasks.run.plan import CheckPlan, Evaluation, PlannedCheck
from driftline.tasks.run.steps import evaluate_check, grade_run
from driftline.tasks.sources import parquet_shape, read_parquet_columns, read_parquet_head, read_table

# The reference's name in the profile cache of one call (kept in memory: nothing is written).
REFERENCE_KEY = "evaluate"
# Features a worker of `evaluate_files` reads from each file at a time.
GROUP_COLUMNS = 50
# Rows of the reference file its column roles are inferred from (the label's task from all of them).
ROLE_HEAD_ROWS = 10_000
# Checks evaluated in column groups: each target is one feature, fitted, counted and compared on its
# own column, so the results of groups of features are the results on all of them, in feature order.
COLUMN_GROUP_CHECKS = (NumericDrift, CategoricalDrift)

# Told (groups done, groups in all) as column groups finish.
Progress = Callable[[int, int], None]


def evaluate(
    checks: Sequence[str | Check],
    reference: pd.DataFrame,
    current: pd.DataFrame,
    *,
    params: Mapping[str, Any] | None = None,
    columns: Columns | Mapping[str, Any] | None = None,
    execution: ExecutionSpec | None = None,
    confidence: float = AlertConfig().confidence,
    base_dir: Path | None = None,
    driver: Driver | None = None,
    model: Any = None,
) -> list[CheckResult]:
    """Every check's results on `current` against `reference`, graded together at `confidence`.

    `checks` are configured checks, catalog names or `module:Class` paths (looked up in `base_dir`
    first), the named ones created with `params`; `columns` are the roles, or the roles given from
    which the others are inferred from the reference. Each check runs as in a monitor run: isolated
    and limited as `execution` says (by default in a worker process with a 600 s limit), bad input
    and failures turned into `skipped` or `error` results. An unknown check or parameter raises
    `CheckInputError`. `model` (an estimator, or its `module:attribute` path looked up in `base_dir`
    first) scores both tables first; one that cannot be loaded or score them raises `ModelError`.
    """
    model = resolved_model(model, base_dir)
    configured = configured_checks(checks, params, base_dir, model)
    roles = columns if isinstance(columns, Columns) else inferred_roles(reference, columns, model)
    if model is not None:
        reference, _ = score_frame(model, reference, roles)
        current, roles = score_frame(model, current, roles)
    outcomes = frame_outcomes(configured, reference, current, roles, execution, driver or Driver())
    return grade_run([r for outcome in outcomes for r in outcome], confidence)


def evaluate_files(
    checks: Sequence[str | Check],
    reference_path: Path,
    current_path: Path,
    *,
    params: Mapping[str, Any] | None = None,
    columns: Columns | Mapping[str, Any] | None = None,
    execution: ExecutionSpec | None = None,
    confidence: float = AlertConfig().confidence,
    base_dir: Path | None = None,
    driver: Driver | None = None,
    group_columns: int = GROUP_COLUMNS,
    progress: Progress | None = None,
    model: Any = None,
) -> list[CheckResult]:
    """`evaluate` on two Parquet files, in memory bounded by the columns the workers read at a time.

    Roles not given are inferred from the reference's first `ROLE_HEAD_ROWS` rows (the task from its
    whole label column). Feature drift checks (`COLUMN_GROUP_CHECKS`) are evaluated `group_columns`
    features at a time, each group a job whose worker reads its features and the role columns from
    both files; `progress` is told after each round of `execution.workers` groups when there are more.
    The other checks are evaluated on the whole files, read once all groups are done. A `model` scores
    both files first, read in the columns it takes; its outputs are held beside the files and given to
    every check with the columns it reads. The results are `evaluate`'s on the two tables.
    """
    model = resolved_model(model, base_dir)
    configured = configured_checks(checks, params, base_dir, model)
    files = ParquetPair.of(reference_path, current_path)
    roles = columns if isinstance(columns, Columns) else files.roles(columns, model)
    if model is not None:
        files, roles = files.scored(model, roles)
    driver = driver or Driver()
    groups = ColumnGroups(files, roles, execution or ExecutionSpec(), group_columns)
    grouped = iter(groups.results([c for c in configured if in_column_groups(c)], driver, progress))
    whole = iter(files.outcomes([c for c in configured if not in_column_groups(c)], roles, execution, driver))
    outcomes = [next(grouped if in_column_groups(c) else whole) for c in configured]
    return grade_run([r for outcome in outcomes for r in outcome], confidence)


def in_column_groups(check: Check) -> bool:
    """Whether `evaluate_files` evaluates the check a group of features at a time."""
    return isinstance(check, COLUMN_GROUP_CHECKS)


def configured_checks(
    checks: Sequence[str | Check], params: Mapping[str, Any] | None, base_dir: Path | None, model: Any = None
) -> list[Check]:
    """The checks as given, the named ones created with `params` (an unknown one raises), each given
    `model` when it calls the model itself."""
    return [
        with_model(c if isinstance(c, Check) else registry.create(c, dict(params or {}), base_dir), model)
        for c in checks
    ]


def inferred_roles(frame: pd.DataFrame, given: Mapping[str, Any] | None, model: Any) -> Columns:
    """Roles `given`, the others inferred from `frame`; with a model, a declared prediction or score
    column the frame lacks is the model's to fill."""
    return roles_for_model(frame, given) if model is not None else infer_columns(frame, given)


def frame_outcomes(
    checks: Sequence[Check],
    reference: pd.DataFrame,
    current: pd.DataFrame,
    roles: Columns,
    execution: ExecutionSpec | None,
    driver: Driver,
) -> list[list[CheckResult]]:
    """Each check's ungraded results on two frames, one job of the plan a check, fanned out by the
    driver."""
    plan = CheckPlan.of(checks, execution)
    evaluation = Evaluation(current, roles, reference, REFERENCE_KEY, ProfileCache(None))
    return driver.fan_out(plan.jobs(evaluation), plan.execution.workers) if checks else []


@dataclass(frozen=True)
class ParquetPair:
    """The reference and current Parquet files of an evaluation, known from their footers (columns,
    the batch's rows) and read a few columns at a time."""

    reference: Path
    current: Path
    reference_columns: tuple[str, ...]
    current_columns: tuple[str, ...]
    rows: int
    # The model's output columns for every row of (the reference, the current file), when scored.
    outputs: tuple[pd.DataFrame, pd.DataFrame] | None = field(default=None, compare=False)

    @classmethod
    def of(cls, reference: Path, current: Path) -> ParquetPair:
        """Both files' columns and the current file's rows; a missing or unreadable one is a
        `SourceError` naming it."""
        ref_empty, _ = parquet_shape(reference)
        cur_empty, rows = parquet_shape(current)
        return cls(reference, current, tuple(ref_empty.columns), tuple(cur_empty.columns), rows)

    def roles(self, given: Mapping[str, Any] | None, model: Any = None) -> Columns:
        """Roles `given`, the others inferred from the reference's head (see `inferred_roles`); an
        inferred task from the whole label column (a head may miss a class)."""
        roles = inferred_roles(read_parquet_head(self.reference, ROLE_HEAD_ROWS), given, model)
        if roles.label is None or roles.task is None or "task" in (given or {}):
            return roles
        label = read_parquet_columns(self.reference, [roles.label])[roles.label]
        return dataclasses.replace(roles, task=infer_task(label))

    def scored(self, model: Any, roles: Columns) -> tuple[ParquetPair, Columns]:
        """The pair holding the model's outputs for both files (each read in the columns the model
        takes and the output columns it has), and the roles naming them, as `score_frame` gives."""
        names = [*model_input_columns(model, roles), *output_columns(roles).values()]
        read_reference, read_current = self.read(names)
        reference, _ = score_frame(model, read_reference, roles)
        current, roles = score_frame(model, read_current, roles)
        outputs = (
            reference.drop(columns=read_reference.columns),
            current.drop(columns=read_current.columns),
        )
        return dataclasses.replace(self, outputs=outputs), roles

    def empty_frames(self) -> dict[str, pd.DataFrame]:
        """Row-less frames with each table's columns (the model's included), to screen a check against
        (`checks.runner.screen`)."""
        reference_outputs, current_outputs = self._output_names()
        return {
            "batch": pd.DataFrame(columns=[*self.current_columns, *current_outputs]),
            "reference": pd.DataFrame(columns=[*self.reference_columns, *reference_outputs]),
        }

    def _output_names(self) -> tuple[list[str], list[str]]:
        """The model's output columns of (the reference, the current file); none when not scored."""
        if self.outputs is None:
            return [], []
        return [str(c) for c in self.outputs[0].columns], [str(c) for c in self.outputs[1].columns]

    def outcomes(
        self, checks: Sequence[Check], roles: Columns, execution: ExecutionSpec | None, driver: Driver
    ) -> list[list[CheckResult]]:
        """Each check's ungraded results on the whole files, read only when there is a check."""
        if not checks:
            return []
        limits = (execution or ExecutionSpec()).read_limits
        reference, current = read_table(self.reference, limits), read_table(self.current, limits)
        if self.outputs is not None:
            reference, current = _with(reference, self.outputs[0]), _with(current, self.outputs[1])
        return frame_outcomes(checks, reference, current, roles, execution, driver)

    def read(self, names: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(reference, current): the columns `names` that each file has, and the model's output
        columns among `names` once scored."""
        reference = read_parquet_columns(self.reference, [n for n in names if n in self.reference_columns])
        current = read_parquet_columns(self.current, [n for n in names if n in self.current_columns])
        if self.outputs is None:
            return reference, current
        reference_outputs, current_outputs = self.outputs
        return (
            _with(reference, reference_outputs[[c for c in reference_outputs.columns if c in names]]),
            _with(current, current_outputs[[c for c in current_outputs.columns if c in names]]),
        )


def _with(frame: pd.DataFrame, outputs: pd.DataFrame) -> pd.DataFrame:
    """`frame`, just read, with the model's output columns set beside its own, row for row (in place:
    a copy of a whole file would double its memory)."""
    for column in outputs.columns:
        frame[column] = outputs[column].to_numpy()
    return frame


@dataclass(frozen=True)
class GroupEvaluation:
    """A check narrowed to a group of features, evaluated in its worker on those features and the role
    columns, read from both files there."""

    files: ParquetPair
    columns: Columns

    def __call__(self, check: Check) -> list[CheckResult]:
        names = dict.fromkeys([*feature_targets(check, self.columns), *self.columns.role_columns()])
        reference, current = self.files.read(list(names))
        return evaluate_check(check, current, self.columns, reference, REFERENCE_KEY, ProfileCache(None))


@dataclass(frozen=True)
class ColumnGroups:
    """Checks evaluated a group of features at a time on two Parquet files, the groups of every check
    fanned out together by the driver."""

    files: ParquetPair
    roles: Columns
    execution: ExecutionSpec
    group_columns: int

    def results(
        self, checks: Sequence[Check], driver: Driver, progress: Progress | None
    ) -> list[list[CheckResult]]:
        """Each check's ungraded results, as `checks.runner.run_check` gives them on the whole files."""
        screened = [screen(c, self.roles, self.files.empty_frames(), self.files.rows) for c in checks]
        jobs = [self.jobs(s) if isinstance(s, Screened) else [] for s in screened]
        outcomes = iter(_fanned_out(driver, [j for js in jobs for j in js], self.execution.workers, progress))
        return [
            s.completed(_joined([next(outcomes) for _ in js])) if isinstance(s, Screened) else s
            for s, js in zip(screened, jobs, strict=True)
        ]

    def jobs(self, screened: Screened) -> list[CheckJob]:
        """One job of the plan per group of the screened check's features."""
        check, names = screened.check, feature_targets(screened.check, screened.columns)
        groups = [names[i : i + self.group_columns] for i in range(0, len(names), self.group_columns)]
        planned = tuple(
            PlannedCheck(dataclasses.replace(check, features=g), f"{check.name}[{g[0]}..{g[-1]}]")
            for g in groups
        )
        return CheckPlan(planned, self.execution).jobs(GroupEvaluation(self.files, screened.columns))


def _fanned_out(
    driver: Driver, jobs: list[CheckJob], workers: int, progress: Progress | None
) -> list[list[CheckResult]]:
    """Every job's results in order; with `progress` and more jobs than workers, fanned out in rounds
    of `workers` jobs, `progress` told after each."""
    if progress is None or len(jobs) <= workers:
        return driver.fan_out(jobs, workers) if jobs else []
    outcomes: list[list[CheckResult]] = []
    for start in range(0, len(jobs), workers):
        outcomes += driver.fan_out(jobs[start : start + workers], workers)
        progress(len(outcomes), len(jobs))
    return outcomes


def _joined(outcomes: list[list[CheckResult]]) -> list[CheckResult]:
    """One check's results over its groups, in order; a result about the whole check that several
    groups gave alike (an empty reference, a failure) kept once."""
    joined: list[CheckResult] = []
    for result in (r for outcome in outcomes for r in outcome):
        if result.target != "*" or result not in joined:
            joined.append(result)
    return joined
