"""Stopping `driftline serve` with SIGTERM or SIGINT in the middle of a run, against a real local
Prefect server: the run in flight ends `Cancelled` on the server and nothing it started is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.demo import write_spec
from tests.waiting import alive, wait_for

pytestmark = pytest.mark.prefect

BIN = Path(sys.executable).parent


def started_run(deployment: str) -> Any:
    """A run of `deployment` created through the API, once `serve` has registered it (else None)."""
    from prefect.deployments import run_deployment
    from prefect.exceptions import ObjectNotFound

    try:
        return run_deployment(name=deployment, timeout=0)
    except ObjectNotFound:
        return None


def flow_run_state(flow_run_id: Any) -> Any:
    """The run's current state on the server."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id).state


@pytest.mark.usefixtures("prefect_server")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_cancels_the_run_in_flight(demo_data: Path, tmp_path: Path, signum: signal.Signals) -> None:
    """The failing batch's retraining command keeps the run busy; the signal to `serve` (only to it,
    as a service manager sends it) kills the run's process and marks the run `Cancelled`."""
    from prefect.settings import PREFECT_API_URL

    name = f"serve-{signum.name.lower()}"
    pid_file = tmp_path / "retrain.pid"
    busy = ["sh", "-c", f'echo $$ > "{pid_file}"; exec sleep 300']
    spec = write_spec(
        demo_data, tmp_path, name=name, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain={"command": busy}
    )
    env = {
        **os.environ,
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
    }
    serve = subprocess.Popen([str(BIN / "driftline"), "serve", str(spec)], env=env, cwd=tmp_path)
    retrain_pid = None
    try:
        flow_run = wait_for(lambda: started_run(f"driftline-monitor/{name}"), 60, "serve registered nothing")
        wait_for(pid_file.exists, 90, "the run never reached its retraining command")
        retrain_pid = int(pid_file.read_text())
        assert flow_run_state(flow_run.id).is_running()

        serve.send_signal(signum)
        assert serve.wait(60) == 0
        state = wait_for(
            lambda: (s := flow_run_state(flow_run.id)).is_final() and s, 30, "the run was left unfinished"
        )
        assert state.is_cancelled(), state
        wait_for(lambda: not alive(retrain_pid), 10, "the run's retraining command outlived serve")
    finally:
        for pid in (serve.pid, retrain_pid):
            if pid is not None and alive(pid):
                os.kill(pid, signal.SIGKILL)
        serve.wait(10)
