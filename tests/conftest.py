"""Shared fixtures: history-store URLs for SQLite and the real PostgreSQL on 127.0.0.1:5432, and the
demo's census data."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError


def pytest_configure(config: pytest.Config) -> None:
    """Set Prefect's logging up before any test runs a command through `CliRunner`.

    Prefect binds its console handler to `sys.stderr` as it is when its logging is first set up. Were
    that inside a `CliRunner.invoke`, the handler would keep the runner's stream, closed once the
    command returns, and every later Prefect log line would fail on a closed file.
    """
    with contextlib.suppress(ImportError):  # the core without the prefect extra has nothing to set up
        import prefect.main  # noqa: F401  (sets Prefect's logging up on import)


# End-to-end tests: a built wheel in a fresh venv, real Prefect servers and Dask clusters, a browser,
# and the fault tests that run whole CLI processes against servers and kill them.
END_TO_END_PATHS = (
    "tests/deploy/",
    "tests/packaging/",
    "tests/report/test_browser.py",
    "tests/site/test_browser.py",
    "tests/faults/test_runs_twice.py",
    "tests/faults/test_old_batch_incidents.py",
    "tests/faults/test_slack_faults.py",
    "tests/faults/test_process_killed.py",
    "tests/faults/test_spool_targets.py",
    "tests/scale/test_dask_flow.py",
    "tests/scale/test_partition_work.py",
)
PREFECT_FIXTURES = frozenset({"prefect_server", "prefect_api"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the end-to-end tests `e2e`, so that `make test-quick` can leave them out, and the tests
    on a Prefect server `prefect`, so that `make test-prefect-next` runs them on Prefect's next minor."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & PREFECT_FIXTURES:
            item.add_marker(pytest.mark.prefect)
        if item.nodeid.startswith(END_TO_END_PATHS) or fixtures & PREFECT_FIXTURES:
            item.add_marker(pytest.mark.e2e)


POSTGRES_ADMIN_URL = os.environ.get(
    "DRIFTLINE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


class PostgresUnreachable(RuntimeError):
    """The tests' PostgreSQL did not answer."""


@contextlib.contextmanager
def throwaway_postgres_database() -> Iterator[str]:
    """A fresh database on the tests' PostgreSQL, dropped on exit; `PostgresUnreachable` when it does
    not answer."""
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"driftline_test_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        raise PostgresUnreachable(f"PostgreSQL at {POSTGRES_ADMIN_URL} is unreachable: {exc.orig}") from exc
    try:
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _postgres_database() -> Iterator[str]:
    """A throw-away PostgreSQL database; skip when unreachable, but fail under CI=true."""
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(throwaway_postgres_database())
        except PostgresUnreachable as exc:
            if os.environ.get("CI") == "true":
                pytest.fail(str(exc))
            pytest.skip(str(exc))
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """An empty database for the history store: a SQLite file, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'history.db'}"
    else:
        yield from _postgres_database()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh database on the real PostgreSQL (fails under CI=true when it is unreachable)."""
    yield from _postgres_database()


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's reference, six census batches and spec, built once (model trained on ACS 2015)."""
    from driftline.data.demo import build_demo_data

    return build_demo_data(tmp_path_factory.mktemp("demo"))
