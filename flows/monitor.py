"""The monitor flow: load a batch, run the checks in parallel, store, alert, and retrain on failure."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import flow, get_run_logger
from prefect.futures import wait
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from driftline.checks import registry
from driftline.checks.columns import Columns, infer_columns
from driftline.checks.errors import CheckInputError
from driftline.checks.fingerprint import frame_fingerprint
from driftline.checks.result import CheckResult, severity_rank, worst_severity
from driftline.flows.persist import mark_crashed, mark_started, persist_run
from driftline.flows.report import publish
from driftline.flows.spec import MonitorSpec, Source, SpecError, load_spec, severity_at_least
from driftline.tasks.model import load_model, score_frame
from driftline.tasks.profiles import ProfileCache
from driftline.tasks.sources import Batch
from driftline.tasks.steps import evaluate_check, load_batch, load_reference

SCHEMA_CHECK = "schema.columns"


@dataclass
class RunSummary:
    """What one monitor run found and did; the flow's return value."""

    monitor: str
    batch_id: str
    batch_time: str
    rows: int
    status: str
    worst_severity: str
    results: list[dict[str, Any]]
    stored: str = "not stored"
    alerts: dict[str, Any] = field(default_factory=dict)
    retraining: dict[str, Any] | None = None
    figures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        return asdict(self)

    def failing(self, minimum: str) -> list[dict[str, Any]]:
        """Results at or above `minimum`, worst first."""
        hits = [r for r in self.results if r["status"] == "ok" and severity_at_least(r["severity"], minimum)]
        return sorted(hits, key=lambda r: -severity_rank(r["severity"]))


def _source_args(spec: MonitorSpec, source: Source, role: str) -> tuple[str | None, dict[str, Any] | None]:
    """The (path, sql) arguments of the load tasks, paths resolved against the spec's folder."""
    if source.path is not None:
        return str(spec.resolve(source.path)), None
    sql = source.sql
    assert sql is not None
    url = sql.url or (os.environ.get(sql.url_env) if sql.url_env else None)
    if not url:
        missing = f"environment variable {sql.url_env} is not set" if sql.url_env else "no url or url_env"
        raise SpecError(f"{spec.name}: {role}.sql: {missing}")
    return None, {"url": url, "query": sql.query, "window_days": sql.window_days}


def build_checks(spec: MonitorSpec) -> list[Any]:
    """The schema check first (unless listed), then the spec's checks in order."""
    entries = [(e.check, e.check_params()) for e in spec.checks]
    if all(name != SCHEMA_CHECK for name, _ in entries):
        entries.insert(0, (SCHEMA_CHECK, {}))
    return [registry.create(name, params) for name, params in entries]


def _collect(futures: list[Any], checks: list[Any]) -> list[dict[str, Any]]:
    """Results of every check future; a crashed task becomes an `error` result, never a lost check."""
    wait(futures)
    results: list[dict[str, Any]] = []
    for future, check in zip(futures, checks, strict=True):
        try:
            results.extend(future.result())
        except Exception as exc:
            results.append(
                CheckResult.error(check.name, "*", f"task failed: {type(exc).__name__}: {exc}").to_dict()
            )
    return results


def _status(results: list[dict[str, Any]], worst: str, fail_on: str, rows: int) -> str:
    if rows == 0:
        return "empty"
    if severity_at_least(worst, fail_on):
        return "failed"
    if results and all(r["status"] == "error" for r in results):
        return "error"
    return "passed"


def _run_url() -> str | None:
    """Link to this flow run in the Prefect UI, when a UI is known."""
    from prefect.settings import PREFECT_UI_URL

    if not PREFECT_UI_URL.value():
        return None
    return flow_run.ui_url


def apply_model(spec: MonitorSpec, frames: list[Any], columns: Columns) -> tuple[list[Any], Columns]:
    """Score each frame with the spec's model when the data carry no predictions."""
    if not spec.model:
        return frames, columns
    model = load_model(spec.model)
    scored = [score_frame(model, frame, columns) for frame in frames]
    return [frame for frame, _ in scored], scored[-1][1]


def run_monitor(
    spec: MonitorSpec,
    batch_id: str | None = None,
    cache: ProfileCache | None = None,
    *,
    alerts: bool = True,
    retrain: bool = True,
) -> RunSummary:
    """One monitor run over one batch (the body of the `monitor` flow).

    `alerts` and `retrain` switch off alerting and the retraining trigger, e.g. for a backfill of
    historical batches; the results are stored either way.
    """
    logger = get_run_logger()
    state_dir = spec.base_dir / ".driftline"
    cache = cache or ProfileCache(state_dir / "profiles")
    reference = load_reference(*_source_args(spec, spec.reference, "reference"))
    batch: Batch = load_batch(*_source_args(spec, spec.batches, "batches"), batch_id)
    logger.info(
        "monitor %s: batch %s, %d rows (reference %d rows)",
        spec.name,
        batch.batch_id,
        len(batch.frame),
        len(reference),
    )
    run_id = mark_started(
        spec,
        {
            "monitor": spec.name,
            "batch_id": batch.batch_id,
            "batch_time": batch.batch_time,
            "flow_run_id": _flow_run_id(),
        },
    )
    try:
        return _evaluate(spec, reference, batch, cache, state_dir, alerts=alerts, retrain=retrain)
    except BaseException as exc:
        mark_crashed(spec, run_id, exc)
        raise


def _evaluate(
    spec: MonitorSpec,
    reference: pd.DataFrame,
    batch: Batch,
    cache: ProfileCache,
    state_dir: Path,
    *,
    alerts: bool,
    retrain: bool,
) -> RunSummary:
    """Checks, storage, alerts, retraining and report for one loaded batch."""
    logger = get_run_logger()
    try:
        columns = infer_columns(reference, spec.columns)
    except CheckInputError as exc:
        raise SpecError(f"{spec.name}: columns: {exc}") from None
    (reference, current), columns = apply_model(spec, [reference, batch.frame], columns)

    checks = build_checks(spec)
    ref_hash = frame_fingerprint(reference)
    futures = [evaluate_check.submit(c, current, columns, reference, ref_hash, cache) for c in checks]
    results = _collect(futures, checks)

    worst = worst_severity(r["severity"] for r in results if r["status"] == "ok")
    summary = RunSummary(
        monitor=spec.name,
        batch_id=batch.batch_id,
        batch_time=batch.batch_time.isoformat(),
        rows=len(current),
        status=_status(results, worst, spec.fail_on, len(current)),
        worst_severity=worst,
        results=results,
    )
    record = {
        "monitor": spec.name,
        "batch_id": batch.batch_id,
        "batch_time": batch.batch_time,
        "results": results,
        "status": summary.status,
        "worst_severity": worst,
        "rows": len(current),
        "flow_run_id": _flow_run_id(),
        "details": {"reference_rows": len(reference), "reference_hash": ref_hash},
    }
    persisted = persist_run(spec, record, state_dir / "spool", alerts=alerts, run_url=_run_url())
    summary.stored, summary.alerts = persisted.stored, persisted.alerts
    if retrain and spec.retrain and severity_at_least(worst, spec.retrain.min_severity):
        summary.retraining = _retrain(spec, summary, ref_hash)
    summary.figures = _publish(summary, state_dir / "reports")
    logger.info(
        "monitor %s batch %s: %s (worst severity %s)", spec.name, batch.batch_id, summary.status, worst
    )
    return summary


def _retrain(spec: MonitorSpec, summary: RunSummary, ref_hash: str) -> dict[str, Any]:
    """Start the retraining deployment and/or emit the failure event (once per batch and reference)."""
    from driftline.tasks.retrain import trigger_retraining

    retrain = spec.retrain
    assert retrain is not None
    failing = summary.failing(retrain.min_severity)[:10]
    return trigger_retraining(
        monitor=spec.name,
        batch_id=summary.batch_id,
        run_key=ref_hash[:16],
        worst_severity=summary.worst_severity,
        failing_checks=[{k: r[k] for k in ("check", "target", "severity", "metrics")} for r in failing],
        deployment=retrain.deployment,
        parameters=retrain.parameters,
        emit=retrain.emits,
        spec_path=str(spec.path) if spec.path else None,
    )


def _publish(summary: RunSummary, report_dir: Path) -> list[str]:
    """The run's artifacts and figures; a failure here is logged, never fatal, as the run is stored."""
    try:
        return [str(p) for p in publish(summary.to_dict(), report_dir)]
    except Exception as exc:
        get_run_logger().warning("run report not published: %s: %s", type(exc).__name__, exc)
        return []


def _flow_run_id() -> str | None:
    try:
        return flow_run.id
    except Exception:
        return None


@flow(name="driftline-monitor", task_runner=ThreadPoolTaskRunner(max_workers=4))
def monitor(
    spec_path: str, batch_id: str | None = None, alerts: bool = True, retrain: bool = True
) -> dict[str, Any]:
    """Run the monitor described by the spec file over one batch (the newest when `batch_id` is empty)."""
    spec = load_spec(spec_path)
    return run_monitor(spec, batch_id, alerts=alerts, retrain=retrain).to_dict()


def monitor_deployment(spec: MonitorSpec, spec_path: Path) -> Any:
    """The monitor as a Prefect deployment on the spec's cron schedule (what `driftline serve` serves)."""
    from prefect.schedules import Cron

    return monitor.to_deployment(
        name=spec.name,
        schedule=Cron(spec.schedule.cron, timezone=spec.schedule.timezone),
        parameters={"spec_path": str(spec_path.resolve())},
        description=spec.description or f"driftline monitor {spec.name}",
        tags=["driftline"],
    )
