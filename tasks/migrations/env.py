"""Alembic environment of the history store.

Run programmatically by `driftline.tasks.history.db`: the caller opens the connection (and its
transaction) and passes it in `config.attributes["connection"]`, so no `alembic.ini` and no URL is
needed here.
"""

from __future__ import annotations

from alembic import context

from driftline.tasks.history.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "the history migrations run through driftline.tasks.history.db.open_store(url) (or migrate()), "
        "which supplies the database connection"
    )

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
