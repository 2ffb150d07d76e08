"""`kill -9` of `driftline run` in the middle of a run: nothing it started outlives it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.demo import write_spec
from tests.waiting import alive

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


def test_a_run_killed_mid_way_is_shown_abandoned_and_closed_by_the_next_run(
    demo_data: Path, tmp_path: Path
) -> None:
    """After kill -9, the `running` row has no heartbeat: `driftline runs` shows it abandoned once it
    is stale, and the monitor's next run closes it as abandoned."""
    import json
    from datetime import timedelta

    from sqlalchemy import update
    from typer.testing import CliRunner

    from driftline.flows.cli import app
    from driftline.tasks.history.db import open_store
    from driftline.tasks.history.models import Run
    from driftline.tasks.history.models import utcnow as now
    from driftline.tasks.history.store import STALE_AFTER

    url = f"sqlite:///{tmp_path / 'h.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url, checks=["testing.sleeps_forever"], retrain=None)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    cli = subprocess.Popen([sys.executable, "-c", RUN, str(spec), "local"], cwd=ROOT, env=env)
    wait_for(lambda: len(children(cli.pid)) >= 1, 60, "no check worker started")
    os.kill(cli.pid, signal.SIGKILL)
    cli.wait(10)

    runner = CliRunner()
    [fresh] = json.loads(runner.invoke(app, ["runs", "acs-employment", "--db", url, "--json"]).stdout)
    assert fresh["status"] == "running"  # a killed run looks alive until its heartbeat is stale
    engine = open_store(url)
    with engine.begin() as conn:  # as if STALE_AFTER had passed since its start
        long_ago = now() - STALE_AFTER - timedelta(seconds=1)
        conn.execute(update(Run).values(started_at=long_ago, heartbeat_at=None))
    [stale] = json.loads(runner.invoke(app, ["runs", "acs-employment", "--db", url, "--json"]).stdout)
    assert stale["status"] == "abandoned"

    write_spec(demo_data, tmp_path, store_url=url, checks=["drift.numeric"], retrain=None)
    assert runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local"]).exit_code == 0
    with engine.connect() as conn:
        statuses = dict(conn.execute(select(Run.batch_id, Run.status)).all())
    engine.dispose()
    assert statuses == {"2018-12": "abandoned", "2016-06": "passed"}
