"""Fixtures of the flow tests: one real local Prefect server per session, and the partitioned-batch
monitors of `tests.scale` for the command-line runs over them."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.scale.conftest import monitor_data, specs  # noqa: F401  (fixtures shared with tests/scale)

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[None]:
    """A temporary Prefect server (its own PostgreSQL database) shared by the session's flow tests."""
    from tests.prefect_server import temporary_prefect_server

    with temporary_prefect_server():
        yield
