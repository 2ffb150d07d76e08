"""The alert outbox: every message is stored before it is sent, and stays until a send succeeds.

`enqueue` writes a message once per dedupe key (so re-processing a batch does not queue its alert
twice); `flush_outbox` sends a destination's unsent messages oldest first, marking each sent or
recording the attempt and the error. A failure that would hit every message (unreachable Slack, a
rejected token) stops the flush, so messages go out in order once the fault is fixed. `purge_sent`
deletes delivered messages once they are old enough, so the table does not grow with history.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, Select, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from driftline.tasks.alerts.delivery import DeliveryError, Sender
from driftline.tasks.alerts.incidents import IncidentChange
from driftline.tasks.alerts.messages import clip
from driftline.tasks.history.models import AlertOutbox, utcnow

logger = logging.getLogger(__name__)

ERROR_LIMIT = 2000
_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def dedupe_key(monitor: str, batch_id: str, destination: str, changes: Sequence[IncidentChange]) -> str:
    """A digest of the batch, the destination and what changed: the same alert hashes the same."""
    facts = sorted((c.kind, c.check, c.target, c.severity) for c in changes)
    blob = json.dumps([monitor, batch_id, destination, facts], separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def enqueue(
    session: Session,
    *,
    monitor: str,
    batch_id: str,
    destination: str,
    payload: Mapping[str, Any],
    key: str,
) -> bool:
    """Queue a message in the caller's transaction; False when `key` was already queued."""
    dialect = session.get_bind().dialect.name
    if dialect not in _INSERTS:
        raise NotImplementedError(f"the alert outbox supports SQLite and PostgreSQL, not {dialect}")
    statement = (
        _INSERTS[dialect](AlertOutbox)
        .values(
            dedupe_key=key,
            monitor=monitor,
            batch_id=batch_id,
            destination=destination,
            payload=dict(payload),
            created_at=utcnow(),
            attempts=0,
        )
        .on_conflict_do_nothing(index_elements=["dedupe_key"])
        .returning(AlertOutbox.id)
    )
    return session.execute(statement).first() is not None


@dataclass
class FlushResult:
    """What one flush did: messages delivered, failed attempts, messages still unsent, and why."""

    delivered: int = 0
    failed: int = 0
    pending: int = 0
    reasons: list[str] = field(default_factory=list)


def _unsent(destination: str, monitor: str | None) -> Select[tuple[AlertOutbox]]:
    query = select(AlertOutbox).where(AlertOutbox.sent_at.is_(None), AlertOutbox.destination == destination)
    return query.where(AlertOutbox.monitor == monitor) if monitor is not None else query


def _attempt(row: AlertOutbox, sender: Sender) -> DeliveryError | None:
    """Send one queued message and record the outcome on its row; returns the error, if any."""
    row.attempts += 1
    try:
        sender.send(row.payload)
    except DeliveryError as exc:
        error = exc
    except Exception as exc:
        error = DeliveryError(sender.redact(f"unexpected {type(exc).__name__}: {exc}"))
    else:
        row.sent_at = utcnow()
        row.last_error = None
        return None
    row.last_error = clip(str(error), ERROR_LIMIT)
    return error


def flush_outbox(engine: Engine, sender: Sender, *, monitor: str | None = None) -> FlushResult:
    """Send the unsent messages for `sender`'s destination (of one monitor, or all), oldest first.

    Each message is sent in its own transaction with its row locked (skipped by a concurrent flush on
    PostgreSQL), so a message is marked sent as soon as Slack accepted it.
    """
    result = FlushResult()
    tried: list[int] = []
    while True:
        with Session(engine) as session, session.begin():
            query = (
                _unsent(sender.destination, monitor)
                .where(AlertOutbox.id.not_in(tried))
                .order_by(AlertOutbox.created_at, AlertOutbox.id)
                .limit(1)
                .with_for_update(skip_locked=True)
            )
            row = session.scalars(query).first()
            if row is None:
                break
            tried.append(row.id)
            batch_id = row.batch_id
            error = _attempt(row, sender)
        if error is None:
            result.delivered += 1
            continue
        result.failed += 1
        result.reasons.append(f"{sender.destination}: alert for batch {batch_id} not sent: {error}")
        logger.warning("alert for batch %s not delivered to %s: %s", batch_id, sender.destination, error)
        if error.affects_all:
            break
    with Session(engine) as session:
        count = select(func.count()).select_from(_unsent(sender.destination, monitor).subquery())
        result.pending = session.scalar(count) or 0
    return result


def unsent_elsewhere(engine: Engine, monitor: str, destination: str | None) -> dict[str, int]:
    """Unsent messages of `monitor` queued for destinations other than `destination`, by destination."""
    query = (
        select(AlertOutbox.destination, func.count())
        .where(AlertOutbox.monitor == monitor, AlertOutbox.sent_at.is_(None))
        .group_by(AlertOutbox.destination)
    )
    with Session(engine) as session:
        return {dest: n for dest, n in session.execute(query) if dest != destination}


def purge_sent(engine: Engine, older_than: timedelta) -> int:
    """Delete messages delivered more than `older_than` ago; returns how many were deleted.

    Unsent messages are never deleted, however old. A purged message's dedupe key is forgotten, so keep
    `older_than` longer than any batch is likely to be re-processed.
    """
    if older_than < timedelta(0):
        raise ValueError(f"older_than must not be negative, got {older_than}")
    cutoff = utcnow() - older_than
    statement = delete(AlertOutbox).where(AlertOutbox.sent_at.is_not(None), AlertOutbox.sent_at < cutoff)
    with engine.begin() as conn:
        return conn.execute(statement).rowcount
