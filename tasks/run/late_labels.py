"""Labels that land after their batch: joined onto the earlier batches, whose label checks are recomputed.

A monitor with a `labels:` source (a file template with `{batch}`, or SQL over the batch's window,
holding the id column and the label) looks, on every run, at its completed runs that have no labels
yet. For each batch whose labels have landed, the batch is loaded again, the labels are joined on the
id (only labelled rows are kept), the spec's checks that need a label are evaluated, and their results
replace the ones stored for that batch (which were errors or skips for want of a label). Label-free
estimates of the same batch (`performance.estimated`) stay, marked as superseded, so the history
shows estimate and truth side by side. A batch whose labels have not landed is tried again next run.

A batch read in partitions (Parquet files, or SQL pages of `page_by`) is read one partition at a
time, each joined with the labels at once, so only its labelled rows are kept; the label checks run
on them when they are at most `gather_rows` (as a partitioned run evaluates its unmergeable checks),
else they are stored as `skipped` with the reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from driftline.checks.columns import Columns
from driftline.checks.result import CheckResult
from driftline.tasks.config.spec import MonitorSpec, Source, SpecError
from driftline.tasks.history.accumulation import accumulate_evidence
from driftline.tasks.references.reference import PreparedReference, scored
from driftline.tasks.run.context import RunContext
from driftline.tasks.run.driver import Driver
from driftline.tasks.run.partitioned import NOT_SUPPORTED, plan_batch, require_partitionable
from driftline.tasks.run.pipeline import Ran
from driftline.tasks.run.plan import CheckPlan, Evaluation
from driftline.tasks.run.steps import grade_run, load_batch
from driftline.tasks.sources import SourceError, open_source

log = logging.getLogger(__name__)
# Runs looked at per monitor run, newest first: labels older than this many batches are not waited for.
LOOKBACK_RUNS = 50


@dataclass
class LabelJoin:
    """What joining one batch's labels did."""

    batch_id: str
    rows: int
    labelled_rows: int | None
    status: str
    worst_severity: str
    checks: list[str]
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def load_labels(spec: MonitorSpec, source: Source, batch_id: str) -> pd.DataFrame | None:
    """The labels of one batch, or None when they have not landed (no file yet, or no row)."""
    return open_source(spec, source, "labels").read_labels(batch_id, spec.execution.read_limits)


def keyed_labels(labels: pd.DataFrame, id_column: str, label: str) -> pd.DataFrame:
    """The id and label columns of the rows that have a label; an id given twice is a `SourceError`."""
    if id_column not in labels.columns:
        raise SourceError(f"the labels have no id column {id_column!r} to join labels on")
    if label not in labels.columns:
        raise SourceError(f"the labels have no column {label!r}")
    duplicated = labels[id_column].duplicated()
    if duplicated.any():
        first = labels.loc[duplicated, id_column].iloc[0]
        raise SourceError(
            f"the labels give id {first!r} more than one label ({int(duplicated.sum())} repeats)"
        )
    return labels[[id_column, label]].dropna(subset=[label])


def joined(batch: pd.DataFrame, keyed: pd.DataFrame, id_column: str, label: str) -> pd.DataFrame:
    """The batch rows that have a label in `keyed` (from `keyed_labels`), the label taken from it."""
    if id_column not in batch.columns:
        raise SourceError(f"the batch has no id column {id_column!r} to join labels on")
    try:
        return batch.drop(columns=[label], errors="ignore").merge(
            keyed, on=id_column, how="inner", validate="1:1"
        )
    except pd.errors.MergeError as exc:
        raise SourceError(f"the batch gives an id in column {id_column!r} to more than one row") from exc


@dataclass
class Labelled:
    """One earlier batch with its labels joined: the batch's row count and its labelled rows (None
    when there were more than the gather limit, with the reason)."""

    rows: int
    frame: pd.DataFrame | None
    reason: str | None = None


def labelled_batch(
    spec: MonitorSpec, batch_id: str, labels: pd.DataFrame, columns: Columns, gather_rows: int, driver: Driver
) -> Labelled:
    """The batch's labelled rows: read whole, or, when it is read in partitions (Parquet files, row
    groups of one file, or SQL pages), joined one partition at a time, reading no further once more
    than `gather_rows` are labelled; a labelled id in two partitions is a `SourceError`."""
    assert columns.id is not None and columns.label is not None
    keyed = keyed_labels(labels, columns.id, columns.label)
    try:
        require_partitionable(spec)
    except SpecError:
        batch = load_batch(
            open_source(spec, spec.batches, "batches"), batch_id, spec.execution.read_limits
        ).frame
        return Labelled(len(batch), joined(batch, keyed, columns.id, columns.label))
    _, parts, _ = plan_batch(spec, batch_id, driver)
    rows = sum(p.rows for p in parts)
    frames: list[pd.DataFrame] = []
    labelled = 0
    for part in parts:
        frames.append(joined(part.read(), keyed, columns.id, columns.label))
        labelled += len(frames[-1])
        if labelled > gather_rows:
            return Labelled(rows, None, f"{NOT_SUPPORTED} with more than {gather_rows} labelled rows")
    frame = pd.concat(frames, ignore_index=True)
    repeated = frame[columns.id][frame[columns.id].duplicated()]
    if len(repeated):
        raise SourceError(
            f"the batch gives id {repeated.iloc[0]!r} (column {columns.id!r}) to rows of more than one "
            "partition"
        )
    return Labelled(rows, frame)


def pending_batches(url: str, monitor: str, exclude: str) -> list[tuple[str, datetime]]:
    """(id, time) of the completed batches of `monitor` whose labels have not been joined, among its
    newest `LOOKBACK_RUNS`, oldest first: a batch's label checks then accumulate evidence over the
    earlier batches whose labels landed with it."""
    from driftline.tasks.history.db import connected_store
    from driftline.tasks.history.store import runs_without_labels

    with connected_store(url) as engine:
        return runs_without_labels(engine, monitor, exclude=exclude, limit=LOOKBACK_RUNS)[::-1]


def join_late_labels(
    context: RunContext, *, current_batch: str, prepared: PreparedReference
) -> list[LabelJoin]:
    """Join the labels that have landed onto earlier batches and store their label checks' results.

    The re-loaded batch is scored as the run scores its own (`prepared`: model, roles, reference) and
    its label checks go through the run's check plan and driver. A batch whose labels cannot be read or
    joined is logged and tried again on the next run; it never fails this run. A partitioned batch
    with more than `gather_rows` labelled rows gets its label checks `skipped`.
    """
    from driftline.tasks.history.db import connected_store
    from driftline.tasks.history.store import record_late_results

    spec, columns = context.spec, prepared.roles
    if spec.labels is None or columns.label is None or columns.id is None:
        return []
    plan = CheckPlan.from_spec(spec, prepared.model).select(lambda check: "label" in check.needs)
    names = [p.check.name for p in plan.checks]
    url, gather_rows = context.database_url, context.options.gather_rows
    joins: list[LabelJoin] = []
    for batch_id, batch_time in pending_batches(url, spec.name, exclude=current_batch):
        try:
            labels = load_labels(spec, spec.labels, batch_id)
            if labels is None:
                continue
            batch = labelled_batch(spec, batch_id, labels, columns, gather_rows, context.driver)
            rescored = None if batch.frame is None else scored(prepared.model, batch.frame, columns)
        except SourceError as exc:
            log.warning("labels of batch %s not joined: %s", batch_id, exc)
            continue
        if rescored is None:
            log.warning("label checks of batch %s skipped: %s", batch_id, batch.reason)
            results = [CheckResult.skipped(name, "*", str(batch.reason), rows=batch.rows) for name in names]
        else:
            evaluation = Evaluation(*rescored, prepared.frame, prepared.content_hash, context.cache)
            evaluation.read_reference_if_fitting(plan)
            results = grade_run(plan.run(context.driver, evaluation), spec.alerts.confidence)
            ran = Ran(batch_id, batch_time, len(rescored[0]), results)
            accumulate_evidence(context, ran, prepared, results)
        labelled = None if rescored is None else len(rescored[0])
        note = {"rows": batch.rows, "labelled_rows": labelled} | (
            {"reason": batch.reason} if batch.reason else {}
        )
        with connected_store(url) as engine:
            status, worst = record_late_results(
                engine,
                monitor=spec.name,
                batch_id=batch_id,
                results=[r.to_dict() for r in results],
                fail_on=spec.fail_on,
                labels=note,
            )
        joins.append(LabelJoin(batch_id, batch.rows, labelled, status, worst, names, batch.reason))
        log.info("labels joined onto batch %s: %s of %d rows labelled", batch_id, labelled, batch.rows)
    return joins
