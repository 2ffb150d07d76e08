"""Fixtures of the history-store tests: an opened, migrated store on each database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from driftline.tasks.history.db import open_store


@pytest.fixture
def store(database_url: str) -> Iterator[Engine]:
    """A migrated history store on SQLite, then on PostgreSQL."""
    engine = open_store(database_url)
    try:
        yield engine
    finally:
        engine.dispose()
