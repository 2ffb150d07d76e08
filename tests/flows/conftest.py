"""Fixtures of the flow tests: one real local Prefect server per session and the demo's census data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[None]:
    """A temporary Prefect server (its own SQLite database) shared by the session's flow tests."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's reference, six census batches and spec, built once (model trained on ACS 2015)."""
    from driftline.flows.demo import build_demo_data

    return build_demo_data(tmp_path_factory.mktemp("demo"))
