"""The monitor as a Prefect flow: the orchestrator-free core run by the Prefect driver.

A run whose batch reaches the spec's `fail_on` ends `Failed`, its message naming the worst severity
and the failing checks (pass `fail_flow_run=False` to keep it `Completed`); calling the flow from
Python returns the run summary either way.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from prefect import Flow
from prefect.runner import Runner
from prefect.states import State
from prefect.task_runners import ThreadPoolTaskRunner

from driftline.flows.prefect_driver import ModelFailed, PrefectDriver, quiet_expected_verdicts, verdict_state
from driftline.tasks.config.spec import MonitorSpec, load_spec
from driftline.tasks.retraining.actions import Retraining
from driftline.tasks.run.pipeline import run_monitor

# The flow's tasks (I/O steps, partitions) wait on I/O or on worker processes: threads suffice here.
CHECK_RUNNER: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=4)


def summary_of(state: State) -> Any:
    """What a monitor flow run returned, whatever its verdict; an exception it raised is raised here."""
    value = state.result(raise_on_failure=False)
    if isinstance(value, ModelFailed):
        return value.returned
    if isinstance(value, BaseException):
        raise value
    return value


class VerdictFlow(Flow):
    """A flow whose run state carries the model's verdict while a Python call returns its summary:
    `Failed` is the verdict on the model, not an exception for the caller (`return_state=True` gives
    the state). `with_options` gives a plain `Flow`: unwrap its state with `summary_of`."""

    def __call__(self, *args: Any, return_state: bool = False, wait_for: Any = None, **kwargs: Any) -> Any:
        # Prefect's overloads pick the `NoReturn` one for an unparameterised `Flow`.
        state = cast(State, super().__call__(*args, return_state=True, wait_for=wait_for, **kwargs))
        return state if return_state else summary_of(state)

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """The parameters as the API stores them: JSON values as they are, anything else as Prefect
        encodes it (whose encoder imports FastAPI, a fifth of a small run's CPU in this process)."""
        if all(json_native(value) for value in parameters.values()):
            return dict(parameters)
        return super().serialize_parameters(parameters)


def json_native(value: Any) -> bool:
    """Whether `value` is made of JSON types only (None, bool, numbers, strings, lists and
    string-keyed dicts of them), so it is stored as it is."""
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(json_native(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and json_native(item) for key, item in value.items())
    return False


def verdict_flow(**options: Any) -> Callable[[Callable[..., Any]], VerdictFlow]:
    """`@flow` for monitor flows (logging prints, so console alerts reach the run's logs). Loading one
    keeps its verdict out of the engine's error log, as a worker or `serve` loads it before the run."""
    quiet_expected_verdicts()
    return lambda fn: VerdictFlow(fn, log_prints=True, **options)


@verdict_flow(name="driftline-monitor", task_runner=CHECK_RUNNER)
def monitor(
    spec_path: str,
    batch_id: str | None = None,
    alerts: bool = True,
    retrain: Retraining = True,
    fail_flow_run: bool = True,
) -> State:
    """Run the monitor described by the spec file over one batch (the newest when `batch_id` is empty)."""
    return run_as_flow(run_monitor, spec_path, batch_id, alerts, retrain, fail_flow_run)


def run_as_flow(
    run: Callable[..., Any],
    spec_path: str,
    batch_id: str | None,
    alerts: bool,
    retrain: Retraining,
    fail_flow_run: bool,
) -> State:
    """One batch evaluated by `run` (`run_monitor` or `run_partitioned`) under the Prefect driver: the
    check tasks' states named by severity, and the flow run's state the verdict holding the summary."""
    spec = load_spec(spec_path)
    driver = PrefectDriver(spec)
    summary = run(spec, batch_id, driver=driver, alerts=alerts, retrain=retrain).to_dict()
    driver.report(spec, summary)
    return verdict_state([summary], spec.fail_on, fail_flow_run, summary)


def monitor_deployment(spec: MonitorSpec, spec_path: Path) -> Any:
    """The monitor as a Prefect deployment on the spec's cron schedule (what `driftline serve` serves).

    Its entrypoint is the module path, so runs load the installed flow from any working directory.
    """
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    return monitor.to_deployment(
        name=spec.name,
        schedule=Cron(spec.schedule.cron, timezone=spec.schedule.timezone),
        parameters={"spec_path": str(spec_path.resolve())},
        description=spec.description or f"driftline monitor {spec.name}",
        tags=["driftline"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


class CancellingRunner(Runner):
    """Prefect's runner stopped by SIGTERM or SIGINT the way its API asks: the flow runs in flight
    are killed and marked `Cancelled` before it exits, rather than left `Running` on the server."""

    async def start(self, run_once: bool = False, webserver: bool | None = None) -> None:
        """Serve until stopped; SIGINT stops like SIGTERM (Prefect's `start` takes over SIGTERM)."""
        signal.signal(signal.SIGINT, self.handle_sigterm)
        await super().start(run_once=run_once, webserver=webserver)

    def handle_sigterm(self, signum: int, frame: Any = None) -> None:
        """Stop on the runner's own event loop: `astop` cancels every tracked flow run, then ends
        the polling loops so that `start` returns (a second signal while stopping is ignored);
        before the runner has started, nothing runs yet and it exits at once."""
        if not self.started:
            raise SystemExit(0)
        if self.stopping:
            return
        self._logger.info("%s received: cancelling the flow runs in flight", signal.Signals(signum).name)
        self.stopping = True
        self._stop_task = asyncio.get_running_loop().create_task(self.astop())


def serve_deployment(deployment: Any) -> None:
    """Serve one deployment until SIGTERM or SIGINT; its schedule is paused on the way out."""
    runner = CancellingRunner(pause_on_shutdown=True)
    runner.add_deployment(deployment)
    asyncio.run(runner.start())
