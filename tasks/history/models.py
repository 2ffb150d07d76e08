"""SQLAlchemy 2 models of the history database (SQLite by default, PostgreSQL in production)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

JSONType = JSON().with_variant(JSONB(), "postgresql")


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base of the history tables."""


class Run(Base):
    """One monitor evaluated on one batch; re-running the batch updates this row."""

    __tablename__ = "runs"
    __table_args__ = (
        UniqueConstraint("monitor", "batch_id", name="uq_runs_monitor_batch"),
        # The newest N batches of a monitor (baseline rules read only those, however long the history).
        Index("ix_runs_monitor_time", "monitor", "batch_time"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    monitor: Mapped[str] = mapped_column(String(200))
    batch_id: Mapped[str] = mapped_column(String(200))
    batch_time: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    status: Mapped[str] = mapped_column(String(20), default="running")
    worst_severity: Mapped[str] = mapped_column(String(10), default="none")
    rows: Mapped[int | None] = mapped_column(Integer, nullable=True)
    flow_run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # Touched every HEARTBEAT_S while the run is going; a `running` row without a recent one is abandoned.
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ResultRow(Base):
    """One metric value of one check result; keyed by (monitor, batch, check, target, metric)."""

    __tablename__ = "results"
    __table_args__ = (
        UniqueConstraint("monitor", "batch_id", "check", "target", "metric", name="uq_results_key"),
        Index("ix_results_series", "monitor", "check", "target", "metric", "batch_time"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    monitor: Mapped[str] = mapped_column(String(200))
    batch_id: Mapped[str] = mapped_column(String(200))
    batch_time: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    check: Mapped[str] = mapped_column(String(100))
    target: Mapped[str] = mapped_column(String(300))
    metric: Mapped[str] = mapped_column(String(100))
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    status: Mapped[str] = mapped_column(String(10))
    severity: Mapped[str] = mapped_column(String(10))
    thresholds: Mapped[list[float] | None] = mapped_column(JSONType, nullable=True)
    rows: Mapped[int | None] = mapped_column(Integer, nullable=True)
    failing_rows: Mapped[int | None] = mapped_column(Integer, nullable=True)
    model_impact: Mapped[float | None] = mapped_column(Float, nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class Incident(Base):
    """An open or resolved alert condition for one (monitor, check, target)."""

    __tablename__ = "incidents"
    __table_args__ = (
        Index("ix_incidents_open", "monitor", "check", "target", "status"),
        # At most one open incident per (monitor, check, target); resolved ones accumulate freely.
        Index(
            "uq_incidents_one_open",
            "monitor",
            "check",
            "target",
            unique=True,
            sqlite_where=text("status = 'open'"),
            postgresql_where=text("status = 'open'"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    monitor: Mapped[str] = mapped_column(String(200))
    check: Mapped[str] = mapped_column(String(100))
    target: Mapped[str] = mapped_column(String(300))
    status: Mapped[str] = mapped_column(String(10), default="open")
    severity: Mapped[str] = mapped_column(String(10))
    opened_batch: Mapped[str] = mapped_column(String(200))
    last_batch: Mapped[str] = mapped_column(String(200))
    opened_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class IncidentThread(Base):
    """Where an incident's Slack thread lives in one destination (routing may post it to several).

    `thread_key` is the dedupe key of the outbox message that starts the thread; `channel` (the id
    Slack answered with) and `ts` (the parent message's timestamp) are filled in once it is posted.
    Replies about the incident wait in the outbox until then, and go to `thread_ts = ts`.
    """

    __tablename__ = "incident_threads"
    __table_args__ = (
        UniqueConstraint("incident_id", "destination", name="uq_incident_threads_destination"),
        Index("ix_incident_threads_key", "thread_key", "destination"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    incident_id: Mapped[int] = mapped_column(ForeignKey("incidents.id", ondelete="CASCADE"))
    destination: Mapped[str] = mapped_column(String(200))
    thread_key: Mapped[str] = mapped_column(String(400))
    channel: Mapped[str | None] = mapped_column(String(100), nullable=True)
    ts: Mapped[str | None] = mapped_column(String(40), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AlertMute(Base):
    """A silenced (monitor, check, target) until `until`: incidents still open, change and resolve in
    history, but send no message. `target` "*" mutes every target of the check."""

    __tablename__ = "alert_mutes"
    __table_args__ = (UniqueConstraint("monitor", "check", "target", name="uq_alert_mutes_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    monitor: Mapped[str] = mapped_column(String(200))
    check: Mapped[str] = mapped_column(String(100))
    target: Mapped[str] = mapped_column(String(300))
    until: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)


class AlertOutbox(Base):
    """A message to deliver; it stays here until a send succeeds, and is retried on later runs."""

    __tablename__ = "alert_outbox"
    __table_args__ = (
        UniqueConstraint("dedupe_key", name="uq_alert_outbox_dedupe"),
        # The flush's scan: one destination's unsent messages, oldest first.
        Index("ix_alert_outbox_unsent", "destination", "sent_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dedupe_key: Mapped[str] = mapped_column(String(400))
    monitor: Mapped[str] = mapped_column(String(200))
    batch_id: Mapped[str] = mapped_column(String(200))
    destination: Mapped[str] = mapped_column(String(200))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Set before a send starts and cleared when its outcome is known: a row left with it set was cut
    # off mid-send, and Slack may or may not have posted it.
    sending_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # A reply: the `thread_key` of the thread it belongs to (NULL: a message of its own).
    thread_key: Mapped[str | None] = mapped_column(String(400), nullable=True)
    # Where Slack put the message once sent (the bot only; webhooks do not say).
    posted_channel: Mapped[str | None] = mapped_column(String(100), nullable=True)
    posted_ts: Mapped[str | None] = mapped_column(String(40), nullable=True)
