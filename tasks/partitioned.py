"""A monitor run over a batch stored as Parquet partitions, or read from SQL in pages of a key column:
checks that merge are evaluated one partition per task and their partial states merged, so no process
ever holds the whole batch.

Mergeable checks (a `mergeable` class attribute, `partial`/`merge`/`finish` methods) compute a small
state per partition on any executor (a process pool here, Dask workers under `flows.partitioned`);
the driver merges the states in partition order and turns them into the results `evaluate` gives on
the whole batch. The schema check reads the partitions' schemas only. Any other check is evaluated on
the gathered batch when it has at most `gather_rows` rows, and is otherwise `skipped` with the reason.
The run is then stored, alerted, retrained and reported through the same steps as `run_monitor`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from driftline.checks import registry
from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.result import CheckResult
from driftline.checks.runner import absent_columns, absent_features, missing_role, without_features
from driftline.tasks.attribution_plots import write_figures
from driftline.tasks.driver import Driver
from driftline.tasks.pipeline import SCHEMA_CHECK, Ran, RunSummary, conclude_run, report_dir, tracked_run
from driftline.tasks.profiles import ProfileCache
from driftline.tasks.reference import LazyReference, prepare_reference, scored
from driftline.tasks.sources import (
    SourceError,
    batch_partitions,
    is_partitioned,
    partitions_time,
    read_table,
    sql_window,
)
from driftline.tasks.spec import MonitorSpec, SpecError, SqlSource
from driftline.tasks.sql_pages import SqlPage, plan_sql_pages
from driftline.tasks.steps import evaluate_check, load_reference, require_reference, source_args

# Checks without a mergeable evaluation are run on the gathered batch up to this many rows.
GATHER_ROWS = 1_000_000
NOT_SUPPORTED = "not supported on partitioned batches"

# How the partition tasks run: `mapper(fn, partitions, work)` yields `fn(p, work)` for each partition,
# in partition order (the driver merges them as they come, holding a few states at a time).
Mapper = Callable[[Callable[..., Any], Sequence["Part"], "PartitionWork"], Iterable[Any]]
# Partition states held before they are merged into the running state.
MERGE_EVERY = 8


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
        return read_table(Path(self.path))


# What a partition task reads: a Parquet file, or a key range of a SQL batch (`sources.SqlPage`). Both
# have `offset`, `rows`, `name` and `read()`.
Part = Partition | SqlPage


def plan_partitions(paths: Sequence[Path]) -> list[Partition]:
    """Row counts and offsets from the Parquet footers (no data read); every partition must have the
    first one's schema, else a `SourceError` names the partition that differs."""
    partitions, offset, first = [], 0, None
    for path in paths:
        try:
            meta = pq.ParquetFile(path)
        except Exception as exc:
            raise SourceError(f"{path}: cannot read as Parquet ({type(exc).__name__}: {exc})") from exc
        schema = meta.schema_arrow.remove_metadata()
        if first is None:
            first = (path, schema)
        elif not schema.equals(first[1]):
            raise SourceError(f"{path}: its schema differs from {first[0]}'s; partitions must share one")
        rows = meta.metadata.num_rows
        partitions.append(Partition(str(path), offset, rows))
        offset += rows
    return partitions


def schema_frame(path: str) -> pd.DataFrame:
    """A zero-row frame with the columns and dtypes of a Parquet file."""
    return pq.read_schema(path).empty_table().to_pandas()


@dataclass
class MergeJob:
    """One mergeable check of a run, ready to evaluate per partition: its profile and column roles."""

    key: str
    check: Check
    profile: Any
    columns: Columns
    gaps: dict[str, str] = field(default_factory=dict)


@dataclass
class PartitionWork:
    """What every partition task needs: the mergeable checks, the model that scores the rows, and the
    batch's column dtypes (from its first partition)."""

    jobs: list[MergeJob]
    roles: Columns
    model: Any = None
    schema: pd.DataFrame | None = None


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


def evaluate_partition(partition: Part, work: PartitionWork) -> dict[str, tuple[str, Any]]:
    """Every mergeable check's partial state on one partition: ("ok", state), or ("skipped" |
    "error", reason) when the check stops on this partition."""
    frame = read_partition(partition, work.roles, work.model, work.schema)
    states: dict[str, tuple[str, Any]] = {}
    for job in work.jobs:
        try:
            states[job.key] = ("ok", job.check.partial(frame, job.profile, job.columns))
        except NotApplicable as exc:
            states[job.key] = ("skipped", str(exc))
        except CheckInputError as exc:
            states[job.key] = ("error", str(exc))
        except Exception as exc:
            states[job.key] = ("error", f"{partition.name}: {type(exc).__name__}: {exc}")
    return states


class Merger:
    """Merges one check's partition states as they arrive (in partition order), a few at a time, and
    turns the merged state into the check's results. A partition that stopped the check (skipped or
    error) stands for the whole check, as the same error would on the whole batch."""

    def __init__(self, job: MergeJob) -> None:
        self.job = job
        self.stopped: tuple[str, Any] | None = None
        self.merged: Any = None
        self.buffer: list[Any] = []
        self.failure: BaseException | None = None

    def add(self, state: tuple[str, Any]) -> None:
        """Take one partition's state."""
        if self.stopped is not None or self.failure is not None:
            return
        if state[0] != "ok":
            self.stopped, self.merged, self.buffer = state, None, []
            return
        self.buffer.append(state[1])
        if len(self.buffer) >= MERGE_EVERY:
            self._flush()

    def _flush(self) -> None:
        if not self.buffer:
            return
        states = self.buffer if self.merged is None else [self.merged, *self.buffer]
        self.buffer = []
        try:
            self.merged = self.job.check.merge(states)
        except Exception as exc:
            self.failure = exc

    def results(self, rows: int) -> list[dict[str, Any]]:
        """The check's results from every state taken, plus one error per feature absent from the batch."""
        job, name = self.job, self.job.check.name
        try:
            self._flush()
            if self.failure is not None:
                raise self.failure
            if self.stopped is not None:
                make = CheckResult.skipped if self.stopped[0] == "skipped" else CheckResult.error
                results = [make(name, "*", self.stopped[1], rows=rows)]
            else:
                results = job.check.finish(self.merged, job.profile, job.columns) or [
                    CheckResult.skipped(name, "*", "no target to evaluate", rows=rows)
                ]
        except NotApplicable as exc:
            results = [CheckResult.skipped(name, "*", str(exc), rows=rows)]
        except CheckInputError as exc:
            results = [CheckResult.error(name, "*", str(exc), rows=rows)]
        except Exception as exc:
            results = [CheckResult.error(name, "*", f"{type(exc).__name__}: {exc}", rows=rows)]
        errors = [CheckResult.error(name, target, why, rows=rows) for target, why in job.gaps.items()]
        return [r.to_dict() for r in results if r.target not in job.gaps] + [e.to_dict() for e in errors]


def pool_mapper(workers: int) -> Mapper:
    """The plain engine's mapper: partitions in a pool of `workers` processes (one partition each)."""

    def run(fn: Callable[..., Any], partitions: Sequence[Part], work: PartitionWork) -> Iterator[Any]:
        if workers <= 1 or len(partitions) <= 1:
            yield from (fn(p, work) for p in partitions)
            return
        with ProcessPoolExecutor(max_workers=workers) as pool:
            yield from pool.map(fn, partitions, [work] * len(partitions))

    return run


def dask_mapper(client: Any) -> Mapper:
    """Partitions as tasks on a Dask cluster (a `distributed.Client`), without Prefect: the checks and
    profiles are sent to every worker once, then each task reads and evaluates one partition; each
    state is released on the cluster once the driver has it."""

    def run(fn: Callable[..., Any], partitions: Sequence[Part], work: PartitionWork) -> Iterator[Any]:
        shared = client.scatter(work, broadcast=True)
        futures = client.map(fn, list(partitions), work=shared, pure=False)
        for future in futures:
            yield future.result()
            future.release()

    return run


def mergeable_reason(check: Check) -> str | None:
    """None when the check merges across partitions, else why not."""
    if not getattr(check, "mergeable", False):
        return f"{check.name} has no mergeable evaluation"
    return check.merge_limit()


def require_partitionable(spec: MonitorSpec) -> None:
    """A `SpecError` unless the batch source can be read in partitions: Parquet partitions, or SQL
    with `page_by`."""
    path, sql = spec.batches.path, spec.batches.sql
    if (path is not None and is_partitioned(path)) or (sql is not None and sql.page_by is not None):
        return
    raise SpecError(
        f"{spec.path or spec.name}: a partitioned run needs batches.path naming Parquet partitions (a "
        "glob such as data/{batch}/*.parquet, or a folder ending in /) or batches.sql with page_by "
        "(a key column to read the batch in pages)"
    )


def plan_batch(spec: MonitorSpec, batch_id: str | None, driver: Driver) -> tuple[str, list[Part], datetime]:
    """The batch id, its partitions (Parquet files or SQL pages) and the time the batch stands for
    (the spec has passed `require_partitionable`)."""
    template, sql = source_args(spec, spec.batches, "batches")
    if template is not None:
        batch_id, paths = driver.step("list-partitions", batch_partitions, template, batch_id)
        return (
            batch_id,
            driver.step("plan-partitions", plan_partitions, paths),
            partitions_time(batch_id, paths),
        )
    assert sql is not None and isinstance(spec.batches.sql, SqlSource)
    paging = spec.batches.sql
    batch_id, start, end = sql_window(batch_id, paging.window_days)
    args = (sql["url"], sql["query"], {"start": start, "end": end}, paging.page_by, paging.rows_a_page)
    return batch_id, driver.step("plan-pages", plan_sql_pages, *args), start


def run_partitioned(
    spec: MonitorSpec,
    batch_id: str | None = None,
    *,
    driver: Driver | None = None,
    cache: ProfileCache | None = None,
    mapper: Mapper | None = None,
    alerts: bool = True,
    retrain: bool = True,
    gather_rows: int = GATHER_ROWS,
) -> RunSummary:
    """One monitor run over a partitioned batch (the newest when `batch_id` is None): Parquet
    partitions, or a SQL batch in pages of `sql.page_by`."""
    require_partitionable(spec)
    driver = driver or Driver()
    spec.database_url()
    state_dir = spec.base_dir / ".driftline"
    cache = cache or ProfileCache(state_dir / "profiles")
    require_reference(spec)
    batch_id, partitions, batch_time = plan_batch(spec, batch_id, driver)
    rows = sum(p.rows for p in partitions)
    driver.logger.info(
        "monitor %s: batch %s, %d rows in %d partitions", spec.name, batch_id, rows, len(partitions)
    )
    with tracked_run(spec, driver, batch_id, batch_time):
        run = _PartitionedRun(spec, batch_id, partitions, cache, driver, gather_rows)
        results = run.results(mapper or pool_mapper(spec.execution.workers))
        return conclude_run(
            spec,
            driver,
            Ran(batch_id, batch_time, rows, results),
            run.prepared,
            cache,
            report_dir(spec, batch_id),
            alerts=alerts,
            retrain=retrain,
            gather_rows=gather_rows,
        )


class _PartitionedRun:
    """The checks of one partitioned run: fitted (or looked up) in the driver, evaluated per partition."""

    def __init__(
        self,
        spec: MonitorSpec,
        batch_id: str,
        partitions: list[Part],
        cache: ProfileCache,
        driver: Driver,
        gather_rows: int,
    ) -> None:
        self.spec, self.batch_id, self.partitions = spec, batch_id, partitions
        self.cache, self.driver, self.gather_rows = cache, driver, gather_rows
        self.rows = sum(p.rows for p in partitions)

        def load() -> pd.DataFrame:
            args = source_args(spec, spec.reference, "reference")
            return driver.step("load-reference", load_reference, *args)

        self.prepared = prepare_reference(spec, load, cache.directory)
        self.reference = self.prepared.frame
        first = partitions[0]
        if isinstance(first, Partition) and self.prepared.model is None:
            head = schema_frame(first.path)
        else:  # a SQL page's dtypes (and any model's output) come from its rows
            head = first.read().head(1)
        self.batch_schema = head.iloc[:0]
        scored_head, self.columns = scored(self.prepared.model, head, self.prepared.roles)
        self.schema = scored_head.iloc[:0]
        self._gathered: pd.DataFrame | None = None

    def checks(self) -> list[Check]:
        """The schema check first (unless listed), then the spec's checks in order."""
        awaited = self.awaiting_labels()
        names = [(e.check, e.check_params()) for e in self.spec.checks]
        if all(n != SCHEMA_CHECK for n, _ in names):
            names.insert(0, (SCHEMA_CHECK, {"arrive_later": [self.columns.label]} if awaited else {}))
        checks = []
        for name, params in names:
            check = registry.create(name, params)
            if self.prepared.model is not None and hasattr(check, "attach_model"):
                check.attach_model(self.prepared.model)
            checks.append(check)
        return checks

    def awaiting_labels(self) -> bool:
        label = self.columns.label
        return self.spec.labels is not None and label is not None and label not in self.schema.columns

    def results(self, mapper: Mapper) -> list[dict[str, Any]]:
        """Every check's results in spec order: merged, schema-only, gathered or skipped."""
        checks = self.checks()
        outcomes: list[list[dict[str, Any]] | MergeJob] = [self._prepare(c, i) for i, c in enumerate(checks)]
        jobs = [o for o in outcomes if isinstance(o, MergeJob)]
        if jobs:
            work = PartitionWork(jobs, self.prepared.roles, self.prepared.model, self.batch_schema)
            mergers = {j.key: Merger(j) for j in jobs}
            for states in mapper(evaluate_partition, self.partitions, work):
                for key, merger in mergers.items():
                    merger.add(states[key])
            merged = {key: merger.results(self.rows) for key, merger in mergers.items()}
            outcomes = [merged[o.key] if isinstance(o, MergeJob) else o for o in outcomes]
        results = [r for outcome in outcomes for r in outcome]
        try:
            write_figures(results, report_dir(self.spec, self.batch_id))
        except Exception as exc:
            self.driver.logger.warning("figures not drawn: %s: %s", type(exc).__name__, exc)
        return results

    def _prepare(self, check: Check, index: int) -> list[dict[str, Any]] | MergeJob:
        """The check's final results when they need no partition pass, else its merge job."""
        name, rows = check.name, self.rows
        if self.awaiting_labels() and "label" in check.needs:
            reason = "the batch has no labels yet: this check runs when they land (see `labels:`)"
            return [CheckResult.skipped(name, "*", reason, rows=rows).to_dict()]
        if rows == 0 and not missing_role(check, self.columns):  # as on a whole empty batch
            return [CheckResult.skipped(name, "*", "the batch is empty", rows=0).to_dict()]
        if check.name == SCHEMA_CHECK:
            return self._schema(check)
        reason = mergeable_reason(check)
        if reason is not None:
            return self._gathered_or_skipped(check, reason)
        columns = self.columns
        stop = missing_role(check, columns)
        if stop:
            return [CheckResult.skipped(name, "*", stop, rows=rows).to_dict()]
        frames = {"batch": self.schema, "reference": self.reference}
        for label, frame in frames.items():
            absent = absent_columns(check, columns, frame)
            if absent:
                return [
                    CheckResult.error(
                        name, "*", f"the {label} has no column(s) {absent}", rows=rows
                    ).to_dict()
                ]
        gaps = absent_features(check, columns, frames)
        if gaps:
            narrowed = without_features(check, columns, gaps)
            if narrowed is None:
                return [CheckResult.error(name, t, why, rows=rows).to_dict() for t, why in gaps.items()]
            check, columns = narrowed
        try:
            if len(self.reference) == 0:
                raise CheckInputError("the reference is empty")
            profile = self.cache.get_or_fit(check, self.reference, columns, self.prepared.content_hash)
        except NotApplicable as exc:
            return [CheckResult.skipped(name, "*", str(exc), rows=rows).to_dict()]
        except CheckInputError as exc:
            return [CheckResult.error(name, "*", str(exc), rows=rows).to_dict()]
        except Exception as exc:
            return [CheckResult.error(name, "*", f"{type(exc).__name__}: {exc}", rows=rows).to_dict()]
        return MergeJob(f"{index}:{name}", check, profile, columns, gaps)

    def _schema(self, check: Check) -> list[dict[str, Any]]:
        """The schema check on the partitions' shared schema, reporting the batch's row count."""
        try:
            profile = self.cache.get_or_fit(check, self.reference, self.columns, self.prepared.content_hash)
            results = [r.to_dict() for r in check.evaluate(self.schema, profile, self.columns)]
        except Exception as exc:
            return [
                CheckResult.error(check.name, "*", f"{type(exc).__name__}: {exc}", rows=self.rows).to_dict()
            ]
        return [{**r, "rows": self.rows} for r in results]

    def _gathered_or_skipped(self, check: Check, reason: str) -> list[dict[str, Any]]:
        """A check that does not merge: evaluated on the whole batch when it is small enough."""
        if self.rows > self.gather_rows:
            message = f"{NOT_SUPPORTED} of more than {self.gather_rows} rows ({reason})"
            return [CheckResult.skipped(check.name, "*", message, rows=self.rows).to_dict()]
        if self._gathered is None:
            roles, model = self.prepared.roles, self.prepared.model
            frames = [read_partition(p, roles, model, self.batch_schema) for p in self.partitions]
            self._gathered = pd.concat(frames) if len(frames) > 1 else frames[0]
        if isinstance(self.reference, LazyReference):
            self.reference.read()
        return evaluate_check(
            check, self._gathered, self.columns, self.reference, self.prepared.content_hash, self.cache
        )
