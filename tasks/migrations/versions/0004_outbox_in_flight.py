"""Outbox rows note when a send started, so a send cut off by a crash can be checked before a re-send.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add `alert_outbox.sending_at` (NULL: no send in flight)."""
    with op.batch_alter_table("alert_outbox") as batch:
        batch.add_column(sa.Column("sending_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alert_outbox") as batch:
        batch.drop_column("sending_at")
