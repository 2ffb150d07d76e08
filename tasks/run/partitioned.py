"""A monitor run over a batch stored as Parquet partitions, as one Parquet file read by row groups, or
read from SQL in pages of a key column: checks that merge are evaluated one partition per task and their
partial states merged, so no process ever holds the whole batch.

Mergeable checks (`checks.mergeable`) compute a small state per partition wherever the driver maps
partitions (a process pool, a Dask cluster, Prefect tasks); the states are merged in partition order
and turned into the results `evaluate` gives on the whole batch. The schema check reads the
partitions' schemas only. Any other check is evaluated on the gathered batch, through the run's check
plan and driver like a whole batch's checks (isolated, with their limits), when it has at most
`gather_rows` rows, and is otherwise `skipped` with the reason. The run is then stored, alerted,
retrained and reported through the same steps as `run_monitor`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.mergeable import MergeMethods, merge_methods, merge_obstacle
from driftline.checks.result import CheckResult
from driftline.checks.runner import Screened, failure_result, fitted_profile, missing_role, screen
from driftline.tasks.config.spec import MonitorSpec, SpecError, SqlSource
from driftline.tasks.references.profiles import ProfileCache
from driftline.tasks.references.reference import scored
from driftline.tasks.retraining.actions import Retraining
from driftline.tasks.run.context import GATHER_ROWS, RunContext, RunOptions
from driftline.tasks.run.driver import Driver
from driftline.tasks.run.isolation import may_fork_workers, run_isolated
from driftline.tasks.run.pipeline import (
    Ran,
    RunSummary,
    awaited_label,
    conclude_run,
    prepare_run_reference,
    report_dir,
    tracked_run,
)
from driftline.tasks.run.plan import SCHEMA_CHECK, CheckPlan, Evaluation, PlannedCheck, waiting_for_labels
from driftline.tasks.run.sql_pages import SqlPage, plan_sql_pages
from driftline.tasks.run.steps import require_reference
from driftline.tasks.sources import (
    FileSource,
    QuerySource,
    SourceError,
    batch_file,
    batch_partitions,
    is_parquet_file,
    is_partitioned,
    open_source,
    partitions_time,
    read_table,
    sql_window,
    storage,
)
from driftline.tasks.sources.storage import masked
from driftline.tasks.sources.tables import parquet_input
from driftline.tasks.tools.safe_text import first_line
from driftline.tasks.views.attribution_plots import write_figures

NOT_SUPPORTED = "not supported on partitioned batches"
# Partition states held before they are merged into the running state.
MERGE_EVERY = 8
# Rows a part of one Parquet file bundles from consecutive row groups (a larger group stays whole):
# pyarrow's default row group, so a file written with the defaults is read one row group a part.
PART_ROWS = 1 << 20


@dataclass(frozen=True)
class Partition:
    """One Parquet file of a batch: its path, the batch position of its first row, its row count."""

    path: str
    offset: int
    rows: int

    @property
    def name(self) -> str:
        """The partition as it is named in errors."""
        return self.path

    def read(self) -> pd.DataFrame:
        """The partition's rows."""
        return read_table(self.path)


@dataclass(frozen=True)
class RowGroups:
    """Consecutive row groups [first, stop) of one Parquet file: the batch position of its first row
    and its row count."""

    path: str
    first: int
    stop: int
    offset: int
    rows: int

    @property
    def name(self) -> str:
        """The part as it is named in errors: `file.parquet[row groups 3-5]`."""
        count = self.stop - self.first
        if count > 1:
            return f"{self.path}[row groups {self.first}-{self.stop - 1}]"
        return f"{self.path}[row group {self.first}]" if count else f"{self.path}[no row groups]"

    @storage.retrying
    def read(self) -> pd.DataFrame:
        """The part's rows, reading its row groups only and handing each column to pandas without a
        copy; a row count other than the planned one (the file was rewritten since it was planned) is
        a `SourceError`."""
        try:
            with parquet_input(self.path) as source, pq.ParquetFile(source) as file:
                groups = list(range(self.first, self.stop))
                table = file.read_row_groups(groups, use_pandas_metadata=True)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {masked(first_line(str(exc)))}"
            raise SourceError(f"{masked(self.name)}: cannot read ({reason})") from exc
        if table.num_rows != self.rows:
            raise SourceError(
                f"{masked(self.name)}: read {table.num_rows} rows where {self.rows} were planned; "
                "the file changed while it was read"
            )
        return table.to_pandas(split_blocks=True, self_destruct=True)


# What a partition task reads: a Parquet file, row groups of one Parquet file, or a key range of a SQL
# batch (`sources.SqlPage`). All have `offset`, `rows`, `name` and `read()`.
Part = Partition | RowGroups | SqlPage


@contextmanager
def parquet_footer(path: str) -> Iterator[pq.ParquetFile]:
    """A Parquet file opened on its footer (no data read), local or remote; a missing or unreadable
    file is a `SourceError` naming it."""
    if not storage.exists(path):
        raise SourceError(f"{masked(path)}: no such {'object' if storage.is_remote(path) else 'file'}")
    with parquet_input(path) as source:
        try:
            file = pq.ParquetFile(source)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {masked(first_line(str(exc)))}"
            raise SourceError(f"{masked(path)}: cannot read as Parquet ({reason})") from exc
        with file:
            yield file


@storage.retrying
def plan_row_groups(path: str) -> list[RowGroups]:
    """Parts of one Parquet file from its footer (no data read): consecutive row groups bundled up to
    `PART_ROWS` rows; a larger row group is a part of its own. A file without row groups is one empty
    part, so the run still sees its schema."""
    with parquet_footer(path) as file:
        meta = file.metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    parts, offset = [], 0
    for groups in bundled(sizes, PART_ROWS):
        rows = sum(sizes[i] for i in groups)
        parts.append(RowGroups(str(path), groups.start, groups.stop, offset, rows))
        offset += rows
    return parts


def bundled(sizes: Sequence[int], budget: int) -> list[range]:
    """Consecutive indexes of `sizes` in runs whose sizes add up to at most `budget` (a larger size
    alone); no sizes give one empty run."""
    runs, start, total = [], 0, 0
    for i, size in enumerate(sizes):
        if i > start and total + size > budget:
            runs.append(range(start, i))
            start, total = i, 0
        total += size
    runs.append(range(start, len(sizes)))
    return runs


@storage.retrying
def plan_partitions(paths: Sequence[str]) -> list[Partition]:
    """Row counts and offsets from the Parquet footers (no data read); every partition must have the
    first one's schema, else a `SourceError` names the partition that differs."""
    partitions, offset, first = [], 0, None
    for path in paths:
        with parquet_footer(path) as meta:
            schema = meta.schema_arrow.remove_metadata()
            rows = meta.metadata.num_rows
        if first is None:
            first = (path, schema)
        elif not schema.equals(first[1]):
            raise SourceError(
                f"{masked(path)}: its schema differs from {masked(first[0])}'s; partitions must share one"
            )
        partitions.append(Partition(str(path), offset, rows))
        offset += rows
    return partitions


@storage.retrying
def schema_frame(path: str) -> pd.DataFrame:
    """A zero-row frame with the columns and dtypes of a Parquet file."""
    with parquet_input(path) as source:
        return pq.read_schema(source).empty_table().to_pandas()


@dataclass
class MergeJob:
    """One mergeable check of a run, ready to evaluate per partition: its profile, column roles and
    time limit."""

    key: str
    profile: Any
    screened: Screened
    timeout_s: float

    @property
    def check(self) -> Check:
        return self.screened.check

    @property
    def columns(self) -> Columns:
        return self.screened.columns

    @property
    def merging(self) -> MergeMethods:
        """The check through its merge methods (a job is made only for a check `merge_obstacle` passes)."""
        return merge_methods(self.screened.check)


@dataclass
class PartitionWork:
    """What every partition task needs: the mergeable checks, the model that scores the rows, the
    batch's column dtypes (from its first partition), and the limits of one partition's evaluation
    (the largest time limit of its checks, the run's memory limit; None: no forked worker)."""

    jobs: list[MergeJob]
    roles: Columns
    model: Any = None
    schema: pd.DataFrame | None = None
    timeout_s: float | None = None
    memory_mb: int | None = None


def read_partition(
    partition: Part, roles: Columns, model: Any, schema: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One partition read, given the batch's dtypes where it has only nulls, scored by the model (if
    any) and indexed by its rows' batch positions, so failing row ids are those of the whole batch."""
    frame, _ = scored(model, with_dtypes(partition.read(), schema), roles)
    frame.index = pd.RangeIndex(partition.offset, partition.offset + len(frame))
    return frame


def with_dtypes(frame: pd.DataFrame, schema: pd.DataFrame | None) -> pd.DataFrame:
    """A SQL page whose column is all null comes back as objects: it takes the batch's dtype, as it
    has in a read of the whole batch (a Parquet partition already has the shared schema)."""
    if schema is None:
        return frame
    for column in frame.columns.intersection(schema.columns):
        dtype = schema[column].dtype
        if frame[column].dtype == dtype or dtype.kind == "b" or not frame[column].isna().all():
            continue
        frame[column] = frame[column].astype("float64" if dtype.kind in "iu" else dtype)
    return frame


def evaluate_partition(partition: Part, work: PartitionWork) -> dict[str, Any]:
    """Every mergeable check's partial state on one partition, or the result that stops the check
    (a `CheckResult`) when it cannot go on with this partition. With a time limit, and where this
    process may start one, the partition is evaluated in a forked worker stopped at the limit, as a
    check is (a Dask worker is a daemon that may not: Dask bounds its own tasks)."""
    if work.timeout_s is None or not may_fork_workers():
        return partial_states(partition, work)
    try:
        return run_isolated(
            functools.partial(partial_states, partition, work),
            timeout_s=work.timeout_s,
            memory_mb=work.memory_mb,
            label="partition",
        )
    except Exception as exc:
        reason = f"{partition.name}: {type(exc).__name__}: {exc}"
        return {job.key: CheckResult.error(job.check.name, "*", reason) for job in work.jobs}


def partial_states(partition: Part, work: PartitionWork) -> dict[str, Any]:
    """`evaluate_partition` in this process."""
    frame = read_partition(partition, work.roles, work.model, work.schema)
    states: dict[str, Any] = {}
    for job in work.jobs:
        try:
            states[job.key] = job.merging.partial(frame, job.profile, job.columns)
        except (CheckInputError, NotApplicable) as exc:
            states[job.key] = failure_result(job.check.name, exc, None)
        except Exception as exc:
            reason = f"{partition.name}: {type(exc).__name__}: {exc}"
            states[job.key] = CheckResult.error(job.check.name, "*", reason)
    return states


class Merger:
    """Merges one check's partition states as they arrive (in partition order), a few at a time, and
    turns the merged state into the check's results. A partition that stopped the check stands for the
    whole check, as the same error would on the whole batch."""

    def __init__(self, job: MergeJob) -> None:
        self.job = job
        self.stopped: CheckResult | None = None
        self.merged: Any = None
        self.buffer: list[Any] = []
        self.failure: BaseException | None = None

    def add(self, state: Any) -> None:
        """Take one partition's state."""
        if self.stopped is not None or self.failure is not None:
            return
        if isinstance(state, CheckResult):
            self.stopped, self.merged, self.buffer = state, None, []
            return
        self.buffer.append(state)
        if len(self.buffer) >= MERGE_EVERY:
            self._flush()

    def _flush(self) -> None:
        if not self.buffer:
            return
        states = self.buffer if self.merged is None else [self.merged, *self.buffer]
        self.buffer = []
        try:
            self.merged = self.job.merging.merge(states)
        except Exception as exc:
            self.failure = exc

    def results(self, rows: int) -> list[CheckResult]:
        """The check's results from every state taken, plus one error per feature absent from the batch."""
        job, name = self.job, self.job.check.name
        try:
            self._flush()
            if self.failure is not None:
                raise self.failure
            if self.stopped is not None:
                results = [replace(self.stopped, rows=rows)]
            else:
                results = job.merging.finish(self.merged, job.profile, job.columns) or [
                    CheckResult.skipped(name, "*", "no target to evaluate", rows=rows)
                ]
        except Exception as exc:
            results = [failure_result(name, exc, rows)]
        return job.screened.completed(results)


def require_partitionable(spec: MonitorSpec) -> None:
    """A `SpecError` unless the batch source can be read in partitions: Parquet partitions, one Parquet
    file a batch (read by row groups), or SQL with `page_by`."""
    path, sql = spec.batches.path, spec.batches.sql
    if path is not None and (is_partitioned(path) or is_parquet_file(path)):
        return
    if sql is not None and sql.page_by is not None:
        return
    raise SpecError(
        f"{spec.path or spec.name}: a partitioned run needs batches.path naming Parquet partitions (a "
        "glob such as data/{batch}/*.parquet, or a folder ending in /) or one Parquet file a batch "
        "(data/{batch}.parquet, read by row groups), or batches.sql with page_by (a key column to read "
        "the batch in pages)"
    )


def plan_batch(
    spec: MonitorSpec, batch_id: str | None, driver: Driver
) -> tuple[str, Sequence[Part], datetime]:
    """The batch id, its partitions (Parquet files, row groups of one Parquet file or SQL pages) and the
    time the batch stands for (the spec has passed `require_partitionable`)."""
    source = open_source(spec, spec.batches, "batches")
    template = source.location if isinstance(source, FileSource) else None
    if template is not None and is_parquet_file(template):
        batch_id, path = driver.step("find-batch-file", batch_file, template, batch_id)
        parts = driver.step("plan-row-groups", plan_row_groups, path)
        log_oversized(parts, driver)
        return batch_id, parts, partitions_time(batch_id, [path])
    if template is not None:
        batch_id, paths = driver.step("list-partitions", batch_partitions, template, batch_id)
        return (
            batch_id,
            driver.step("plan-partitions", plan_partitions, paths),
            partitions_time(batch_id, paths),
        )
    assert isinstance(source, QuerySource) and isinstance(spec.batches.sql, SqlSource)
    paging = spec.batches.sql
    batch_id, start, end = sql_window(batch_id, paging.window_days)
    args = (source.url, source.query, {"start": start, "end": end}, paging.page_by, paging.rows_a_page)
    return batch_id, driver.step("plan-pages", plan_sql_pages, *args), start


def log_oversized(parts: list[RowGroups], driver: Driver) -> None:
    """A warning for every row group larger than `PART_ROWS`: one worker reads it whole."""
    for part in parts:
        if part.rows > PART_ROWS:
            driver.logger.warning(
                "%s: one row group of %d rows, more than the %d rows a part, is read whole by one "
                "worker; write the file with smaller row groups to stream it",
                part.name,
                part.rows,
                PART_ROWS,
            )


def run_partitioned(
    spec: MonitorSpec,
    batch_id: str | None = None,
    *,
    driver: Driver | None = None,
    cache: ProfileCache | None = None,
    alerts: bool = True,
    retrain: Retraining = True,
    gather_rows: int = GATHER_ROWS,
) -> RunSummary:
    """One monitor run over a partitioned batch (the newest when `batch_id` is None): Parquet
    partitions, or a SQL batch in pages of `sql.page_by`, mapped by the driver."""
    require_partitionable(spec)
    options = RunOptions(alerts=alerts, retrain=retrain, gather_rows=gather_rows)
    context = RunContext.open(spec, driver=driver, cache=cache, options=options)
    require_reference(spec)
    batch_id, partitions, batch_time = plan_batch(spec, batch_id, context.driver)
    rows = sum(p.rows for p in partitions)
    context.driver.logger.info(
        "monitor %s: batch %s, %d rows in %d partitions", spec.name, batch_id, rows, len(partitions)
    )
    with tracked_run(context, batch_id, batch_time):
        run = _PartitionedRun(context, batch_id, partitions)
        results = run.results()
        return conclude_run(context, Ran(batch_id, batch_time, rows, results), run.prepared)


class _PartitionedRun:
    """The checks of one partitioned run: fitted (or looked up) in the driver, evaluated per partition."""

    def __init__(self, context: RunContext, batch_id: str, partitions: Sequence[Part]) -> None:
        self.context, self.batch_id, self.partitions = context, batch_id, partitions
        self.rows = sum(p.rows for p in partitions)
        self.prepared = prepare_run_reference(context)
        self.reference = self.prepared.frame
        first = partitions[0]
        if isinstance(first, Partition | RowGroups) and self.prepared.model is None:
            head = schema_frame(first.path)
        else:  # a SQL page's dtypes (and any model's output) come from its rows
            head = first.read().head(1)
        self.batch_schema = head.iloc[:0]
        scored_head, self.columns = scored(self.prepared.model, head, self.prepared.roles)
        self.schema = scored_head.iloc[:0]
        self.awaited = awaited_label(context.spec, self.schema, self.columns)
        self.plan = CheckPlan.from_spec(context.spec, self.prepared.model, arrive_later=self.awaited)

    def results(self) -> list[CheckResult]:
        """Every check's results in plan order: merged, schema-only, gathered or skipped."""
        outcomes: list[list[CheckResult] | MergeJob | None] = [
            self._prepare(p, i) for i, p in enumerate(self.plan.checks)
        ]
        jobs = [o for o in outcomes if isinstance(o, MergeJob)]
        merged: dict[str, list[CheckResult]] = {}
        if jobs:
            work = self._work(jobs)
            mergers = {j.key: Merger(j) for j in jobs}
            workers = self.context.spec.execution.workers
            for states in self.context.driver.map_partitions(
                evaluate_partition, self.partitions, work, workers
            ):
                for key, merger in mergers.items():
                    merger.add(states[key])
            merged = {key: merger.results(self.rows) for key, merger in mergers.items()}
        pending = [p.check for p, o in zip(self.plan.checks, outcomes, strict=True) if o is None]
        gathered = iter(self._gathered(pending))

        def final(outcome: list[CheckResult] | MergeJob | None) -> list[CheckResult]:
            if isinstance(outcome, MergeJob):
                return merged[outcome.key]
            return next(gathered) if outcome is None else outcome

        results = [r for outcome in outcomes for r in final(outcome)]
        try:
            write_figures(results, report_dir(self.context.spec, self.batch_id))
        except Exception as exc:
            self.context.driver.logger.warning("figures not drawn: %s: %s", type(exc).__name__, exc)
        return results

    def _work(self, jobs: list[MergeJob]) -> PartitionWork:
        """The partition tasks' work, limited as the plan limits its checks under process isolation."""
        execution = self.plan.execution
        limited = execution.isolation == "process"
        return PartitionWork(
            jobs,
            self.prepared.roles,
            self.prepared.model,
            self.batch_schema,
            timeout_s=max(j.timeout_s for j in jobs) if limited else None,
            memory_mb=execution.memory_mb if limited else None,
        )

    def _prepare(self, planned: PlannedCheck, index: int) -> list[CheckResult] | MergeJob | None:
        """The check's final results when they need no partition pass, its merge job, or None when it
        is to be evaluated on the gathered batch."""
        check = planned.check
        name, rows = check.name, self.rows
        if self.awaited and "label" in check.needs:
            return waiting_for_labels(check, rows)
        if rows == 0 and not missing_role(check, self.columns):  # as on a whole empty batch
            return [CheckResult.skipped(name, "*", "the batch is empty", rows=0)]
        if check.name == SCHEMA_CHECK:
            return self._schema(check)
        reason = merge_obstacle(check)
        if reason is not None:
            if rows > self.context.options.gather_rows:
                message = f"{NOT_SUPPORTED} of more than {self.context.options.gather_rows} rows ({reason})"
                return [CheckResult.skipped(name, "*", message, rows=rows)]
            return None
        screened = screen(check, self.columns, {"batch": self.schema, "reference": self.reference}, rows)
        if isinstance(screened, list):
            return screened
        cache, ref_hash = self.context.cache, self.prepared.content_hash

        def cached_fit(check: Check, reference: pd.DataFrame, columns: Columns) -> Any:
            return cache.get_or_fit(check, reference, columns, ref_hash)

        try:
            profile = fitted_profile(screened.check, self.reference, screened.columns, cached_fit)
        except Exception as exc:
            return [failure_result(name, exc, rows)]
        return MergeJob(f"{index}:{name}", profile, screened, self.plan.time_limit(planned))

    def _schema(self, check: Check) -> list[CheckResult]:
        """The schema check on the partitions' shared schema, reporting the batch's row count."""
        try:
            profile = self.context.cache.get_or_fit(
                check, self.reference, self.columns, self.prepared.content_hash
            )
            results = check.evaluate(self.schema, profile, self.columns)
        except Exception as exc:
            results = [failure_result(check.name, exc, self.rows)]
        return [replace(r, rows=self.rows) for r in results]

    def _gathered(self, checks: list[Check]) -> list[list[CheckResult]]:
        """The results of the checks that do not merge, each evaluated on the whole batch gathered
        into one frame, through the plan and the driver like a whole batch's checks."""
        if not checks:
            return []
        roles, model = self.prepared.roles, self.prepared.model
        frames = [read_partition(p, roles, model, self.batch_schema) for p in self.partitions]
        gathered = pd.concat(frames) if len(frames) > 1 else frames[0]
        evaluation = Evaluation(
            gathered, self.columns, self.reference, self.prepared.content_hash, self.context.cache
        )
        plan = self.plan.select(lambda c: any(c is chosen for chosen in checks))
        evaluation.read_reference_if_fitting(plan)
        return self.context.driver.fan_out(plan.jobs(evaluation), self.context.spec.execution.workers)
