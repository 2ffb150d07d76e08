"""After the checks: write the run to the history database and process its alerts, losing neither.

A run record and its alerts travel together. Its values are made storable first (no NUL, names that
fit their columns: `tasks.history.storable`). When the database cannot be reached, the record is
spooled to disk; the next run that reaches the database first writes every spooled record and
processes its alerts (oldest first), then its own. When the spool cannot take it either (a full or
read-only disk), `RunNotKept` carries the run's summary to the caller, which prints it. A record the
database refuses (`tasks.history.failures`) is never spooled to wait: it is set aside as rejected and
the run is stored without its results, with the reason, so the monitor's later runs go on.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from driftline.tasks.config.spec import MonitorSpec
from driftline.tasks.run.context import RunContext
from driftline.tasks.run.driver import Driver
from driftline.tasks.run.spool import REJECTED, SPOOLED, replay_spool, spool_run
from driftline.tasks.run.steps import parse_record_times, record_run_step

log = logging.getLogger(__name__)
T = TypeVar("T")


class RunNotKept(RuntimeError):
    """Neither the history database nor the spool could take the run; `summary` is the run record as
    JSON-ready data, for the caller to print so the verdict is not lost."""

    def __init__(self, message: str, summary: dict[str, Any]) -> None:
        super().__init__(message, summary)
        self.summary = summary

    def __str__(self) -> str:
        return str(self.args[0])


def spool_or_raise(
    record: dict[str, Any], spool_dir: Path, url: str, failure: Exception, suffix: str = SPOOLED
) -> Path:
    """Spool the record (or set it aside, with `suffix=REJECTED`) after the database `failure`; when the
    spool cannot take it, raise `RunNotKept` naming both failures."""
    from driftline.tasks.history.failures import one_line

    try:
        return spool_run(record, spool_dir, url, suffix)
    except OSError as exc:
        raise RunNotKept(
            f"run not kept: the history database failed ({one_line(failure, url)}) and the spool "
            f"{spool_dir} could not take it ({one_line(exc, url)}); its summary is printed as JSON",
            json.loads(json.dumps(record, default=str)),
        ) from exc


@dataclass
class Persisted:
    """Where the run went (`stored`) and what alerting did (`alerts`)."""

    stored: str
    alerts: dict[str, Any] = field(default_factory=dict)


def process_run_alerts(url: str, spec: MonitorSpec, record: dict[str, Any], driver: Driver) -> dict[str, Any]:
    """Update incidents and deliver (or queue) the alert of one stored run; channels read their secrets
    from the environment or the engine's secret store (a missing one is logged, never its value, and
    leaves the alert queued until it exists)."""
    from driftline.tasks.alerts import process_alerts
    from driftline.tasks.history.db import connected_store

    with connected_store(url) as engine:
        report = process_alerts(
            engine,
            monitor=record["monitor"],
            batch_id=record["batch_id"],
            results=record["results"],
            config=spec.alerts,
            secrets=driver.secret,
            run_url=driver.run_url,
            batch_time=record.get("batch_time"),
        )
    return report.to_dict()


def _best_effort(url: str, failure: str, action: Callable[[Any], T]) -> T | None:
    """`action(engine)` on the history store; a failure is logged as `failure` and gives None."""
    from driftline.tasks.history.db import connected_store

    try:
        with connected_store(url) as engine:
            return action(engine)
    except Exception as exc:
        log.warning("%s: %s: %s", failure, type(exc).__name__, exc)
        return None


# Delivered alerts are kept this long (their dedupe keys stop a re-run batch from alerting twice).
DELIVERED_RETENTION = timedelta(days=90)


def _purge_delivered(url: str, logger: Any) -> None:
    """Drop delivered outbox rows past the retention, so the outbox stays small; never fatal."""
    from driftline.tasks.alerts import purge_sent

    purged = _best_effort(url, "delivered alerts not purged", lambda e: purge_sent(e, DELIVERED_RETENTION))
    if purged:
        logger.info("purged %d delivered alert(s) older than %s", purged, DELIVERED_RETENTION)


def persist_run(context: RunContext, record: dict[str, Any]) -> Persisted:
    """Store the run (replaying the spool first) and process its alerts unless the run's options
    switch them off.

    A database that stays unreachable after the store task's retries spools the record, marked with
    whether its alerts are still due; a record the database refuses is set aside (`set_aside`).
    """
    from driftline.tasks.history.failures import is_outage, one_line
    from driftline.tasks.history.storable import storable_record

    spec, driver, alerts = context.spec, context.driver, context.options.alerts
    url, spool_dir = context.database_url, context.state_dir / "spool"
    logger = driver.logger
    record = storable_record(record)

    def write_spooled(spooled: dict[str, Any]) -> None:
        spooled = storable_record(parse_record_times(spooled))
        due = spooled.pop("alerts_due", False)
        record_run_step(url, spooled)
        if due:
            process_run_alerts(url, spec, spooled, driver)

    try:
        replayed = replay_spool(write_spooled, spool_dir, url, transient=is_outage)
        if replayed:
            logger.info("replayed %d spooled run(s) into the history database", replayed)
        written = driver.step("record-run", record_run_step, url, record)
    except Exception as exc:
        if not is_outage(exc):
            return set_aside(context, record, exc)
        path = spool_or_raise({**record, "alerts_due": alerts}, spool_dir, url, exc)
        logger.error(
            "history database unavailable (%s); run and its alerts spooled to %s", one_line(exc, url), path
        )
        return Persisted(f"spooled to {path} (database unavailable)")
    stored = f"stored run {written['run_id']} ({written['results']} metric rows)"
    _purge_delivered(url, logger)
    if not alerts:
        return Persisted(stored, {"skipped": "alerts disabled for this run"})
    try:
        return Persisted(stored, process_run_alerts(url, spec, record, driver))
    except Exception as exc:
        logger.error("alerts not processed: %s: %s", type(exc).__name__, exc)
        return Persisted(stored, {"error": f"{type(exc).__name__}: {exc}"})


def set_aside(context: RunContext, record: dict[str, Any], refusal: Exception) -> Persisted:
    """The database refused the run's record: keep it as `*.rejected` in the spool (never replayed),
    store the run as `error` without its results, naming the reason, and log one line; the monitor's
    later runs are stored as usual. Its alerts are not processed (their incidents would name results
    the history does not hold)."""
    from driftline.tasks.history.failures import one_line
    from driftline.tasks.history.store import record_run

    url, spool_dir = context.database_url, context.state_dir / "spool"
    reason = one_line(refusal, url)
    path = spool_or_raise(record, spool_dir, url, refusal, suffix=REJECTED)
    context.driver.logger.error(
        "monitor %s batch %s: the history database refused the run (%s); set aside as %s",
        record["monitor"],
        record["batch_id"],
        reason,
        path,
    )
    details = {**record["details"], "reason": f"results refused by the history database: {reason}"}
    bare = {**record, "results": [], "status": "error", "worst_severity": "none", "details": details}
    _best_effort(url, "refused run not recorded", lambda engine: record_run(engine, **bare))
    return Persisted(f"set aside as {path} (refused: {type(refusal).__name__})")


def mark_started(context: RunContext, record: dict[str, Any]) -> int | None:
    """Close the monitor's runs whose process died, then record this one as `running` so a crash
    leaves a trace; None when the database is unreachable."""
    from driftline.tasks.history.store import mark_abandoned, start_run

    def start(engine: Any) -> int:
        mark_abandoned(engine, context.spec.name)
        return start_run(engine, **record)

    return _best_effort(context.database_url, "run start not recorded", start)


@contextmanager
def heartbeating(context: RunContext, run_id: int | None) -> Iterator[None]:
    """Touch the run's heartbeat every HEARTBEAT_S while the block runs, so a killed run can be told
    from a long one."""
    from driftline.tasks.history.store import HEARTBEAT_S, heartbeat

    if run_id is None:
        yield
        return
    stop = threading.Event()
    url = context.database_url

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            _best_effort(url, "heartbeat not recorded", lambda e: heartbeat(e, run_id))

    thread = threading.Thread(target=beat, name="driftline-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def mark_crashed(context: RunContext, run_id: int | None, exc: BaseException) -> None:
    """Close a run that crashed before its results were stored, keeping the reason."""
    from driftline.tasks.history.store import finish_run

    if run_id is None:
        return
    reason = f"{type(exc).__name__}: {exc}"
    _best_effort(
        context.database_url,
        "crashed run not recorded",
        lambda e: finish_run(e, run_id, status="error", reason=reason),
    )
