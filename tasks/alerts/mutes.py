"""Mutes: a (monitor, check, target) whose incidents send no message until a given time.

A muted incident is still opened, escalated and resolved in the history; only its messages are held
back (they are not queued, so nothing floods the channel when the mute ends). Target `*` mutes every
target of the check. Changes after the mute ends are posted as usual; an incident whose thread
never started (it opened while muted) starts one with its next change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.orm import Session

from driftline.tasks.alerts.incidents import IncidentChange
from driftline.tasks.history.db import as_utc
from driftline.tasks.history.models import AlertMute, utcnow

ALL_TARGETS = "*"


@dataclass(frozen=True)
class Mutes:
    """The mutes in force for one monitor at one moment."""

    keys: frozenset[tuple[str, str]]

    def covers(self, check: str, target: str) -> bool:
        """True when messages about (check, target) are held back."""
        return (check, target) in self.keys or (check, ALL_TARGETS) in self.keys

    def split(self, changes: Iterable[IncidentChange]) -> tuple[list[IncidentChange], list[IncidentChange]]:
        """(changes to send, muted changes)."""
        send: list[IncidentChange] = []
        held: list[IncidentChange] = []
        for change in changes:
            (held if self.covers(change.check, change.target) else send).append(change)
        return send, held


def active_mutes(session: Session, monitor: str, now: datetime | None = None) -> Mutes:
    """The monitor's mutes that have not ended at `now` (default: the current time)."""
    moment = as_utc(now) if now is not None else utcnow()
    rows = session.execute(
        select(AlertMute.check, AlertMute.target).where(
            AlertMute.monitor == monitor, AlertMute.until > moment
        )
    )
    return Mutes(frozenset((check, target) for check, target in rows))


def mute(
    session: Session, *, monitor: str, check: str, target: str, until: datetime, note: str | None = None
) -> AlertMute:
    """Mute (check, target) until `until` (which must be in the future), replacing an earlier mute."""
    end = as_utc(until)
    if end <= utcnow():
        raise ValueError(f"--until {end.isoformat()} is not in the future")
    row = session.scalars(
        select(AlertMute).where(
            AlertMute.monitor == monitor, AlertMute.check == check, AlertMute.target == target
        )
    ).first()
    if row is None:
        row = AlertMute(
            monitor=monitor, check=check, target=target, until=end, created_at=utcnow(), note=note
        )
        session.add(row)
    else:
        row.until, row.note, row.created_at = end, note, utcnow()
    session.flush()
    return row


def unmute(session: Session, *, monitor: str, check: str, target: str) -> int:
    """Remove the mute of (check, target); returns how many mutes were removed (0 or 1)."""
    statement = delete(AlertMute).where(
        AlertMute.monitor == monitor, AlertMute.check == check, AlertMute.target == target
    )
    return cast(CursorResult[Any], session.execute(statement)).rowcount or 0  # a DELETE's result


def list_mutes(session: Session, monitor: str) -> list[dict[str, Any]]:
    """Every mute of the monitor (ended ones too, marked `active: False`), ending soonest first."""
    now = utcnow()
    rows = session.scalars(select(AlertMute).where(AlertMute.monitor == monitor).order_by(AlertMute.until))
    return [
        {
            "check": row.check,
            "target": row.target,
            "until": as_utc(row.until).isoformat(),
            "active": as_utc(row.until) > now,
            "note": row.note,
        }
        for row in rows
    ]
