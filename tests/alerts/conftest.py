"""Fixtures of the alerting tests: a Slack stand-in server and a history database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine

from driftline.tasks.history.models import Base
from tests.alerts.slack_server import SlackStandIn


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    """A running Slack stand-in; every request answers success unless scripted."""
    with SlackStandIn() as server:
        yield server


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """The history tables on a fresh SQLite file, then on a fresh PostgreSQL database."""
    engine = create_engine(database_url)
    Base.metadata.create_all(engine)
    try:
        yield engine
    finally:
        engine.dispose()
