"""Deploying as docs/deploying.md says, against a real local Prefect server: `prefect deploy` of
deployments/prefect.yaml, a process worker, a monitor run that fails and retrains through the event
trigger; and `driftline serve` on a one-minute cron, whose scheduled run must execute and store."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driftline.flows.temporary_server import temporary_prefect_server
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import Run
from driftline.tasks.history.query import list_runs
from tests.demo import count, write_spec
from tests.waiting import wait_for

pytestmark = pytest.mark.prefect

ROOT = Path(__file__).parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def prefect_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of every command: a real Prefect server of its own (own PREFECT_HOME)."""
    home = tmp_path_factory.mktemp("prefect-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    with temporary_prefect_server(env=env) as url:
        yield {**env, "PREFECT_API_URL": url}


def prefect(env: dict[str, str], *args: str, cwd: Path = ROOT, timeout: float = 120) -> str:
    """One `prefect` CLI command, run by this interpreter (so a worker runs flows with it too); its
    standard output and error, or a failure showing them."""
    done = subprocess.run(
        [sys.executable, "-m", "prefect", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout + done.stderr


def assert_an_expected_failure(env: dict[str, str], run: Any, output: str) -> None:
    """A run failed on its verdict: the message names the model's failures first, and neither the
    process that ran it nor the run's log on the server shows a traceback or an ERROR line."""
    assert run.state.is_failed(), run.state  # batch 2018-12 reaches fail_on
    assert "batch 2018-12: worst severity high (fail_on high); failing checks: " in run.state.message
    named = run.state.message.split("failing checks: ")[1]
    assert named.startswith("drift.prediction[score] high, performance.overall[f1] high, "), named
    assert "Finished in state Failed" in output, output[-3000:]  # the run's log reached this output
    assert "Traceback" not in output and "unexpected exception" not in output, output[-6000:]
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with client(env) as c:
        logs = c.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
    assert logs and not [log.message for log in logs if log.level >= 40 or "Traceback" in log.message]


def client(env: dict[str, str]) -> Any:
    """A synchronous Prefect client on the test server."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}):
        return get_client(sync_client=True)


def flow_runs(env: dict[str, str], deployment: str) -> list[Any]:
    """Flow runs of a deployment (`flow-name/deployment-name`), newest first."""
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    with client(env) as c:
        found = c.read_deployment_by_name(deployment)
        runs = c.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[found.id])))
    return sorted(runs, key=lambda r: r.created, reverse=True)


def engine_processes(pid: int) -> list[Any]:
    """The flow-run processes (`python -m prefect.engine`) that the process `pid` started and that
    still run."""
    import psutil

    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if "prefect.engine" in child.cmdline():
                found.append(child)
        except psutil.Error:  # it ended meanwhile
            continue
    return found


def scheduled_runs(env: dict[str, str]) -> list[Any]:
    """Runs the scheduler created for the served monitor (none while it is not registered yet)."""
    from prefect.exceptions import ObjectNotFound

    try:
        return [r for r in flow_runs(env, "driftline-monitor/acs-employment") if r.auto_scheduled]
    except ObjectNotFound:
        return []


def test_deploy_a_worker_and_a_failing_run_that_retrains(
    prefect_env: dict[str, str], demo_data: Path, tmp_path: Path
) -> None:
    """The deployments of prefect.yaml run on a process worker with module entrypoints and no working
    directory; the failing monitor run fires the event whose trigger runs the retraining deployment."""
    url = f"sqlite:///{tmp_path / 'history.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url)
    env = {**prefect_env, "DRIFTLINE_SPEC_PATH": str(spec)}
    elsewhere = tmp_path / "worker-cwd"  # the worker runs far from the repository
    elsewhere.mkdir()
    shutil.copy(ROOT / "deployments" / "prefect.yaml", elsewhere / "prefect.yaml")

    prefect(env, "work-pool", "create", "driftline", "--type", "process")
    prefect(env, "--no-prompt", "deploy", "--all", "--prefect-file", "prefect.yaml", cwd=elsewhere)
    prefect(env, "deployment", "run", "driftline-monitor/acs-employment")
    worker = prefect(env, "worker", "start", "--pool", "driftline", "--run-once", cwd=elsewhere, timeout=300)

    [monitor_run] = [r for r in flow_runs(env, "driftline-monitor/acs-employment") if not r.auto_scheduled]
    assert_an_expected_failure(env, monitor_run, worker)
    assert "retraining sent: monitor acs-employment, batch 2018-12 (severity high)" in worker
    assert "no enabled automation fires" not in worker  # the deployment's trigger listens
    assert count(url, Run) == 1
    with client(env) as c:
        deployments = c.read_deployments()
    assert deployments and all(d.pull_steps in (None, []) for d in deployments)  # no working directory

    retrains = wait_for(
        lambda: flow_runs(env, "driftline-retrain/retrain-on-failure"), 60, "no retraining run was triggered"
    )
    prefect(env, "worker", "start", "--pool", "driftline", "--run-once", cwd=elsewhere, timeout=300)
    [retrain_run] = flow_runs(env, "driftline-retrain/retrain-on-failure")
    assert retrain_run.id == retrains[0].id and retrain_run.state.is_completed(), retrain_run.state
    assert retrain_run.parameters["monitor"] == "acs-employment"
    assert retrain_run.parameters["batch_id"] == "2018-12"
    assert retrain_run.parameters["spec_path"] == str(spec)


def test_serve_runs_the_monitor_on_its_cron_schedule(
    prefect_env: dict[str, str], demo_data: Path, tmp_path: Path
) -> None:
    """`driftline serve` on `* * * * *`: the scheduler creates a run, it executes and stores history
    (the newest batch, 2018-12, fails on the model: the run ends `Failed`, not crashed)."""
    url = f"sqlite:///{tmp_path / 'history.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url, retrain=None, schedule={"cron": "* * * * *"})
    output = tmp_path / "serve.log"
    with output.open("w") as log:
        server = subprocess.Popen(
            [str(BIN / "driftline"), "serve", str(spec)],
            env=prefect_env,
            cwd=tmp_path,
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        [run, *_] = wait_for(
            lambda: [r for r in scheduled_runs(prefect_env) if r.state.is_final()],
            170,
            "no scheduled run finished",
        )
        wait_for(lambda: not engine_processes(server.pid), 60, "the run's process did not end")
        assert_an_expected_failure(prefect_env, run, output.read_text())
        assert count(url, Run) >= 1
        engine = open_store(url)
        statuses = {r["status"] for r in list_runs(engine, "acs-employment")}
        engine.dispose()
        assert statuses <= {"passed", "failed"}, statuses
    finally:
        os.killpg(server.pid, 15)
        server.wait(30)
