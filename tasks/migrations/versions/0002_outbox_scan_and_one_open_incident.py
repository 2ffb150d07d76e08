"""Index the outbox scan and allow at most one open incident per (monitor, check, target).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPEN = "status = 'open'"


def upgrade() -> None:
    """Add the outbox scan index and the partial unique index on open incidents.

    Alerting only ever updates the oldest open incident of a (monitor, check, target); any later open
    duplicate is closed first (resolved as of its last update) so the unique index can be built.
    """
    op.create_index(
        "ix_alert_outbox_unsent", "alert_outbox", ["destination", "sent_at", "created_at"], unique=False
    )
    incidents = sa.table(
        "incidents",
        sa.column("id", sa.Integer()),
        sa.column("monitor", sa.String()),
        sa.column("check", sa.String()),
        sa.column("target", sa.String()),
        sa.column("status", sa.String()),
        sa.column("updated_at", sa.DateTime(timezone=True)),
        sa.column("resolved_at", sa.DateTime(timezone=True)),
    )
    oldest_open = (
        sa.select(sa.func.min(incidents.c.id))
        .where(incidents.c.status == "open")
        .group_by(incidents.c.monitor, incidents.c.check, incidents.c.target)
    )
    op.execute(
        incidents.update()
        .where(incidents.c.status == "open", incidents.c.id.not_in(oldest_open))
        .values(status="resolved", resolved_at=incidents.c.updated_at)
    )
    op.create_index(
        "uq_incidents_one_open",
        "incidents",
        ["monitor", "check", "target"],
        unique=True,
        sqlite_where=sa.text(OPEN),
        postgresql_where=sa.text(OPEN),
    )


def downgrade() -> None:
    """Drop the two indexes (closed duplicate incidents stay resolved)."""
    op.drop_index("uq_incidents_one_open", table_name="incidents")
    op.drop_index("ix_alert_outbox_unsent", table_name="alert_outbox")
