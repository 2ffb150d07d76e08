"""The alert outbox: every message is stored before it is sent, and stays until a send succeeds.

`enqueue` writes a message once per dedupe key (so re-processing a batch does not queue its alert
twice); `flush_outbox` sends a destination's unsent messages oldest first, marking each sent or
recording the attempt and the error. A failure that would hit every message (unreachable Slack, a
rejected token) stops the flush, so messages go out in order once the fault is fixed. `purge_sent`
deletes delivered messages once they are old enough, so the table does not grow with history.

Delivery is exactly once where the destination can be asked, at least once elsewhere. Before a send,
its row is marked in flight (`sending_at`) in a transaction of its own; the mark is cleared when Slack
answers. A row whose mark stayed (the process died mid-send, or the connection broke before an
answer) is in doubt: before sending it again, the flush asks the destination whether the message is
there (the bot reads the channel's history, or the thread's replies, for the message tagged with the
dedupe key). Webhooks cannot be asked, so for them an interrupted send may post twice.

Threads: a row with a `thread_key` is a reply. It is sent only once its thread's parent has been
posted (the parent's channel and `ts` are recorded when it is delivered, in `incident_threads`);
until then it waits, unsent, without counting as a failure. A reply whose parent will not come (it
was never queued for this destination, or failed `PARENT_PATIENCE` times) is posted as a message of
its own and becomes the thread. After a reply is posted, the parent is edited (`chat.update`) to the
thread's current state, carried in the payload's `parent`; a failed edit is logged, not retried.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, Select, delete, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from driftline.tasks.alerts.delivery import DeliveryError, Posted, Sender
from driftline.tasks.alerts.incidents import IncidentChange
from driftline.tasks.alerts.messages import clip
from driftline.tasks.alerts.threads import find_thread, record_parent
from driftline.tasks.history.models import AlertOutbox, utcnow

logger = logging.getLogger(__name__)

ERROR_LIMIT = 2000
# A send marked in flight this recently may still be going on in another process: leave it alone.
IN_FLIGHT_LEASE = timedelta(minutes=2)
# A reply stops waiting for a parent that failed this many times, and is posted on its own.
PARENT_PATIENCE = 3
_INSERTS: dict[str, Callable[[Any], sqlite.Insert | postgresql.Insert]] = {
    "sqlite": sqlite.insert,
    "postgresql": postgresql.insert,
}


def dedupe_key(
    monitor: str,
    batch_id: str,
    destination: str,
    changes: Sequence[IncidentChange],
    thread_key: str | None = None,
) -> str:
    """A digest of the batch, the destination, the thread (for a reply) and what changed: the same
    alert hashes the same."""
    facts = sorted((c.kind, c.check, c.target, c.severity) for c in changes)
    parts: list[object] = [monitor, batch_id, destination, facts]
    if thread_key is not None:
        parts.append(thread_key)
    blob = json.dumps(parts, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def enqueue(
    session: Session,
    *,
    monitor: str,
    batch_id: str,
    destination: str,
    payload: Mapping[str, Any],
    key: str,
    thread_key: str | None = None,
) -> bool:
    """Queue a message (a reply into `thread_key`, when given) in the caller's transaction; False when
    `key` was already queued."""
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
            thread_key=thread_key,
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


@dataclass(frozen=True)
class _Claim:
    """A row marked in flight: what to send, and when an earlier send of it was cut off (if it was).

    `thread` is where a reply goes; `starts` is the thread key whose parent this message becomes
    (its own key for a new message, the thread's for a reply posted on its own); `waits` marks a reply
    left unsent because its parent is not posted yet.
    """

    id: int
    batch_id: str
    key: str
    payload: dict[str, Any]
    in_doubt_since: Any
    thread: Posted | None = None
    starts: str | None = None
    waits: bool = False


def _parent_pending(session: Session, destination: str, thread_key: str) -> bool:
    """True while the parent message of `thread_key` is queued here and may still be delivered."""
    query = select(AlertOutbox.id).where(
        AlertOutbox.dedupe_key == thread_key,
        AlertOutbox.destination == destination,
        AlertOutbox.sent_at.is_(None),
        AlertOutbox.attempts < PARENT_PATIENCE,
    )
    return session.execute(query.limit(1)).first() is not None


def _claim(
    session: Session, destination: str, monitor: str | None, tried: list[int], lease: timedelta
) -> _Claim | None:
    """Mark the oldest sendable row in flight; rows another process is sending (a recent mark and no
    recorded outcome) are skipped, and so are rows locked by a concurrent flush on PostgreSQL. A
    reply whose parent is not posted yet comes back unmarked, with `waits` set."""
    now = utcnow()
    free = or_(
        AlertOutbox.sending_at.is_(None),
        AlertOutbox.sending_at < now - lease,
        AlertOutbox.last_error.is_not(None),
    )
    query = (
        _unsent(destination, monitor)
        .where(AlertOutbox.id.not_in(tried), free)
        .order_by(AlertOutbox.created_at, AlertOutbox.id)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    row = session.scalars(query).first()
    if row is None:
        return None
    starts: str | None
    thread, starts = None, row.dedupe_key
    if row.thread_key is not None:
        found = find_thread(session, destination, row.thread_key)
        if found is None and _parent_pending(session, destination, row.thread_key):
            return _Claim(row.id, row.batch_id, row.dedupe_key, {}, None, waits=True)
        thread = Posted(*found) if found is not None else None
        starts = None if found is not None else row.thread_key
    claim = _Claim(row.id, row.batch_id, row.dedupe_key, dict(row.payload), row.sending_at, thread, starts)
    row.sending_at, row.last_error = now, None
    row.attempts += 1
    return claim


def _message(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The message itself, without the parent's new state that a reply carries."""
    return {k: v for k, v in payload.items() if k != "parent"}


def _update_parent(claim: _Claim, sender: Sender) -> None:
    """Edit the thread's parent to its current state; a failure is logged (the next reply retries)."""
    parent = claim.payload.get("parent")
    if claim.thread is None or not parent:
        return
    try:
        sender.update(claim.thread, parent)
    except Exception as exc:
        logger.warning("thread parent for batch %s not updated: %s", claim.batch_id, sender.redact(str(exc)))


def _deliver(claim: _Claim, sender: Sender) -> tuple[DeliveryError | None, Posted | None]:
    """Send a claimed message unless an interrupted earlier send is found to have posted it; returns
    the error (None on success) and where the message is, when the destination says."""
    if claim.in_doubt_since is not None:
        found = sender.already_posted(claim.key, claim.in_doubt_since, claim.thread)
        if found:
            logger.info(
                "alert for batch %s was posted by an interrupted send: not sending it again", claim.batch_id
            )
            _update_parent(claim, sender)
            return None, found if isinstance(found, Posted) else None
    try:
        posted = sender.send(_message(claim.payload), key=claim.key, thread=claim.thread)
    except DeliveryError as exc:
        return exc, None
    except Exception as exc:
        return DeliveryError(sender.redact(f"unexpected {type(exc).__name__}: {exc}")), None
    _update_parent(claim, sender)
    return None, posted


def _settle(
    session: Session, claim: _Claim, error: DeliveryError | None, posted: Posted | None, destination: str
) -> None:
    """Record a send's outcome (and where a new thread's parent landed); a send that Slack never
    answered stays marked, so it is checked before the next try."""
    row = session.get(AlertOutbox, claim.id)
    if row is None:
        return
    if error is None:
        row.sent_at, row.sending_at, row.last_error = utcnow(), None, None
        if posted is not None:
            row.posted_channel, row.posted_ts = posted.channel, posted.ts
            if claim.starts is not None:
                record_parent(session, destination, claim.starts, posted.channel, posted.ts)
        return
    row.last_error = clip(str(error), ERROR_LIMIT)
    if error.answered:
        row.sending_at = None


def flush_outbox(
    engine: Engine, sender: Sender, *, monitor: str | None = None, lease: timedelta = IN_FLIGHT_LEASE
) -> FlushResult:
    """Send the unsent messages for `sender`'s destination (of one monitor, or all), oldest first.

    Each message is marked in flight and committed before it is sent, then marked sent (or given its
    error) as soon as the outcome is known; `lease` is how long another process's mark is respected.
    """
    result = FlushResult()
    tried: list[int] = []
    while True:
        with Session(engine) as session, session.begin():
            claim = _claim(session, sender.destination, monitor, tried, lease)
        if claim is None:
            break
        tried.append(claim.id)
        if claim.waits:
            continue
        error, posted = _deliver(claim, sender)
        with Session(engine) as session, session.begin():
            _settle(session, claim, error, posted, sender.destination)
        if error is None:
            result.delivered += 1
            continue
        result.failed += 1
        result.reasons.append(f"{sender.destination}: alert for batch {claim.batch_id} not sent: {error}")
        logger.warning(
            "alert for batch %s not delivered to %s: %s", claim.batch_id, sender.destination, error
        )
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
