"""A temporary Prefect server for the tests, its state in a throw-away PostgreSQL database.

Prefect's own `prefect_test_harness` keeps the server's state in SQLite, whose writers wait on one
another: when a flow's last task states arrive as a burst of events, the server's event recorder and
the flow's final state update can hold each other up for a minute ("database is locked", Prefect
issue 18934), after which the flow run's returned value is lost. Production Prefect servers run on
PostgreSQL, so the tests do too; the stock SQLite harness is used only where PostgreSQL is unreachable
outside CI.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from tests.conftest import PostgresUnreachable, throwaway_postgres_database
from tests.sources.conftest import free_port


@contextmanager
def temporary_prefect_server(startup_timeout: int = 60) -> Iterator[None]:
    """A Prefect server in a subprocess, the API of this process until the block exits; on SQLite only
    where PostgreSQL is unreachable and CI is not set (under CI=true that is an error)."""
    from prefect.testing.utilities import prefect_test_harness

    with ExitStack() as stack:
        try:
            url = stack.enter_context(throwaway_postgres_database())
        except PostgresUnreachable:
            if os.environ.get("CI") == "true":
                raise
            stack.enter_context(prefect_test_harness(server_startup_timeout=startup_timeout))
        else:
            asyncpg = url.replace("postgresql+psycopg://", "postgresql+asyncpg://", 1)
            stack.enter_context(_server_on(asyncpg, startup_timeout))
        yield


@contextmanager
def _server_on(database_url: str, startup_timeout: int) -> Iterator[None]:
    """The server on `database_url`, registered as the default one (flow code that asks for a server
    gets it, as under the stock harness); the log and event workers are drained before it stops."""
    from prefect.context import _temporary_global_settings_context, get_settings_context
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_DATABASE_CONNECTION_URL, temporary_settings
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain() -> None:
        for pending in (APILogWorker.instance().drain(), EventsWorker.drain_all()):
            if inspect.isawaitable(pending):
                await pending

    with temporary_settings({PREFECT_SERVER_DATABASE_CONNECTION_URL: database_url}):
        server = SubprocessASGIServer(port=free_port())
        earlier = SubprocessASGIServer._instances.get(None)
        SubprocessASGIServer._instances[None] = server
        try:
            server.start(timeout=startup_timeout)
            with (
                temporary_settings({PREFECT_API_URL: server.api_url}),
                _temporary_global_settings_context(get_settings_context()),
            ):
                yield
                run_coro_as_sync(drain())
        finally:
            server.stop()
            if earlier is not None:
                SubprocessASGIServer._instances[None] = earlier
            else:
                SubprocessASGIServer._instances.pop(None, None)
