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
from pathlib import Path

from driftline.tasks.run.isolation import die_with_parent

# A starting server is waited for while it makes progress (uses CPU) within STALL_S, up to the cap: on a
# loaded machine its start-up (imports, database migrations) can take minutes, a hung one never ends.
STALL_S = 60.0
STARTUP_CAP_S = 600.0


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


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) a process has used so far, from /proc; None where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Progress:
    """Whether a starting process is still worth waiting for: it is alive, below the cap, and has used
    CPU within the last `stall_s` (where CPU time cannot be read, the cap alone decides)."""

    def __init__(self, pid: int, stall_s: float = STALL_S, cap_s: float = STARTUP_CAP_S) -> None:
        self.pid, self.stall_s = pid, stall_s
        self.started = self.moved = time.monotonic()
        self.cap = self.started + cap_s
        self.cpu = cpu_seconds(pid)

    def stalled(self) -> str | None:
        """Why to stop waiting, or None to go on."""
        now = time.monotonic()
        cpu = cpu_seconds(self.pid)
        if cpu is not None and (self.cpu is None or cpu > self.cpu):
            self.cpu, self.moved = cpu, now
        if now > self.cap:
            return f"did not answer within {now - self.started:.0f} s"
        if cpu is not None and now - self.moved > self.stall_s:
            return f"made no progress for {self.stall_s:g} s (no CPU used) after {now - self.started:.0f} s"
        return None


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@contextmanager
def temporary_prefect_server(
    env: Mapping[str, str] | None = None, stall_s: float = STALL_S, cap_s: float = STARTUP_CAP_S
) -> Iterator[str]:
    """Start a Prefect server for this process and yield its API URL (UI off, analytics off), waiting
    for it as long as it makes progress (`Progress`).

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
        progress = Progress(server.pid, stall_s, cap_s)
        while not _healthy(url):
            if server.poll() is not None:
                raise RuntimeError(f"the temporary Prefect server exited with code {server.returncode}")
            if (stalled := progress.stalled()) is not None:
                raise RuntimeError(f"the temporary Prefect server {stalled}")
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
