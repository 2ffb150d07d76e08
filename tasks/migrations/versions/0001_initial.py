"""Initial history tables: runs, results, incidents and the alert outbox.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# JSON everywhere, stored as JSONB on PostgreSQL (matches `models.JSONType`).
JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer(), autoincrement=True, nullable=False)


def _time(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _text(name: str, length: int, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.String(length=length), nullable=nullable)


def upgrade() -> None:
    """Create the four history tables with their keys and indexes."""
    op.create_table(
        "runs",
        _id(),
        _text("monitor", 200),
        _text("batch_id", 200),
        _time("batch_time"),
        _time("started_at"),
        _time("finished_at", nullable=True),
        _text("status", 20),
        _text("worst_severity", 10),
        sa.Column("rows", sa.Integer(), nullable=True),
        _text("flow_run_id", 64, nullable=True),
        sa.Column("details", JSON_TYPE, nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("monitor", "batch_id", name="uq_runs_monitor_batch"),
    )
    op.create_table(
        "results",
        _id(),
        sa.Column("run_id", sa.Integer(), nullable=False),
        _text("monitor", 200),
        _text("batch_id", 200),
        _time("batch_time"),
        _text("check", 100),
        _text("target", 300),
        _text("metric", 100),
        sa.Column("value", sa.Float(), nullable=True),
        _text("status", 10),
        _text("severity", 10),
        sa.Column("thresholds", JSON_TYPE, nullable=True),
        sa.Column("rows", sa.Integer(), nullable=True),
        sa.Column("failing_rows", sa.Integer(), nullable=True),
        sa.Column("model_impact", sa.Float(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("details", JSON_TYPE, nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("monitor", "batch_id", "check", "target", "metric", name="uq_results_key"),
    )
    op.create_index(
        "ix_results_series", "results", ["monitor", "check", "target", "metric", "batch_time"], unique=False
    )
    op.create_table(
        "incidents",
        _id(),
        _text("monitor", 200),
        _text("check", 100),
        _text("target", 300),
        _text("status", 10),
        _text("severity", 10),
        _text("opened_batch", 200),
        _text("last_batch", 200),
        _time("opened_at"),
        _time("updated_at"),
        _time("resolved_at", nullable=True),
        sa.Column("details", JSON_TYPE, nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_incidents_open", "incidents", ["monitor", "check", "target", "status"], unique=False)
    op.create_table(
        "alert_outbox",
        _id(),
        _text("dedupe_key", 400),
        _text("monitor", 200),
        _text("batch_id", 200),
        _text("destination", 200),
        sa.Column("payload", JSON_TYPE, nullable=False),
        _time("created_at"),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        _time("sent_at", nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dedupe_key", name="uq_alert_outbox_dedupe"),
    )


def downgrade() -> None:
    """Drop the history tables (children first)."""
    op.drop_table("alert_outbox")
    op.drop_index("ix_incidents_open", table_name="incidents")
    op.drop_table("incidents")
    op.drop_index("ix_results_series", table_name="results")
    op.drop_table("results")
    op.drop_table("runs")
