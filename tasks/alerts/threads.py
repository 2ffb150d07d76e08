"""Slack threads of incidents: which changes start a thread and which reply into one, per destination.

A run's changes for one threading destination are split into parts. Changes of incidents that have
no thread there yet (just opened, or first routed there, or opened while muted) go into one message
of their own, which becomes the thread of each of them (`incident_threads` rows keyed by the
message's dedupe key). Changes of incidents that have a thread become one reply per thread. The
parent's channel and `ts` are filled in when it is delivered; replies wait for them in the outbox.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from driftline.tasks.alerts.incidents import IncidentChange
from driftline.tasks.history.models import Incident, IncidentThread, utcnow


@dataclass(frozen=True)
class Part:
    """Changes sent as one message: a reply into the thread `thread_key`, or (None) a new message."""

    thread_key: str | None
    changes: list[IncidentChange]


def plan_parts(session: Session, destination: str, changes: Sequence[IncidentChange]) -> list[Part]:
    """The new message (if any incident lacks a thread here) first, then one reply per thread."""
    ids = [c.incident_id for c in changes]
    rows = session.execute(
        select(IncidentThread.incident_id, IncidentThread.thread_key).where(
            IncidentThread.incident_id.in_(ids), IncidentThread.destination == destination
        )
    )
    thread_of = {incident_id: key for incident_id, key in rows}
    fresh: list[IncidentChange] = []
    replies: dict[str, list[IncidentChange]] = {}
    for change in changes:
        key = thread_of.get(change.incident_id)
        if key is None:
            fresh.append(change)
        else:
            replies.setdefault(key, []).append(change)
    parts = [Part(None, fresh)] if fresh else []
    return parts + [Part(key, grouped) for key, grouped in replies.items()]


def start_threads(session: Session, destination: str, key: str, changes: Sequence[IncidentChange]) -> None:
    """Record that the message `key` is the thread of these incidents in `destination`."""
    for incident_id in dict.fromkeys(c.incident_id for c in changes):
        session.add(
            IncidentThread(
                incident_id=incident_id, destination=destination, thread_key=key, created_at=utcnow()
            )
        )
    session.flush()


def thread_incidents(session: Session, destination: str, key: str) -> list[Incident]:
    """The incidents of one thread, in the order they were opened."""
    query = (
        select(Incident)
        .join(IncidentThread, IncidentThread.incident_id == Incident.id)
        .where(IncidentThread.thread_key == key, IncidentThread.destination == destination)
        .order_by(Incident.id)
    )
    return list(session.scalars(query))


def find_thread(session: Session, destination: str, key: str) -> tuple[str, str] | None:
    """(channel id, parent ts) of a delivered thread, or None while its parent is not posted."""
    row = session.execute(
        select(IncidentThread.channel, IncidentThread.ts)
        .where(
            IncidentThread.thread_key == key,
            IncidentThread.destination == destination,
            IncidentThread.ts.is_not(None),
        )
        .limit(1)
    ).first()
    return (row.channel, row.ts) if row is not None else None


def record_parent(session: Session, destination: str, key: str, channel: str, ts: str) -> None:
    """Fill in where the thread `key` was posted (only where not known yet)."""
    session.execute(
        update(IncidentThread)
        .where(
            IncidentThread.thread_key == key,
            IncidentThread.destination == destination,
            IncidentThread.ts.is_(None),
        )
        .values(channel=channel, ts=ts)
    )
