"""One monitor run over one batch, whatever the engine: load, validate, score, evaluate, store, alert,
retrain, report.

Every engine (the plain process, Prefect, Airflow) calls `run_monitor` with its own `Driver`; nothing
here imports an orchestrator, so every engine stores the same rows and raises the same alerts.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from driftline.checks import registry
from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.domains import stopping_problem
from driftline.checks.result import CheckResult, severity_rank, worst_severity
from driftline.checks.runner import missing_role
from driftline.checks.schema import stopping_problems
from driftline.checks.slice_codes import SliceCodes, sharing_codes
from driftline.tasks.attribution_plots import drawn_figures, write_figures
from driftline.tasks.drift_overview import drift_overview
from driftline.tasks.driver import CheckJob, Driver
from driftline.tasks.persist import heartbeating, mark_crashed, mark_started, persist_run
from driftline.tasks.profiles import ProfileCache, Unfittable
from driftline.tasks.reference import LazyReference, PreparedReference, prepare_reference, scored
from driftline.tasks.retrain import Retraining, RetrainRequest, older_batch_skip
from driftline.tasks.sources import Batch
from driftline.tasks.spec import CheckSpec, MonitorSpec, severity_at_least
from driftline.tasks.steps import (
    evaluate_check,
    grade_run,
    load_batch,
    load_reference,
    require_reference,
    source_args,
)

SCHEMA_CHECK = "schema.columns"
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
    results: list[dict[str, Any]]
    engine: str = "local"
    stored: str = "not stored"
    alerts: dict[str, Any] = field(default_factory=dict)
    retraining: dict[str, Any] | None = None
    figures: list[str] = field(default_factory=list)
    report: str | None = None
    labels: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        return asdict(self)

    def failing(self, minimum: str) -> list[dict[str, Any]]:
        """Results at or above `minimum`, worst first."""
        hits = [r for r in self.results if r["status"] == "ok" and severity_at_least(r["severity"], minimum)]
        return sorted(hits, key=lambda r: -severity_rank(r["severity"]))


def check_label(check: Check, entry: CheckSpec | None) -> str:
    """The name a check's task carries in an orchestrator's UI: the check and its targets when listed."""
    features = entry.features if entry is not None else None
    return f"{check.name}[{','.join(features)}]" if features else check.name


@dataclass(frozen=True)
class Evaluation:
    """What every check of one run is evaluated against, and where its figures go."""

    current: pd.DataFrame
    columns: Columns
    reference: pd.DataFrame
    ref_hash: str
    cache: ProfileCache
    figure_dir: Path

    def waiting_for_labels(self, check: Check) -> list[dict[str, Any]]:
        """The result of a label check on a batch whose labels have not landed: skipped until they do."""
        reason = "the batch has no labels yet: this check runs when they land (see `labels:`)"
        return [CheckResult.skipped(check.name, "*", reason, rows=len(self.current)).to_dict()]

    def stopped(self, check: Check, problem: str) -> list[dict[str, Any]]:
        """The result of a check that reads a column the schema check found outside its domain."""
        return [CheckResult.error(check.name, "*", problem, rows=len(self.current)).to_dict()]

    def evaluate_and_draw(self, check: Check) -> list[dict[str, Any]]:
        """One check's results, its figures drawn in the same worker (in parallel with the other
        checks); a figure that cannot be drawn never costs a result."""
        results = evaluate_check(check, self.current, self.columns, self.reference, self.ref_hash, self.cache)
        try:
            write_figures(results, self.figure_dir)
        except Exception as exc:
            log.warning("figures of %s not drawn: %s: %s", check.name, type(exc).__name__, exc)
        return results


def awaiting_labels(spec: MonitorSpec, current: pd.DataFrame, columns: Columns) -> bool:
    """True when the batch came without its label and the spec says labels land later."""
    return spec.labels is not None and columns.label is not None and columns.label not in current.columns


def fits_profile(check: Check, columns: Columns, awaited: bool) -> bool:
    """Whether evaluating `check` fits (or looks up) its profile: its roles are set and it is not
    waiting for labels."""
    return missing_role(check, columns) is None and not (awaited and "label" in check.needs)


def build_jobs(spec: MonitorSpec, evaluation: Evaluation, model: Any = None) -> list[CheckJob]:
    """The schema check first (unless listed), then the spec's checks in order, each with its limits;
    checks that call the model themselves (text attacks and transformations) are given `model`."""
    entries: list[tuple[str, dict[str, Any], CheckSpec | None]] = [
        (e.check, e.check_params(), e) for e in spec.checks
    ]
    awaited = awaiting_labels(spec, evaluation.current, evaluation.columns)
    if all(name != SCHEMA_CHECK for name, _, _ in entries):
        entries.insert(
            0, (SCHEMA_CHECK, {"arrive_later": [evaluation.columns.label]} if awaited else {}, None)
        )
    execution = spec.execution
    jobs = []
    for name, params, entry in entries:
        check = registry.create(name, params)
        if model is not None and hasattr(check, "attach_model"):
            check.attach_model(model)
        waits = awaited and "label" in check.needs
        jobs.append(
            CheckJob(
                check=check,
                label=check_label(check, entry),
                evaluate=partial(
                    evaluation.waiting_for_labels if waits else evaluation.evaluate_and_draw, check
                ),
                isolation=execution.isolation,
                timeout_s=(entry.timeout_s if entry and entry.timeout_s else None) or execution.timeout_s,
                memory_mb=execution.memory_mb,
            )
        )
    return jobs


def schema_first(jobs: list[CheckJob], evaluation: Evaluation) -> list[CheckJob]:
    """The schema check evaluated now, before the other checks fan out: a label, prediction or score
    outside the reference's domain stops every check that reads it, with the problem as its error."""
    schema = next(j for j in jobs if j.check.name == SCHEMA_CHECK)
    results = schema.run()
    problems = stopping_problems(results)

    def settled(job: CheckJob) -> CheckJob:
        if job is schema:
            return replace(job, evaluate=partial(list, results), isolation="thread")
        problem = stopping_problem(job.check, problems)
        return replace(job, evaluate=partial(evaluation.stopped, job.check, problem)) if problem else job

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
        if profile is None or isinstance(profile, Unfittable):
            continue
        for feature, slices in check.slice_definitions(profile).items():
            store.add(feature, slices)
    if len(store):
        log.info("subset codes of %d feature cut(s) computed once for the run", len(store))


def run_status(results: list[dict[str, Any]], worst: str, fail_on: str, rows: int) -> str:
    """`empty`, `failed` (a result reached `fail_on`), `error` (every result errored) or `passed`."""
    if rows == 0:
        return "empty"
    if severity_at_least(worst, fail_on):
        return "failed"
    if results and all(r["status"] == "error" for r in results):
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
    driver = driver or Driver()
    spec.database_url()  # a URL that cannot work is a mistake to name before any work is done
    state_dir = spec.base_dir / ".driftline"
    cache = cache or ProfileCache(state_dir / "profiles")
    require_reference(spec)
    batch: Batch = driver.step(
        "load-batch", load_batch, *source_args(spec, spec.batches, "batches"), batch_id
    )
    driver.logger.info("monitor %s: batch %s, %d rows", spec.name, batch.batch_id, len(batch.frame))
    with tracked_run(spec, driver, batch.batch_id, batch.batch_time):
        return _evaluate(spec, batch, cache, driver, alerts=alerts, retrain=retrain)


@contextmanager
def tracked_run(spec: MonitorSpec, driver: Driver, batch_id: str, batch_time: datetime) -> Iterator[None]:
    """The block as one run of the batch in the history: marked `running` first (so a crash leaves a
    trace), its heartbeat kept, marked crashed if the block raises; every store step of the block
    shares one engine."""
    from driftline.tasks.history.db import store_scope

    started = {
        "monitor": spec.name,
        "batch_id": batch_id,
        "batch_time": batch_time,
        "flow_run_id": driver.run_id,
    }
    with store_scope(spec.database_url()):
        run_id = mark_started(spec, started)
        try:
            with heartbeating(spec, run_id):
                yield
        except BaseException as exc:
            mark_crashed(spec, run_id, exc)
            raise


def _evaluate(
    spec: MonitorSpec,
    batch: Batch,
    cache: ProfileCache,
    driver: Driver,
    *,
    alerts: bool,
    retrain: Retraining,
) -> RunSummary:
    """Checks, storage, alerts, retraining and report for one loaded batch."""

    def load() -> pd.DataFrame:
        return driver.step("load-reference", load_reference, *source_args(spec, spec.reference, "reference"))

    prepared = prepare_reference(spec, load, cache.directory)
    reference, ref_hash, model = prepared.frame, prepared.content_hash, prepared.model
    current, columns = scored(model, batch.frame, prepared.roles)
    driver.logger.info(
        "reference %d rows (%s)",
        len(reference),
        "read" if isinstance(reference, pd.DataFrame) else "from cache",
    )

    figure_dir = report_dir(spec, batch.batch_id)
    evaluation = Evaluation(current, columns, reference, ref_hash, cache, figure_dir)
    jobs = build_jobs(spec, evaluation, model)
    awaited = awaiting_labels(spec, current, columns)
    fitting = [j.check for j in jobs if fits_profile(j.check, columns, awaited)]
    if isinstance(reference, LazyReference) and not all(cache.has(c, columns, ref_hash) for c in fitting):
        reference.read()  # a profile is to be fitted: read the reference once, before the workers fork
    jobs = schema_first(jobs, evaluation)
    with sharing_codes(current) as shared:
        share_slice_codes(shared, fitting, cache, columns, ref_hash)
        results = [r for outcome in driver.fan_out(jobs, spec.execution.workers) for r in outcome]

    return conclude_run(
        spec,
        driver,
        Ran(batch.batch_id, batch.batch_time, len(current), results),
        prepared,
        cache,
        figure_dir,
        alerts=alerts,
        retrain=retrain,
    )


@dataclass(frozen=True)
class Ran:
    """What the checks of one run gave: the batch, its row count and every result."""

    batch_id: str
    batch_time: datetime
    rows: int
    results: list[dict[str, Any]]


def conclude_run(
    spec: MonitorSpec,
    driver: Driver,
    ran: Ran,
    prepared: PreparedReference,
    cache: ProfileCache,
    figure_dir: Path,
    *,
    alerts: bool,
    retrain: Retraining,
    **label_options: Any,
) -> RunSummary:
    """After the checks, whatever evaluated them: store, alert, join late labels (`label_options` go
    to `join_late_labels`), retrain and report."""
    state_dir = spec.base_dir / ".driftline"
    results = grade_run(ran.results, spec.alerts.confidence)
    overview = drift_overview(results)
    if overview is not None:
        results.append(overview)
    worst = worst_severity(r["severity"] for r in results if r["status"] == "ok")
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
        "results": results,
        "status": summary.status,
        "worst_severity": worst,
        "rows": ran.rows,
        "flow_run_id": driver.run_id,
        "details": {"reference_rows": len(prepared.frame), "reference_hash": prepared.content_hash},
    }
    persisted = persist_run(spec, record, state_dir / "spool", alerts=alerts, driver=driver)
    summary.stored, summary.alerts = persisted.stored, persisted.alerts
    if spec.labels is not None:
        summary.labels = _late_labels(spec, ran.batch_id, prepared, cache, driver, **label_options)
    if retrain and spec.retrain and severity_at_least(worst, spec.retrain.min_severity):
        summary.retraining = older_batch_skip(spec, ran.batch_id, ran.batch_time, retrain) or driver.retrain(
            spec, retrain_request(spec, summary, prepared.content_hash), state_dir
        )
    summary.figures = publish_report(spec, summary, figure_dir, driver)
    driver.logger.info(
        "monitor %s batch %s: %s (worst severity %s)", spec.name, ran.batch_id, summary.status, worst
    )
    return summary


def _late_labels(
    spec: MonitorSpec,
    batch_id: str,
    prepared: PreparedReference,
    cache: ProfileCache,
    driver: Driver,
    **options: Any,
) -> list[dict[str, Any]]:
    """Join the labels that landed since onto earlier batches (`options` go to `join_late_labels`);
    a failure is logged, never fatal."""
    from driftline.tasks.late_labels import join_late_labels

    try:
        joins = join_late_labels(
            spec,
            current_batch=batch_id,
            columns=prepared.roles,
            reference=prepared.frame,
            ref_hash=prepared.content_hash,
            cache=cache,
            prepare=lambda frame: scored(prepared.model, frame, prepared.roles),
            **options,
        )
    except Exception as exc:
        driver.logger.warning("late labels not joined: %s: %s", type(exc).__name__, exc)
        return []
    return [join.to_dict() for join in joins]


def retrain_request(spec: MonitorSpec, summary: RunSummary, ref_hash: str) -> RetrainRequest:
    """What a retraining trigger is told: the monitor, the batch, the reference and the worst results."""
    assert spec.retrain is not None
    failing = summary.failing(spec.retrain.min_severity)[:10]
    return RetrainRequest(
        monitor=spec.name,
        batch_id=summary.batch_id,
        run_key=ref_hash[:16],
        severity=summary.worst_severity,
        failing_checks=[{k: r[k] for k in ("check", "target", "severity", "metrics")} for r in failing],
        spec_path=str(spec.path) if spec.path else None,
    )


def report_dir(spec: MonitorSpec, batch_id: str) -> Path:
    """The folder of one run's report files (figures; summaries written by a driver); a batch id that
    would leave `.driftline/reports/` is a `BatchIdError`."""
    from driftline.tasks.sources import valid_batch_id

    return spec.base_dir / ".driftline" / "reports" / spec.name / valid_batch_id(batch_id)


def publish_report(spec: MonitorSpec, summary: RunSummary, figure_dir: Path, driver: Driver) -> list[str]:
    """The run's HTML report and figures, published by the engine; a failure here is logged, never
    fatal (the run is stored)."""
    try:
        from driftline.tasks.report import write_html_report

        summary.report = str(write_html_report(spec, summary, run_url=driver.run_url))
    except Exception as exc:
        driver.logger.warning("HTML report not written: %s: %s", type(exc).__name__, exc)
    try:
        figures = drawn_figures(summary.results, figure_dir)
        driver.publish(summary.to_dict(), figures)
    except Exception as exc:
        driver.logger.warning("run report not published: %s: %s", type(exc).__name__, exc)
        return []
    return [str(p) for p in figures]
