"""Slack threads of incidents, alert mutes, and the index that finds a monitor's newest runs.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add `incident_threads`, `alert_mutes`, the outbox's thread columns and `ix_runs_monitor_time`."""
    op.create_table(
        "incident_threads",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("incident_id", sa.Integer(), nullable=False),
        sa.Column("destination", sa.String(length=200), nullable=False),
        sa.Column("thread_key", sa.String(length=400), nullable=False),
        sa.Column("channel", sa.String(length=100), nullable=True),
        sa.Column("ts", sa.String(length=40), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["incident_id"], ["incidents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("incident_id", "destination", name="uq_incident_threads_destination"),
    )
    op.create_index(
        "ix_incident_threads_key", "incident_threads", ["thread_key", "destination"], unique=False
    )
    op.create_table(
        "alert_mutes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("monitor", sa.String(length=200), nullable=False),
        sa.Column("check", sa.String(length=100), nullable=False),
        sa.Column("target", sa.String(length=300), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("monitor", "check", "target", name="uq_alert_mutes_key"),
    )
    with op.batch_alter_table("alert_outbox") as batch:
        batch.add_column(sa.Column("thread_key", sa.String(length=400), nullable=True))
        batch.add_column(sa.Column("posted_channel", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("posted_ts", sa.String(length=40), nullable=True))
    op.create_index("ix_runs_monitor_time", "runs", ["monitor", "batch_time"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_runs_monitor_time", table_name="runs")
    with op.batch_alter_table("alert_outbox") as batch:
        batch.drop_column("posted_ts")
        batch.drop_column("posted_channel")
        batch.drop_column("thread_key")
    op.drop_table("alert_mutes")
    op.drop_index("ix_incident_threads_key", table_name="incident_threads")
    op.drop_table("incident_threads")
