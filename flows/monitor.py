"""The monitor flow: load a batch, run the checks in parallel, store, alert, and retrain on failure."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.futures import wait
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from checks import registry
from checks.columns import Columns, infer_columns
from checks.errors import CheckInputError
from checks.fingerprint import frame_fingerprint
from checks.result import CheckResult, severity_rank, worst_severity
from flows.report import publish
from flows.spec import MonitorSpec, Source, SpecError, load_spec, severity_at_least
from tasks.model import load_model, score_frame
from tasks.profiles import ProfileCache
from tasks.sources import Batch
from tasks.spool import replay_spool, spool_run
from tasks.steps import evaluate_check, load_batch, load_reference, parse_record_times

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


def _source_args(spec: MonitorSpec, source: Source) -> tuple[str | None, dict[str, Any] | None]:
    """The (path, sql) arguments of the load tasks, paths resolved against the spec's folder."""
    if source.path is not None:
        return str(spec.resolve(source.path)), None
    sql = source.sql
    assert sql is not None
    url = sql.url or (os.environ.get(sql.url_env) if sql.url_env else None)
    if not url:
        raise SpecError(
            f"{spec.name}: the SQL source needs `url`, or `url_env` naming a set environment variable"
        )
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


def _store(spec: MonitorSpec, record: dict[str, Any], spool_dir: Path) -> str:
    """Write the run to the history database, replaying earlier spooled runs first.

    When the database stays unreachable after retries, the record is spooled to disk and replayed on
    a later run: nothing is lost.
    """
    from sqlalchemy.exc import DBAPIError

    from tasks.history.db import StoreUnavailable, resolve_database_url
    from tasks.steps import record_run_task

    logger = get_run_logger()
    url = resolve_database_url(spec.store_url)
    try:
        replayed = replay_spool(
            lambda r: record_run_task.fn(url, parse_record_times(r)),
            spool_dir,
            transient=(StoreUnavailable, DBAPIError),
        )
        if replayed:
            logger.info("replayed %d spooled run(s) into the history database", replayed)
        written = record_run_task(url, record)
    except Exception as exc:
        path = spool_run(record, spool_dir)
        logger.error("history database unavailable (%s); run spooled to %s", exc, path)
        return f"spooled to {path}"
    return f"stored run {written['run_id']} ({written['results']} metric rows)"


def _alert(spec: MonitorSpec, summary: RunSummary) -> dict[str, Any]:
    """Open, escalate or resolve incidents and deliver the alert (queued in the outbox on failure)."""
    from tasks.alerts import process_alerts
    from tasks.history.db import open_store, resolve_database_url

    logger = get_run_logger()
    token = None
    if spec.alerts.slack is not None:
        token = _slack_token(spec)
    try:
        engine = open_store(resolve_database_url(spec.store_url))
    except Exception as exc:
        logger.error("alerts not processed: history database unavailable (%s)", exc)
        return {"error": str(exc)}
    try:
        report = process_alerts(
            engine,
            monitor=spec.name,
            batch_id=summary.batch_id,
            results=summary.results,
            config=spec.alerts,
            token=token,
            run_url=_run_url(),
        )
    finally:
        engine.dispose()
    return report.to_dict() if hasattr(report, "to_dict") else asdict(report)


def _slack_token(spec: MonitorSpec) -> str | None:
    """The Slack bot token from the Prefect Secret block or environment variable the spec names."""
    slack = spec.alerts.slack
    assert slack is not None
    if slack.token_block:
        from prefect.blocks.system import Secret

        return Secret.load(slack.token_block).get()
    return os.environ.get(slack.token_env) if slack.token_env else None


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
    spool_dir: Path | None = None,
) -> RunSummary:
    """One monitor run over one batch (the body of the `monitor` flow)."""
    logger = get_run_logger()
    cache = cache or ProfileCache(spec.base_dir / ".driftline" / "profiles")
    spool_dir = spool_dir or spec.base_dir / ".driftline" / "spool"
    ref_path, ref_sql = _source_args(spec, spec.reference)
    batch_path, batch_sql = _source_args(spec, spec.batches)
    reference = load_reference(ref_path, ref_sql)
    batch: Batch = load_batch(batch_path, batch_sql, batch_id)
    logger.info(
        "monitor %s: batch %s, %d rows (reference %d rows)",
        spec.name,
        batch.batch_id,
        len(batch.frame),
        len(reference),
    )
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
    if spec.retrain and severity_at_least(worst, spec.retrain.min_severity):
        from tasks.retrain import trigger_retraining

        summary.retraining = trigger_retraining(
            monitor=spec.name,
            batch_id=batch.batch_id,
            worst_severity=worst,
            failing_checks=[
                {k: r[k] for k in ("check", "target", "severity", "metrics")}
                for r in summary.failing(spec.retrain.min_severity)
            ][:10],
            deployment=spec.retrain.deployment,
            parameters=spec.retrain.parameters,
            emit=spec.retrain.emit_event,
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
        "details": {
            "reference_rows": len(reference),
            "reference_hash": ref_hash,
            "retraining": summary.retraining,
        },
    }
    summary.stored = _store(spec, record, spool_dir)
    summary.alerts = _alert(spec, summary)
    summary.figures = [str(p) for p in publish(summary.to_dict(), spec.base_dir / ".driftline" / "reports")]
    logger.info(
        "monitor %s batch %s: %s (worst severity %s)", spec.name, batch.batch_id, summary.status, worst
    )
    return summary


def _flow_run_id() -> str | None:
    try:
        return flow_run.id
    except Exception:
        return None


@flow(name="driftline-monitor", task_runner=ThreadPoolTaskRunner(max_workers=4))
def monitor(spec_path: str, batch_id: str | None = None) -> dict[str, Any]:
    """Run the monitor described by the spec file over one batch (the newest when `batch_id` is empty)."""
    spec = load_spec(spec_path)
    return run_monitor(spec, batch_id).to_dict()


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
