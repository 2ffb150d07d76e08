"""One monitor run over one batch, whatever the engine: load, validate, score, evaluate, store, alert,
retrain, report.

Every engine (the plain process, Prefect, Airflow) calls `run_monitor` with its own `Driver`; nothing
here imports an orchestrator, so every engine stores the same rows and raises the same alerts.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.domains import stopping_problem
from driftline.checks.result import CheckResult, severity_rank, worst_severity
from driftline.checks.schema import stopping_problems
from driftline.checks.slice_codes import SliceCodes, sharing_codes
from driftline.tasks.config.spec import MonitorSpec, severity_at_least
from driftline.tasks.hindsight.premises import hindsight
from driftline.tasks.history.accumulation import accumulate_evidence
from driftline.tasks.references.importance import attach_importance, reference_importance
from driftline.tasks.references.profiles import NOT_CACHED, ProfileCache, Unfittable
from driftline.tasks.references.reference import PreparedReference, prepare_reference, scored
from driftline.tasks.retraining.actions import Retraining
from driftline.tasks.retraining.trigger import start_retraining
from driftline.tasks.run.context import RunContext, RunOptions
from driftline.tasks.run.driver import CheckJob, Driver
from driftline.tasks.run.persist import heartbeating, mark_crashed, mark_started, persist_run
from driftline.tasks.run.plan import SCHEMA_CHECK, CheckPlan, Evaluation
from driftline.tasks.run.steps import (
    grade_run,
    load_batch,
    load_reference,
    require_reference,
)
from driftline.tasks.sources import Batch, open_source
from driftline.tasks.views.attribution_plots import drawn_figures
from driftline.tasks.views.drift_overview import drift_overview

log = logging.getLogger(__name__)


@dataclass
class RunSummary:
    """What one monitor run found and did."""

    monitor: str
    batch_id: str
    batch_time: str
    rows: int
    status: str
    worst_severity: str
    results: list[CheckResult]
    engine: str = "local"
    stored: str = "not stored"
    alerts: dict[str, Any] = field(default_factory=dict)
    retraining: dict[str, Any] | None = None
    figures: list[str] = field(default_factory=list)
    report: str | None = None
    labels: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable): the form at the JSON, XCom and artifact edges."""
        plain = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**plain, "results": [r.to_dict() for r in self.results]}

    def failing(self, minimum: str) -> list[CheckResult]:
        """Results at or above `minimum`, worst first."""
        hits = [r for r in self.results if r.status == "ok" and severity_at_least(r.severity, minimum)]
        return sorted(hits, key=lambda r: -severity_rank(r.severity))


def awaited_label(spec: MonitorSpec, frame: pd.DataFrame, columns: Columns) -> str | None:
    """The label column when the batch came without it and the spec says labels land later."""
    label = columns.label
    return label if spec.labels is not None and label is not None and label not in frame.columns else None


def stopped(check: Check, problem: str, rows: int) -> list[CheckResult]:
    """The result of a check that reads a column the schema check found outside its domain."""
    return [CheckResult.error(check.name, "*", problem, rows=rows)]


def schema_first(jobs: list[CheckJob], rows: int) -> list[CheckJob]:
    """The schema check evaluated now, before the other checks fan out: a label, prediction or score
    outside the reference's domain stops every check that reads it, with the problem as its error."""
    schema = next(j for j in jobs if j.check.name == SCHEMA_CHECK)
    results = schema.run()
    problems = stopping_problems(results)

    def settled(job: CheckJob) -> CheckJob:
        if job is schema:
            return replace(job, evaluate=partial(list, results), isolation="thread")
        problem = stopping_problem(job.check, problems)
        return replace(job, evaluate=partial(stopped, job.check, problem, rows)) if problem else job

    return [settled(j) for j in jobs]


def share_slice_codes(
    store: SliceCodes, checks: list[Check], cache: ProfileCache, columns: Columns, ref_hash: str
) -> None:
    """Compute once, before the workers fork, the batch's subset codes of every check whose profile is
    cached and cuts features into subsets; a profile still to be fitted is left to its check. Other
    checks' profiles are not read here (their workers read them in parallel)."""
    for check in checks:
        if type(check).slice_definitions is Check.slice_definitions:
            continue
        profile = cache.lookup(check, columns, ref_hash)
        if profile is NOT_CACHED or profile is None or isinstance(profile, Unfittable):
            continue
        for feature, slices in check.slice_definitions(profile).items():
            store.add(feature, slices)
    if len(store):
        log.info("subset codes of %d feature cut(s) computed once for the run", len(store))


def run_status(results: list[CheckResult], worst: str, fail_on: str, rows: int) -> str:
    """`empty`, `failed` (a result reached `fail_on`), `error` (every result errored) or `passed`."""
    if rows == 0:
        return "empty"
    if severity_at_least(worst, fail_on):
        return "failed"
    if results and all(r.status == "error" for r in results):
        return "error"
    return "passed"


def run_monitor(
    spec: MonitorSpec,
    batch_id: str | None = None,
    *,
    driver: Driver | None = None,
    cache: ProfileCache | None = None,
    alerts: bool = True,
    retrain: Retraining = True,
) -> RunSummary:
    """One monitor run over one batch (the newest when `batch_id` is None).

    `alerts` and `retrain` switch off alerting and the retraining trigger, e.g. for a backfill of
    historical batches; the results are stored either way.
    """
    context = RunContext.open(
        spec, driver=driver, cache=cache, options=RunOptions(alerts=alerts, retrain=retrain)
    )
    require_reference(spec)
    batch: Batch = context.driver.step(
        "load-batch",
        load_batch,
        open_source(spec, spec.batches, "batches"),
        batch_id,
        spec.execution.read_limits,
    )
    context.driver.logger.info("monitor %s: batch %s, %d rows", spec.name, batch.batch_id, len(batch.frame))
    with tracked_run(context, batch.batch_id, batch.batch_time):
        return _evaluate(context, batch)


@contextmanager
def tracked_run(context: RunContext, batch_id: str, batch_time: datetime) -> Iterator[None]:
    """The block as one run of the batch in the history: marked `running` first (so a crash leaves a
    trace), its heartbeat kept, marked crashed if the block raises; every store step of the block
    shares one engine."""
    from driftline.tasks.history.db import store_scope

    started = {
        "monitor": context.spec.name,
        "batch_id": batch_id,
        "batch_time": batch_time,
        "flow_run_id": context.driver.run_id,
    }
    with store_scope(context.database_url):
        run_id = mark_started(context, started)
        try:
            with heartbeating(context, run_id):
                yield
        except BaseException as exc:
            mark_crashed(context, run_id, exc)
            raise


def prepare_run_reference(context: RunContext) -> PreparedReference:
    """The run's reference: its facts (and model) from the cache, its rows read only when needed."""
    spec, driver = context.spec, context.driver

    def load() -> pd.DataFrame:
        return driver.step(
            "load-reference",
            load_reference,
            open_source(spec, spec.reference, "reference"),
            spec.execution.read_limits,
        )

    return prepare_reference(spec, load, context.cache.directory)


def _evaluate(context: RunContext, batch: Batch) -> RunSummary:
    """Checks, storage, alerts, retraining and report for one loaded batch."""
    spec, driver, cache = context.spec, context.driver, context.cache
    prepared = prepare_run_reference(context)
    reference, ref_hash = prepared.frame, prepared.content_hash
    current, columns = scored(prepared.model, batch.frame, prepared.roles)
    driver.logger.info(
        "reference %d rows (%s)",
        len(reference),
        "read" if isinstance(reference, pd.DataFrame) else "from cache",
    )
    figure_dir = report_dir(spec, batch.batch_id)
    awaited = awaited_label(spec, current, columns)
    plan = CheckPlan.from_spec(spec, prepared.model, arrive_later=awaited)
    evaluation = Evaluation(current, columns, reference, ref_hash, cache, figure_dir, awaited is not None)
    evaluation.read_reference_if_fitting(plan)
    jobs = schema_first(plan.jobs(evaluation), len(current))
    with sharing_codes(current) as shared:
        share_slice_codes(shared, evaluation.fitting(plan), cache, columns, ref_hash)
        results = [r for outcome in driver.fan_out(jobs, spec.execution.workers) for r in outcome]
    return conclude_run(context, Ran(batch.batch_id, batch.batch_time, len(current), results), prepared)


@dataclass(frozen=True)
class Ran:
    """What the checks of one run gave: the batch, its row count and every result."""

    batch_id: str
    batch_time: datetime
    rows: int
    results: list[CheckResult]


def conclude_run(context: RunContext, ran: Ran, prepared: PreparedReference) -> RunSummary:
    """After the checks, whatever evaluated them: store, alert, join late labels, retrain and report."""
    spec, driver, options = context.spec, context.driver, context.options
    results = grade_run(ran.results, spec.alerts.confidence)
    accumulate_evidence(context, ran, prepared, results)
    attach_importance(results, reference_importance(prepared, context.cache.directory))
    results += hindsight(
        context.database_url, spec.name, (ran.batch_id, ran.batch_time, prepared.content_hash), results
    )
    overview = drift_overview(results)
    if overview is not None:
        results.append(overview)
    worst = worst_severity(r.severity for r in results if r.status == "ok")
    summary = RunSummary(
        monitor=spec.name,
        batch_id=ran.batch_id,
        batch_time=ran.batch_time.isoformat(),
        rows=ran.rows,
        status=run_status(results, worst, spec.fail_on, ran.rows),
        worst_severity=worst,
        results=results,
        engine=driver.name,
    )
    record = {
        "monitor": spec.name,
        "batch_id": ran.batch_id,
        "batch_time": ran.batch_time,
        "results": [r.to_dict() for r in results],
        "status": summary.status,
        "worst_severity": worst,
        "rows": ran.rows,
        "flow_run_id": driver.run_id,
        "details": {"reference_rows": len(prepared.frame), "reference_hash": prepared.content_hash},
    }
    summary.report = write_run_report(context, summary, len(prepared.frame))
    persisted = persist_run(context, record)
    summary.stored, summary.alerts = persisted.stored, persisted.alerts
    if spec.labels is not None:
        summary.labels = _late_labels(context, ran.batch_id, prepared)
    if options.retrain and spec.retrain:
        summary.retraining = start_retraining(context, summary, ran.batch_time, prepared.content_hash)
    summary.figures = publish_report(context, summary, report_dir(spec, ran.batch_id))
    driver.logger.info(
        "monitor %s batch %s: %s (worst severity %s)", spec.name, ran.batch_id, summary.status, worst
    )
    return summary


def _late_labels(context: RunContext, batch_id: str, prepared: PreparedReference) -> list[dict[str, Any]]:
    """Join the labels that landed since onto earlier batches; a failure is logged, never fatal."""
    from driftline.tasks.run.late_labels import join_late_labels

    try:
        joins = join_late_labels(context, current_batch=batch_id, prepared=prepared)
    except Exception as exc:
        context.driver.logger.warning("late labels not joined: %s: %s", type(exc).__name__, exc)
        return []
    return [join.to_dict() for join in joins]


def report_dir(spec: MonitorSpec, batch_id: str) -> Path:
    """The folder of one run's report files (figures; summaries written by a driver); a batch id that
    would leave `.driftline/reports/` is a `BatchIdError`."""
    from driftline.tasks.sources import valid_batch_id

    return spec.state_dir / "reports" / spec.name / valid_batch_id(batch_id)


def write_run_report(context: RunContext, summary: RunSummary, reference_rows: int) -> str | None:
    """The run's HTML report, written before the run is stored (a process killed once its results
    are stored still leaves the report); a failure here is logged, never fatal."""
    driver = context.driver
    run = {**summary.to_dict(), "reference_rows": reference_rows}
    try:
        from driftline.tasks.report import write_html_report

        path = write_html_report(context.spec, run, run_url=driver.run_url, database_url=context.database_url)
    except Exception as exc:
        driver.logger.warning("HTML report not written: %s: %s", type(exc).__name__, exc)
        return None
    return str(path)


def publish_report(context: RunContext, summary: RunSummary, figure_dir: Path) -> list[str]:
    """The run's figures and summary, published by the engine once the run is stored; a failure here
    is logged, never fatal."""
    driver = context.driver
    try:
        figures = drawn_figures(summary.results, figure_dir)
        driver.publish(summary.to_dict(), figures)
    except Exception as exc:
        driver.logger.warning("run report not published: %s: %s", type(exc).__name__, exc)
        return []
    return [str(p) for p in figures]
