"""A Prefect API for a command that runs flows: the configured one, or a temporary server that lives
exactly as long as the process that needs it.

Prefect's own temporary server survives a `kill -9` of the process that started it. This one is
started on a free loopback port with the kernel told to kill it when its parent dies, and is
stopped when the block ends.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from driftline.tasks.isolation import die_with_parent

STARTUP_TIMEOUT_S = 90.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
            return reply.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@contextmanager
def temporary_prefect_server(
    timeout_s: float = STARTUP_TIMEOUT_S, env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """Start a Prefect server for this process and yield its API URL (UI off, analytics off).

    `env` replaces this process's environment for the server (e.g. another PREFECT_HOME).
    """
    port = free_port()
    env = {**(env or os.environ), "PREFECT_UI_ENABLED": "0", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "prefect.server.api.server:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--lifespan",
        "on",
    ]
    parent = os.getpid()
    server = subprocess.Popen(command, env=env, preexec_fn=lambda: die_with_parent(parent))
    url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + timeout_s
        while not _healthy(url):
            if server.poll() is not None:
                raise RuntimeError(f"the temporary Prefect server exited with code {server.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the temporary Prefect server did not answer within {timeout_s:g} s")
            time.sleep(0.2)
        yield url
    finally:
        _stop(server)


@contextmanager
def prefect_api() -> Iterator[str]:
    """The configured Prefect API, or else a temporary server for the duration of the block."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    configured = PREFECT_API_URL.value()
    if configured:
        yield configured
        return
    with temporary_prefect_server() as url, temporary_settings({PREFECT_API_URL: url}):
        try:
            yield url
        finally:
            _flush_to_api()


def _flush_to_api(timeout_s: float = 10.0) -> None:
    """Send the logs and events still queued for the API while the server is up (else Prefect keeps
    retrying them against a stopped server when the process exits)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for service in (APILogWorker, EventsWorker):
        service.drain_all(timeout=timeout_s)
