"""Incidents: one open alert condition per (monitor, check, target), opened, escalated and resolved by runs.

An incident opens on a result at `min_severity` or worse. Its `severity` is the worst severity it
reached; it escalates but never de-escalates, so a metric hovering between two grades alerts once, not
on every run. It resolves only after `resolve_after` consecutive graded runs below `min_severity`
(`details.quiet_runs` counts them; a run at `min_severity` or worse sets it back to 0), so a metric
that dips below the threshold for a run or two stays one incident instead of opening and resolving
again. The latest severity and metrics are kept in `details`. Results that are `skipped` or `error`
neither open, resolve nor count towards the quiet runs; a re-run of the batch an incident last saw
counts once. `details.retrained` names the batch that requested retraining for the incident
(`tasks/retraining/trigger.py`); like every detail not set by a run, it is kept across runs.

Incidents follow batch time, not processing order: a run of a batch older than the monitor's newest
completed batch (a re-run, or a late backfill) updates history but leaves every incident as the newer
batch set it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from driftline.checks.result import severity_rank
from driftline.tasks.history.db import as_utc
from driftline.tasks.history.models import Incident, Run, utcnow
from driftline.tasks.history.store import RESTARTABLE

ChangeKind = Literal["opened", "escalated", "resolved"]
Key = tuple[str, str]
RETRAINED = "retrained"  # the detail naming the batch that requested the incident's retraining


@dataclass(frozen=True)
class IncidentChange:
    """What one run did to one incident, with the result that caused it."""

    kind: ChangeKind
    incident_id: int
    check: str
    target: str
    severity: str
    previous_severity: str | None
    result: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable when the result is)."""
        return asdict(self)


def graded_results(results: Iterable[Mapping[str, Any]]) -> dict[Key, dict[str, Any]]:
    """The worst `ok` result of each (check, target); skipped and error results are left out."""
    graded: dict[Key, dict[str, Any]] = {}
    for result in results:
        if result["status"] != "ok":
            continue
        key = (result["check"], result["target"])
        kept = graded.get(key)
        if kept is None or severity_rank(result["severity"]) > severity_rank(kept["severity"]):
            graded[key] = dict(result)
    return graded


def _details(
    result: Mapping[str, Any], kept: Mapping[str, Any] | None = None, quiet: int = 0
) -> dict[str, Any]:
    """The incident's `details` after `result`: what it kept (e.g. `retrained`), the result's latest
    severity, metrics and thresholds, and the count of consecutive quiet runs."""
    return {
        **(kept or {}),
        "last_severity": result["severity"],
        "metrics": result.get("metrics") or {},
        "thresholds": result.get("thresholds") or {},
        "quiet_runs": quiet,
    }


def quiet_runs(incident: Incident, batch_id: str, alerting: bool) -> int:
    """The incident's consecutive runs below the minimum after a run of `batch_id`: 0 on a run at the
    minimum or worse; one more on a quiet run, unless it is a re-run of the batch the incident last saw."""
    if alerting:
        return 0
    before = int((incident.details or {}).get("quiet_runs", 0))
    return before if batch_id == incident.last_batch else before + 1


def _lock_monitor(session: Session, monitor: str) -> None:
    """Serialise concurrent alert processing of one monitor on PostgreSQL (SQLite has one writer)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": f"driftline.incidents:{monitor}"},
        )


def _open_incidents(session: Session, monitor: str) -> dict[Key, Incident]:
    rows = session.scalars(
        select(Incident).where(Incident.monitor == monitor, Incident.status == "open").order_by(Incident.id)
    )
    incidents: dict[Key, Incident] = {}
    for row in rows:
        incidents.setdefault((row.check, row.target), row)
    return incidents


def newer_batch(session: Session, monitor: str, batch_id: str, batch_time: datetime) -> str | None:
    """The id of the monitor's newest completed batch when it is newer than `batch_time`, else None.

    Takes the monitor's lock first (as `apply_incidents` does, in the same transaction), so no newer
    batch can complete between this answer and the incident changes it allows.
    """
    _lock_monitor(session, monitor)
    completed = Run.status.not_in(RESTARTABLE)
    newest = session.execute(
        select(Run.batch_id, Run.batch_time)
        .where(Run.monitor == monitor, Run.batch_id != batch_id, completed)
        .order_by(Run.batch_time.desc(), Run.id.desc())
        .limit(1)
    ).first()
    if newest is None or as_utc(newest.batch_time) <= as_utc(batch_time):
        return None
    return newest.batch_id


def apply_incidents(
    session: Session,
    *,
    monitor: str,
    batch_id: str,
    results: Iterable[Mapping[str, Any]],
    min_severity: str,
    resolve_after: int,
) -> list[IncidentChange]:
    """Open, escalate and resolve the monitor's incidents for one run; returns the changes.

    An open incident resolves on its `resolve_after`-th consecutive graded run below `min_severity`
    (1: on the first one); the quiet runs before it change nothing anyone is told.

    Runs inside the caller's transaction, holding a per-monitor lock on PostgreSQL until it commits,
    so re-processing a batch (even concurrently) finds the incidents the first pass opened. Whether
    the batch is recent enough to change incidents at all is the caller's question (`newer_batch`).
    """
    threshold = severity_rank(min_severity)
    _lock_monitor(session, monitor)
    incidents = _open_incidents(session, monitor)
    now = utcnow()
    pending: list[tuple[ChangeKind, Incident, str | None, dict[str, Any]]] = []
    for key, result in graded_results(results).items():
        incident = incidents.get(key)
        severity = result["severity"]
        alerting = severity_rank(severity) >= threshold
        if incident is None:
            if alerting:
                incident = Incident(
                    monitor=monitor,
                    check=key[0],
                    target=key[1],
                    status="open",
                    severity=severity,
                    opened_batch=batch_id,
                    last_batch=batch_id,
                    opened_at=now,
                    updated_at=now,
                    details=_details(result),
                )
                session.add(incident)
                pending.append(("opened", incident, None, result))
            continue
        previous = incident.severity
        quiet = quiet_runs(incident, batch_id, alerting)
        incident.details = _details(result, incident.details, quiet)
        incident.last_batch = batch_id
        incident.updated_at = now
        if quiet >= resolve_after:
            incident.status = "resolved"
            incident.resolved_at = now
            pending.append(("resolved", incident, previous, result))
        elif severity_rank(severity) > severity_rank(previous):
            incident.severity = severity
            pending.append(("escalated", incident, previous, result))
    session.flush()
    return [
        IncidentChange(
            kind=kind,
            incident_id=incident.id,
            check=incident.check,
            target=incident.target,
            severity=result["severity"],
            previous_severity=previous,
            result=result,
        )
        for kind, incident, previous, result in pending
    ]


class OpenIncident(NamedTuple):
    """An open incident's id and the batch that requested its retraining (None: not requested yet)."""

    id: int
    retrained: str | None


def open_incidents_of(session: Session, monitor: str, keys: Iterable[Key]) -> dict[Key, OpenIncident]:
    """The open incident of each (check, target) in `keys` that has one."""
    wanted = set(keys)
    rows = session.execute(
        select(Incident.id, Incident.check, Incident.target, Incident.details).where(
            Incident.monitor == monitor,
            Incident.status == "open",
            Incident.check.in_({check for check, _ in wanted}),
        )
    )
    return {
        (row.check, row.target): OpenIncident(row.id, (row.details or {}).get(RETRAINED))
        for row in rows
        if (row.check, row.target) in wanted
    }


def mark_retrained(session: Session, incident_ids: Iterable[int], batch_id: str) -> None:
    """Record in the details of each incident not marked yet that `batch_id` requested its retraining."""
    for incident in session.scalars(select(Incident).where(Incident.id.in_(list(incident_ids)))):
        if not (incident.details or {}).get(RETRAINED):
            incident.details = {**(incident.details or {}), RETRAINED: batch_id}
