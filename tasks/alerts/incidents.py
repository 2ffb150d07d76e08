"""Incidents: one open alert condition per (monitor, check, target), opened, escalated and resolved by runs.

An incident's `severity` is the worst severity it reached; it escalates but never de-escalates, so a
metric hovering between two grades alerts once, not on every run. The latest severity and metrics are
kept in `details`. Results that are `skipped` or `error` neither open nor resolve anything.

Incidents follow batch time, not processing order: a run of a batch older than the monitor's newest
completed batch (a re-run, or a late backfill) updates history but leaves every incident as the newer
batch set it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from driftline.checks.result import severity_rank
from driftline.tasks.history.db import as_utc
from driftline.tasks.history.models import Incident, Run, utcnow
from driftline.tasks.history.store import RESTARTABLE

ChangeKind = Literal["opened", "escalated", "resolved"]
Key = tuple[str, str]


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


def _details(result: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "last_severity": result["severity"],
        "metrics": result.get("metrics") or {},
        "thresholds": result.get("thresholds") or {},
    }


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
) -> list[IncidentChange]:
    """Open, escalate and resolve the monitor's incidents for one run; returns the changes.

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
        incident.last_batch = batch_id
        incident.updated_at = now
        incident.details = _details(result)
        if not alerting:
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
