"""`kill -9` of `driftline run` in the middle of a run: nothing it started outlives it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.demo import write_spec

ROOT = Path(__file__).parents[2]
RUN = (
    "import sys\n"
    "import tests.runaway_checks\n"
    "tests.runaway_checks.register()\n"
    "from driftline.flows.cli import main\n"
    "sys.argv = ['driftline', 'run', sys.argv[1], '--batch', '2018-12', '--engine', sys.argv[2]]\n"
    "main()\n"
)


def children(pid: int) -> set[int]:
    """Direct child processes of `pid` (from /proc)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(c) for c in text)
    return found


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        time.sleep(0.1)


@pytest.mark.parametrize(("engine", "started"), [("local", 1), ("prefect", 2)])
def test_killing_the_cli_mid_run_leaves_nothing_behind(
    demo_data: Path, tmp_path: Path, engine: str, started: int
) -> None:
    """The check workers, and the temporary Prefect server of the Prefect engine, die with the CLI."""
    checks = ["drift.numeric", "testing.sleeps_forever"]
    spec = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", checks=checks)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    cli = subprocess.Popen([sys.executable, "-c", RUN, str(spec), engine], cwd=ROOT, env=env)
    workers: set[int] = set()
    try:
        wait_for(lambda: len(children(cli.pid)) >= started, 120, f"fewer than {started} child processes")
        time.sleep(1)  # let the other checks' workers start too
        workers = children(cli.pid)
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait(10)
        wait_for(lambda: not any(alive(w) for w in workers), 15, f"processes {workers} outlived the CLI")
    finally:
        for pid in [cli.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
